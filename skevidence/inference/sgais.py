"""Stochastic Gradient Annealed Importance Sampling (SGAIS), online.

The evidence is built up chunk by chunk, ``log Z = sum_k log p(C_k | C_<k)``.
For each chunk the particles, which represent the posterior given the
past data, are moved to the posterior that also includes the chunk along
an adaptive tempering path ``p(C | theta)^lam``, ``0 = lam_0 < ... = 1``:

1. **reweight**: pick the next increment ``delta`` by ESS bisection and
   multiply the weights by ``p(C | theta)^delta`` (the log of their mean is
   this step's share of ``log Z``);
2. **resample** when the weights have degenerated;
3. **move** the particles with SGHMC on the tempered posterior, whose
   past-data term is a control-variate mini-batch estimate (while the data
   are few, Metropolis-adjusted moves on the exact posterior).

Afterwards the chunk joins the data store. The cost of a chunk depends on
the chunk and on the mini-batch size, not on how much data came before.
"""

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from ..models.base import Model, batch_size_of, take
from . import islands
from .annealing import ess, log_normalize, next_increment
from .control_variates import ControlVariate
from .kernels import (baoab, covariance_preconditioner, ghmc, isotropic_preconditioner,
                      ledoit_wolf_shrinkage, precision_preconditioner, sghmc)
from .reservoir import Reservoir

__all__ = [
    "SGAISConfig", "SGAISState", "TRACE_FIELDS", "init", "update", "chunk_ends", "sghmc_move",
    "checkpoint", "rollback", "AnnealingWarning",
]

TRACE_FIELDS = ("n_seen", "log_evidence", "n_annealing_steps", "ess", "log_evidence_std")

# Target acceptance rate of the warm-up's generalised HMC: a rejection
# reverses the momentum, so a high rate keeps the trajectories going.
EXACT_ACCEPTANCE = 0.8


@dataclass(frozen=True)
class SGAISConfig:
    """Settings of the engine; the estimators document the defaults."""

    n_particles: int = 128
    batch_size: int = 500
    n_burnin: int = 20
    learning_rate: float = 0.1
    momentum_decay: float = 0.2
    target_ess: float = 0.9
    resample_threshold: float = 0.5
    reservoir_size: int | None = None
    # "covariance", None (isotropic), "model" (posterior_scale) or "curvature"
    # (the model's Laplace precision at the particles' mean, see below).
    precondition: str | None = "covariance"
    control_variate: str | None = "shared"
    cv_refresh_factor: float = 2.0
    warmup_size: int = 1000
    # Moves per annealing step are n_burnin * warmup_factor below warmup_size.
    warmup_factor: int = 2
    integrator: str = "baoab"
    # Weight of the diagonal mixed into the covariance preconditioner. Any
    # positive weight leaks the wide marginal scales of a correlated posterior
    # (uncentred features, the redundant softmax parameterisation) into its
    # narrow directions and the sampler diverges there; it only helps when
    # n_particles is not much larger than the number of parameters.
    # "ledoit-wolf" picks the weight from the particles (ledoit_wolf_shrinkage).
    precondition_shrinkage: float | str = 0.0
    # With precondition="covariance", use the model's curvature instead when
    # n_particles < curvature_ratio * n_params and the model gives one
    # (Model.fisher_information): fewer particles than parameters span only
    # part of the space, and moves cannot leave that span.
    curvature_ratio: float = 2.0
    # Metropolis-adjusted moves on the exact tempered posterior while
    # n_seen < warmup_size and the store holds every observation (see
    # exact_move): few data give the least Gaussian posteriors, where a
    # step size that suits the particles' covariance can still diverge.
    exact_warmup: bool = True
    # Particle islands (see islands.py): resampling stays within each of
    # this many islands (fewer for small clouds), whose spread of evidence
    # estimates gives log_evidence_std.
    n_islands: int = 1
    # An integer (e.g. 16) adds the first batch_size observations, with
    # exact_warmup, in chunks that double in size, ending at batch_size / 2^k
    # for k = K..1 (see chunk_ends), the smallest at least first_chunk_size;
    # None (the default) adds them in one chunk. With 16 the first 500
    # observations of the paper's logistic model took 1.5-2x less CPU, but
    # its errors at N = 1e4 were -0.80 +- 0.57 nats over 7 sampler seeds
    # against -0.31 +- 0.31 over 6 with one chunk (equal at N = 1e3 and on
    # linear regression, where it saves nothing), so it stays opt-in.
    first_chunk_size: int | None = None
    # Warn when a chunk needs more annealing steps than this (None: never).
    # The count grows only logarithmically with how informative a chunk is
    # (about 45 steps more per factor 1e4 in the likelihood's precision, on
    # the smallest first chunk), but linearly with a prior-data conflict
    # (data far in the prior's tails, e.g. targets on a scale of 100 under
    # a unit prior).
    annealing_steps_warning: int | None = 250

    def __post_init__(self):
        # A typo in a string setting must not fall back silently to another
        # behaviour (the engine's branches test for one value each).
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"SGAISConfig.{name} must be one of {allowed}, got {value!r}")
        shrinkage = self.precondition_shrinkage
        if isinstance(shrinkage, str) and shrinkage != "ledoit-wolf":
            raise ValueError("SGAISConfig.precondition_shrinkage must be a number in [0, 1] "
                             f"or 'ledoit-wolf', got {shrinkage!r}")


# The values each string setting of SGAISConfig accepts.
_CHOICES = {
    "precondition": (None, "covariance", "model", "curvature"),
    "control_variate": (None, "shared", "particle"),
    "integrator": ("baoab", "sghmc"),
}


@dataclass
class SGAISState:
    """Everything the engine carries between chunks (a plain record)."""

    theta: torch.Tensor  # [M, d] particles
    log_W: np.ndarray  # [M] normalised log-weights, float64
    generator: torch.Generator
    reservoir: Reservoir
    cv: ControlVariate | None
    n_seen: int = 0
    log_evidence: float = 0.0
    n_diverged: int = 0
    exact_step_size: float = 0.5  # of the Metropolis-adjusted warmup moves, adapted
    trace: list = field(default_factory=list)
    island_starts: np.ndarray | None = None  # [G] first particle of each island
    # Counters for the estimators' diagnostics_.
    n_resamplings: int = 0  # island resampling events
    max_diverged_fraction: float = 0.0  # largest share of live particles lost in one move
    acceptance_sum: float = 0.0  # of the Metropolis-adjusted moves
    n_adjusted_moves: int = 0
    # Variance of log_evidence accumulated over the weight segments closed
    # by resampling (see segment_variance).
    log_evidence_var: float = 0.0

    @property
    def log_evidence_std(self):
        """Estimated Monte Carlo std of ``log_evidence``.

        With islands, from their spread; otherwise the segments' variances
        (closed ones plus the current one).
        """
        if self.island_starts.shape[0] > 1:
            return islands.log_evidence_std(self.log_W, self.island_starts)
        return math.sqrt(self.log_evidence_var + segment_variance(self.log_W))

    @property
    def weights(self):
        return np.exp(self.log_W)


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights, an empty data store."""
    M = config.n_particles
    theta = model.sample_prior(M, generator, dtype=dtype, device=device)
    cv = None
    if config.control_variate is not None:
        R = 1 if config.control_variate == "shared" else M  # "particle": one each
        ref = theta.mean(0, keepdim=True) if R == 1 else theta.clone()
        cv = ControlVariate(theta_ref=ref, grad_sum=torch.zeros_like(ref))
    return SGAISState(
        theta=theta,
        log_W=np.full(M, -math.log(M)),
        generator=generator,
        reservoir=Reservoir(capacity=config.reservoir_size),
        cv=cv,
        island_starts=islands.island_starts(M, islands.n_islands_for(M, config.n_islands)),
    )


def update(model, state, config, batch, move=None, callback=None):
    """Condition the particles on ``batch``, in the chunks of :func:`chunk_ends`.

    ``move(model, state, config, chunk, lam)`` returns moved particles; the
    default is :func:`sghmc_move`. ``callback(state, lam, n_pending)`` runs
    after every annealing step (``lam`` reached, ``n_pending`` the size of
    the chunk not yet counted in ``state.n_seen``) and after each chunk
    (``lam = 1``, ``n_pending = 0``).
    """
    steps = [0]  # annealing steps of the current chunk
    move = _counting(sghmc_move if move is None else move, steps, callback)
    start, longest = 0, (0, 0, 0)
    for end in chunk_ends(state.n_seen, batch_size_of(batch), config):
        chunk = tuple(t[start:end] for t in batch)
        steps[0] = 0
        _condition_on_chunk(model, state, config, chunk, move)
        longest = max(longest, (steps[0], state.n_seen - (end - start), end - start))
        start = end
        if callback is not None:
            callback(state, 1.0, 0)
    _warn_if_long(longest, config)
    return state


def chunk_ends(n_seen, n_new, config):
    """Ends (offsets into the new data) of the chunks that ``n_new`` observations form.

    Chunk boundaries depend only on the stream position: multiples of
    ``batch_size``, and within the first ``batch_size`` observations the
    points ``batch_size / 2^k`` (``k = K, ..., 1``, the smallest at least
    ``first_chunk_size``; only when that is set and with ``exact_warmup``).
    The chunks nearest the prior need the most annealing steps per
    observation; kept small, each of their steps (exact moves over the data
    seen) costs a fraction of a full chunk's (benchmarks/bench_first_chunk.py).
    Feeding a stream in pieces that end on these boundaries gives the
    numbers of one call.
    """
    b = config.batch_size
    ramp = []
    if config.first_chunk_size is not None and config.exact_warmup:
        k = 1
        while b // 2**k >= max(config.first_chunk_size, 1):
            ramp.append(b // 2**k)
            k += 1
    ends, n = [], n_seen
    while n < n_seen + n_new:
        later = [r for r in ramp if r > n]
        boundary = min(later) if later else (n // b + 1) * b
        n = min(boundary, n_seen + n_new)
        ends.append(n - n_seen)
    return ends


def _counting(move, steps, callback):
    """``move`` that counts the annealing steps (one move each) and reports them."""
    def counted_move(model, state, config, chunk, lam):
        theta = move(model, state, config, chunk, lam)
        steps[0] += 1
        if callback is not None:
            callback(state, lam, batch_size_of(chunk))
        return theta
    return counted_move


class AnnealingWarning(UserWarning):
    """A chunk needed unusually many annealing steps (see ``annealing_steps_warning``)."""


def _warn_if_long(longest, config):
    n_steps, n_before, size = longest
    if config.annealing_steps_warning is None or n_steps <= config.annealing_steps_warning:
        return
    warnings.warn(
        f"adding {size} observations after {n_before} took {n_steps} annealing steps "
        f"(more than {config.annealing_steps_warning}): the data lie far in the tails of "
        "the prior (prior-data conflict) or of the posterior so far (a change in the "
        "stream). Cost grows with the conflict and the estimate loses accuracy; put the "
        "data on the scale the prior assumes (e.g. standardise them) or widen the prior.",
        AnnealingWarning, stacklevel=3)


def _condition_on_chunk(model, state, config, chunk, move):
    _maybe_refresh_reference(model, state, config)
    M = state.theta.shape[0]
    target = config.target_ess * M
    lam, n_steps = 0.0, 0
    loglik = _chunk_log_likelihood(model, state.theta, chunk)
    while lam < 1.0:
        remaining = 1.0 - lam
        delta = next_increment(state.log_W, loglik, remaining, target)
        if remaining - delta <= 1e-9 * remaining:
            delta = remaining
        _reweight(state, loglik, delta)
        lam = 1.0 if delta == remaining else lam + delta
        n_steps += 1
        _resample(state, _islands_to_resample(state, config))
        state.theta = move(model, state, config, chunk, lam)
        _discard_diverged(state)
        loglik = _chunk_log_likelihood(model, state.theta, chunk)
    state.reservoir.append(chunk, state.generator)
    if state.cv is not None:
        state.cv.add_chunk(model, chunk)
    state.n_seen += batch_size_of(chunk)
    state.trace.append((state.n_seen, state.log_evidence, n_steps, ess(state.log_W),
                        state.log_evidence_std))


def _chunk_log_likelihood(model, theta, chunk):
    """Summed log-likelihood of the chunk per particle; non-finite -> -inf."""
    ll = model.log_likelihood(theta, chunk).sum(1).to(torch.float64).cpu().numpy()
    return np.where(np.isfinite(ll), ll, -np.inf)


def _reweight(state, loglik, delta):
    with np.errstate(invalid="ignore"):
        log_w = state.log_W + delta * loglik
    log_w = np.where(np.isnan(log_w), -np.inf, log_w)
    log_increment = float(np.logaddexp.reduce(log_w))
    if not np.isfinite(log_increment):
        raise FloatingPointError(
            "every particle has zero likelihood for the current chunk "
            f"(after {state.n_seen} observations). Most likely the data are on a "
            "scale the prior cannot explain (features or targets far from unit "
            "scale: standardise them, e.g. StandardScaler, or widen the prior); "
            "otherwise the sampler diverged (try a smaller learning_rate)"
        )
    state.log_evidence += log_increment
    state.log_W = log_w - log_increment


def _islands_to_resample(state, config):
    """Islands whose weights degenerated (ESS below the threshold) or hold zeros."""
    starts = state.island_starts
    sizes = islands.island_sizes(state.log_W.shape[0], starts)
    has_zero = np.logical_or.reduceat(~np.isfinite(state.log_W), starts)
    low = islands.island_ess(state.log_W, starts) < config.resample_threshold * sizes
    return has_zero | low


def segment_variance(log_W):
    """Relative variance of the evidence factor of one weight segment.

    Between two resamplings the evidence factor is the mean of the
    particles' accumulated incremental weights (annealed importance
    sampling); for particles that started the segment as independent
    draws its relative variance is ``sum W^2 - 1 / M = 1 / ESS - 1 / M``,
    the delta-method variance of its log. Segments are separated by
    resampling, so their errors are uncorrelated (martingale differences)
    and the variances add up.
    """
    return max(float(np.exp(2.0 * log_W).sum()) - 1.0 / log_W.shape[0], 0.0)


def _resample(state, which):
    """Systematic resampling within the islands flagged in ``which`` ``[G]``."""
    live = np.isfinite(islands.island_log_mass(state.log_W, state.island_starts))
    which = which & live
    if not which.any():
        return
    if which.shape[0] == 1:
        state.log_evidence_var += segment_variance(state.log_W)
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    index, state.log_W = islands.systematic_resample_islands(
        state.log_W, u, state.island_starts, which)
    index_t = torch.as_tensor(index, device=state.theta.device)
    state.theta = state.theta[index_t]
    state.n_resamplings += int(which.sum())
    if state.cv is not None:
        state.cv.select(index_t)


def _discard_diverged(state):
    """Give particles that left the finite numbers zero weight and resample.

    A rare divergence of one particle is repaired here instead of poisoning
    the evidence with NaN; if every particle diverged there is nothing to
    repair from and the error says so.
    """
    ok = torch.isfinite(state.theta).all(1).cpu().numpy()
    if ok.all():
        return
    live = np.isfinite(state.log_W)
    if not (ok & live).any():
        raise FloatingPointError(
            f"all particles diverged after {state.n_seen} observations. Likely "
            "causes: data far from unit scale (standardise features and targets, "
            "e.g. StandardScaler), a learning_rate too large for this posterior "
            "(try a tenth of it), or too few particles"
        )
    lost = int((~ok & live).sum())
    state.n_diverged += lost
    state.max_diverged_fraction = max(state.max_diverged_fraction, lost / max(live.sum(), 1))
    starts = state.island_starts
    sizes = islands.island_sizes(ok.shape[0], starts)
    old_mass = islands.island_log_mass(state.log_W, starts)
    log_W = np.where(ok, state.log_W, -np.inf)
    new_mass = islands.island_log_mass(log_W, starts)
    # Within an island the survivors inherit the lost weight (the island's
    # Z_g is kept, as one sampler conditioned on not diverging); an island
    # that lost every particle drops out of the evidence and its error bar.
    alive = np.isfinite(new_mass)
    shift = np.where(alive, old_mass - np.where(alive, new_mass, 0.0), 0.0)
    state.log_W = log_normalize(log_W + np.repeat(shift, sizes))
    state.theta = torch.where(torch.as_tensor(ok, device=state.theta.device)[:, None],
                              state.theta, torch.zeros_like(state.theta))
    _resample(state, np.logical_or.reduceat(~ok, starts))


def _maybe_refresh_reference(model, state, config):
    cv = state.cv
    if cv is None or state.n_seen == 0:
        return
    if state.n_seen < config.cv_refresh_factor * max(cv.n_at_refresh, 1):
        return
    if cv.theta_ref.shape[0] == 1:
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        new_ref = (W @ state.theta)[None, :]
    else:
        new_ref = state.theta.clone()
    cv.refresh(model, new_ref, state.reservoir.data(), state.n_seen)


def _preconditioner(model, state, config, chunk, lam):
    d = state.theta.shape[1]
    if _uses_curvature(model, state, config):
        return precision_preconditioner(_laplace_precision(model, state, config, chunk, lam))
    if config.precondition in ("covariance", "curvature"):  # curvature unknown: covariance
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        shrinkage = config.precondition_shrinkage
        if shrinkage == "ledoit-wolf":
            shrinkage = ledoit_wolf_shrinkage(state.theta, W)
        return covariance_preconditioner(state.theta, W, shrinkage)
    n_eff = state.n_seen + lam * batch_size_of(chunk)
    return isotropic_preconditioner(d, n_eff, state.theta)


def _uses_curvature(model, state, config):
    M, d = state.theta.shape
    wanted = config.precondition == "curvature" or (
        config.precondition == "covariance" and M < config.curvature_ratio * d)
    return wanted and type(model).fisher_information is not Model.fisher_information


def _laplace_precision(model, state, config, chunk, lam):
    """Precision of the tempered posterior's Laplace approximation, averaged over the particles.

    ``prior + lam * chunk + past`` curvature, each the particles' weighted
    mean (``Model.expected_fisher_information``); the past data's term comes
    from the whole store while it is small, otherwise from a mini-batch of
    ``batch_size`` scaled to the data seen.
    """
    theta = state.theta
    W = torch.as_tensor(state.weights, dtype=theta.dtype, device=theta.device)
    live = W > 0  # diverged particles carry zero weight (and zeroed parameters)
    theta, W = theta[live], W[live]
    mean = W @ theta
    precision = model.prior_precision(mean)
    if precision is None:
        precision = torch.zeros(mean.shape[0], mean.shape[0], dtype=mean.dtype,
                                device=mean.device)
    precision = precision + lam * model.expected_fisher_information(theta, W, chunk)
    size = state.reservoir.size
    if size > 0:
        store = state.reservoir.data()
        if size > 2 * config.batch_size:
            idx = state.reservoir.sample_indices(config.batch_size, state.generator)
            past = (state.n_seen / config.batch_size) * model.expected_fisher_information(
                theta, W, take(store, idx))
        else:
            past = (state.n_seen / size) * model.expected_fisher_information(theta, W, store)
        precision = precision + past
    return 0.5 * (precision + precision.T)


def _n_moves(state, config):
    """More moves while the posterior is still broad and changes fast."""
    if state.n_seen < config.warmup_size:
        return config.n_burnin * config.warmup_factor
    return config.n_burnin


def sghmc_move(model, state, config, chunk, lam):
    """SGHMC on the tempered posterior ``p(C|theta)^lam p(past|theta) p(theta)``.

    During the warm-up (see ``SGAISConfig.exact_warmup``) the move is
    :func:`exact_move` instead.
    """
    if _in_exact_warmup(state, config):
        return exact_move(model, state, config, chunk, lam)
    n_past = state.n_seen
    minibatch_size = config.batch_size
    generator = state.generator
    store = state.reservoir.data() if n_past > 0 else None

    def grad_log_density(theta):
        g = model.grad_log_prior(theta) + lam * model.grad_log_likelihood(theta, chunk)
        if n_past == 0:
            return g
        idx = state.reservoir.sample_indices(minibatch_size, generator)
        minibatch = take(store, idx)
        if state.cv is not None:
            return g + state.cv.minibatch_gradient(model, theta, minibatch, n_past)
        return g + (n_past / minibatch_size) * model.grad_log_likelihood(theta, minibatch)

    kernel = baoab if config.integrator == "baoab" else sghmc

    def run(theta, grad, chol):
        return kernel(theta, grad, _n_moves(state, config),
                      _sghmc_step_size(model, state, config),
                      config.momentum_decay, chol, generator)

    return _in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                          grad_log_density)


def _sghmc_step_size(model, state, config):
    """``learning_rate``; with the curvature preconditioner, at most the warm-up's adapted step.

    The Metropolis-adjusted warm-up adapts its step to keep most proposals
    (EXACT_ACCEPTANCE). With hundreds of parameters that step falls below
    ``learning_rate`` (digits, 650 parameters: 0.037 against 0.1), and
    unadjusted moves with the larger step left the cloud below the
    posterior (training log-likelihood -119 against -83, 4 nats lower log
    evidence; benchmarks/bench_highdim.py). With the particles' covariance
    (enough particles) the cap is not applied.
    """
    if state.n_adjusted_moves == 0 or not _uses_curvature(model, state, config):
        return config.learning_rate
    return min(config.learning_rate, state.exact_step_size)


def _in_exact_warmup(state, config):
    return (config.exact_warmup and state.n_seen < config.warmup_size
            and state.reservoir.size == state.n_seen)


def exact_move(model, state, config, chunk, lam):
    """Metropolis-adjusted moves (:func:`ghmc`) on the exact tempered posterior.

    The log density sums the likelihood of every stored observation, so
    this is for small ``n`` only (the warm-up). Its step size adapts from
    move to move toward an acceptance rate of EXACT_ACCEPTANCE.
    """
    store = state.reservoir.data() if state.n_seen > 0 else None

    def log_density_and_grad(theta):
        log_lik, g_lik = model.log_likelihood_and_grad(theta, chunk)
        log_p = model.log_prior(theta) + lam * log_lik
        g = model.grad_log_prior(theta) + lam * g_lik
        if store is not None:
            log_lik, g_lik = model.log_likelihood_and_grad(theta, store)
            log_p, g = log_p + log_lik, g + g_lik
        return log_p, g

    def run(theta, log_density_and_grad, chol):
        theta, acceptance = ghmc(theta, log_density_and_grad, _n_moves(state, config),
                                 state.exact_step_size, config.momentum_decay, chol,
                                 state.generator)
        state.acceptance_sum += acceptance
        state.n_adjusted_moves += 1
        step = state.exact_step_size * math.exp(2.0 * (acceptance - EXACT_ACCEPTANCE))
        state.exact_step_size = min(max(step, 1e-4), 4.0)
        return theta

    return _in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                          log_density_and_grad, with_log_density=True)


def _in_preconditioned_coordinates(model, state, config, chunk, lam, run, target,
                                   with_log_density=False):
    """``run(theta, target, chol)`` with the preconditioner of ``config``.

    With ``precondition="model"`` the kernel runs in the coordinates
    ``theta / s``, ``s = model.posterior_scale``: a per-particle diagonal
    preconditioner ``diag(s_i^2)``. Particles in different modes of a
    multimodal posterior (label switching) then each move on their own
    scale, which one covariance across the cloud cannot give. ``s`` is
    computed once per move and held fixed during its steps.
    """
    if config.precondition != "model":
        return run(state.theta, target, _preconditioner(model, state, config, chunk, lam))
    n_eff = state.n_seen + lam * batch_size_of(chunk)
    scale = model.posterior_scale(state.theta, n_eff)
    d = state.theta.shape[1]
    eye = torch.eye(d, dtype=state.theta.dtype, device=state.theta.device)
    if with_log_density:
        def scaled(z):
            log_p, g = target(z * scale)
            return log_p, g * scale
    else:
        def scaled(z):
            return target(z * scale) * scale
    return run(state.theta / scale, scaled, eye) * scale


@dataclass
class Checkpoint:
    """What :func:`rollback` needs to undo a failed :func:`update`."""

    theta: torch.Tensor
    log_W: np.ndarray
    generator_state: torch.Tensor
    n_seen: int
    log_evidence: float
    n_diverged: int
    exact_step_size: float
    trace_len: int
    counters: tuple
    reservoir: tuple
    cv: tuple | None


def checkpoint(state):
    """Snapshot the state at O(M d) cost (plus the reservoir when bounded).

    An unbounded store only ever appends, so its size is enough to undo an
    update; a bounded reservoir overwrites slots and is copied (its size is
    fixed, so the copy does not grow with the stream).
    """
    res = state.reservoir
    buffers = tuple(b.clone() for b in res.buffers) if res.capacity is not None else res.buffers
    cv = None
    if state.cv is not None:
        cv = (state.cv.theta_ref, state.cv.grad_sum.clone(), state.cv.n_at_refresh)
    return Checkpoint(state.theta, state.log_W.copy(), state.generator.get_state(),
                      state.n_seen, state.log_evidence, state.n_diverged,
                      state.exact_step_size, len(state.trace), _counters(state),
                      (res.n_seen, res.size, buffers), cv)


def _counters(state):
    return (state.n_resamplings, state.max_diverged_fraction, state.acceptance_sum,
            state.n_adjusted_moves, state.log_evidence_var)


def rollback(state, ckpt):
    """Restore ``state`` to ``ckpt`` in place."""
    state.theta, state.log_W = ckpt.theta, ckpt.log_W
    state.generator.set_state(ckpt.generator_state)
    state.n_seen, state.log_evidence = ckpt.n_seen, ckpt.log_evidence
    state.n_diverged, state.exact_step_size = ckpt.n_diverged, ckpt.exact_step_size
    del state.trace[ckpt.trace_len:]
    (state.n_resamplings, state.max_diverged_fraction, state.acceptance_sum,
     state.n_adjusted_moves, state.log_evidence_var) = ckpt.counters
    state.reservoir.n_seen, state.reservoir.size, state.reservoir.buffers = ckpt.reservoir
    if ckpt.cv is not None:
        state.cv.theta_ref, state.cv.grad_sum, state.cv.n_at_refresh = ckpt.cv
