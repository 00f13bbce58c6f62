"""Nested sampling (NS), a baseline for SGAIS (:ref:`methods`).

Thesis Algorithm 5 (Skilling 2006) with ``n_live = n_particles`` live
points, batched: each iteration replaces the ``k = n_live / 8`` points of
lowest likelihood by copies of survivors moved by constrained HMC. The
prior mass shrinks by ``exp(-1 / n)`` per removal, ``n`` the live count at
that removal (as in dynamic nested sampling); ``log Z`` sums the dead
points' ``L_i (X_{i-1} - X_i)`` and the live remainder ``X_end * mean L``,
with standard error ``sqrt(H / n_live)`` (Skilling 2006, sec. 9).

:func:`constrained_hmc` samples the prior restricted to ``L > L*``: leapfrog
steps, in coordinates whitened by the live points' covariance, whose
momentum is reflected off the likelihood contour where a point leaves it
(``v <- v - 2 n (n . v)``; thesis eq. 3.28), between the two half kicks so
that the trajectory is reversible; a trajectory ending outside is
rejected and the prior's energy error Metropolis-corrected.

The particles after a fit are the dead and live points resampled to
``n_particles`` by ``L_i w_i / Z`` (thesis eq. 3.27). Not online:
:func:`update` reruns from the prior on all the data seen.
"""

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from ..models.batches import batch_size_of
from . import islands
from .engine import Engine
from .kernels import covariance_preconditioner
from .reservoir import Reservoir
from .resampling import systematic_resample
from .sgais import SGAISState, record_chunk, successor

__all__ = ["init", "update", "nested_sampling", "constrained_hmc",
           "NestedResult", "set_posterior_particles", "n_trajectories"]


@dataclass
class NestedResult:
    """What one run of nested sampling returns."""

    log_evidence: float
    information: float  # H, nats
    mean_live: float  # mean number of live points over the removals
    theta: torch.Tensor  # [K, d] dead and final live points
    log_weights: np.ndarray  # [K] normalised posterior log-weights
    n_iterations: int
    acceptance: float  # mean acceptance of the constrained trajectories
    step_size: float  # adapted, to carry over to the next run
    n_evaluations: int = 0  # likelihood evaluations of the moves

    @property
    def log_evidence_std(self):
        return math.sqrt(max(self.information, 0.0) / max(self.mean_live, 1.0))


def _reflect(p, normal):
    """Momentum mirrored at the plane orthogonal to ``normal`` (rows)."""
    norm2 = (normal**2).sum(1, keepdim=True).clamp_min(1e-300)
    return p - 2.0 * (p * normal).sum(1, keepdim=True) / norm2 * normal


def constrained_hmc(z, log_l_min, prior_and_grad, loglik_and_grad, n_trajectories,
                    step_size, generator, trajectory_steps=8):
    """Move points ``z [k, d]`` (whitened) under the prior restricted to ``L > log_l_min``.

    Each trajectory takes ``trajectory_steps`` leapfrog steps: fewer leave new
    points correlated with their survivors, so the evidence spreads beyond
    ``sqrt(H / n_live)`` (docs: benchmarks, The error bar).

    ``prior_and_grad(z)`` and ``loglik_and_grad(z)`` return the log density
    ``[k]`` and gradient ``[k, d]`` in the whitened coordinates. Returns the
    moved points, their log-likelihoods and the mean acceptance rate.
    """
    log_p, g = prior_and_grad(z)
    log_l, _ = loglik_and_grad(z)
    half = 0.5 * step_size
    accepted = 0.0
    for _ in range(n_trajectories):
        p0 = torch.randn(z.shape, generator=generator, dtype=z.dtype, device=z.device)
        x, p, gx = z, p0 + half * g, g
        for step in range(trajectory_steps):
            x = x + step_size * p
            log_px, gx = prior_and_grad(x)
            log_lx, gl = loglik_and_grad(x)
            if step < trajectory_steps - 1:
                # Half kick, reflect where outside, half kick: a palindrome
                # at every point, so the trajectory is reversible.
                p = p + half * gx
                outside = ~(log_lx > log_l_min)
                p = torch.where(outside[:, None], _reflect(p, gl), p)
                p = p + half * gx
        p = p + half * gx
        log_ratio = log_px - log_p - 0.5 * (p**2).sum(1) + 0.5 * (p0**2).sum(1)
        log_ratio = torch.nan_to_num(log_ratio, nan=-math.inf)
        log_u = torch.log(torch.rand(z.shape[0], generator=generator, dtype=z.dtype,
                                     device=z.device))
        accept = (log_u < log_ratio) & (log_lx > log_l_min) & torch.isfinite(log_lx)
        z = torch.where(accept[:, None], x, z)
        log_p = torch.where(accept, log_px, log_p)
        g = torch.where(accept[:, None], gx, g)
        log_l = torch.where(accept, log_lx, log_l)
        accepted += float(accept.to(z.dtype).mean())
    return z, log_l, accepted / max(n_trajectories, 1)


def nested_sampling(model, data, live, generator, n_trajectories, step_size=0.5,
                    log_prior_and_grad=None, replace_fraction=1 / 8, dlogz=0.01,
                    target_acceptance=0.6, max_iterations=20_000):
    """Nested sampling of ``log p(data | theta)`` from live points ``live [M, d]``.

    ``live`` must be independent draws of the "prior" whose log density
    (and gradient) ``log_prior_and_grad`` gives (default: the model's prior).
    Each iteration replaces ``replace_fraction`` of the live points (at least
    one) and adapts the step size toward an acceptance of ``target_acceptance``;
    the run stops where the live points can add at most ``dlogz`` to ``log Z``,
    or after ``max_iterations`` (a run that needs more, from a prior-data
    conflict, warns instead of hanging).
    Returns a :class:`NestedResult`.
    """
    if log_prior_and_grad is None:
        def log_prior_and_grad(theta):
            return model.log_prior(theta), model.grad_log_prior(theta)

    def log_lik_and_grad(theta):
        log_l, g = model.log_likelihood_and_grad(theta, data)
        return torch.nan_to_num(log_l, nan=-math.inf), g

    M = live.shape[0]
    k = max(1, int(M * replace_fraction))
    log_l = log_lik_and_grad(live)[0]
    if not bool(torch.isfinite(log_l).any()):
        raise FloatingPointError(
            "every live point has zero likelihood: the data are on a scale the prior "
            "cannot explain (standardise them, e.g. StandardScaler, or widen the prior)")
    dead_theta, dead_log_l, dead_log_width = [], [], []
    log_x = 0.0
    shrink = -1.0 / (M - np.arange(k))  # E log t at each of the k removals
    log_z = -math.inf
    n_iter, acceptance_sum, live_sum, n_removed = 0, 0.0, 0.0, 0
    while True:
        order = torch.argsort(log_l)
        worst = order[:k]
        worst_l = log_l[worst].to(torch.float64).cpu().numpy()
        log_x_after = log_x + np.cumsum(shrink)
        log_x_before = np.concatenate([[log_x], log_x_after[:-1]])
        # log(X_before - X_after) = log X_before + log(1 - e^{shrink})
        log_width = log_x_before + np.log(-np.expm1(shrink))
        dead_theta.append(live[worst])
        dead_log_l.append(worst_l)
        dead_log_width.append(log_width)
        log_z = float(np.logaddexp(log_z, np.logaddexp.reduce(worst_l + log_width)))
        live_sum += float((M - np.arange(k)).sum())
        n_removed += k
        log_x = float(log_x_after[-1])
        n_iter += 1
        survivors = order[k:]
        if (_converged(log_z, log_x + float(log_l[survivors].max()), dlogz)
                or n_iter >= max_iterations):
            break
        # New points: copies of random survivors, moved under L > L* (the
        # k-th lowest likelihood, the last removed).
        pick = torch.randint(survivors.shape[0], (k,), generator=generator,
                             device=live.device)
        start = live[survivors[pick]]
        new, new_l, acc = _move_in_whitened(live[survivors], start, float(worst_l[-1]),
                                            log_prior_and_grad, log_lik_and_grad,
                                            n_trajectories, step_size, generator)
        acceptance_sum += acc
        step_size = min(max(step_size * math.exp(2.0 * (acc - target_acceptance)), 1e-3), 3.0)
        live = torch.cat([live[survivors], new])
        log_l = torch.cat([log_l[survivors], new_l])
    if n_iter >= max_iterations:
        warnings.warn(f"nested sampling stopped after {max_iterations} iterations before the "
                      "live points' share of the evidence fell below the tolerance; the "
                      "estimate includes their remainder but may be off", ConvergenceWarning,
                      stacklevel=2)
    # The live points' remainder: each holds X_end / n of the mass.
    remaining = order[k:]
    rem_l = log_l[remaining].to(torch.float64).cpu().numpy()
    rem_width = np.full(rem_l.shape[0], log_x - math.log(rem_l.shape[0]))
    theta = torch.cat(dead_theta + [live[remaining]])
    all_log_l = np.concatenate(dead_log_l + [rem_l])
    log_w = np.concatenate(dead_log_width + [rem_width]) + all_log_l
    log_z = float(np.logaddexp.reduce(log_w))
    log_post = log_w - log_z
    post = np.exp(log_post)
    information = float(np.sum(post * np.where(post > 0, all_log_l, 0.0)) - log_z)
    return NestedResult(log_evidence=log_z, information=information,
                        mean_live=live_sum / max(n_removed, 1), theta=theta,
                        log_weights=log_post, n_iterations=n_iter,
                        acceptance=acceptance_sum / max(n_iter - 1, 1), step_size=step_size)


def _converged(log_z, log_live_bound, dlogz):
    """Whether the live points can add less than ``dlogz`` to ``log Z``."""
    if not np.isfinite(log_z):
        return False
    return float(np.logaddexp(log_z, log_live_bound)) - log_z < dlogz


def _move_in_whitened(reference, start, log_l_min, log_prior_and_grad, log_lik_and_grad,
                      n_trajectories, step_size, generator):
    """:func:`constrained_hmc` in coordinates whitened by ``reference``'s covariance."""
    W = torch.full((reference.shape[0],), 1.0 / reference.shape[0], dtype=reference.dtype,
                   device=reference.device)
    chol = covariance_preconditioner(reference, W)
    if chol.dim() == 1:
        chol = torch.diag(chol)
    mean = W @ reference

    def to_theta(z):
        return mean + z @ chol.T

    def in_z(fn):
        def wrapped(z):
            value, grad = fn(to_theta(z))
            return value, grad @ chol
        return wrapped

    z0 = torch.linalg.solve_triangular(chol, (start - mean).T, upper=False).T
    z, log_l, acc = constrained_hmc(z0, log_l_min, in_z(log_prior_and_grad),
                                    in_z(log_lik_and_grad), n_trajectories, step_size, generator)
    return to_theta(z), log_l, acc


# -- the engine's two functions --------------------------------------------------


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Prior draws with equal weights, an empty data store (the run happens in update)."""
    M = config.n_particles
    return SGAISState(
        theta=model.sample_prior(M, generator, dtype=dtype, device=device),
        log_W=np.full(M, -math.log(M)),
        generator=generator,
        reservoir=Reservoir(capacity=None),
        cv=None,
        island_starts=islands.island_starts(M, 1),
    )


def update(model, state, config, batch, move=None, callback=None):
    """Rerun nested sampling from the prior on the data seen so far plus ``batch``.

    The state's ``log_evidence_var`` holds ``H / n_live`` and its weights
    are uniform (the particles are resampled), so its ``log_evidence_std``
    is the NS error ``sqrt(H / n_live)``. ``move`` is not used. Returns the
    new state; ``state`` is left as it was.
    """
    state = successor(state)
    state = replace(state, reservoir=state.reservoir.append(batch, state.generator))
    data = state.reservoir.data()
    M, _ = state.theta.shape
    live = model.sample_prior(M, state.generator, dtype=state.theta.dtype,
                              device=state.theta.device)
    result = nested_sampling(model, data, live, state.generator,
                             n_trajectories=n_trajectories(config, state.theta.shape[1]),
                             step_size=state.exact_step_size)
    state = set_posterior_particles(state, result)
    state = replace(state, n_seen=batch_size_of(data), log_evidence=result.log_evidence,
                    log_evidence_var=result.log_evidence_std**2,
                    exact_step_size=result.step_size)
    state = record_chunk(state, result.n_iterations, ess_value=float(M),
                         acceptance=result.acceptance)
    if callback is not None:
        callback(state, 1.0, 0)
    return state


def n_trajectories(config, n_params):
    """Constrained HMC trajectories per new live point: ``max(n_burnin, n_params) / 2``.

    A new point starts as a copy of a survivor and must decorrelate from it
    in every direction; too few trajectories for the dimension leave it
    correlated, and the evidence then errs low beyond its stated error, so
    the count grows with the number of parameters (see the benchmarks page).
    """
    return max(1, max(config.n_burnin, n_params) // 2)


def set_posterior_particles(state, result):
    """The state whose particles are ``n_particles`` equally weighted draws from the NS
    posterior samples."""
    M = state.theta.shape[0]
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    index = systematic_resample(result.log_weights, u, M)
    return replace(state, theta=result.theta[torch.as_tensor(index, device=result.theta.device)],
                   log_W=np.full(M, -math.log(M)))


ENGINE = Engine("nested", init, update, keeps_every_observation=True, refits_from_prior=True)
