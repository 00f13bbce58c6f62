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

__all__ = ["ComponentBirths"]

# Rows per block when summing the log-likelihood over every stored observation.
_BLOCK = 1 << 14


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
