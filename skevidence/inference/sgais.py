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
from dataclasses import dataclass, field

import numpy as np
import torch

from ..models.base import Model, batch_size_of, take
from .annealing import ess, log_normalize, next_increment
from .control_variates import ControlVariate
from .kernels import (baoab, covariance_preconditioner, ghmc, isotropic_preconditioner,
                      ledoit_wolf_shrinkage, precision_preconditioner, sghmc)
from .reservoir import Reservoir
from .resampling import systematic_resample

__all__ = [
    "SGAISConfig", "SGAISState", "TRACE_FIELDS", "init", "update", "sghmc_move",
    "checkpoint", "rollback",
]

TRACE_FIELDS = ("n_seen", "log_evidence", "n_annealing_steps", "ess")

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

    @property
    def weights(self):
        return np.exp(self.log_W)


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights, an empty data store."""
    M = config.n_particles
    theta = model.sample_prior(M, generator, dtype=dtype, device=device)
    cv = None
    if config.control_variate is not None:
        R = 1 if config.control_variate == "shared" else M
        ref = theta.mean(0, keepdim=True) if R == 1 else theta.clone()
        cv = ControlVariate(theta_ref=ref, grad_sum=torch.zeros_like(ref))
    return SGAISState(
        theta=theta,
        log_W=np.full(M, -math.log(M)),
        generator=generator,
        reservoir=Reservoir(capacity=config.reservoir_size),
        cv=cv,
    )


def update(model, state, config, batch, move=None, callback=None):
    """Condition the particles on ``batch``, in chunks of ``config.batch_size``.

    ``move(model, state, config, chunk, lam)`` returns moved particles; the
    default is :func:`sghmc_move`. ``callback(state)`` runs after each chunk.
    """
    move = sghmc_move if move is None else move
    n = batch_size_of(batch)
    for start in range(0, n, config.batch_size):
        chunk = tuple(t[start : start + config.batch_size] for t in batch)
        _condition_on_chunk(model, state, config, chunk, move)
        if callback is not None:
            callback(state)
    return state


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
        if not np.all(np.isfinite(state.log_W)) or ess(state.log_W) < config.resample_threshold * M:
            _resample(state)
        state.theta = move(model, state, config, chunk, lam)
        _discard_diverged(state)
        loglik = _chunk_log_likelihood(model, state.theta, chunk)
    state.reservoir.append(chunk, state.generator)
    if state.cv is not None:
        state.cv.add_chunk(model, chunk)
    state.n_seen += batch_size_of(chunk)
    state.trace.append((state.n_seen, state.log_evidence, n_steps, ess(state.log_W)))


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
            f"(after {state.n_seen} observations); the model cannot explain "
            "these data, or the sampler diverged (try a smaller learning_rate)"
        )
    state.log_evidence += log_increment
    state.log_W = log_w - log_increment


def _resample(state):
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    index = systematic_resample(state.log_W, u)
    index_t = torch.as_tensor(index, device=state.theta.device)
    state.theta = state.theta[index_t]
    state.log_W = np.full_like(state.log_W, -math.log(state.log_W.shape[0]))
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
    if not ok.any():
        raise FloatingPointError(
            f"all particles diverged after {state.n_seen} observations; "
            "reduce learning_rate or increase n_burnin"
        )
    state.n_diverged += int((~ok).sum())
    state.log_W = log_normalize(np.where(ok, state.log_W, -np.inf))
    state.theta = torch.where(torch.as_tensor(ok, device=state.theta.device)[:, None],
                              state.theta, torch.zeros_like(state.theta))
    _resample(state)


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
    """Precision of the tempered posterior's Laplace approximation at the particles' mean.

    ``prior + lam * chunk + past`` curvature; the past data's term comes
    from the whole store while it is small, otherwise from a mini-batch of
    ``batch_size`` scaled to the data seen.
    """
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    mean = W @ state.theta
    precision = model.prior_precision(mean)
    if precision is None:
        precision = torch.zeros(mean.shape[0], mean.shape[0], dtype=mean.dtype,
                                device=mean.device)
    precision = precision + lam * model.fisher_information(mean, chunk)
    size = state.reservoir.size
    if size > 0:
        store = state.reservoir.data()
        if size > 2 * config.batch_size:
            idx = state.reservoir.sample_indices(config.batch_size, state.generator)
            past = (state.n_seen / config.batch_size) * model.fisher_information(
                mean, take(store, idx))
        else:
            past = (state.n_seen / size) * model.fisher_information(mean, store)
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
        return kernel(theta, grad, _n_moves(state, config), config.learning_rate,
                      config.momentum_decay, chol, generator)

    return _in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                          grad_log_density)


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
                      state.exact_step_size, len(state.trace),
                      (res.n_seen, res.size, buffers), cv)


def rollback(state, ckpt):
    """Restore ``state`` to ``ckpt`` in place."""
    state.theta, state.log_W = ckpt.theta, ckpt.log_W
    state.generator.set_state(ckpt.generator_state)
    state.n_seen, state.log_evidence = ckpt.n_seen, ckpt.log_evidence
    state.n_diverged, state.exact_step_size = ckpt.n_diverged, ckpt.exact_step_size
    del state.trace[ckpt.trace_len:]
    state.reservoir.n_seen, state.reservoir.size, state.reservoir.buffers = ckpt.reservoir
    if ckpt.cv is not None:
        state.cv.theta_ref, state.cv.grad_sum, state.cv.n_at_refresh = ckpt.cv
