"""The evidence by importance sampling from a Student-t at the posterior mode: a cross-check.

A posterior with one mode, given many observations, is close to a Gaussian
at that mode with the inverse Hessian as covariance. Importance sampling
from a multivariate t there (``NU`` degrees of freedom: heavier tails than
the posterior, so the weights stay bounded) estimates the evidence of the
stored data with an error that does not grow with their number: the
effective sample size stays a fair share of the draws however many
observations there are, so a few dozen draws give a tenth of a nat or so
(docs: benchmarks, Logistic regression). The annealing path's error instead
accrues with every decade of data.

It applies where the posterior has a single mode (``Model.unimodal``) or
modes whose relabelled copies (``Model.relabelling_maps``: a mixture's
components) the proposal then covers all alike. A mixture's posterior can
also hold modes that are not relabellings of one another (two arrangements
of its components that explain the data almost equally well), and a t at
one misses the others' mass while its weights look healthy. The particles
that the annealing left on each tell them apart once climbed
(:func:`_modes_held`): the proposal is then a mixture of t's, one at each
mode they reach, weighted by its Laplace mass. Where some particles reach
none of those (more modes than it takes, or a climb that fails), the
estimate is made only where asked for as a bound (``bound_where_spread``):
it is then of the mass that the t's cover, which, up to its error, is at
most the evidence (``ImportanceEstimate.lower_bound``); models that declare
one mode are taken at their word.
The curvature that shapes the climb's steps and the proposal is taken
near the mode (``curvature``).
"""

import math
from dataclasses import dataclass

import torch

from ..models.batches import SUM_ROWS, cast_batch, row_blocks
from . import relabelling
from .curvature import curvature_near_mode, whole_store_curvature
from .posterior_gap import log_posterior_and_grad, maximize

__all__ = ["ImportanceEstimate", "ImportanceDraws", "importance_log_evidence", "importance_draws",
           "importance_at", "applies", "within_reach"]

# Degrees of freedom of the proposal: tails heavier than a near-Gaussian
# posterior's, so the weights stay bounded, yet few draws wasted in them.
NU = 8
# The modes found cover the particles where at most CLOUD_OUTSIDE of their
# weight, climbed, lies beyond the 1 - 1e-4 quantile of the squared Mahalanobis
# distance of posterior draws (chi-square, d degrees of freedom) from every one
# of them: a mode missed puts a whole group there; a healthy cloud about 1e-4
# of its weight.
CLOUD_OUTSIDE = 0.05
# Newton steps that predict a rise below this many nats go untested on a
# single-precision store, whose log density errs by a part of that at 1e6 rows.
SINGLE_UNCHECKED_RISE = 1.0


def applies(model):
    """Whether the estimate is defined for ``model``: a posterior with one mode,
    possibly up to relabellings of its parameters."""
    return bool(model.unimodal) or model.relabelling_maps() is not None


@dataclass(frozen=True)
class ImportanceEstimate:
    """``log_evidence`` (with half its variance added, as ``log_evidence_``), its
    delta-method standard deviation ``sqrt(1 / ESS - 1 / n_draws)``, the ESS
    as a fraction of the draws, the proposal's location (the mode it
    climbed to, where it climbed) and the number of draws. ``lower_bound``:
    the particles spread over more than the modes' t's hold, so the estimate
    is of the mass near those modes alone, up to its error at most the
    evidence. ``minor_share``: the proposal's weight beyond its heaviest mode
    (by the modes' Laplace masses; 0 for one mode up to relabellings): the
    share of the evidence in modes that the annealing weighs by chance."""

    log_evidence: float
    std: float
    ess: float
    mode: torch.Tensor | None = None
    n_draws: int | None = None
    lower_bound: bool = False
    minor_share: float = 0.0


@dataclass(frozen=True)
class ImportanceDraws:
    """An estimate with the weighted draws it comes from."""

    estimate: ImportanceEstimate
    draws: torch.Tensor  # [n_draws, d]
    log_weights: torch.Tensor  # [n_draws]


@dataclass(frozen=True)
class Proposal:
    """A mixture of t's: one at each of ``modes [J, d]`` with the Cholesky factor
    ``chols [J, d, d]`` of the posterior precision there as the inverse of its scale
    matrix, weighted by ``exp(log_pi) [J]``; each t copied over the model's relabellings."""

    modes: torch.Tensor
    chols: torch.Tensor
    log_pi: torch.Tensor

    @classmethod
    def at(cls, mode, chol):
        """The t at one mode."""
        return cls(mode[None], chol[None], mode.new_zeros(1))


def importance_log_evidence(model, particles, weights, store, n_draws, generator, start=None,
                            min_effective=0.0, max_draws=None, bound_where_spread=False,
                            starts=None):
    """Importance-sampling estimate of ``log p(store)`` from a t at the mode near the particles.

    ``particles [M, d]`` with normalised ``weights [M]`` (one particle, weight
    1, for a start point alone) give the start of the climb, their weighted
    mean after relabelling each to the labelling nearest the heaviest
    particle; or ``start [d]``, the mode of an earlier climb (its
    ``ImportanceEstimate.mode``), where that mean lies within reach of
    posterior draws around it (:func:`_start_of_climb`). ``store`` holds
    every observation seen. The climb runs in its dtype (single precision is
    enough there, each block's sum added in double), the draws' weights in
    double. Where the draws' ESS is below ``min_effective`` draws, more come
    from the same t, each time as many as drawn so far (at most
    ``max_draws`` in all), and the estimate is of them all. Returns None
    where the curvature
    is not available or not positive definite, the log density is not
    finite, or (for a model not declared unimodal) the particles spread over
    more than the modes found, unless ``bound_where_spread``: then the estimate is
    made and marked a ``lower_bound``. ``starts [S, d]`` (a model not declared
    unimodal): points of a search for other modes, climbed with the particles;
    the modes they reach join the proposal.
    """
    found = importance_draws(model, particles, weights, store, n_draws, generator, start,
                             min_effective, max_draws, bound_where_spread, starts)
    return None if found is None else found.estimate


def importance_draws(model, particles, weights, store, n_draws, generator, start=None,
                     min_effective=0.0, max_draws=None, bound_where_spread=False, starts=None):
    """The :class:`ImportanceDraws` of :func:`importance_log_evidence`, or None where it
    gives none."""
    dtype = _store_dtype(store)
    maps, heaviest, aligned, weights = _aligned_cloud(model, particles, weights)
    mean = weights @ aligned
    climbed = _climb(model, *_start_of_climb(model, mean, heaviest, start, maps, store, dtype),
                     store, dtype)
    if climbed is None:
        spread = (weights @ (aligned - mean).square()).sqrt()
        climbed = _climb(model, _ascended(model, mean, spread, store, dtype), None, store, dtype)
    if climbed is None:
        return None
    mode, chol = climbed
    # A declared single mode needs no evidence from the particles
    # (which may lag or spread wide: what the estimate is there to check).
    if model.unimodal:
        proposal, every = Proposal.at(mode, chol), True
    else:
        proposal, every = _modes_held(model, mode, chol, aligned, weights, maps, store, dtype,
                                      starts)
    if not (every or bound_where_spread):
        return None
    theta, log_w = _weighted_draws(model, proposal, maps, store, n_draws, generator)
    max_draws = n_draws if max_draws is None else max_draws
    # Draws from one proposal are independent alike: the pool's weights give
    # one estimate, whose ESS grows with it where the weights' variance is finite
    # (the t's tails are heavier than the posterior's).
    while (bool(torch.isfinite(log_w).all()) and log_w.shape[0] < max_draws
           and _effective_draws(log_w) < min_effective):
        more = _weighted_draws(model, proposal, maps, store,
                               min(log_w.shape[0], max_draws - log_w.shape[0]), generator)
        theta, log_w = torch.cat([theta, more[0]]), torch.cat([log_w, more[1]])
    if not bool(torch.isfinite(log_w).all()):
        return None
    minor = 1.0 - float(proposal.log_pi.exp().max())
    return ImportanceDraws(_estimate(log_w, mode, lower_bound=not every, minor_share=minor),
                           theta, log_w)


def _effective_draws(log_w):
    """The ESS of log weights ``[n]``, in draws."""
    return 1.0 / float(torch.softmax(log_w, 0).square().sum())


def _start_of_climb(model, mean, heaviest, start, maps, store, dtype):
    """``(point, chol or None)``: the climb's start and the Cholesky factor of the
    posterior precision there, if taken. ``start`` (in the labelling nearest
    ``heaviest``) where the particles' ``mean`` lies within the chi-square's 1 - 1e-4
    quantile of it in the metric of the curvature there, else ``mean``.

    An earlier climb's mode is a point the posterior of fewer data peaked at,
    about a posterior standard deviation from this one's once the data have
    doubled; the particles' mean can be several from it where the posterior
    is skewed (a mixture whose smallest component holds a small share of
    the rows), and the climb from there takes many times more evaluations
    over the store than one from the last fold's mode. A start far from the
    particles' mean is a mode they have left (moved to a missed one, or after
    a shift in the data).
    """
    if start is None:
        return mean, None
    start = relabelling.aligned(start.to(mean)[None], heaviest, maps)[0]
    chol = curvature_near_mode(model, start, store, dtype)
    if chol is None or not bool(_within_draws(mean - start, chol)):
        return mean, None
    return start, chol


def _climb(model, theta, chol, store, dtype, max_climb=3.0, max_curvatures=8):
    """``(mode, chol)``: Newton from ``theta [d]`` to the mode, and the Cholesky factor of
    the posterior precision there; None where the curvature is not positive definite or
    the climb does not settle within ``max_curvatures`` curvatures. ``chol``: the factor at
    ``theta``, if already taken (or None). A climb longer than ``max_climb`` posterior
    standard deviations takes the curvature again where it arrived."""
    log_p_and_grad = _log_posterior(model, store, dtype)
    unchecked = SINGLE_UNCHECKED_RISE if dtype == torch.float32 else 0.0
    # The curvature at a start near the mode (the particles' mean) serves the
    # climb and the proposal; a climb that goes further takes it again where it
    # arrived.
    for _ in range(max_curvatures):
        if chol is None:
            chol = curvature_near_mode(model, theta, store, dtype)
        climb = None if chol is None else _newton(log_p_and_grad, theta, chol, unchecked)
        if climb is None:
            return None
        mode, converged = climb
        moved = float((chol.T @ (mode - theta)).square().sum()) ** 0.5
        theta = mode
        if converged and moved <= max_climb:
            return mode, chol
        chol = None
    return None


def _ascended(model, theta, scale, store, dtype, n_steps=100):
    """``theta [d]`` moved uphill by L-BFGS on the posterior of ``store``, in coordinates
    scaled by ``scale [d]`` (the particles' spread; unit coordinates for a start point
    alone).

    Newton's method needs a positive definite curvature where it starts; at
    the mean of particles that lag a skewed posterior or sit between
    configurations (a mixture's light component) it often is not, while
    the gradient alone leads uphill to where it is.
    """
    log_p_and_grad = _log_posterior(model, store, dtype)
    if not bool((scale > 0).any()):
        scale = torch.ones_like(theta)
    scale = scale.clamp_min(1e-8 * float(scale.max()))

    def objective(z):
        log_p, grad = _float64(*log_p_and_grad(theta + scale * z))
        return log_p, grad * scale

    z, _ = maximize(objective, torch.zeros_like(theta), n_steps)
    return theta + scale * z


def _log_posterior(model, store, dtype, double_rows=65536):
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


def importance_at(model, point, store, n_draws, generator):
    """The :class:`ImportanceDraws` of a t at ``point [d]``, or None.

    The t's scale is the curvature at ``point`` on every stored
    observation (a subsample's can turn negative along a mixture's weakly
    determined small component). No climb (Newton's method from a search's
    points costs many passes over a large store and moves the estimate
    little) and no check that ``point`` holds the posterior's only mode: the estimate is of the mass that the t covers
    (with all its relabelled copies), in expectation at most the evidence,
    and the weighted draws are a sample of the posterior restricted to it.
    None where that curvature is not positive definite or a weight is not
    finite.
    """
    dtype = _store_dtype(store)
    point = point.to(torch.float64)
    chol = whole_store_curvature(model, point, store, dtype)
    if chol is None:
        return None
    maps = model.relabelling_maps(torch.float64, point.device)
    theta, log_w = _weighted_draws(model, Proposal.at(point, chol), maps, store, n_draws,
                                   generator)
    if not bool(torch.isfinite(log_w).all()):
        return None
    return ImportanceDraws(_estimate(log_w, point), theta, log_w)


def within_reach(model, points, particles, weights, store):
    """``[P]`` bool: which ``points [P, d]`` lie within reach of posterior draws around
    the particles' weighted mean.

    Within the chi-square's 1 - 1e-4 quantile of it in the metric of the
    posterior's curvature there (:func:`.curvature.curvature_near_mode`),
    each point and particle relabelled to the labelling nearest the heaviest
    particle: points on the mode that the cloud holds. None lies within reach where
    that curvature is not positive definite.
    """
    maps, heaviest, aligned, weights = _aligned_cloud(model, particles, weights)
    mean = weights @ aligned
    chol = curvature_near_mode(model, mean, store, _store_dtype(store))
    if chol is None:
        return torch.zeros(points.shape[0], dtype=torch.bool, device=points.device)
    return _within_draws(relabelling.aligned(points.to(torch.float64), heaviest, maps) - mean,
                         chol)


def _aligned_cloud(model, particles, weights):
    """``(maps, heaviest, aligned, weights)`` in double precision: the model's
    relabelling maps, the heaviest particle, and every particle in the labelling
    nearest it (``Model.relabelling_maps``; as they are without relabellings)."""
    maps = model.relabelling_maps(torch.float64, particles.device)
    particles, weights = particles.to(torch.float64), weights.to(torch.float64)
    heaviest = particles[int(weights.argmax())]
    return maps, heaviest, relabelling.aligned(particles, heaviest, maps), weights


def _store_dtype(store):
    """The dtype of the store's floating tensors (its labels are integers)."""
    return next(t.dtype for t in store if t.is_floating_point())


def _modes_held(model, mode, chol, aligned, weights, maps, store, dtype, starts=None,
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
    live = weights > 0
    points = aligned[live]
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
        climbed = _climb(model, points[best], None, store, dtype)
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
    reached = torch.stack([_within_draws(relabelling.aligned(particles, m, maps) - m, L)
                           for m, L in zip(modes, chols)], 1)  # [particles, modes]
    covered = float(weights[live][~reached.any(1)].sum()) <= CLOUD_OUTSIDE * float(weights.sum())
    if len(modes) == 1:
        return Proposal.at(mode, chol), covered
    # The first mode's curvature at the mode itself too: the climb's may be from
    # where it started, and the Laplace masses compare the modes' curvatures.
    at_mode = curvature_near_mode(model, mode, store, dtype)
    chols[0] = chol if at_mode is None else at_mode
    modes, chols = torch.stack(modes), torch.stack(chols)
    log_p_and_grad = _log_posterior(model, store, dtype)
    log_mass = torch.tensor([_float64(*log_p_and_grad(m))[0] for m in modes], dtype=modes.dtype,
                            device=modes.device)
    log_mass = log_mass - torch.log(torch.diagonal(chols, dim1=1, dim2=2)).sum(1)
    return Proposal(modes, chols, torch.log_softmax(log_mass, 0)), covered


def _near(points, mode, chol, maps):
    """``[P]`` bool: which ``points`` lie within a posterior standard deviation of ``mode``
    (``||(point - mode) L||^2 <= 1`` in the metric of ``chol``), each in the relabelling
    nearest it."""
    offsets = relabelling.aligned(points, mode, maps) - mode
    return (offsets @ chol).square().sum(-1) <= 1.0


def _climbed_together(model, points, chol, store, dtype, max_steps=30, converged_rise=0.005):
    """``(points, log_p)``: ``points [P, d]`` moved uphill by Newton steps in the fixed
    metric of ``chol``, each halved until it climbs (as :func:`_newton`), all at once: one
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
            up = idx[torch.isfinite(new_log_p) & (new_log_p >= log_p[idx])]
            rose = torch.isin(idx, up)
            points[up] = points[up] + step[up]
            log_p[up], grad[up] = new_log_p[rose], new_grad[rose]
            climbing[up] = False
            step = 0.5 * step
    return points, log_p


def _within_draws(offsets, chol):
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


def _newton(log_p_and_grad, theta, chol, unchecked, max_steps=10, converged_rise=0.005):
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


def _weighted_draws(model, proposal, maps, store, n_draws, generator):
    """Draws from the :class:`Proposal`'s t's, and their log weights.

    Each t has scale matrix ``(L L^T)^-1`` at its mode. With relabellings the
    proposal density is the mean of the t's copies under all of them; the
    draws come from the first copy alone, which gives the same expectation
    since the weights' ratio of two relabelling-invariant densities is
    invariant too.
    """
    modes, chols = proposal.modes, proposal.chols
    J, d = modes.shape
    kw = dict(generator=generator, dtype=modes.dtype, device=modes.device)
    z = torch.randn(n_draws, d, **kw)
    chi2 = torch.randn(n_draws, NU, **kw).square().sum(1)  # integer nu: a sum of squares
    t = z * (NU / chi2).sqrt()[:, None]
    which = torch.zeros(n_draws, dtype=torch.long, device=modes.device) if J == 1 else \
        torch.multinomial(proposal.log_pi.exp(), n_draws, replacement=True, generator=generator)
    theta = torch.empty_like(t)
    for j in range(J):  # a loop over modes, each a batch of draws
        drawn = which == j
        # theta = mode + L^-T t has covariance (L L^T)^-1 times that of t.
        theta[drawn] = modes[j] + torch.linalg.solve_triangular(chols[j].T, t[drawn].T,
                                                                upper=True).T
    log_q = _log_t_density(theta, proposal, maps)
    # In double precision whatever the store's: in single, each draw's log
    # likelihood of a million rows errs by a good part of a nat (the rows'
    # terms summed block by block), and the estimate by a sizeable part of that.
    log_p = model.log_prior(theta)
    for block in row_blocks(store, n_draws, SUM_ROWS):
        block = cast_batch(block, torch.float64)
        log_p = log_p + model.log_likelihood_sum(theta, block)
    return theta, log_p - log_q


def _estimate(log_w, mode, lower_bound=False, minor_share=0.0):
    """The :class:`ImportanceEstimate` of finite log weights ``[n]`` of draws around ``mode``."""
    n_draws = log_w.shape[0]
    log_mean = float(torch.logsumexp(log_w, 0)) - math.log(n_draws)
    ess = _effective_draws(log_w)
    variance = max(1.0 / ess - 1.0 / n_draws, 0.0)
    return ImportanceEstimate(log_mean + 0.5 * variance, math.sqrt(variance), ess / n_draws,
                              mode, n_draws, lower_bound, minor_share)


def _log_t_density(theta, proposal, maps):
    """Log density ``[n]`` of the :class:`Proposal`: its t's, each averaged over its
    relabelled copies, mixed by their weights.

    A copy is a t pushed through ``theta -> theta @ maps[p]``: its density at
    ``theta`` is the t's at ``theta @ maps[p]^-1`` over ``|det maps[p]|``.
    """
    d = theta.shape[1]
    log_gamma = (math.lgamma((NU + d) / 2) - math.lgamma(NU / 2)
                 - 0.5 * d * math.log(NU * math.pi))
    if maps is None:
        inverse, log_dets = None, theta.new_zeros(1)
    else:
        inverse, log_dets = torch.linalg.inv(maps), torch.linalg.slogdet(maps)[1]
    per_mode = []
    for mode, chol, log_pi in zip(proposal.modes, proposal.chols, proposal.log_pi):
        # ||L^T (theta maps[p]^-1 - mode)||^2, the t's squared radius, with the
        # map and L^T as one matrix per copy.
        whitened = (theta @ chol)[:, None] if inverse is None else \
            torch.einsum("nd,pde->npe", theta, inverse @ chol)
        radius = (whitened - mode @ chol).square().sum(-1)
        log_t = (log_gamma + torch.log(torch.diagonal(chol)).sum() - log_dets
                 - 0.5 * (NU + d) * torch.log1p(radius / NU))
        per_mode.append(log_pi + torch.logsumexp(log_t, 1) - math.log(log_t.shape[1]))
    return torch.logsumexp(torch.stack(per_mode, 1), 1)
