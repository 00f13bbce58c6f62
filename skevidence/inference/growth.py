"""Adaptive Resample-Move (ARM): more particles for the chunks that add much variance."""

import math
from dataclasses import replace

import numpy as np
import torch

from .records import close_weight_segment, segment_variance
from .resampling import systematic_resample

__all__ = ["variance_so_far", "maybe_grow", "shrink_to_base", "resample_to"]


def variance_so_far(state):
    """Estimated Var(log_evidence): closed segments plus the current one."""
    return state.log_evidence_var + segment_variance(state.log_W)


def maybe_grow(state, config, var_before):
    """Adaptive Resample-Move: more particles for a chunk that adds much variance.

    Fraccaro, Paquet & Winther (2016) grow the particle set on the steps
    whose weights signal a poor approximation, with new particles made by
    moving copies of the current ones (their Proposition 1). Here the
    signal is the chunk's share of the estimated ``Var(log Z)`` since it
    began (``var_before``; adaptive tempering holds every step's
    conditional ESS at the target, so a hard chunk shows as many steps,
    each adding variance ~ 1 / M): past ``growth_threshold * M /
    n_particles^2`` the ``M`` particles are resampled to ``2 M`` (at most
    ``max_particles``), and the move that follows makes the copies
    differ. Resampling closes the weight segment, so ``log_evidence_std``
    stays the sum of segment variances. Returns the new state and 1 where it
    resampled (else 0).
    """
    M = state.theta.shape[0]
    if config.max_particles is None or M >= config.max_particles:
        return state, 0
    budget = config.growth_threshold * M / config.n_particles**2
    if variance_so_far(state) - var_before <= budget:
        return state, 0
    return resample_to(state, min(2 * M, config.max_particles)), 1


def shrink_to_base(state, config):
    """A grown particle set resampled back to ``n_particles``, and 1 where it was (else 0)."""
    if state.theta.shape[0] <= config.n_particles:
        return state, 0
    return resample_to(state, config.n_particles), 1


def resample_to(state, m):
    """Systematic resampling of all particles to ``m`` equally weighted ones (one island)."""
    state = close_weight_segment(state)
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    index = systematic_resample(state.log_W, u, m)
    index_t = torch.as_tensor(index, device=state.theta.device)
    return replace(state, theta=state.theta[index_t], log_W=np.full(m, -math.log(m)),
                   cv=None if state.cv is None else state.cv.select(index_t))
