"""The engine's steps at the posterior's mode by importance sampling.

Each takes the state and returns a new one: :func:`fold_in_importance`
averages the running log evidence with an importance-sampling estimate at
the posterior mode each time the data seen double, so that its error does
not accrue with the data (models whose posterior has one mode);
:func:`move_to_missed_mode` moves the particles to a mode they missed whose
mass dwarfs theirs (models with a mode search, mixtures), on the schedule of
:func:`missed_mode_search_due`. Both, and the first chunk by importance
sampling (``sgais``), restart the particles from importance draws
(:func:`restart_from_draws`).
"""

import math
from dataclasses import replace

import numpy as np
import torch

from ..models.base import has_mode_search
from . import control_variates, importance, mode_search, posterior_gap
from .records import SearchCloud, SearchFound, segment_variance
from .resampling import systematic_resample

__all__ = ["MISSED_MODE_NATS", "inverse_variance_mean", "fold_in_importance",
           "missed_mode_search_due",
           "move_to_missed_mode", "folds_weigh_the_cloud", "restart_from_draws"]

# The importance-sampling folds (fold_in_importance): from the late phase on
# (config.late_start, past the warm-up), with this many draws (enough for a std
# of a tenth of a nat where its ESS is half of them), and where its ESS is at
# least this share of them.
FOLD_DRAWS = 128
FOLD_MIN_ESS = 0.2
# move_to_missed_mode: the draws around a mode the particles missed, several
# per particle, as the t fits such modes loosely (an ESS of a small share of
# the draws):
# RESCUE_ROW_DRAWS draw-rows (the cost of a pass over the store), within
# [RESCUE_DRAWS, 2 RESCUE_DRAWS]; and the odds (e^MISSED_MODE_NATS to 1)
# that its mass dwarfs theirs. At 100 to 1 a run whose cloud sits a few nats
# below a missed mode stays there and its evidence comes out low; at 10 to 1
# it moves, while the mixtures whose clouds hold the mode, whose excess stays
# well below log(10), never do (docs: benchmarks, Gaussian mixture).
RESCUE_DRAWS = 512
RESCUE_ROW_DRAWS = 2**22
MISSED_MODE_NATS = math.log(10.0)
# The search weighs its points with SCREEN_DRAWS draws each (the log of a mean
# of few weights errs low, rarely by more than a few nats), and draws anew
# only where that comes within SCREEN_MARGIN nats of moving the cloud.
SCREEN_DRAWS = 64
SCREEN_MARGIN = 3.0


def inverse_variance_mean(a, var_a, b, var_b):
    """``(mean, variance)`` of independent estimates ``a`` and ``b`` of one quantity,
    with variances ``var_a`` and ``var_b`` (not both 0), weighted by their inverse
    variances: the unbiased combination of least variance."""
    return (a * var_b + b * var_a) / (var_a + var_b), var_a * var_b / (var_a + var_b)


def fold_in_importance(model, state, config, n_before):
    """The state with its running log evidence combined with an importance-sampling
    estimate of it.

    Where ``config.fold_importance`` is on, the model's posterior has one
    mode (up to relabellings: :func:`importance.applies`) and the store
    holds every observation: each time the data seen pass a point of
    ``config.late_start * 2^k``, the estimate of
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
    combined, combined_var = inverse_variance_mean(running, var, estimate.log_evidence, var_is)
    # The open weight segment keeps its variance (it grows until the next
    # resampling closes it); the closed part takes the rest of the combination's.
    closed = max(combined_var - open_var, 0.0)
    return replace(state, log_evidence_var=closed, weight_var=closed, fold_var=closed + open_var,
                   log_evidence=combined - 0.5 * (closed + open_var))


def missed_mode_search_due(state, ends_update):
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

    Where :func:`missed_mode_search_due`, for a model with a mode search
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
    the mode the cloud holds (:func:`folds_weigh_the_cloud`), points on it
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
        candidates = mode_search.search_points(model, state.theta, W, store, generator)
        found = mode_search.missed_mode(model, state.theta, W, store, SCREEN_DRAWS, generator,
                                        live_log_p,
                                        leave_cloud_mode=folds_weigh_the_cloud(model, state,
                                                                                config),
                                        candidates=candidates)
        bar = state.debiased_log_evidence + 2.0 * state.log_evidence_std + MISSED_MODE_NATS
        if found is not None and found.estimate.log_evidence > bar - SCREEN_MARGIN:
            n_draws = min(2 * RESCUE_DRAWS, max(RESCUE_DRAWS, RESCUE_ROW_DRAWS // state.n_seen))
            found = importance.importance_at(model, found.point, store, n_draws, generator)
    state = replace(state, search_found=SearchFound(
        state.n_seen, None if found is None else found.estimate, candidates))
    if found is None or not found.estimate.log_evidence > bar:
        return state, 0
    return restart_from_draws(model, state, found.estimate, found.draws, found.log_weights,
                              generator), 1


def _cloud_for_the_checks(model, state, W, store):
    """The live particles' log posterior on ``store`` (the pass of
    :func:`.posterior_gap.cloud_on_posterior`), for ``state.search_cloud``."""
    cloud = posterior_gap.cloud_on_posterior(model, state.theta, W, store, state.n_seen)
    return SearchCloud(state.n_seen, state.theta, cloud)


def folds_weigh_the_cloud(model, state, config):
    """Whether the folds weigh the mode the particles hold from here on
    (:func:`fold_in_importance`): the search then leaves it unweighed."""
    return importance.applies(model) and state.n_seen >= config.late_start


def restart_from_draws(model, state, estimate, draws, log_w, generator):
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
        state = control_variates.reference_at_particles(model, state, move_anchor=True)
    return state


def _folds_between(n_before, n_after, config):
    """Whether ``(n_before, n_after]`` holds a point of ``config.late_start * 2^k``."""
    start = config.late_start
    if n_after < start:
        return False
    if n_before < start:
        return True
    return math.floor(math.log2(n_after / start)) > math.floor(math.log2(n_before / start))
