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
(:func:`.climbing.modes_held`): the proposal is then a mixture of t's, one at each
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

from . import climbing, relabelling
from .curvature import curvature_near_mode, whole_store_curvature
from .proposal import Proposal, weighted_draws

__all__ = ["ImportanceEstimate", "ImportanceDraws", "importance_log_evidence", "importance_draws",
           "importance_at", "applies", "within_reach"]



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
    climbed = climbing.climb(
        model, *_start_of_climb(model, mean, heaviest, start, maps, store, dtype), store, dtype)
    if climbed is None:
        spread = (weights @ (aligned - mean).square()).sqrt()
        climbed = climbing.climb(model, climbing.ascended(model, mean, spread, store, dtype),
                                 None, store, dtype)
    if climbed is None:
        return None
    mode, chol = climbed
    # A declared single mode needs no evidence from the particles
    # (which may lag or spread wide: what the estimate is there to check).
    if model.unimodal:
        proposal, every = Proposal.at(mode, chol), True
    else:
        proposal, every = climbing.modes_held(model, mode, chol, aligned, weights, maps,
                                              store, dtype, starts)
    if not (every or bound_where_spread):
        return None
    theta, log_w = weighted_draws(model, proposal, maps, store, n_draws, generator)
    max_draws = n_draws if max_draws is None else max_draws
    # Draws from one proposal are independent alike: the pool's weights give
    # one estimate, whose ESS grows with it where the weights' variance is finite
    # (the t's tails are heavier than the posterior's).
    while (bool(torch.isfinite(log_w).all()) and log_w.shape[0] < max_draws
           and _effective_draws(log_w) < min_effective):
        more = weighted_draws(model, proposal, maps, store,
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
    if chol is None or not bool(climbing.within_draws(mean - start, chol)):
        return mean, None
    return start, chol


def importance_at(model, point, store, n_draws, generator):
    """The :class:`ImportanceDraws` of a t at ``point [d]``, or None.

    The t's scale is the curvature at ``point`` on every stored
    observation (a subsample's can turn negative along a mixture's weakly
    determined small component). No climb (Newton's method from a search's
    points costs many passes over a large store and moves the estimate
    little) and no check that ``point`` holds the posterior's only mode: the
    estimate is of the mass that the t covers (with all its relabelled
    copies), in expectation at most the evidence,
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
    theta, log_w = weighted_draws(model, Proposal.at(point, chol), maps, store, n_draws,
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
    return climbing.within_draws(
        relabelling.aligned(points.to(torch.float64), heaviest, maps) - mean, chol)


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


def _estimate(log_w, mode, lower_bound=False, minor_share=0.0):
    """The :class:`ImportanceEstimate` of finite log weights ``[n]`` of draws around ``mode``."""
    n_draws = log_w.shape[0]
    log_mean = float(torch.logsumexp(log_w, 0)) - math.log(n_draws)
    ess = _effective_draws(log_w)
    variance = max(1.0 / ess - 1.0 / n_draws, 0.0)
    return ImportanceEstimate(log_mean + 0.5 * variance, math.sqrt(variance), ess / n_draws,
                              mode, n_draws, lower_bound, minor_share)


