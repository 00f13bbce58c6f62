"""Stochastic Gradient Annealed Importance Sampling (SGAIS), online.

The evidence is built up chunk by chunk, ``log Z = sum_k log p(C_k | C_<k)``.
For each chunk the particles, which represent the posterior given the
past data, are moved to the posterior that also includes the chunk along
an adaptive tempering path ``p(C | theta)^lam``, ``0 = lam_0 < ... = 1``:

1. **reweight**: pick the next increment ``delta`` by its conditional ESS and
   multiply the weights by ``p(C | theta)^delta`` (the log of their mean is
   this step's share of ``log Z``);
2. **resample** when the weights have degenerated;
3. **move** the particles with SGHMC on the tempered posterior, whose
   past-data term is a control-variate mini-batch estimate (while the data
   are few, Metropolis-adjusted moves on the exact posterior).

The first chunk of a model whose posterior has one mode is instead
conditioned on by importance sampling from a t at its mode, where that fits
(:func:`_start_by_importance`). Afterwards the chunk joins the data store.
The cost of a chunk depends on the chunk and on the mini-batch size, not on
how much data came before.
For models whose posterior has one mode, each time the data seen double
(past the warm-up) the running ``log Z`` is averaged with an
importance-sampling estimate at the posterior mode (:func:`fold_in_importance`,
a pass over the store), so that its error does not accrue with the data;
for models with a mode search (mixtures), the particles move to a mode
they missed whose mass dwarfs theirs (:func:`move_to_missed_mode`).

This module is the loop; its parts live beside it: the settings
(``config``), the state and per-chunk records (``records``), the moves
(``moves``) and their preconditioners (``preconditioning``), the control
variate and the steps that move its references (``control_variates``),
particle growth (``growth``, Adaptive Resample-Move), and the steps at the
posterior's mode by importance sampling (``importance_steps``: the folds,
the move to a missed mode). Every step takes a state and returns a new
one, with a :class:`ChunkTally` of what it measured where it measures
something (``records``).
"""

import math
from dataclasses import replace

import numpy as np
import torch

from ..models.base import has_fisher_information
from ..models.batches import batch_size_of, row_blocks
from . import importance, islands
from .annealing import ess, log_normalize, next_increment
from .config import SGAISConfig
from .control_variates import ControlVariate, refresh_reference
from .engine import Engine
from .growth import maybe_grow, shrink_to_base, variance_so_far
from .importance_steps import (fold_in_importance, missed_mode_search_due, move_to_missed_mode,
                               restart_from_draws)
from .long_chunks import AnnealingWarning, long_chunk_message, warn_if_long
from .moves import exact_move, sghmc_move, with_chunk_term
from .preconditioning import with_chunk_fisher
from .records import (TRACE_FIELDS, ChunkInfo, ChunkTally, MoveResult, SGAISState,
                      close_weight_segment, record_chunk, segment_variance, successor)
from .reservoir import Reservoir

__all__ = [
    "SGAISConfig", "SGAISState", "ChunkInfo", "MoveResult", "TRACE_FIELDS", "init", "update",
    "chunk_ends", "chunk_boundary", "sghmc_move", "exact_move", "record_chunk", "successor",
    "take_move", "refresh_reference", "fold_in_importance", "move_to_missed_mode",
    "segment_variance", "AnnealingWarning",
    "long_chunk_message",
]


# The first chunk by importance sampling (_start_by_importance): draws per
# particle from the t at the chunk's posterior mode, and the least ESS per
# particle at which they replace the annealing from the prior. With a few
# draws a particle the resampled cloud holds so many copies that the next
# chunks' error bar falls short of their spread; with 32 it does not. Where
# the posterior is close to a t the ESS is a fair share of the draws; where it
# is far from one the ESS falls below START_MIN_ESS and the annealing runs.
START_DRAWS = 32
START_MIN_ESS = 4.0
# Moves of the resampled particles on the chunk's posterior: they spread the
# copies that resampling leaves, so that the next chunk's increment is
# unbiased; with no move or one it is biased or its error bar too small.
START_MOVES = 3


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights, an empty data store."""
    M = config.n_particles
    theta = model.sample_prior(M, generator, dtype=dtype, device=device)
    cv = None
    if config.control_variate is not None:
        R = 1 if config.control_variate == "shared" else M  # "particle": one each
        ref = theta.mean(0, keepdim=True) if R == 1 else theta.clone()
        cv = ControlVariate(theta_ref=ref, grad_sum=torch.zeros_like(ref),
                            second_order=has_fisher_information(model))
    return SGAISState(
        theta=theta,
        log_W=np.full(M, -math.log(M)),
        generator=generator,
        reservoir=Reservoir(capacity=config.reservoir_size),
        cv=cv,
        island_starts=islands.island_starts(M, islands.n_islands_for(M, config.n_islands)),
    )


def update(model, state, config, batch, move=None, callback=None):
    """The state conditioned on ``batch``, in the chunks of :func:`chunk_ends`.

    Returns a new state; ``state`` is left as it was, also when a chunk
    fails (see :func:`successor`). ``move(model, state, config, chunk,
    lam)`` returns a :class:`MoveResult` and leaves ``state`` as it was;
    the default is :func:`sghmc_move`.
    ``callback(state, lam, n_pending)`` runs after every annealing step
    (``lam`` reached, ``n_pending`` the size of the chunk not yet counted
    in ``state.n_seen``) and after each chunk (``lam = 1``, none pending).
    """
    state = successor(state)
    move = sghmc_move if move is None else move
    start, longest = 0, (0, 0, 0)
    ends = chunk_ends(state.n_seen, batch_size_of(batch), config)
    for end in ends:
        chunk = tuple(t[start:end] for t in batch)
        state, info = _condition_on_chunk(model, state, config, chunk, move, callback,
                                          ends_update=end == ends[-1])
        state = replace(state, trace=state.trace + (info,))
        longest = max(longest, (info.n_annealing_steps, state.n_seen - (end - start),
                                end - start))
        start = end
        if callback is not None:
            callback(state, 1.0, 0)
    warn_if_long(longest, config)
    return state


def chunk_ends(n_seen, n_new, config):
    """Ends (offsets into the new data) of the chunks that ``n_new`` observations form.

    Chunks end on a grid of stream positions (:func:`chunk_boundary`), so
    that feeding a stream in pieces that end on the grid gives the numbers
    of one call.
    """
    stop = n_seen + n_new
    if not n_new:
        return []
    end = _first_boundary_after(n_seen, config)
    ends = []
    while end < stop:
        ends.append(end)
        end = chunk_boundary(end, config)
    return [e - n_seen for e in ends + [stop]]


def chunk_boundary(position, config):
    """The grid's next chunk end after ``position`` (a point of the grid).

    Chunks are ``batch_size`` long, or ``chunk_growth`` times the data
    before them (in whole ``batch_size`` units) once that is longer. A
    chunk's annealing steps follow how far its data move the posterior,
    about ``sqrt(d * size / n)`` in its own metric, of which a step covers
    about a third (``target_ess=0.9``), and at least one step a chunk: to
    ``N`` observations fixed chunks of ``b`` take about ``6 sqrt(d N / b)``
    steps in all, chunks growing with the data about ``3 ln(N) sqrt(d /
    chunk_growth)``.
    """
    b = config.batch_size
    return position + b * max(1, int(position * config.chunk_growth) // b)


def _first_boundary_after(n_seen, config):
    b = config.batch_size
    if config.chunk_growth == 0:
        return (n_seen // b + 1) * b
    position = 0
    while position <= n_seen:
        position = chunk_boundary(position, config)
    return position


def _condition_on_chunk(model, state, config, chunk, move, callback, ends_update=False):
    """The particles moved from the posterior without ``chunk`` to the one with it
    (``ends_update``: the update's last chunk), and the chunk's :class:`ChunkInfo`."""
    state = refresh_reference(model, state, config)
    started = _start_by_importance(model, state, config, chunk, move, callback)
    state, tally = started or _anneal(model, state, config, chunk, move, callback)
    n_before = state.n_seen
    state = replace(state, past_fisher=with_chunk_fisher(model, state, config, chunk),
                    reservoir=state.reservoir.append(chunk, state.generator),
                    summary=_summed(state.summary, model.summarize(chunk)),
                    cv=None if state.cv is None else state.cv.add_chunk(model, chunk),
                    n_seen=n_before + batch_size_of(chunk))
    state = fold_in_importance(model, state, config, n_before)
    state, due = missed_mode_search_due(state, ends_update)
    if due:
        state, moved = move_to_missed_mode(model, state, config, ends_update)
        tally += ChunkTally(n_resamplings=moved)
    return state, _chunk_info(state, tally)


def _start_by_importance(model, state, config, chunk, move, callback):
    """The prior's particles conditioned on the first chunk by importance sampling.

    For a model whose posterior has one mode (``Model.unimodal``), with
    ``config.fold_importance``, one island and no particle growth
    (``max_particles``, which grows the cloud along the annealing):
    ``START_DRAWS`` draws per particle from a t at the chunk's posterior mode
    (:func:`importance.importance_draws`, climbed from the particles' mean)
    estimate its evidence, and the particles, resampled from them, move
    ``START_MOVES`` times on the chunk's posterior. Where the draws' ESS is
    below ``START_MIN_ESS`` per particle (a posterior far from the t), or
    there is no estimate, the annealing from the prior runs instead. Returns
    the state and the chunk's tally, or None where it did not start. The
    annealing from the prior takes most of a small fit (dozens of annealing
    steps of 40 adjusted steps on the first chunk), where a t at the mode of
    one chunk's posterior already fits it well enough.
    """
    if not (config.fold_importance and state.n_seen == 0 and model.unimodal
            and state.island_starts.shape[0] == 1 and not _grows(config)):
        return None
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    with torch.no_grad():
        found = importance.importance_draws(model, state.theta, W, chunk,
                                            START_DRAWS * state.theta.shape[0], state.generator)
    if found is None or found.estimate.ess * START_DRAWS < START_MIN_ESS:
        return None
    tally = ChunkTally(n_steps=1, n_particles=state.theta.shape[0], n_resamplings=1)
    state = restart_from_draws(model, state, found.estimate, found.draws, found.log_weights,
                               state.generator)
    for _ in range(START_MOVES):
        state, moved = _moved(model, state, config, chunk, 1.0, move)
        tally += moved
    if callback is not None:
        callback(state, 1.0, batch_size_of(chunk))
    return state, tally


def _grows(config):
    return config.max_particles is not None and config.max_particles > config.n_particles


def _anneal(model, state, config, chunk, move, callback):
    """The tempering path from the posterior without ``chunk`` to the one with it:
    reweight, resample, move, until ``lam`` reaches 1. Returns the state and the
    chunk's tally."""
    lam = 0.0
    tally = ChunkTally(n_particles=state.theta.shape[0])
    var_before = variance_so_far(state)
    loglik = _chunk_log_likelihood(model, state.theta, chunk)
    while lam < 1.0:
        remaining = 1.0 - lam
        target = config.target_ess * state.theta.shape[0]
        delta = next_increment(state.log_W, loglik, remaining, target)
        if remaining - delta <= 1e-9 * remaining:
            delta = remaining
        state = _reweight(state, loglik, delta)
        lam = 1.0 if delta == remaining else lam + delta
        state, resampled = _resample(state, _islands_to_resample(state, config))
        if lam < 1.0:
            state, regrown = maybe_grow(state, config, var_before)
        else:  # the chunk's last move starts from n_particles again
            state, regrown = shrink_to_base(state, config)
        resampled += regrown
        tally += ChunkTally(n_steps=1, n_resamplings=resampled,
                            n_particles=state.theta.shape[0] if lam < 1.0 else 0)
        if _skips_move(state, config, tally.n_steps, lam, resampled):
            break
        state, moved = _moved(model, state, config, chunk, lam, move)
        tally += moved
        if callback is not None:
            callback(state, lam, batch_size_of(chunk))
        if lam < 1.0:  # (after the chunk's last move the loop ends)
            loglik = _chunk_log_likelihood(model, state.theta, chunk)
    return state, tally


def _moved(model, state, config, chunk, lam, move):
    """The state after one move and the discarding of diverged particles, and their tally."""
    state = with_chunk_term(model, state, config, chunk)
    state, acceptance = take_move(state, move(model, state, config, chunk, lam))
    state, discarded = _discard_diverged(state)
    return state, discarded + ChunkTally(acceptances=() if acceptance is None else (acceptance,))


def _summed(summary, new):
    """The sum of two :meth:`Model.summarize` results (new tensors: states share theirs)."""
    if summary is None or new is None:
        return new if summary is None else summary
    return {key: summary[key] + new[key] for key in summary}


def _skips_move(state, config, n_steps, lam, resampled):
    """Whether a chunk taken in one annealing step can keep its particles unmoved.

    Chunks of several steps keep every move: skipping one let the cloud lag the posterior.
    """
    threshold = config.move_ess
    if threshold is None or lam < 1.0 or n_steps > 1 or resampled:
        return False
    if state.n_seen < config.warmup_size:
        return False
    return ess(state.log_W) >= threshold * state.theta.shape[0]


def take_move(state, result):
    """The state with the moved particles, and the adapted step size, of a move's result,
    and the move's acceptance rate (None for unadjusted moves)."""
    if not isinstance(result, MoveResult):
        raise TypeError(f"a move must return a MoveResult, not {type(result).__name__}")
    step_size = state.exact_step_size if result.step_size is None else result.step_size
    return replace(state, theta=result.theta, exact_step_size=step_size), result.acceptance


def _chunk_info(state, tally):
    acceptances = tally.acceptances
    return ChunkInfo(
        n_seen=state.n_seen, log_evidence=state.debiased_log_evidence,
        n_annealing_steps=tally.n_steps, ess=ess(state.log_W),
        log_evidence_std=state.log_evidence_std, n_particles=tally.n_particles,
        n_resamplings=tally.n_resamplings, n_diverged=tally.n_diverged,
        max_diverged_fraction=tally.max_diverged_fraction,
        n_adjusted_moves=len(acceptances),
        acceptance=sum(acceptances) / len(acceptances) if acceptances else math.nan)


def _chunk_log_likelihood(model, theta, chunk):
    """Summed log-likelihood of the chunk per particle; non-finite -> -inf."""
    ll = sum(model.log_likelihood_sum(theta, block).to(torch.float64)
             for block in row_blocks(chunk, theta.shape[0])).cpu().numpy()
    return np.where(np.isfinite(ll), ll, -np.inf)


def _reweight(state, loglik, delta):
    """The state reweighted by the chunk's likelihood to the power ``delta``."""
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
    return replace(state, log_evidence=state.log_evidence + log_increment,
                   log_W=log_w - log_increment)


def _islands_to_resample(state, config):
    """Islands whose weights degenerated (ESS below the threshold) or hold zeros."""
    starts = state.island_starts
    sizes = islands.island_sizes(state.log_W.shape[0], starts)
    has_zero = np.logical_or.reduceat(~np.isfinite(state.log_W), starts)
    low = islands.island_ess(state.log_W, starts) < config.resample_threshold * sizes
    return has_zero | low


def _resample(state, which):
    """Systematic resampling within the islands flagged in ``which`` ``[G]``: the new
    state and how many islands it resampled."""
    live = np.isfinite(islands.island_log_mass(state.log_W, state.island_starts))
    which = which & live
    if not which.any():
        return state, 0
    if which.shape[0] == 1:
        state = close_weight_segment(state)
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    index, log_W = islands.systematic_resample_islands(state.log_W, u, state.island_starts, which)
    index_t = torch.as_tensor(index, device=state.theta.device)
    return replace(state, theta=state.theta[index_t], log_W=log_W,
                   cv=None if state.cv is None else state.cv.select(index_t)), int(which.sum())


def _discard_diverged(state):
    """The state whose particles that left the finite numbers have zero weight, resampled,
    and a tally of the live particles lost, their share of the live ones, and the
    islands resampled."""
    ok = torch.isfinite(state.theta).all(1).cpu().numpy()
    if ok.all():
        return state, ChunkTally()
    live = np.isfinite(state.log_W)
    if not (ok & live).any():
        raise FloatingPointError(
            f"all particles diverged after {state.n_seen} observations. Likely "
            "causes: data far from unit scale (standardise features and targets, "
            "e.g. StandardScaler); a posterior far steeper on one side than its "
            "spread, such as the coefficient of a one-hot column for a rare "
            "category, where moves scaled by the particles' covariance are "
            "unstable (try engine_options={'precondition': 'model'}); a "
            "learning_rate too large for this posterior (try a tenth of it); or "
            "too few particles"
        )
    lost = int((~ok & live).sum())
    fraction = lost / max(live.sum(), 1)
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
    state = replace(state, log_W=log_normalize(log_W + np.repeat(shift, sizes)),
                    theta=torch.where(torch.as_tensor(ok, device=state.theta.device)[:, None],
                                      state.theta, torch.zeros_like(state.theta)))
    state, resampled = _resample(state, np.logical_or.reduceat(~ok, starts))
    return state, ChunkTally(n_resamplings=resampled, n_diverged=lost,
                             max_diverged_fraction=fraction)


ENGINE = Engine("sgais", init, update, anneals_online=True)
