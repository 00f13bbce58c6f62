"""The records the SGAIS engine carries and reports.

:class:`SGAISState` is where the particles are between chunks;
:class:`ChunkInfo` is what conditioning on one chunk measured (the
estimators' ``evidence_trace_`` has one array per field); :class:`MoveResult`
is what every move returns.

A state is a value (a frozen record, as are the control variate and the
per-step records): every step of the engine takes a state and returns a
new one (``dataclasses.replace``), with what it measured where it measures
something (a :class:`ChunkTally`, summed into the chunk's
:class:`ChunkInfo`). Only the random stream is shared and advanced: an
update starts from :func:`successor` of the state it is given, whose
generator is a clone, so the given state stays usable (a failed update
leaves it as it was).
"""

import math
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

import numpy as np
import torch

from . import islands
from .annealing import ess
from .control_variates import ControlVariate
from .reservoir import Reservoir

__all__ = ["ChunkInfo", "TRACE_FIELDS", "MoveResult", "ChunkTally", "SearchFound",
           "PastFisher", "SearchCloud", "SGAISState", "successor", "segment_variance",
           "close_weight_segment", "record_chunk"]


@dataclass(frozen=True)
class ChunkInfo:
    """What conditioning on one chunk measured: one record of ``SGAISState.trace``.

    The engine's state says where the particles are; these records say how
    they got there (the estimators' ``evidence_trace_`` has one array per
    field, and the diagnostics counters are their sums).
    """

    n_seen: int  # observations conditioned on after the chunk
    log_evidence: float  # running log evidence after the chunk
    n_annealing_steps: int
    ess: float  # of the weights after the chunk
    log_evidence_std: float
    n_particles: int  # largest particle count used during the chunk
    n_resamplings: int  # island resampling events
    n_diverged: int  # particles lost to non-finite values
    max_diverged_fraction: float  # largest share of live particles lost in one move
    n_adjusted_moves: int  # Metropolis-adjusted moves (exact warm-up)
    acceptance: float  # their mean acceptance rate (NaN when there were none)


TRACE_FIELDS = tuple(f.name for f in fields(ChunkInfo))


@dataclass(frozen=True)
class MoveResult:
    """What a move returns: the moved particles and what it measured.

    ``acceptance`` and ``step_size`` (the adapted step of the next adjusted
    move) are set by Metropolis-adjusted moves only. A move may also return
    the particles alone (a tensor).
    """

    theta: torch.Tensor
    acceptance: float | None = None
    step_size: float | None = None


@dataclass(frozen=True)
class ChunkTally:
    """What the steps of one chunk measured (summed with ``+`` into its ChunkInfo)."""

    n_steps: int = 0
    n_particles: int = 0  # the largest count
    n_resamplings: int = 0
    n_diverged: int = 0
    max_diverged_fraction: float = 0.0
    acceptances: tuple = ()

    def __add__(self, other):
        return ChunkTally(
            n_steps=self.n_steps + other.n_steps,
            n_particles=max(self.n_particles, other.n_particles),
            n_resamplings=self.n_resamplings + other.n_resamplings,
            n_diverged=self.n_diverged + other.n_diverged,
            max_diverged_fraction=max(self.max_diverged_fraction, other.max_diverged_fraction),
            acceptances=self.acceptances + other.acceptances)


@dataclass(frozen=True)
class SearchFound:
    """The last search for a mode the particles missed
    (``importance_steps.move_to_missed_mode``)."""

    n_seen: int  # data seen at the search
    estimate: object | None  # importance estimate near a better mode (None: none found)
    candidates: torch.Tensor | None = None  # the search's points (the checks start there too)


class PastFisher(NamedTuple):
    """The data seen's summed Fisher information, ``[d, d]``, and the data seen at its
    last pass over the whole store."""

    total: torch.Tensor
    n_at_pass: int


@dataclass(frozen=True)
class SearchCloud:
    """The end-of-update search's pass over the store: the checks take it where the
    particles and weights are still those."""

    n_seen: int
    theta: torch.Tensor  # the particles it was made for
    cloud: object  # posterior_gap.cloud_on_posterior's Cloud


@dataclass(frozen=True)
class SGAISState:
    """Everything the engine carries between chunks (a value).

    Per-chunk measurements live in ``trace`` (:class:`ChunkInfo` records);
    the diagnostics counters below are derived from them. The arrays are
    never written in place either (see :func:`successor`).
    """

    theta: torch.Tensor  # [M, d] particles
    log_W: np.ndarray  # [M] normalised log-weights, float64
    generator: torch.Generator
    reservoir: Reservoir
    cv: ControlVariate | None
    n_seen: int = 0
    log_evidence: float = 0.0
    exact_step_size: float = 0.5  # of the Metropolis-adjusted warmup moves, adapted
    trace: tuple = ()  # one ChunkInfo per chunk
    island_starts: np.ndarray | None = None  # [G] first particle of each island
    # Variance of log_evidence accumulated over the weight segments closed
    # by resampling (see segment_variance), and the part of it that comes
    # from importance weights (not from nested sampling's H / n_live): the
    # log of a mean of weights is biased low by half this (see
    # debiased_log_evidence).
    log_evidence_var: float = 0.0
    weight_var: float = 0.0
    # The importance-sampling folds' calibration of that variance
    # (importance_steps.fold_in_importance): the variance just after the last fold, and,
    # summed over the folds, the squared discrepancy between the two
    # estimates beyond what their variances explain, and the annealing's own
    # variance between folds (see variance_inflation).
    fold_var: float = 0.0
    fold_excess: float = 0.0
    fold_nominal: float = 0.0
    # The mode the last fold's climb reached (where the next climb starts,
    # importance.importance_log_evidence); None once the particles moved to
    # another mode.
    fold_mode: torch.Tensor | None = None
    # The sum of Model.summarize over the data seen, for models that have one.
    summary: dict | None = None
    # The data seen's summed Fisher information: the curvature metric's past
    # term (preconditioning.with_chunk_fisher; None: not kept).
    past_fisher: PastFisher | None = None
    # Searches for modes the particles missed (importance_steps.move_to_missed_mode):
    # after a chunk once the data seen have doubled since searched_at (the
    # last search of either kind); at the end of an update once they have
    # doubled since ended_search_at (the schedule of the estimators' checks,
    # which report that search); the last one's result and pass over the store.
    searched_at: int = 0
    ended_search_at: int = 0
    search_found: SearchFound | None = None
    search_cloud: SearchCloud | None = field(default=None, repr=False, compare=False)

    def side_generator(self, offset):
        """A generator of its own for a check or search, seeded from the engine's first
        seed, the data seen and ``offset``: the engine's stream stays as it was."""
        generator = torch.Generator(device=self.theta.device)
        generator.manual_seed((self.generator.initial_seed() + self.n_seen + offset)
                              % (1 << 63))
        return generator

    # Counters for the estimators' diagnostics_, summed over the chunks.
    @property
    def n_diverged(self):
        return sum(info.n_diverged for info in self.trace)

    @property
    def n_resamplings(self):
        return sum(info.n_resamplings for info in self.trace)

    @property
    def max_diverged_fraction(self):
        return max((info.max_diverged_fraction for info in self.trace), default=0.0)

    @property
    def n_adjusted_moves(self):
        return sum(info.n_adjusted_moves for info in self.trace)

    @property
    def acceptance_sum(self):
        return sum(info.acceptance * info.n_adjusted_moves for info in self.trace
                   if info.n_adjusted_moves)

    @property
    def log_evidence_std(self):
        """Estimated Monte Carlo std of ``log_evidence``.

        With islands, from their spread; otherwise the segments' variances
        (closed ones plus the current one).
        """
        if self.island_starts.shape[0] > 1:
            return islands.log_evidence_std(self.log_W, self.island_starts)
        since_fold = self.log_evidence_var + segment_variance(self.log_W) - self.fold_var
        return math.sqrt(self.fold_var + self.variance_inflation * max(since_fold, 0.0))

    @property
    def variance_inflation(self):
        """Factor on the annealing's variance since the last importance-sampling fold.

        At each fold the running estimate and the importance-sampling one
        differ by an amount whose variance their error bars predict; where
        the squared differences, summed over the folds, exceed that, the
        excess is what the annealing's own variance missed (a cloud that
        lags the posterior drifts low without showing it in its weights),
        and its variance between folds is scaled up by the ratio. Never
        below 1; 1 before the first fold.
        """
        if self.fold_nominal <= 0.0:
            return 1.0
        return 1.0 + max(self.fold_excess, 0.0) / self.fold_nominal

    @property
    def debiased_log_evidence(self):
        """``log_evidence`` plus half the variance of its importance-weight factors.

        The evidence estimate ``Z`` is a product of weight means, each
        unbiased; the log of an unbiased estimate with relative variance
        ``v`` is low by ``v / 2`` on average (delta method; Berard, Del
        Moral & Doucet 2014 show the same for SMC's ``log Z``). Adding the
        estimated ``v / 2`` of every factor removes that bias to second
        order. Nested sampling's part of the estimate is left as it is.
        """
        if self.island_starts is not None and self.island_starts.shape[0] > 1:
            return self.log_evidence + 0.5 * self.log_evidence_std ** 2
        return self.log_evidence + 0.5 * (self.weight_var + segment_variance(self.log_W))

    @property
    def weights(self):
        return np.exp(self.log_W)


def successor(state):
    """``state`` with a clone of its generator: where an update starts, so that
    ``state``'s random stream is not advanced.

    Everything else is shared: the steps return new records instead of
    writing into them.
    """
    return replace(state, generator=_cloned(state.generator))


def _cloned(generator):
    clone = torch.Generator(device=generator.device)
    clone.set_state(generator.get_state())
    return clone


def segment_variance(log_W):
    """Relative variance of the evidence factor of one weight segment.

    Between two resamplings the evidence factor is the mean of the
    particles' accumulated incremental weights (annealed importance
    sampling); for particles that started the segment as independent
    draws its relative variance is ``sum W^2 - 1 / M = 1 / ESS - 1 / M``,
    the delta-method variance of its log. Segments are separated by
    resampling, so their errors are uncorrelated (martingale differences)
    and the variances add up.
    """
    return max(float(np.exp(2.0 * log_W).sum()) - 1.0 / log_W.shape[0], 0.0)


def close_weight_segment(state, log_W=None):
    """``state`` with the variance of a closed weight segment added (default: its weights')."""
    v = segment_variance(state.log_W if log_W is None else log_W)
    return replace(state, log_evidence_var=state.log_evidence_var + v,
                   weight_var=state.weight_var + v)


def record_chunk(state, n_annealing_steps, ess_value=None, acceptance=None, n_diverged=0,
                 max_diverged_fraction=0.0):
    """``state`` with the :class:`ChunkInfo` of a chunk conditioned on by another method.

    For the baselines that share this state (``ais``, ``nested``, the
    sequential estimators): ``ess_value`` defaults to the weights' ESS,
    ``acceptance`` is the mean acceptance of one adjusted run (or None).
    """
    return replace(state, trace=state.trace + (ChunkInfo(
        n_seen=state.n_seen, log_evidence=state.debiased_log_evidence,
        n_annealing_steps=int(n_annealing_steps),
        ess=ess(state.log_W) if ess_value is None else float(ess_value),
        log_evidence_std=state.log_evidence_std, n_particles=state.theta.shape[0],
        n_resamplings=0, n_diverged=int(n_diverged),
        max_diverged_fraction=float(max_diverged_fraction),
        n_adjusted_moves=0 if acceptance is None else 1,
        acceptance=math.nan if acceptance is None else float(acceptance)),))
