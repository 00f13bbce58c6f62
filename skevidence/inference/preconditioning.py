"""Preconditioners of the SGAIS moves: the particles' covariance, the model's curvature
(Laplace precision), or the model's diagonal scale."""

import torch

from ..models.base import has_fisher_information, has_relabellings
from ..models.batches import batch_size_of, row_blocks, take
from .records import PastFisher
from .kernels import (covariance_preconditioner, isotropic_preconditioner,
                      precision_preconditioner)

__all__ = ["preconditioner", "uses_curvature", "laplace_precision", "past_curvature",
           "with_chunk_fisher",
           "in_preconditioned_coordinates"]


def preconditioner(model, state, config, chunk, lam):
    d = state.theta.shape[1]
    if uses_curvature(model, state, config):
        return precision_preconditioner(laplace_precision(model, state, config, chunk, lam))
    if config.precondition in ("covariance", "curvature"):  # curvature unknown: covariance
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        return covariance_preconditioner(state.theta, W)
    n_eff = state.n_seen + lam * batch_size_of(chunk)
    return isotropic_preconditioner(d, n_eff, state.theta)


def uses_curvature(model, state, config):
    """Whether the moves' metric is the curvature at the particles' mean (a mixture's
    mean over relabelled particles lies near none of them: its covariance instead)."""
    M, d = state.theta.shape
    wanted = config.precondition == "curvature" or (
        config.precondition == "covariance" and M < config.curvature_ratio * d)
    return wanted and has_fisher_information(model) and not has_relabellings(model)


def laplace_precision(model, state, config, chunk, lam):
    """Precision of the tempered posterior's Laplace approximation, averaged over the particles.

    ``prior + lam * chunk + past`` curvature, each the particles' weighted
    mean (``Model.expected_fisher_information``); the past data's term is
    :func:`past_curvature`.
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
    if state.reservoir.size > 0:
        precision = precision + past_curvature(model, state, config, theta, W)
    return 0.5 * (precision + precision.T)


def past_curvature(model, state, config, theta, W):
    """The past data's summed Fisher information, for the metric.

    The state's sum over the data seen (``state.past_fisher``, see
    :func:`with_chunk_fisher`) where it keeps one; otherwise the particles'
    weighted mean over the whole store while it is small, and over a
    mini-batch of ``batch_size`` scaled to the data seen after. A mini-batch
    misses the few rows of a rare one-hot category, or weighs them
    ``n / batch_size``-fold, and with them the curvature of their
    coefficient: the metric's scale there is then off by orders of
    magnitude, and the moves stall.
    """
    if state.past_fisher is not None:
        return state.past_fisher.total.to(theta.dtype)
    store, size = state.reservoir.data(), state.reservoir.size
    if size > 2 * config.batch_size:
        idx = state.reservoir.sample_indices(config.batch_size, state.generator)
        return (state.n_seen / idx.shape[0]) * model.expected_fisher_information(
            theta, W, take(store, idx))
    return (state.n_seen / size) * model.expected_fisher_information(theta, W, store)


def in_preconditioned_coordinates(model, state, config, chunk, lam, run, target,
                                   with_log_density=False, dtype=None):
    """``run(theta, target, chol)`` with the preconditioner of ``config``.

    With ``precondition="model"`` the kernel runs in the coordinates
    ``theta / s``: a diagonal preconditioner ``diag(s^2)`` from the
    model's ``posterior_scale``, computed once per move and held fixed
    during its steps. The Metropolis-adjusted moves (``with_log_density``)
    share it across the particles (``Model.shared_posterior_scale``; a
    mixture's up to relabelling, so that particles in different
    relabelled modes each move on their components' scale, which one
    covariance across the cloud cannot give): a metric that follows the
    position of the particle it moves makes the move leave the
    posterior, and the evidence comes out too high. The
    stochastic-gradient moves, not adjusted and biased by their step
    anyway, keep each particle's own scale: a shared one fits the
    particles of a cloud spread over a mixture's modes worse, and raises
    the evidence's error (docs: benchmarks, Gaussian mixture).
    ``dtype`` (default: the particles') is the one ``run`` works in; the
    result comes back in the particles' dtype.
    """
    like = state.theta
    dtype = like.dtype if dtype is None else dtype
    if config.precondition != "model":
        chol = preconditioner(model, state, config, chunk, lam).to(dtype)
        return run(like.to(dtype), target, chol).to(like.dtype)
    n_eff = state.n_seen + lam * batch_size_of(chunk)
    if with_log_density:
        live = torch.as_tensor(state.weights > 0, device=like.device)
        scale = model.shared_posterior_scale(like, live, n_eff).to(dtype)
    else:
        scale = model.posterior_scale(like, n_eff).to(dtype)
    d = like.shape[1]
    eye = torch.eye(d, dtype=dtype, device=like.device)
    if with_log_density:
        def scaled(z):
            log_p, g = target(z * scale)
            return log_p, g * scale
    else:
        def scaled(z):
            return target(z * scale) * scale
    return (run(like.to(dtype) / scale, scaled, eye) * scale).to(like.dtype)


def with_chunk_fisher(model, state, config, chunk):
    """``state.past_fisher`` with ``chunk``'s Fisher information at the particles added.

    Kept where the moves' metric is the curvature, from the first chunk on
    (a sum that missed chunks stays None): each chunk's term at the
    particles that condition on it, and every term again, at the particles,
    in one pass over the store each time the data seen double. A row's
    information can change with the parameters (a logistic model's), and the
    particles of a few data lie far from those of many; between passes the
    oldest term dates from half the data. Each pass costs ``d^2`` per row,
    about as much again as the chunks' terms together.
    """
    if state.n_seen > 0 and state.past_fisher is None:
        return None
    if not uses_curvature(model, state, config):
        return None
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    live = W > 0
    theta, W = state.theta[live], W[live]
    F = model.expected_fisher_information(theta, W, chunk)
    n_after = state.n_seen + batch_size_of(chunk)
    past = state.past_fisher
    if past is None:
        return PastFisher(F, n_after)
    if n_after < 2 * past.n_at_pass or state.reservoir.size == 0:  # (a store kept elsewhere)
        return PastFisher(past.total + F, past.n_at_pass)
    store = sum(model.expected_fisher_information(theta, W, block)
                for block in row_blocks(state.reservoir.data(), theta.shape[0]))
    return PastFisher(store * (state.n_seen / state.reservoir.size) + F, n_after)
