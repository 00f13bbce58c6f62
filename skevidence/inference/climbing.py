"""Climbs to the posterior's modes, for the importance-sampling check (``importance.py``).

Newton's method in the metric of the posterior's curvature takes a point to
the mode of its basin in a few passes over the store (:func:`climb`);
where the curvature is not positive definite where it starts, L-BFGS leads
uphill to where it is (:func:`ascended`). A mixture's posterior can hold
modes that are not relabellings of one another, and the particles that the
annealing left on each are told apart by where they climb
(:func:`modes_held`), all at once.
"""

import math

import torch

from ..models.batches import SUM_ROWS, row_blocks
from . import relabelling
from .curvature import curvature_near_mode
from .posterior_gap import log_posterior_and_grad, maximize_scaled
from .proposal import Proposal

__all__ = ["climb", "ascended", "newton", "modes_held", "log_posterior_on", "within_draws"]

# The modes found cover the particles where at most CLOUD_OUTSIDE of their
# weight, climbed, lies beyond the 1 - 1e-4 quantile of the squared Mahalanobis
# distance of posterior draws (chi-square, d degrees of freedom) from every one
# of them: a mode missed puts a whole group there; a healthy cloud about 1e-4
# of its weight.
CLOUD_OUTSIDE = 0.05
# Newton steps that predict a rise below this many nats go untested on a
# single-precision store, whose log density errs by a part of that at 1e6 rows.
SINGLE_UNCHECKED_RISE = 1.0


def climb(model, theta, chol, store, dtype, max_climb=3.0, max_curvatures=8):
    """``(mode, chol)``: Newton from ``theta [d]`` to the mode, and the Cholesky factor of
    the posterior precision there; None where the curvature is not positive definite or
    the climb does not settle within ``max_curvatures`` curvatures. ``chol``: the factor at
    ``theta``, if already taken (or None). A climb longer than ``max_climb`` posterior
    standard deviations takes the curvature again where it arrived."""
    log_p_and_grad = log_posterior_on(model, store, dtype)
    unchecked = SINGLE_UNCHECKED_RISE if dtype == torch.float32 else 0.0
    # The curvature at a start near the mode (the particles' mean) serves the
    # climb and the proposal; a climb that goes further takes it again where it
    # arrived.
    for _ in range(max_curvatures):
        if chol is None:
            chol = curvature_near_mode(model, theta, store, dtype)
        climb = None if chol is None else newton(log_p_and_grad, theta, chol, unchecked)
        if climb is None:
            return None
        mode, converged = climb
        moved = float((chol.T @ (mode - theta)).square().sum()) ** 0.5
        theta = mode
        if converged and moved <= max_climb:
            return mode, chol
        chol = None
    return None


def ascended(model, theta, scale, store, dtype, n_steps=100):
    """``theta [d]`` moved uphill by L-BFGS on the posterior of ``store``, in coordinates
    scaled by ``scale [d]`` (the particles' spread; unit coordinates for a start point
    alone).

    Newton's method needs a positive definite curvature where it starts; at
    the mean of particles that lag a skewed posterior or sit between
    configurations (a mixture's light component) it often is not, while
    the gradient alone leads uphill to where it is.
    """
    log_p_and_grad = log_posterior_on(model, store, dtype)
    if not bool((scale > 0).any()):
        scale = torch.ones_like(theta)
    scale = scale.clamp_min(1e-8 * float(scale.max()))
    point, _ = maximize_scaled(lambda x: _float64(*log_p_and_grad(x)), theta, scale, n_steps)
    return point


def log_posterior_on(model, store, dtype, double_rows=65536):
    """``theta [d] -> (log p, grad)`` of the posterior on ``store``, in double precision.

    A double-precision store is summed in blocks of ``double_rows`` rows: each
    block is a model call, whose fixed cost dominates the climbs' evaluations
    over a large store in smaller blocks."""
    # A single-precision store in blocks of at most SUM_ROWS rows, each summed in
    # the store's dtype and added in double: one single-precision sum over many rows
    # would err by several posterior standard deviations in the gradient at the
    # mode, a difference of two large sums.
    rows = double_rows if dtype == torch.float64 else SUM_ROWS
    blocks = [model.prepare_batch(block) for block in row_blocks(store, 1, rows)]

    def log_p_and_grad(theta):
        point = theta.to(dtype)[None]
        log_p, grad = model.log_prior(point).double(), model.grad_log_prior(point).double()
        for block in blocks:
            log_lik, g = model.log_likelihood_and_grad(point, block)
            log_p, grad = log_p + log_lik.double(), grad + g.double()
        return log_p, grad

    return log_p_and_grad


def modes_held(model, mode, chol, aligned, weights, maps, store, dtype, starts=None,
                max_modes=4):
    """``(proposal, covered)``: the :class:`Proposal` over the modes that the particles
    and ``starts`` climb to, ``mode`` (with its factor ``chol``) first, each weighted by
    its Laplace mass; ``covered``: whether at most CLOUD_OUTSIDE of the particles'
    weight lies beyond the reach of posterior draws around every one of them.

    Particles on two modes that are not relabellings of one another lie within reach
    of posterior draws around either (the chi-square's quantile in d dimensions is
    wide), so they are told apart by where they climb (:func:`_climbed_together`): one
    on a mode ends within a posterior standard deviation of it, in the metric of the
    curvature there and the relabelling that brings it nearest. The best point that
    reached no mode found so far climbs on by Newton's method to another, at most
    ``max_modes`` in all.
    """
    # Resampled particles repeat: each distinct one climbs once, with their weight.
    points, copy_of = torch.unique(aligned[weights > 0], dim=0, return_inverse=True)
    point_weights = torch.zeros(points.shape[0], dtype=weights.dtype, device=weights.device)
    point_weights.index_add_(0, copy_of, weights[weights > 0])
    n_particles = points.shape[0]
    if starts is not None:
        points = torch.cat([points, relabelling.aligned(starts.to(points), mode, maps)])
    points, log_p = _climbed_together(model, points, chol, store, dtype)
    modes, chols = [mode], [chol]
    left = ~_near(points, mode, chol, maps)
    for _ in range(2 * max_modes):  # each pass settles at least the best point left
        if not bool(left.any()) or len(modes) == max_modes:
            break
        best = int(torch.where(left, log_p, torch.full_like(log_p, -math.inf)).argmax())
        left[best] = False
        climbed = climb(model, points[best], None, store, dtype)
        if climbed is None:
            continue
        # The curvature at the mode itself, for its t and its Laplace mass (the
        # climb's may be from where it started).
        found, chol_found = climbed[0], curvature_near_mode(model, climbed[0], store, dtype)
        if chol_found is None:
            continue
        if not any(bool(_near(found[None], m, L, maps)[0]) for m, L in zip(modes, chols)):
            modes.append(found)
            chols.append(chol_found)
        left &= ~_near(points, found, chol_found, maps)
    particles = points[:n_particles]
    reached = torch.stack([within_draws(relabelling.aligned(particles, m, maps) - m, L)
                           for m, L in zip(modes, chols)], 1)  # [particles, modes]
    outside = float(point_weights[~reached.any(1)].sum())
    covered = outside <= CLOUD_OUTSIDE * float(weights.sum())
    if len(modes) == 1:
        return Proposal.at(mode, chol), covered
    # The first mode's curvature at the mode itself too: the climb's may be from
    # where it started, and the Laplace masses compare the modes' curvatures.
    at_mode = curvature_near_mode(model, mode, store, dtype)
    chols[0] = chol if at_mode is None else at_mode
    return _weighed_by_laplace(model, torch.stack(modes), torch.stack(chols), store,
                               dtype), covered


def _weighed_by_laplace(model, modes, chols, store, dtype):
    """The :class:`Proposal` over ``modes [J, d]``, each weighted by its Laplace mass
    ``p(mode) / |L|`` (``chols [J, d, d]``: the precisions' Cholesky factors)."""
    log_p_and_grad = log_posterior_on(model, store, dtype)
    log_mass = torch.tensor([_float64(*log_p_and_grad(m))[0] for m in modes], dtype=modes.dtype,
                            device=modes.device)
    log_mass = log_mass - torch.log(torch.diagonal(chols, dim1=1, dim2=2)).sum(1)
    return Proposal(modes, chols, torch.log_softmax(log_mass, 0))


def _near(points, mode, chol, maps):
    """``[P]`` bool: which ``points`` lie within a posterior standard deviation of ``mode``
    (``||(point - mode) L||^2 <= 1`` in the metric of ``chol``), each in the relabelling
    nearest it."""
    offsets = relabelling.aligned(points, mode, maps) - mode
    return (offsets @ chol).square().sum(-1) <= 1.0


def _climbed_together(model, points, chol, store, dtype, max_steps=30, converged_rise=0.005):
    """``(points, log_p)``: ``points [P, d]`` moved uphill by Newton steps in the fixed
    metric of ``chol``, each halved until it climbs (as :func:`newton`), all at once: one
    pass over the store per evaluation for them all. Each ends near the mode of its
    basin, and stops where its step predicts a rise below ``converged_rise`` nats."""
    blocks = row_blocks(store, points.shape[0])

    def log_p_and_grad(x):
        log_p, grad = log_posterior_and_grad(model, x.to(dtype), blocks, 1.0)
        return log_p.to(torch.float64), grad.to(torch.float64)

    points = points.to(torch.float64).clone()
    log_p, grad = log_p_and_grad(points)
    log_p = torch.where(torch.isfinite(log_p), log_p, torch.full_like(log_p, -math.inf))
    for _ in range(max_steps):
        step = torch.cholesky_solve(grad.T, chol).T
        climbing = (0.5 * (grad * step).sum(1) >= converged_rise) & torch.isfinite(log_p)
        if not bool(climbing.any()):
            break
        for _ in range(8):
            idx = climbing.nonzero()[:, 0]
            if idx.numel() == 0:
                break
            new_log_p, new_grad = log_p_and_grad(points[idx] + step[idx])
            rose = torch.isfinite(new_log_p) & (new_log_p >= log_p[idx])
            up = idx[rose]
            points[up] = points[up] + step[up]
            log_p[up], grad[up] = new_log_p[rose], new_grad[rose]
            climbing[up] = False
            step = 0.5 * step
    return points, log_p


def within_draws(offsets, chol):
    """Which ``offsets [..., d]`` from a point lie where posterior draws around it go:
    within the chi-square's 1 - 1e-4 quantile in the metric of the curvature
    ``chol chol^T`` (the squared Mahalanobis distance ``||offset L||^2``)."""
    return (offsets @ chol).square().sum(-1) <= _chi2_quantile(chol.shape[0])


def _chi2_quantile(d):
    """The 1 - 1e-4 quantile of the chi-square with ``d`` degrees of freedom (Wilson &
    Hilferty 1931: within 1% from d = 3 on)."""
    z = 3.719  # the standard normal's 1 - 1e-4 quantile
    c = 2.0 / (9.0 * d)
    return d * (1.0 - c + z * math.sqrt(c)) ** 3


def newton(log_p_and_grad, theta, chol, unchecked, max_steps=10, converged_rise=0.005):
    """``(theta, converged)`` after Newton steps with the fixed curvature ``chol chol^T``.

    A step whose Newton decrement (the rise it predicts, in nats) is below
    ``unchecked`` is taken whole: near the mode a single-precision log density
    cannot tell a rise of hundredths. Others are halved until they climb: in
    double precision all of them, as a curvature that misses part of a skewed
    posterior's (a mixture whose smallest component holds a small share of
    the rows) makes steps of a predicted half nat overshoot, and untested
    they go back and forth for dozens of steps. Converged within ``max_steps``: the
    last step predicted a rise below ``converged_rise`` nats (the mode within a tenth
    of a posterior standard deviation; the draws' weights lose about 1% of their ESS
    to that).
    """
    log_p, grad = _float64(*log_p_and_grad(theta))
    if not math.isfinite(log_p):
        return None
    for _ in range(max_steps):
        step = torch.cholesky_solve(grad[:, None], chol)[:, 0]
        rise = 0.5 * float(grad @ step)
        if rise < converged_rise:
            return theta, True
        for _ in range(8):
            new_log_p, new_grad = _float64(*log_p_and_grad(theta + step))
            if math.isfinite(new_log_p) and (rise < unchecked or new_log_p >= log_p):
                theta, log_p, grad = theta + step, new_log_p, new_grad
                break
            step, rise = 0.5 * step, 0.5 * rise
        else:
            return theta, False
    return theta, False


def _float64(log_p, grad):
    return float(log_p[0]), grad[0].to(torch.float64)
