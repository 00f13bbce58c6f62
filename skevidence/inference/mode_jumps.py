"""Component births for mixtures: data-driven Metropolis-Hastings moves of one component.

Local moves (SGHMC, generalised HMC) rarely carry a particle from one
local optimum of a mixture's posterior to another. With more components
than the data have shown so far, a component sits empty (tiny weight,
parameters from the prior); a light component inside a heavy one is
supported only after thousands of observations, and a cloud whose empty
component never wanders there falls behind linearly in ``n``.
:class:`ComponentBirths` adds to the engine's move, when the number of
observations crosses a checkpoint, Metropolis-Hastings steps on the exact
posterior of all data seen that re-place one component's mean and
variance (its weight unchanged) at a stored observation that the other
components explain poorly. The proposal depends only on the other
components and on a random subset of the data drawn independently of the
particles, and the acceptance ratio uses exact log densities, so the
posterior stays invariant and the evidence unbiased.
"""

import dataclasses
import math

import torch

from ..models.base import batch_size_of
from . import sgais
from .control_variates import full_gradient_sum

__all__ = ["ComponentBirths", "PairJumps"]

# Rows per block when summing the log-likelihood over every stored observation.
_BLOCK = 1 << 14
_LOG_2PI = math.log(2.0 * math.pi)


def log_posterior(model, theta, X):
    """Unnormalised log posterior of ``theta [M, d]`` given all of ``X``, in blocks of rows."""
    total = model.log_prior(theta)
    for start in range(0, X.shape[0], _BLOCK):
        total = total + model.log_likelihood(theta, (X[start : start + _BLOCK],)).sum(1)
    return total


class ComponentBirths:
    """The engine's move plus data-driven births of one component at checkpoints.

    Called as ``move(model, state, config, chunk, lam)`` by
    :func:`sgais.update`: it runs :func:`sgais.sghmc_move`, and on the last
    annealing step (``lam = 1``) of a chunk that takes the number of
    observations past a checkpoint (every chunk up to ``dense_until``
    observations, then whenever ``n`` has grown by the factor ``factor``)
    it makes ``n_rounds`` Metropolis-Hastings steps per particle.

    One step picks a component ``j`` (the lightest in the first round,
    uniformly at random after; the weights do not change, so the choice is
    the same in the reverse move) and proposes its mean
    ``~ N(x_b, mean_jitter * var(X))`` at a point ``x_b`` of a random
    subset of ``n_candidates`` observations, chosen with probability
    ``proportional to 1 / (1 + p(x_b | other components) / p_0)`` (``log p_0``
    the median over the subset less ``margin``), and its log
    variances ``~ N(log(variance_fraction * var(X)), log_variance_sd^2)``.
    Particles that move get their control-variate reference moved with
    them. Skipped when the store does not hold every observation.
    """

    def __init__(self, dense_until=5000, factor=1.1, n_rounds=2, n_candidates=256, margin=2.0,
                 mean_jitter=0.02, variance_fraction=0.3, log_variance_sd=1.5):
        self.dense_until, self.factor, self.n_rounds = dense_until, factor, n_rounds
        self.n_candidates, self.margin, self.mean_jitter = n_candidates, margin, mean_jitter
        self.variance_fraction, self.log_variance_sd = variance_fraction, log_variance_sd
        self.history = []  # (n, fraction of particles moved) per checkpoint

    def is_checkpoint(self, n_before, n_after):
        """Whether a chunk from ``n_before`` to ``n_after`` observations ends with births."""
        if n_after <= self.dense_until:
            return True
        k = math.floor(math.log(n_after / self.dense_until) / math.log(self.factor))
        return self.dense_until * self.factor**k > n_before

    def __call__(self, model, state, config, chunk, lam):
        result = sgais.sghmc_move(model, state, config, chunk, lam)
        n_after = state.n_seen + batch_size_of(chunk)
        if (lam < 1.0 or state.reservoir.size != state.n_seen or model.n_components < 2
                or not self.is_checkpoint(state.n_seen, n_after)):
            return result
        return dataclasses.replace(result, theta=self.births(model, state, chunk, result.theta))

    def births(self, model, state, chunk, theta):
        """``n_rounds`` birth steps of every particle on the posterior of all data seen."""
        store = state.reservoir.data()[0] if state.n_seen > 0 else chunk[0][:0]
        X = torch.cat([store, chunk[0]])
        M, K = theta.shape[0], model.n_components
        gen = state.generator
        log_p = log_posterior(model, theta, X)
        moved = torch.zeros(M, dtype=torch.bool, device=theta.device)
        variance = X.var(0).clamp_min(1e-12) if X.shape[0] > 1 else torch.ones_like(X[0])
        for r in range(self.n_rounds):
            idx = torch.randint(X.shape[0], (self.n_candidates,), generator=gen,
                                device=X.device)
            candidates = X[idx]
            log_w = model.unpack(theta)[0]
            j = (log_w.argmin(1) if r == 0
                 else torch.randint(K, (M,), generator=gen, device=theta.device))
            proposal = self._proposal(model, theta, j, candidates, variance)
            new_phi = proposal.sample(gen)
            candidate = _with_component(model, theta, j, new_phi)
            log_p_new = log_posterior(model, candidate, X)
            log_ratio = (log_p_new - log_p + proposal.log_density(_component(model, theta, j))
                         - proposal.log_density(new_phi))
            log_u = torch.log(torch.rand(M, generator=gen, dtype=theta.dtype,
                                         device=theta.device))
            accept = log_u < torch.nan_to_num(log_ratio, nan=-math.inf)
            theta = torch.where(accept[:, None], candidate, theta)
            log_p = torch.where(accept, log_p_new, log_p)
            moved |= accept
        self.history.append((state.n_seen + batch_size_of(chunk), float(moved.double().mean())))
        _move_references(model, state, theta, moved)
        return theta

    def _proposal(self, model, theta, j, candidates, variance):
        """The birth proposal of component ``j [M]`` of every particle."""
        log_joint = model.log_predictive_components(theta, candidates)  # [M, B, K]
        others = torch.ones_like(log_joint[:, 0, :], dtype=torch.bool)
        others[torch.arange(theta.shape[0]), j] = False
        log_others = torch.logsumexp(log_joint.masked_fill(~others[:, None, :], -math.inf), 2)
        # Every point explained worse than the median by ``margin`` nats
        # gets about the same chance, better explained ones exponentially less:
        # a plain p^-1 would pick only the most extreme outliers.
        threshold = log_others.median(1, keepdim=True).values - self.margin
        log_pick = torch.log_softmax(-torch.nn.functional.softplus(log_others - threshold), 1)
        return _BirthProposal(log_pick, candidates, self.mean_jitter * variance,
                              torch.log(self.variance_fraction * variance),
                              self.log_variance_sd)


class _BirthProposal:
    """Mixture over candidates ``b`` of ``N(mean; x_b, s^2) N(log var; c, sd^2)``, per particle."""

    def __init__(self, log_pick, candidates, jitter_var, log_var_centre, log_var_sd):
        self.log_pick, self.candidates = log_pick, candidates
        self.jitter_var, self.centre, self.sd = jitter_var, log_var_centre, log_var_sd

    def sample(self, gen):
        """``(means [M, D], log variances [M, D])``."""
        M, D = self.log_pick.shape[0], self.candidates.shape[1]
        kw = dict(generator=gen, dtype=self.candidates.dtype, device=self.candidates.device)
        b = torch.multinomial(self.log_pick.exp(), 1, generator=gen)[:, 0]
        means = self.candidates[b] + self.jitter_var.sqrt() * torch.randn(M, D, **kw)
        log_var = self.centre + self.sd * torch.randn(M, D, **kw)
        return means, log_var

    def log_density(self, phi):
        """``[M]`` log density of ``phi = (means, log variances)``."""
        means, log_var = phi
        D = means.shape[1]
        sq = (means[:, None, :] - self.candidates[None]).square() / self.jitter_var  # [M, B, D]
        log_mean = torch.logsumexp(self.log_pick - 0.5 * sq.sum(2), 1) \
            - 0.5 * (D * math.log(2 * math.pi) + torch.log(self.jitter_var).sum())
        log_var_term = (-0.5 * ((log_var - self.centre) / self.sd).square()).sum(1) \
            - D * (math.log(self.sd) + 0.5 * math.log(2 * math.pi))
        return log_mean + log_var_term


def _component(model, theta, j):
    """``(means [M, D], log variances [M, D])`` of component ``j [M]`` of every particle."""
    _, means, log_var = model._split(theta)
    rows = torch.arange(theta.shape[0], device=theta.device)
    return means[rows, j], log_var[rows, j]


def _with_component(model, theta, j, phi):
    """``theta`` with the mean and log variances of component ``j [M]`` replaced by ``phi``."""
    logits, means, log_var = model._split(theta)
    rows = torch.arange(theta.shape[0], device=theta.device)
    means, log_var = means.clone(), log_var.clone()
    means[rows, j], log_var[rows, j] = phi
    M = theta.shape[0]
    return torch.cat([logits, means.reshape(M, -1), log_var.reshape(M, -1)], 1)


def _move_references(model, state, theta, moved):
    """Per-particle control-variate references follow the particles that moved.

    The chunk is added to the sums by the engine afterwards, so they cover
    the stored data only.
    """
    cv = state.cv
    if cv is None or cv.theta_ref.shape[0] != theta.shape[0] or not bool(moved.any()):
        return
    ref, grad_sum = cv.theta_ref.clone(), cv.grad_sum.clone()
    ref[moved] = theta[moved]
    if state.n_seen > 0:
        grad_sum[moved] = full_gradient_sum(model, theta[moved], state.reservoir.data())
    else:
        grad_sum[moved] = 0.0
    cv.theta_ref, cv.grad_sum = ref, grad_sum


class PairJumps:
    """The engine's move plus Metropolis-Hastings re-fits of two components at checkpoints.

    A cloud can sit in a local optimum where two components share one
    cluster while a light component that explains part of the same data
    (the paper's weight-0.008 component, inside the heaviest) is missing:
    going from one to the other changes two components at once, which
    neither the local moves nor one-component births do. On the last
    annealing step (``lam = 1``) of a chunk that takes ``n`` past a
    checkpoint (from ``start`` to ``stop`` observations, every factor
    ``factor``), each particle makes ``n_rounds`` independence
    Metropolis-Hastings steps on a random pair ``(j, k)`` of its
    components, conditional on the others.

    The block is ``z = (log w_j, log w_k, means, log variances of j and
    k)``; the others' parameters and relative weights ``v`` are held, so
    the target of ``z`` given them is the exact posterior of all data seen
    in the coordinates ``(z, v)``: ``pi(theta) (1 - w_j - w_k)^(K - 3)
    w_j w_k / prod_l w_l`` (the Jacobians of the additive-log-ratio
    logits and of ``v``). The proposal depends only on what is held and
    on randomness drawn apart from ``z``: EM for the pair against the held
    components as a fixed background (``em_steps`` iterations on
    ``em_subset`` stored observations, ``polish_steps`` on all of them)
    from a core-and-halo start (a light wide component inside a heavy one)
    and, with ``n_starts=2``, a split start, plus a one-component fit next
    to a nearly empty component (:class:`_EmptyComponent`); then an equal
    mixture of diagonal Gaussians at these fits and their swaps ``j <-> k``,
    with the posterior scales of ``n`` observations times ``inflation``.
    The pair is drawn with probability rising with the two components'
    overlap, and the acceptance ratio includes that choice. Skipped when
    the store does not hold every observation or ``n_components < 3``.
    Not used by default: on the paper's mixture its acceptance stays below
    2% (the notes in benchmarks/bench_gmm.py).
    """

    def __init__(self, start=4000, stop=60000, factor=1.15, n_rounds=2, n_starts=2,
                 em_subset=4000, em_steps=15, polish_steps=3, inflation=1.5, margin=2.0,
                 pair_floor=0.05):
        self.start, self.stop, self.factor, self.n_rounds = start, stop, factor, n_rounds
        self.n_starts, self.em_subset, self.em_steps = n_starts, em_subset, em_steps
        self.polish_steps, self.inflation, self.margin = polish_steps, inflation, margin
        self.pair_floor = pair_floor
        self.history = []  # (n, fraction of proposals accepted) per checkpoint

    def is_checkpoint(self, n_before, n_after):
        """Whether a chunk from ``n_before`` to ``n_after`` observations ends with jumps."""
        if n_after < self.start:
            return False
        k = math.floor(math.log(n_after / self.start) / math.log(self.factor))
        last = self.start * self.factor**k  # the last checkpoint up to n_after
        return n_before < last <= self.stop

    def __call__(self, model, state, config, chunk, lam):
        result = sgais.sghmc_move(model, state, config, chunk, lam)
        n_after = state.n_seen + batch_size_of(chunk)
        if (lam < 1.0 or state.reservoir.size != state.n_seen or model.n_components < 3
                or not self.is_checkpoint(state.n_seen, n_after)):
            return result
        return dataclasses.replace(result, theta=self.jumps(model, state, chunk, result.theta))

    def jumps(self, model, state, chunk, theta):
        """``n_rounds`` pair re-fits of every particle on the posterior of all data seen."""
        store = state.reservoir.data()[0] if state.n_seen > 0 else chunk[0][:0]
        X = torch.cat([store, chunk[0]])
        gen = state.generator
        log_post = log_posterior(model, theta, X)
        moved = torch.zeros(theta.shape[0], dtype=torch.bool, device=theta.device)
        accepted = []
        for _ in range(self.n_rounds):
            theta, log_post, accept = self.step(model, theta, log_post, X, gen)
            moved |= accept
            accepted.append(float(accept.double().mean()))
        self.history.append((X.shape[0], sum(accepted) / len(accepted)))
        _move_references(model, state, theta, moved)
        return theta

    def step(self, model, theta, log_post, X, gen, log_target=None):
        """One Metropolis-Hastings step of a random pair per particle.

        ``log_target`` (default: the log posterior of ``X``) is the
        unnormalised log density in ``theta``; ``log_post`` its value at
        ``theta``.
        """
        if log_target is None:
            def log_target(t):
                return log_posterior(model, t, X)
        M, K = theta.shape[0], model.n_components
        dev = theta.device
        log_pick = _pair_log_probabilities(model, theta, self.pair_floor)  # [M, K, K]
        flat = torch.multinomial(log_pick.flatten(1).exp(), 1, generator=gen)[:, 0]
        j, k = flat // K, flat % K
        proposal = self.proposal(model, theta, j, k, X, gen)
        z_old = _pair_block(model, theta, j, k)
        z_new = proposal.sample(gen)
        candidate, valid = _with_pair_block(model, theta, j, k, z_new)
        log_post_new = torch.where(valid, log_target(candidate),
                                   torch.full_like(log_post, -math.inf))
        rows = torch.arange(M, device=dev)
        log_pick_new = _pair_log_probabilities(model, candidate, self.pair_floor)[rows, j, k]
        log_ratio = (log_post_new + _block_log_jacobian(model, candidate, j, k)
                     - log_post - _block_log_jacobian(model, theta, j, k)
                     + log_pick_new - log_pick[rows, j, k]
                     + proposal.log_density(z_old) - proposal.log_density(z_new))
        log_u = torch.log(torch.rand(M, generator=gen, dtype=theta.dtype, device=dev))
        accept = valid & (log_u < torch.nan_to_num(log_ratio, nan=-math.inf))
        theta = torch.where(accept[:, None], candidate, theta)
        return theta, torch.where(accept, log_post_new, log_post), accept

    def _starts(self, log_bg, X, gen):
        """EM starts ``[M, S, 2]`` from the data the held components explain poorly.

        The moments of those data (weights ``sigmoid`` of how far below the
        median their background density lies, less ``margin`` nats) give a
        core and a halo: ``(mean, var)`` with 90% of the pair's weight and
        ``(mean, 4 var)`` with 10% (a light component inside a heavy one),
        and the two halves of a split along a random data direction
        (two components sharing one cluster).
        """
        M = log_bg.shape[0]
        threshold = log_bg.median(1, keepdim=True).values - self.margin
        u = torch.sigmoid(threshold - log_bg)  # [M, B]
        mass = u.sum(1, keepdim=True).clamp_min(1e-12)
        mean = (u @ X) / mass  # [M, D]
        var = ((u @ X.square()) / mass - mean.square()).clamp_min(1e-6)
        share = (mass / X.shape[0]).clamp(0.02, 0.98)  # [M, 1]
        picks = torch.randint(X.shape[0], (M,), generator=gen, device=X.device)
        direction = X[picks] - mean
        direction = direction / (direction.square() / var).sum(1, keepdim=True).sqrt().clamp_min(1e-12)
        sd = var.sqrt()
        core = torch.stack([mean, mean], 1), torch.stack([var, 4.0 * var], 1).log(), \
            torch.log(share * torch.tensor([0.9, 0.1], dtype=X.dtype, device=X.device))
        split = torch.stack([mean + 0.7 * direction * sd, mean - 0.7 * direction * sd], 1), \
            torch.stack([0.5 * var, 0.5 * var], 1).log(), torch.log(share * 0.5).expand(M, 2)
        starts = [core, split][: self.n_starts]
        means = torch.stack([s[0] for s in starts], 1)
        log_var = torch.stack([s[1] for s in starts], 1)
        log_w = torch.stack([s[2] for s in starts], 1)
        return log_w, means, log_var

    def proposal(self, model, theta, j, k, X, gen):
        """The pair proposal ``[M]``: EM against the held components, then Gaussians."""
        M, n = theta.shape[0], X.shape[0]
        dev, dtype = theta.device, theta.dtype
        sub = X[torch.randint(n, (min(self.em_subset, n),), generator=gen, device=dev)]
        log_bg_sub = _background_log_density(model, theta, j, k, sub)  # [M, B]
        log_w, means, log_var = self._starts(log_bg_sub, sub, gen)
        # The core's start alone gives the one-component fit next to an empty one.
        params = (log_w, means, log_var)
        single = (torch.logsumexp(log_w[:, :1], 2, keepdim=True), means[:, :1, :1],
                  log_var[:, :1, :1])
        b = torch.as_tensor(model.variance_scale, dtype=dtype, device=dev)
        a = model.variance_shape
        for _ in range(self.em_steps):
            params = _em_step(params, sub, log_bg_sub, a, b)
            single = _em_step(single, sub, log_bg_sub, a, b)
        log_bg = _background_log_density(model, theta, j, k, X)
        for _ in range(self.polish_steps):
            params = _em_step(params, X, log_bg, a, b)
            single = _em_step(single, X, log_bg, a, b)
        fits = [(tuple(p[:, s, 0] for p in params), tuple(p[:, s, 1] for p in params))
                for s in range(params[0].shape[1])]
        fits.append((tuple(p[:, 0, 0] for p in single), None))
        law = _EmptyComponent(model, n, dtype, dev)
        return _PairProposal.from_fits(fits, n, self.inflation, law)


def _pair_log_probabilities(model, theta, floor):
    """``[M, K, K]`` log probability of re-fitting the ordered pair ``(j, k)``, ``j != k``.

    Proportional to ``floor`` plus the Bhattacharyya coefficient of the
    two components (1 for identical ones, 0 for disjoint): two components
    that share one cluster are the ones to re-fit. It depends on the pair
    itself, so the acceptance ratio includes its value after the move.
    """
    _, means, variances = model.unpack(theta)
    var_a, var_b = variances[:, :, None], variances[:, None]
    average = 0.5 * (var_a + var_b)  # [M, K, K, D]
    diff = means[:, :, None] - means[:, None]
    distance = (0.125 * diff.square() / average + 0.5 * torch.log(average)
                - 0.25 * (torch.log(var_a) + torch.log(var_b))).sum(-1)
    score = floor + torch.exp(-distance)
    K = model.n_components
    off_diagonal = ~torch.eye(K, dtype=torch.bool, device=theta.device)
    score = torch.where(off_diagonal, score, torch.zeros_like(score))
    return torch.log(score / score.sum((1, 2), keepdim=True))


def _background_log_density(model, theta, j, k, X):
    """``log sum_{l != j, k} v_l N(x | l)`` ``[M, B]``, ``v`` the held relative weights."""
    log_joint = model._log_joint(theta, X)  # [M, K, B]
    rows = torch.arange(theta.shape[0], device=theta.device)
    held = torch.ones(log_joint.shape[:2], dtype=torch.bool, device=theta.device)
    held[rows, j] = False
    held[rows, k] = False
    log_joint = log_joint.masked_fill(~held[:, :, None], -math.inf)
    log_held = torch.logsumexp(model.unpack(theta)[0].masked_fill(~held, -math.inf), 1)
    return torch.logsumexp(log_joint, 1) - log_held[:, None]


def _em_step(params, X, log_bg, a, b):
    """One EM iteration of two free components ``[M, S, 2]`` against a fixed background.

    The background's weight is what the two leave; the variances are the
    inverse-gamma MAP (shape ``a``, scale ``b``), which keeps an empty
    component from collapsing.
    """
    log_w, means, log_var = params
    precision = torch.exp(-log_var)  # [M, S, 2, D]
    # [M, S, 2, B] log w + log N(x | mean, var), by two matrix products as the model does.
    coef = torch.cat([precision, -2.0 * means * precision], -1)  # [M, S, 2, 2D]
    features = torch.cat([X.square(), X], 1)  # [B, 2D]
    quad = coef @ features.T
    const = log_w - 0.5 * ((means.square() * precision).sum(-1) + log_var.sum(-1)
                           + X.shape[1] * _LOG_2PI)
    log_pair = const[..., None] - 0.5 * quad
    log_rest = torch.log1p(-log_w.exp().sum(2).clamp(max=1 - 1e-9))  # [M, S]
    log_b = log_rest[..., None] + log_bg[:, None, :]  # [M, S, B]
    log_norm = torch.logsumexp(torch.cat([log_pair, log_b[:, :, None]], 2), 2)
    resp = torch.exp(log_pair - log_norm[:, :, None])  # [M, S, 2, B]
    Nk = resp.sum(-1)  # [M, S, 2]
    B = X.shape[0]
    S1 = resp @ X
    S2 = resp @ X.square()
    means = S1 / Nk.clamp_min(1e-12)[..., None]
    sq = (S2 - Nk[..., None] * means.square()).clamp_min(0.0)
    log_var = torch.log((sq + 2.0 * b) / (Nk[..., None] + 2.0 * (a + 1.0)))
    log_w = torch.log((Nk / B).clamp_min(1e-8))
    return log_w, means, log_var



class _PairProposal:
    """Equal mixture over pair configurations (and their swaps ``j <-> k``), per particle.

    Each configuration is a product over the two components of either a
    diagonal Gaussian in ``(log w, mean, log variance)`` at an EM result,
    with the posterior scales of ``n`` observations times ``inflation``,
    or the law of an empty component (:class:`_EmptyComponent`).
    ``halves`` is ``[M, C, 2, 1 + 2 D]`` centres, ``scales`` the same
    (ignored where ``empty [C, 2]`` is True).
    """

    def __init__(self, centres, scales, empty, empty_law):
        self.centres, self.scales, self.empty, self.law = centres, scales, empty, empty_law

    @classmethod
    def from_fits(cls, fits, n, inflation, empty_law):
        """``fits``: list of ``(log_w [M, 2], means [M, 2, D], log_var [M, 2, D])``,
        with ``None`` for a component that is proposed empty."""
        centres, scales, empty = [], [], []
        for fit in fits:
            c, s, e = [], [], []
            for h in range(2):
                if fit[h] is None:
                    ref = next(f for f in fit if f is not None)
                    shape = torch.cat([ref[0][:, None], ref[1], ref[2]], 1)
                    c.append(torch.zeros_like(shape))
                    s.append(torch.ones_like(shape))
                    e.append(True)
                    continue
                log_w, means, log_var = fit[h]
                w = log_w.exp().clamp_min(1.0 / n)[:, None]
                c.append(torch.cat([log_w[:, None], means, log_var], 1))
                s.append(inflation * torch.cat([torch.sqrt(1.0 / (n * w)),
                                                torch.sqrt(log_var.exp() / (n * w)),
                                                torch.sqrt(2.0 / (n * w)).expand_as(log_var)], 1))
                e.append(False)
            for order in ([0, 1], [1, 0]):
                centres.append(torch.stack([c[o] for o in order], 1))
                scales.append(torch.stack([s[o] for o in order], 1))
                empty.append([e[o] for o in order])
        return cls(torch.stack(centres, 1), torch.stack(scales, 1),
                   torch.tensor(empty, device=centres[0].device), empty_law)

    def sample(self, gen):
        M, C, _, H = self.centres.shape
        dev, dtype = self.centres.device, self.centres.dtype
        c = torch.randint(C, (M,), generator=gen, device=dev)
        rows = torch.arange(M, device=dev)
        eps = torch.randn(M, 2, H, generator=gen, dtype=dtype, device=dev)
        halves = self.centres[rows, c] + self.scales[rows, c] * eps
        empty = self.empty[c]  # [M, 2]
        for h in range(2):
            drawn = self.law.sample(M, gen)
            halves[:, h] = torch.where(empty[:, h, None], drawn, halves[:, h])
        return _join_halves(halves)

    def log_density(self, z):
        halves = _split_halves(z)  # [M, 2, H]
        u = (halves[:, None] - self.centres) / self.scales
        gauss = (-0.5 * u.square() - torch.log(self.scales)).sum(3) \
            - 0.5 * halves.shape[2] * _LOG_2PI  # [M, C, 2]
        law = self.law.log_density(halves.flatten(0, 1)).reshape(-1, 1, 2)
        log_comp = torch.where(self.empty[None], law, gauss).sum(2)
        return torch.logsumexp(log_comp, 1) - math.log(self.centres.shape[1])


class _EmptyComponent:
    """Law of a (nearly) empty component: ``log w ~ N(log(10 / n), 2^2)``, the rest from the prior.

    In the coordinates ``(log w, mean, log variance)``.
    """

    def __init__(self, model, n, dtype, device):
        self.model, self.n = model, n
        # Weights from 1 / n to a few percent: a component without data, or
        # one that explains a few tens of observations in another's tails.
        self.log_w_centre, self.log_w_sd = math.log(10.0 / n), 2.0
        self.m0, self.b = model._prior_location(torch.empty(0, dtype=dtype, device=device))
        self.a, self.c = model.variance_shape, model.mean_variance_factor

    def sample(self, M, gen):
        dtype, dev = self.b.dtype, self.b.device
        log_w = self.log_w_centre + self.log_w_sd * torch.randn(M, 1, generator=gen,
                                                                dtype=dtype, device=dev)
        _, means, log_var = self.model._split(self.model.sample_prior(M, gen, dtype, dev))
        return torch.cat([log_w, means[:, 0], log_var[:, 0]], 1)

    def log_density(self, halves):
        D = self.m0.shape[0]
        log_w, means, log_var = halves[:, 0], halves[:, 1 : 1 + D], halves[:, 1 + D :]
        weight = (-0.5 * ((log_w - self.log_w_centre) / self.log_w_sd).square()
                  - math.log(self.log_w_sd) - 0.5 * _LOG_2PI)
        inv_gamma = (self.a * torch.log(self.b) - math.lgamma(self.a) - self.a * log_var
                     - self.b * torch.exp(-log_var))
        normal = (-0.5 * (_LOG_2PI + math.log(self.c)) - 0.5 * log_var
                  - 0.5 * (means - self.m0).square() * torch.exp(-log_var) / self.c)
        return weight + (inv_gamma + normal).sum(1)


def _split_halves(z):
    """``z [M, 2 + 4 D]`` -> ``[M, 2, 1 + 2 D]`` (log w, mean, log variance of j and k)."""
    M = z.shape[0]
    D = (z.shape[1] - 2) // 4
    means = z[:, 2 : 2 + 2 * D].reshape(M, 2, D)
    log_var = z[:, 2 + 2 * D :].reshape(M, 2, D)
    return torch.cat([z[:, :2, None], means, log_var], 2)


def _join_halves(halves):
    """Inverse of :func:`_split_halves`."""
    D = (halves.shape[2] - 1) // 2
    return _flat_block(halves[:, :, 0], halves[:, :, 1 : 1 + D], halves[:, :, 1 + D :])


def _flat_block(log_w, means, log_var):
    """``[..., 2] + [..., 2, D] + [..., 2, D]`` -> ``[..., 2 + 4 D]``."""
    return torch.cat([log_w, means.flatten(-2), log_var.flatten(-2)], -1)


def _pair_block(model, theta, j, k):
    """``z [M, 2 + 4 D]`` of components ``j, k [M]`` of every particle."""
    log_w, means, variances = model.unpack(theta)
    rows = torch.arange(theta.shape[0], device=theta.device)
    pair = torch.stack([j, k], 1)
    return _flat_block(log_w[rows[:, None], pair], means[rows[:, None], pair],
                       torch.log(variances[rows[:, None], pair]))


def _with_pair_block(model, theta, j, k, z):
    """``theta`` with the pair's block replaced by ``z``, the held weights rescaled.

    Returns the new particles and whether the proposed weights are valid
    (``w_j + w_k < 1``).
    """
    M, D = theta.shape[0], model.n_features
    log_w, means, variances = model.unpack(theta)
    rows = torch.arange(M, device=theta.device)
    pair = torch.stack([j, k], 1)
    new_log_w = z[:, :2]
    new_means = z[:, 2 : 2 + 2 * D].reshape(M, 2, D)
    new_log_var = z[:, 2 + 2 * D :].reshape(M, 2, D)
    held = torch.ones_like(log_w, dtype=torch.bool)
    held[rows, j] = False
    held[rows, k] = False
    old_rest = torch.logsumexp(log_w.masked_fill(~held, -math.inf), 1)
    new_total = torch.logsumexp(new_log_w, 1)
    valid = new_total < 0
    new_rest = torch.log1p(-new_total.clamp(max=-1e-12).exp())
    log_w = log_w - old_rest[:, None] + new_rest[:, None]
    log_w = log_w.clone()
    log_w[rows[:, None], pair] = new_log_w
    means = means.clone()
    means[rows[:, None], pair] = new_means
    log_var = torch.log(variances).clone()
    log_var[rows[:, None], pair] = new_log_var
    logits = log_w[:, :-1] - log_w[:, -1:]
    candidate = torch.cat([logits, means.reshape(M, -1), log_var.reshape(M, -1)], 1)
    return torch.where(valid[:, None], candidate, theta), valid


def _block_log_jacobian(model, theta, j, k):
    """``log[(1 - w_j - w_k)^(K - 3) w_j w_k / prod_l w_l]`` ``[M]``: theta -> (z, v) coordinates."""
    log_w = model.unpack(theta)[0]
    rows = torch.arange(theta.shape[0], device=theta.device)
    log_pair = torch.stack([log_w[rows, j], log_w[rows, k]], 1)
    log_rest = torch.log1p(-torch.logsumexp(log_pair, 1).exp().clamp(max=1 - 1e-15))
    K = model.n_components
    return (K - 3) * log_rest + log_pair.sum(1) - log_w.sum(1)
