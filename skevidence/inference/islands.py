"""Particle islands: a Monte Carlo error bar for the evidence from one run.

The ``M`` particles are split into ``G`` contiguous islands. Annealing
schedule, preconditioner and control variate stay shared (computed from
the whole cloud), but resampling only ever copies particles within an
island, so each island is its own SMC sampler with its own evidence
estimate ``Z_g``. The engine keeps one array of global normalised
log-weights; an island's share of the weight is ``a_g Z_g / Z``, with
``a_g = n_g / M`` its share of the particles and ``Z = sum_g a_g Z_g`` the
(unbiased) evidence estimate the engine reports. The spread of the
``Z_g`` around ``Z`` then gives the variance of ``Z`` (delta method on a
mean of ``G`` nearly independent estimates), with no extra likelihood
evaluation. All functions work on float64 numpy arrays in log space and
are vectorised over particles (``np.logaddexp.reduceat`` over the islands'
contiguous ranges).
"""

import math

import numpy as np

__all__ = [
    "island_starts", "n_islands_for", "island_log_mass", "island_ess",
    "island_sizes", "systematic_resample_islands", "log_evidence_std",
]

def n_islands_for(n_particles, n_islands, min_size=8):
    """The number of islands used for ``n_particles``: at most ``n_islands``,
    each island of at least ``min_size`` particles (1 for tiny clouds): smaller
    islands degenerate (their Z_g is dominated by rare heavy weights) and the
    spread of the Z_g understates the error."""
    return int(max(1, min(n_islands, n_particles // min_size)))


def island_starts(n_particles, n_islands):
    """First particle index of each of ``n_islands`` near-equal contiguous islands."""
    return (np.arange(n_islands) * n_particles) // n_islands


def island_sizes(n_particles, starts):
    return np.diff(np.append(starts, n_particles))


def _island_logsumexp(a, starts):
    """Log-sum-exp of each contiguous island of ``a``, ``[G]``."""
    m = np.maximum.reduceat(a, starts)
    safe = np.where(np.isfinite(m), m, 0.0)
    sizes = island_sizes(a.shape[0], starts)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.add.reduceat(np.exp(a - np.repeat(safe, sizes)), starts))


def island_log_mass(log_W, starts):
    """Log of each island's total weight, ``[G]`` (``-inf`` for a dead island)."""
    return _island_logsumexp(log_W, starts)


def island_ess(log_W, starts):
    """ESS of the weights within each island, ``[G]`` (0 for a dead island)."""
    log_mass = _island_logsumexp(log_W, starts)
    log_sq = _island_logsumexp(2.0 * log_W, starts)
    with np.errstate(invalid="ignore"):
        out = np.exp(2.0 * log_mass - log_sq)
    return np.where(np.isfinite(log_mass), out, 0.0)


def systematic_resample_islands(log_W, u, starts, which):
    """Systematic resampling within the islands flagged in ``which`` ``[G]``.

    Returns ``(index [M], new log_W [M])``: particles of a flagged island
    are drawn from that island only, with equal weights that keep the
    island's total weight (so ``Z_g`` is unchanged); other islands, and
    dead ones, are left as they are. One uniform ``u`` serves every island
    (as in ``systematic_resample``; the islands' weights differ, so their
    draws do not).
    """
    M = log_W.shape[0]
    sizes = island_sizes(M, starts)
    log_mass = island_log_mass(log_W, starts)
    which = np.asarray(which) & np.isfinite(log_mass)
    island_of = np.repeat(np.arange(starts.shape[0]), sizes)
    # Each island's weights normalised to a CDF on [g, g + 1]: one sorted
    # array for all islands, searched once.
    within = np.exp(log_W - np.repeat(np.where(np.isfinite(log_mass), log_mass, 0.0), sizes))
    dead = np.repeat(~np.isfinite(log_mass), sizes)
    within = np.where(dead, 1.0 / np.repeat(sizes, sizes), within)
    cdf = island_of + _within_island_cumsum(within, starts, sizes)
    points = island_of + (np.arange(M) - starts[island_of] + u) / sizes[island_of]
    drawn = np.searchsorted(cdf, points, side="right")
    drawn = np.clip(drawn, starts[island_of], starts[island_of] + sizes[island_of] - 1)
    flag = which[island_of]
    index = np.where(flag, drawn, np.arange(M))
    new_log_W = np.where(flag, np.repeat(log_mass, sizes) - np.log(sizes[island_of]), log_W)
    return index, new_log_W


def _within_island_cumsum(x, starts, sizes):
    """Cumulative sum restarting at every island, ending at 1 in each (x sums to 1 per island)."""
    c = np.cumsum(x)
    before = np.concatenate(([0.0], c[starts[1:] - 1]))
    out = c - np.repeat(before, sizes)
    ends = np.cumsum(sizes) - 1
    out[ends] = 1.0  # exact ends, despite rounding
    return out


def log_evidence_std(log_W, starts):
    """Estimated standard deviation of ``log Z`` from the islands' spread.

    ``r_g = Z_g / Z`` follows from the island masses; the estimate ``Z``
    is ``sum_g a_g Z_g``, whose relative variance is estimated by
    ``G / (G - 1) sum_g a_g^2 (r_g - 1)^2`` (delta method: the std of
    ``log Z`` is the relative std of ``Z``). ``nan`` with one island.
    """
    G = starts.shape[0]
    if G < 2:
        return math.nan
    M = log_W.shape[0]
    a = island_sizes(M, starts) / M
    r = np.exp(island_log_mass(log_W, starts)) / a
    var_rel = G / (G - 1) * np.sum(a**2 * (r - 1.0) ** 2)
    return float(math.sqrt(var_rel))
