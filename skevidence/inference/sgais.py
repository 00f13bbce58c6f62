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
(``moves``) and their preconditioners (``preconditioning``), and particle
growth (``growth``, Adaptive Resample-Move).
"""

import math
from dataclasses import replace

import numpy as np
import torch

from ..models.base import batch_size_of, has_fisher_information, has_mode_search, row_blocks
from . import importance, islands, mode_search, posterior_gap, relabelling
from .annealing import ess, log_normalize, next_increment
from .config import SGAISConfig
from .control_variates import ControlVariate
from .engine import Engine
from .growth import maybe_grow, shrink_to_base, variance_so_far
from .long_chunks import AnnealingWarning, long_chunk_message, warn_if_long
from .moves import exact_move, sghmc_move, with_chunk_term
from .records import (TRACE_FIELDS, ChunkInfo, ChunkTally, MoveResult, SearchCloud,
                      SearchFound, SGAISState, close_weight_segment, record_chunk,
                      segment_variance, successor)
from .reservoir import Reservoir
from .resampling import systematic_resample

__all__ = [
    "SGAISConfig", "SGAISState", "ChunkInfo", "MoveResult", "TRACE_FIELDS", "init", "update",
    "chunk_ends", "chunk_boundary", "sghmc_move", "exact_move", "record_chunk", "successor",
    "take_move", "refresh_reference", "segment_variance", "AnnealingWarning",
    "long_chunk_message",
]


# Particles at which a second-order control variate checks its linear term.
_N_PROBES = 4
# The importance-sampling folds (fold_in_importance): from this many warm-up
# lengths on (past the warm-up), with this many draws (enough for a std of a
# tenth of a nat where its ESS is half of them), and where its ESS is at least
# this share of them.
FOLD_START = 4
FOLD_DRAWS = 128
FOLD_MIN_ESS = 0.2
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
# move_to_missed_mode: the draws around a mode the particles missed, several
# per particle, as the t fits such modes loosely (an ESS of a small share of
# the draws):
# RESCUE_ROW_DRAWS draw-rows (the cost of a pass over the store), within
# [RESCUE_DRAWS, MAX_RESCUE_DRAWS]; and the odds (e^MISSED_MODE_NATS to 1)
# that its mass dwarfs theirs. At 100 to 1 a run whose cloud sits a few nats
# below a missed mode stays there and its evidence comes out low; at 10 to 1
# it moves, while the mixtures whose clouds hold the mode, whose excess stays
# well below log(10), never do (docs: benchmarks, Gaussian mixture).
RESCUE_DRAWS = 512
MAX_RESCUE_DRAWS = 1024
RESCUE_ROW_DRAWS = 2**22
MISSED_MODE_NATS = math.log(10.0)
# The search weighs its points with SCREEN_DRAWS draws each (the log of a mean
# of few weights errs low, rarely by more than a few nats), and draws anew
# only where that comes within SCREEN_MARGIN nats of moving the cloud.
SCREEN_DRAWS = 64
SCREEN_MARGIN = 3.0


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
    state = replace(state, reservoir=state.reservoir.append(chunk, state.generator),
                    summary=_summed(state.summary, model.summarize(chunk)),
                    cv=None if state.cv is None else state.cv.add_chunk(model, chunk),
                    n_seen=n_before + batch_size_of(chunk))
    state = fold_in_importance(model, state, config, n_before)
    state, due = _missed_mode_search_due(state, ends_update)
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
    there is no estimate, the annealing from the prior runs instead. Returns the
    state and the chunk's tally, or None where it did not start. The annealing from the prior takes most of a small fit
    (dozens of annealing steps of 40 adjusted steps on the first chunk),
    where a t at the mode of one chunk's posterior already fits it well
    enough.
    """
    if not (config.fold_importance and state.n_seen == 0 and model.unimodal
            and state.island_starts.shape[0] == 1 and not _grows(config)):
        return None
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    with torch.no_grad():
        found = importance.importance_draws(model, state.theta, W, chunk,
                                            START_DRAWS * state.theta.shape[0], state.generator)
    if found is None or found[0].ess * START_DRAWS < START_MIN_ESS:
        return None
    tally = ChunkTally(n_steps=1, n_particles=state.theta.shape[0], n_resamplings=1)
    state = _restart_from_draws(model, state, *found, state.generator)
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


def fold_in_importance(model, state, config, n_before):
    """The state with its running log evidence combined with an importance-sampling
    estimate of it.

    Where ``config.fold_importance`` is on, the model's posterior has one
    mode (up to relabellings: :func:`importance.applies`) and the store
    holds every observation: each time the data seen pass a point of
    ``FOLD_START * warmup_size * 2^k``, the estimate of
    :func:`importance.importance_log_evidence` (whose error does not grow
    with the data, unlike the annealing's) and the running one are averaged
    with inverse-variance weights, and the state's variance becomes
    theirs. Later chunks add to the combination. Their difference also
    calibrates the annealing's error bar
    (:attr:`SGAISState.variance_inflation`): a cloud that lags the
    posterior drifts further than its weights say, and its variance since
    the last fold is scaled by what the folds measured, both here and in
    ``log_evidence_std_`` after them. The points are fixed positions of
    the stream, so a stream fed in several calls that end on the chunk
    grid gives the numbers of one call.
    """
    if not _folds_between(n_before, state.n_seen, config):
        return state
    if not (config.fold_importance and importance.applies(model)
            and state.reservoir.size == state.n_seen
            and (state.island_starts is None or state.island_starts.shape[0] == 1)):
        return state
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    with torch.no_grad():
        estimate = importance.importance_log_evidence(
            model, state.theta, W, state.reservoir.data(), FOLD_DRAWS, state.generator,
            start=state.fold_mode)
    if estimate is None:
        return state
    state = replace(state, fold_mode=estimate.mode)
    if estimate.ess < FOLD_MIN_ESS:
        return state
    open_var = segment_variance(state.log_W)
    running, var_is = state.debiased_log_evidence, max(estimate.std ** 2, 1e-12)
    # The annealing's variance since the last fold, as its weights report it,
    # and the calibration of it by this fold's discrepancy (see
    # SGAISState.variance_inflation): the last fold's variance, this one's and
    # the annealing's explain the squared discrepancy on average.
    nominal = max(state.log_evidence_var + open_var - state.fold_var, 0.0)
    state = replace(state, fold_excess=state.fold_excess + (
        (running - estimate.log_evidence) ** 2 - state.fold_var - var_is - nominal),
                    fold_nominal=state.fold_nominal + nominal)
    var = state.fold_var + state.variance_inflation * nominal
    combined = (running * var_is + estimate.log_evidence * var) / (var + var_is)
    combined_var = var * var_is / (var + var_is)
    # The open weight segment keeps its variance (it grows until the next
    # resampling closes it); the closed part takes the rest of the combination's.
    closed = max(combined_var - open_var, 0.0)
    return replace(state, log_evidence_var=closed, weight_var=closed, fold_var=closed + open_var,
                   log_evidence=combined - 0.5 * (closed + open_var))


def _missed_mode_search_due(state, ends_update):
    """After a chunk once the data seen have doubled since the last search; at
    the end of an update once they have doubled since the last update that
    ended with one: the estimators' checks look for missed modes there, and
    report this search instead, so that the run moves to what they would
    find rather than warn. Marks it done. A search at the end of an update
    counts for the chunks too: a stream fed in many small calls then
    searches about once per doubling instead of twice. Returns the state, marked
    where a search is due, and whether it is."""
    due = state.n_seen >= 2 * state.searched_at
    if ends_update and state.n_seen >= 2 * state.ended_search_at:
        state, due = replace(state, ended_search_at=state.n_seen), True
    if due:
        state = replace(state, searched_at=state.n_seen)
    return state, due


def move_to_missed_mode(model, state, config, ends_update=False):
    """The cloud moved to a mode that it missed and whose mass dwarfs its own.

    Where :func:`_missed_mode_search_due`, for a model with a mode search
    (``Model.mode_candidates``; :mod:`.mode_search`): where the best
    mode found beats every particle and its mass, by importance sampling,
    exceeds the running evidence plus twice its std by more than
    ``MISSED_MODE_NATS`` (odds of 10 to 1 by Markov's inequality), the
    particles' own mass is at most about a tenth of the evidence. The run then
    goes on from that mode: the particles are resampled from the weighted
    draws, the running estimate becomes their estimate (which leaves out
    at most that tenth, 0.1 nats), and the control variate's references move to the
    new particles. Returns the state, which records the search
    (``search_found``), and 1 where it moved the cloud (else 0). Once the folds weigh
    the mode the cloud holds (:func:`_folds_weigh_the_cloud`), points on it
    are left to them. The search's draws
    come from a generator of their own (seeded from the engine's first
    seed and the data seen), so a run that never moves keeps its numbers.
    At the end of an update (``ends_update``), for a model with a search,
    the particles' log posterior comes from the pass over the store that
    the estimators' checks make next, which they then take from
    ``state.search_cloud``.
    """
    if not (config.fold_importance and state.reservoir.size == state.n_seen
            and state.island_starts.shape[0] == 1):
        return state, 0
    generator = state.side_generator(2)  # 0 and 1: the estimators' checks
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    store = state.reservoir.data()
    with torch.no_grad():
        live_log_p = None
        if ends_update and has_mode_search(model):
            state = replace(state, search_cloud=_cloud_for_the_checks(model, state, W, store))
            live_log_p = state.search_cloud.cloud.log_p
        found = mode_search.missed_mode(model, state.theta, W, store, SCREEN_DRAWS, generator,
                                        live_log_p,
                                        leave_cloud_mode=_folds_weigh_the_cloud(model, state,
                                                                                config))
        bar = state.debiased_log_evidence + 2.0 * state.log_evidence_std + MISSED_MODE_NATS
        if found is not None and found[0].log_evidence > bar - SCREEN_MARGIN:
            n_draws = min(MAX_RESCUE_DRAWS, max(RESCUE_DRAWS, RESCUE_ROW_DRAWS // state.n_seen))
            found = importance.importance_at(model, found[3], store, n_draws, generator)
    state = replace(state, search_found=SearchFound(state.n_seen,
                                                     None if found is None else found[0]))
    if found is None or not found[0].log_evidence > bar:
        return state, 0
    return _restart_from_draws(model, state, *found, generator), 1


def _cloud_for_the_checks(model, state, W, store):
    """The live particles' log posterior on ``store`` (the pass of
    :func:`.posterior_gap.cloud_on_posterior`), for ``state.search_cloud``."""
    cloud = posterior_gap.cloud_on_posterior(model, state.theta, W, store, state.n_seen)
    return SearchCloud(state.n_seen, state.theta, cloud)


def _folds_weigh_the_cloud(model, state, config):
    """Whether the folds weigh the mode the particles hold from here on
    (:func:`fold_in_importance`): the search then leaves it unweighed."""
    return importance.applies(model) and state.n_seen >= FOLD_START * max(config.warmup_size, 1)


def _restart_from_draws(model, state, estimate, draws, log_w, generator):
    """The state whose particles are resampled from importance ``draws`` with ``log_w``,
    and whose running estimate is theirs (its variance as one closed weight segment)."""
    M = state.theta.shape[0]
    u = float(torch.rand(1, generator=generator, dtype=torch.float64, device=draws.device))
    index = systematic_resample(log_w.cpu().numpy(), u, M)
    var = estimate.std ** 2
    state = replace(state,
                    theta=draws[torch.as_tensor(index, device=draws.device)].to(state.theta.dtype),
                    log_W=np.full(M, -math.log(M)), log_evidence=estimate.log_evidence - 0.5 * var,
                    log_evidence_var=var, weight_var=var, fold_var=var, fold_mode=None)
    if state.cv is not None and state.n_seen > 0:  # (before the first chunk: no store yet)
        state = reference_at_particles(model, state, move_anchor=True)
    return state


def _folds_between(n_before, n_after, config):
    """Whether ``(n_before, n_after]`` holds a point of ``FOLD_START * warmup_size * 2^k``."""
    start = FOLD_START * max(config.warmup_size, 1)
    if n_after < start:
        return False
    if n_before < start:
        return True
    return math.floor(math.log2(n_after / start)) > math.floor(math.log2(n_before / start))


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


def refresh_reference(model, state, config):
    """The state whose control variate's reference moved to the particles once the data
    seen have grown by the refresh factor since the last move (a pass over the store)."""
    cv = state.cv
    if cv is None or state.n_seen == 0:
        return state
    if state.n_seen < _refresh_factor(cv, config) * max(cv.n_at_refresh, 1):
        return state
    return reference_at_particles(model, state)


def reference_at_particles(model, state, move_anchor=False):
    """The state whose control variate's reference(s) moved to the particles (their mean,
    for a shared one).

    The second-order term's anchor is the particles' mean, each relabelled
    to the labelling nearest the heaviest particle's (a mixture's), as are
    the probes that measure its noise; ``move_anchor`` moves it now (the
    particles moved to another mode), not only once the data have doubled.
    """
    cv = state.cv
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    maps = model.relabelling_maps(state.theta.dtype, state.theta.device)
    theta = relabelling.aligned(state.theta, state.theta[int(W.argmax())], maps)
    anchor = W @ theta
    new_ref = anchor[None, :] if cv.theta_ref.shape[0] == 1 else state.theta.clone()
    probes = theta[:: max(theta.shape[0] // _N_PROBES, 1)][:_N_PROBES]
    return replace(state, cv=cv.refresh(model, new_ref, state.reservoir.data(), state.n_seen,
                                         probes, anchor, maps, move_anchor=move_anchor))


def _refresh_factor(cv, config):
    """Growth of the data between two refreshes of the control variate's reference."""
    if config.cv_refresh_factor is not None:
        return config.cv_refresh_factor
    return 1.1 if cv.theta_ref.shape[0] == 1 else 2.0


ENGINE = Engine("sgais", init, update, anneals_online=True)
