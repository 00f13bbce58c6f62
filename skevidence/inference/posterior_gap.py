"""Is the particle cloud at the posterior? A check from a short optimisation.

For a near-Gaussian posterior in ``d`` dimensions, ``log p(mode) - log
p(theta)`` of a posterior draw is ``chi^2_d / 2``: mean ``d / 2``, standard
deviation ``sqrt(d / 2)``. :func:`posterior_gap` climbs the exact log
posterior (every stored observation) from the best particle with a few
dozen L-BFGS steps (:func:`maximize`) and returns ``log p(found) - E_W[log p(particles)]``. A
gap far above ``d / 2`` means the particles sit below the posterior's
bulk: the sampler has not reached it. An optimiser that stops short of the
mode only shrinks the gap, so the check errs on the side of silence.

A cloud collapsed near the mode has a gap near ``d / 2`` or below and
passes that check; :func:`spread_ratio` sees it instead.
"""

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ..models.batches import batch_size_of, row_blocks

__all__ = ["posterior_gap", "PosteriorGap", "gap_threshold", "spread_ratio", "maximize",
           "maximize_scaled", "Cloud", "cloud_on_posterior", "log_posterior_and_grad",
           "log_posterior"]


def gap_threshold(d, subsample_ratio=1.0):
    """Largest gap accepted for ``d`` parameters.

    ``d / 2 + 5 sqrt(d / 2)`` is five standard deviations of one draw's gap
    (the weighted mean over particles varies far less); the slack of
    ``0.1 d + 5`` nats covers non-Gaussian posteriors of small data
    (skewed logistic posteriors, the mixtures' bounded weights). When the
    log posterior comes from a bounded reservoir, a uniform subsample of
    ``1 / subsample_ratio`` of the data scaled up by ``subsample_ratio``,
    its mode is displaced from the true one by about ``subsample_ratio - 1``
    posterior covariances, and the expected gap grows to
    ``subsample_ratio * d / 2``: the Gaussian part scales with it.
    """
    return subsample_ratio * (d / 2 + 5 * math.sqrt(d / 2)) + 0.1 * d + 5


def log_posterior_and_grad(model, theta, blocks, scale):
    """Exact log posterior (up to the evidence) of ``theta [M, d]``, ``[M]``, and its gradient.

    From the model's ``log_likelihood_and_grad`` over the store's ``blocks``,
    which shares the work of the two (no autograd for the bundled models).
    """
    total, grad = model.log_prior(theta), model.grad_log_prior(theta)
    for block in blocks:
        log_lik, g = model.log_likelihood_and_grad(theta, block)
        total = total + scale * log_lik.to(total.dtype)
        grad = grad + scale * g.to(grad.dtype)
    return total, grad


def log_posterior(model, theta, blocks, scale=1.0):
    """:func:`log_posterior_and_grad` without the gradient, ``[M]``."""
    total = model.log_prior(theta)
    for block in blocks:
        total = total + scale * model.log_likelihood_sum(theta, block).to(total.dtype)
    return total


class PosteriorGap(NamedTuple):
    """The gap ``optimum - mean_log_p``, the log posterior at the optimum, ``E_W log p``."""

    gap: float
    optimum: float
    mean_log_p: float


@dataclass(frozen=True)
class Cloud:
    """The live particles, their weights, and the exact log posterior and its gradient there."""

    theta: torch.Tensor  # [M_live, d]
    W: torch.Tensor  # [M_live]
    log_p: torch.Tensor  # [M_live]
    grad: torch.Tensor  # [M_live, d]


def cloud_on_posterior(model, theta, W, store, n_seen):
    """The :class:`Cloud` of ``theta [M, d]`` (weights ``W``) on the stored data.

    One pass over the store serves both checks. ``store`` holds the
    observations (a uniform sample of the ``n_seen`` seen when the
    reservoir is bounded, whose log-likelihood is scaled up accordingly).
    In the particles' precision: the checks' verdicts rest on these sums,
    and a single-precision sum over many rows errs by a share of the rows'
    magnitudes that depends on the CPU's summation order.
    """
    scale = n_seen / max(batch_size_of(store), 1)
    live = W > 0
    theta = theta[live].detach()
    with torch.no_grad():
        log_p, grad = log_posterior_and_grad(model, theta, row_blocks(store, theta.shape[0]),
                                              scale)
    return Cloud(theta, W[live], log_p, grad)


def spread_ratio(model, theta, W, store, n_seen, cloud=None):
    """``(ratio, standard error)`` of the particles' spread against the posterior's.

    ``ratio = -E_W[(theta - mean) . grad log p(theta)] / d`` is about 1
    for posterior draws by Stein's identity ``E_p[(theta - c) . grad log
    p] = -d``, which holds for any density vanishing at its boundary
    (skewed or multimodal too); near a Gaussian mode it is the mean of
    ``(theta - mean)^T H (theta - mean) / d``, below 1 for a cloud narrower
    than the posterior. The standard error is the terms' weighted spread
    over the root of the weights' ESS. One gradient per particle on the
    stored data (scaled as in :func:`posterior_gap`; ``cloud``, from
    :func:`cloud_on_posterior`, if already computed); NaNs when one is not finite.
    """
    if cloud is None:
        cloud = cloud_on_posterior(model, theta, W, store, n_seen)
    theta, W = cloud.theta, cloud.W
    with torch.no_grad():
        d = theta.shape[1]
        terms = -((theta - W @ theta) * cloud.grad).sum(1) / d
        if not bool(torch.isfinite(terms).all()):
            return math.nan, math.nan
        ratio = float(W @ terms)
        sd = float(W @ (terms - ratio) ** 2) ** 0.5
        return ratio, sd * float((W ** 2).sum()) ** 0.5


def posterior_gap(model, theta, W, store, n_seen, n_steps=30, cloud=None):
    """The :class:`PosteriorGap` of the particles ``theta [M, d]``.

    ``W`` are normalised weights ``[M]``; ``store`` the stored observations
    (a uniform sample of the ``n_seen`` seen when the reservoir is
    bounded, whose log-likelihood is scaled up accordingly); ``cloud``, from
    :func:`cloud_on_posterior`, if already computed. The L-BFGS
    runs in coordinates scaled by the particles' weighted standard
    deviations, so that its first steps have the posterior's scale.
    """
    if cloud is None:
        cloud = cloud_on_posterior(model, theta, W, store, n_seen)
    scale = n_seen / max(batch_size_of(store), 1)
    theta, W, log_p = cloud.theta, cloud.W, cloud.log_p
    with torch.no_grad():
        mean_log_p = float((W * log_p).sum())
        finite = torch.where(torch.isfinite(log_p), log_p, torch.full_like(log_p, -math.inf))
        k = int(torch.argmax(finite))
        best = theta[k]
        mean = W @ theta
        var = W @ (theta - mean) ** 2
        s = var.sqrt().clamp_min(1e-8 * (1 + float(var.max().sqrt())))

    # Every step of the climb evaluates the same rows: the model's prepared
    # batches hold what it can compute from them once (label sums, Gram matrices).
    blocks = [model.prepare_batch(block) for block in row_blocks(store, 1)]

    def log_p_and_grad(point):
        with torch.no_grad():
            value, grad = log_posterior_and_grad(model, point[None], blocks, scale)
        return float(value[0]), grad[0]

    start = float(log_p[k])
    _, found = maximize_scaled(log_p_and_grad, best, s, n_steps)
    optimum = max(start, found) if math.isfinite(found) else start
    return PosteriorGap(optimum - mean_log_p, optimum, mean_log_p)


def maximize_scaled(log_p_and_grad, start, scale, n_steps):
    """``(point, value)``: :func:`maximize` of ``log_p_and_grad(point) -> (value, gradient)``
    from ``start [d]``, in coordinates scaled by ``scale [d]`` (posterior standard
    deviations, so that its first steps have the posterior's scale)."""

    def objective(z):
        value, grad = log_p_and_grad(start + scale * z)
        return value, grad * scale

    z, value = maximize(objective, torch.zeros_like(start), n_steps)
    return start + scale * z, value


def maximize(objective, z, n_steps, history=10):
    """``(z, value)`` after at most ``n_steps`` L-BFGS steps uphill from ``z``.

    ``objective(z)`` returns ``(value, gradient)``. Each step takes the
    quasi-Newton direction from the last ``history`` steps' curvature and
    halves it until the value rises enough (Armijo); the first step is
    scaled to a unit gradient sum, as in torch's L-BFGS. Written out rather
    than ``torch.optim.LBFGS`` because any torch optimiser imports
    ``torch._dynamo`` on first use, a cost far above this short check's
    that every process's first fit would pay. A point outside the finite numbers counts as
    no rise, so the climb never leaves them.
    """
    value, grad = objective(z)
    if not math.isfinite(value):
        return z, value
    pairs = []  # (s, y) of the last steps, y of the gradient of -objective
    n_evals, max_evals = 1, int(1.25 * n_steps) + 1
    for _ in range(n_steps):
        direction = _two_loop(grad, pairs)
        if not pairs:
            direction = direction * min(1.0, 1.0 / max(float(grad.abs().sum()), 1e-300))
        slope = float(grad @ direction)
        if not slope > 0:  # not uphill: restart from the gradient
            pairs, direction, slope = [], grad, float(grad @ grad)
        step, accepted = 1.0, None
        while n_evals < max_evals and accepted is None:
            candidate = z + step * direction
            new_value, new_grad = objective(candidate)
            n_evals += 1
            if math.isfinite(new_value) and new_value >= value + 1e-4 * step * slope:
                accepted = candidate, new_value, new_grad
            step *= 0.5
        if accepted is None:
            break
        candidate, new_value, new_grad = accepted
        s_k, y_k = candidate - z, grad - new_grad
        if float(s_k @ y_k) > 1e-10:  # keep only pairs with positive curvature
            pairs = (pairs + [(s_k, y_k)])[-history:]
        z, value, grad = candidate, new_value, new_grad
        if float(grad.abs().max()) < 1e-7:
            break
    return z, value


def _two_loop(grad, pairs):
    """The L-BFGS ascent direction ``H grad`` from the stored ``(s, y)`` pairs."""
    q, alphas = grad.clone(), []
    for s_k, y_k in reversed(pairs):
        alpha = float(s_k @ q) / float(y_k @ s_k)
        q = q - alpha * y_k
        alphas.append(alpha)
    if pairs:
        s_k, y_k = pairs[-1]
        q = q * (float(s_k @ y_k) / float(y_k @ y_k))
    for (s_k, y_k), alpha in zip(pairs, reversed(alphas)):
        beta = float(y_k @ q) / float(y_k @ s_k)
        q = q + (alpha - beta) * s_k
    return q
