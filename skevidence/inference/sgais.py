"""Stochastic Gradient Annealed Importance Sampling (SGAIS), online.

The evidence is built up chunk by chunk, ``log Z = sum_k log p(C_k | C_<k)``.
For each chunk the particles, which represent the posterior given the
past data, are moved to the posterior that also includes the chunk along
an adaptive tempering path ``p(C | theta)^lam``, ``0 = lam_0 < ... = 1``:

1. **reweight**: pick the next increment ``delta`` by ESS bisection and
   multiply the weights by ``p(C | theta)^delta`` (the log of their mean is
   this step's share of ``log Z``);
2. **resample** when the weights have degenerated;
3. **move** the particles with SGHMC on the tempered posterior, whose
   past-data term is a control-variate mini-batch estimate (while the data
   are few, Metropolis-adjusted moves on the exact posterior).

Afterwards the chunk joins the data store. The cost of a chunk depends on
the chunk and on the mini-batch size, not on how much data came before.
"""

import math
import numbers
import typing
import warnings
from dataclasses import dataclass, field, fields

import numpy as np
import torch

from ..models.base import Model, batch_size_of, take
from . import islands
from .annealing import ess, log_normalize, next_increment
from .control_variates import ControlVariate
from .kernels import (baoab, covariance_preconditioner, ghmc, isotropic_preconditioner,
                      ledoit_wolf_shrinkage, precision_preconditioner, sghmc)
from .reservoir import Reservoir

__all__ = [
    "SGAISConfig", "SGAISState", "ChunkInfo", "MoveResult", "TRACE_FIELDS", "init", "update",
    "chunk_ends", "sghmc_move", "exact_move", "checkpoint", "rollback", "record_chunk", "take_move", "AnnealingWarning",
]

# Target acceptance rate of the warm-up's generalised HMC: a rejection
# reverses the momentum, so a high rate keeps the trajectories going.
EXACT_ACCEPTANCE = 0.8


@dataclass(frozen=True)
class SGAISConfig:
    """Settings of the SGAIS engine: the keys that ``engine_options`` accepts.

    The estimators build one from their parameters (the first eight fields
    below, and ``max_particles``; set them with the estimator's parameters
    of the same name, not through ``engine_options``), their per-model
    defaults (e.g. :class:`~skevidence.EvidenceGMM` moves with
    ``precondition="model"`` and one control-variate reference per
    particle), and then the entries of ``engine_options``, which win. A
    name that is not a field, a value of the wrong type or outside its
    range raise ``ValueError``.

    Parameters
    ----------
    n_particles : int, default=128
        Number of weighted particles (the estimators' ``n_particles``).
    batch_size : int, default=500
        Observations per chunk (the estimators' ``batch_size``).
    n_burnin : int, default=20
        Moves after every annealing step (the estimators' ``n_burnin``).
    learning_rate : float, default=0.1
        Step size of the SGHMC moves (the estimators' ``learning_rate``).
    momentum_decay : float, default=0.2
        SGHMC friction (the estimators' ``momentum_decay``).
    target_ess : float, default=0.9
        Conditional ESS kept by each annealing step, as a fraction of the
        particles (the estimators' ``target_ess``).
    resample_threshold : float, default=0.5
        Resample when the ESS falls below this fraction of the particles
        (the estimators' ``resample_threshold``).
    reservoir_size : int or None, default=None
        Observations kept for the mini-batches; ``None`` keeps them all
        (the estimators' ``reservoir_size``).
    precondition : {"covariance", "model", "curvature"} or None, \
default="covariance"
        Metric of the moves. ``"covariance"``: the particles' weighted
        covariance, so the step follows the posterior's scale and
        correlations (the model's curvature instead when there are too few
        particles, see ``curvature_ratio``); ``"model"``: a diagonal scale
        per particle from the model's ``posterior_scale``, so that
        particles in different modes of a multimodal posterior (the
        relabellings of a mixture) each move on their own scale, which one
        covariance across the cloud cannot give; ``"curvature"``:
        the model's Laplace precision at the particles' mean; ``None``:
        isotropic, ``learning_rate / n`` after ``n`` observations.
    control_variate : {"shared", "particle"} or None, default="shared"
        Control variate of the mini-batch gradient of the past data, whose
        noise otherwise grows with the data seen: ``"shared"``, one
        reference point (the particles' mean; for unimodal posteriors);
        ``"particle"``, one per particle (particles in different modes each
        keep their own, at ``n_particles`` times the cost of a refresh);
        ``None``, plain mini-batches.
    cv_refresh_factor : float or None, default=None
        The control variate's reference moves to the particles each time
        the data seen grow by this factor (a pass over the stored data).
        ``None``: 1.1 for one shared reference, whose refresh is cheap, and
        2.0 for one per particle. At least 1.
    warmup_size : int, default=1000
        Length of the warm-up, in observations: below it the moves take
        ``warmup_factor`` times more steps and, with ``exact_warmup``, are
        Metropolis-adjusted on the exact posterior.
    warmup_factor : int, default=2
        Moves per annealing step are ``n_burnin * warmup_factor`` during
        the warm-up.
    integrator : {"baoab", "sghmc"}, default="baoab"
        Integrator of the stochastic-gradient moves: the BAOAB splitting of
        the Langevin dynamics, exact in distribution for a Gaussian target
        at any stable step, or the paper's first-order SGHMC update, whose
        stationary variance is inflated by a term of the order of the step.
    precondition_shrinkage : float or "ledoit-wolf", default=0.0
        Weight in [0, 1] of the diagonal mixed into the covariance
        preconditioner; ``"ledoit-wolf"`` picks it from the particles. Any
        positive weight leaks the wide marginal scales of a correlated
        posterior into its narrow directions, where the moves can diverge,
        so it only helps when ``n_particles`` is not much larger than the
        number of parameters.
    curvature_ratio : float, default=2.0
        With ``precondition="covariance"``, use the model's curvature
        (``Model.fisher_information``, where the model has one) when
        ``n_particles < curvature_ratio * n_params``: fewer particles than
        parameters span only part of the space, and the moves cannot leave
        that span.
    exact_warmup : bool, default=True
        Metropolis-adjusted moves on the exact tempered posterior while
        fewer than ``warmup_size`` observations are seen and the store
        holds every one of them: the posteriors of few data are the least
        Gaussian, where a step that suits the particles' covariance can
        still diverge.
    warmup_dtype : {"float32"} or None, default=None
        ``"float32"`` runs the exact warm-up's moves in single precision
        (the weights stay in the estimator's ``dtype``), at about half the
        cost; a rounding of the log density only perturbs the Metropolis
        test. ``None`` moves in the particles' dtype.
        :class:`~skevidence.EvidenceLogisticRegression` uses ``"float32"``.
    n_islands : int, default=1
        Resampling stays within each of this many groups of particles
        (fewer for small clouds), each an independent sampler whose spread
        of evidence estimates gives ``log_evidence_std_``. Does not combine
        with ``max_particles``.
    first_chunk_size : int or None, default=None
        ``None`` adds the first ``batch_size`` observations in one chunk.
        An integer adds them, with ``exact_warmup``, in chunks that double
        in size, the smallest at least ``first_chunk_size``: cheaper first
        chunks, but a larger error of the evidence on some models, so it is
        opt-in (see :doc:`/benchmarks`).
    annealing_steps_warning : int or None, default=250
        Issue an :class:`~skevidence.exceptions.AnnealingWarning` when a
        chunk needs more annealing steps than this; ``None`` never warns.
        The count grows only logarithmically with how informative a chunk
        is, but linearly with a prior-data conflict, so a large count
        signals data on the wrong scale.
    max_particles : int or None, default=None
        Adaptive Resample-Move (the estimators' ``max_particles``): a chunk
        that contributes much variance grows the particle set, up to this
        many; ``None`` keeps ``n_particles``.
    growth_threshold : float, default=1.0
        With ``max_particles``, a chunk doubles the particle count ``M``
        each time its share of ``Var(log Z)`` passes ``growth_threshold *
        M / n_particles^2``. The share accrues at a rate proportional to
        ``1 / M`` per annealing step, so the count grows like the square
        root of the chunk's steps, as the paper's optimum (its Theorem 1).
    move_ess : float or None, default=0.5
        Past ``warmup_size``, a chunk taken in one annealing step skips its
        move while the weights' ESS stays above ``move_ess`` times the
        particles and nothing was resampled: the weighted particles still
        represent the posterior. ``None`` moves after every step.
    minibatch_size : int or None, default=1000
        Observations per mini-batch of the past-data gradient (``None``:
        ``batch_size``). Larger than the default ``batch_size`` because
        the noise of smaller mini-batches biases the evidence low on long
        streams (see :doc:`/benchmarks`).
    """

    # The defaults are documented above (and by the estimators, for their
    # parameters): keep the two in step when changing one.
    n_particles: int = 128
    batch_size: int = 500
    n_burnin: int = 20
    learning_rate: float = 0.1
    momentum_decay: float = 0.2
    target_ess: float = 0.9
    resample_threshold: float = 0.5
    reservoir_size: int | None = None
    precondition: str | None = "covariance"
    control_variate: str | None = "shared"
    cv_refresh_factor: float | None = None
    warmup_size: int = 1000
    warmup_factor: int = 2
    integrator: str = "baoab"
    precondition_shrinkage: float | str = 0.0
    curvature_ratio: float = 2.0
    exact_warmup: bool = True
    warmup_dtype: str | None = None
    n_islands: int = 1
    first_chunk_size: int | None = None
    annealing_steps_warning: int | None = 250
    max_particles: int | None = None
    growth_threshold: float = 1.0
    move_ess: float | None = 0.5
    minibatch_size: int | None = 1000

    def __post_init__(self):
        for f in fields(self):
            _check_type(f.name, getattr(self, f.name), f.type)
        for name, low in _LOWER_BOUNDS.items():
            value = getattr(self, name)
            if value is not None and not value >= low:
                raise ValueError(f"SGAISConfig.{name} must be at least {low}, got {value!r}")
        # A typo in a string setting must not fall back silently to another
        # behaviour (the engine's branches test for one value each).
        for name, allowed in _CHOICES.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"SGAISConfig.{name} must be one of {allowed}, got {value!r}")
        shrinkage = self.precondition_shrinkage
        if isinstance(shrinkage, str) and shrinkage != "ledoit-wolf":
            raise ValueError("SGAISConfig.precondition_shrinkage must be a number in [0, 1] "
                             f"or 'ledoit-wolf', got {shrinkage!r}")
        self._check_growth()
        self._check_reservoir()

    def _check_reservoir(self):
        # A store smaller than a mini-batch repeats observations in it, and
        # one smaller than the warm-up ends the exact warm-up early (it needs
        # every observation); both bias the evidence, by far more than its
        # error bar.
        smallest = max(self.batch_size, self.warmup_size if self.exact_warmup else 0)
        if self.reservoir_size is not None and self.reservoir_size < smallest:
            raise ValueError(
                f"reservoir_size={self.reservoir_size} is below {smallest}, the larger of "
                "batch_size and the exact warm-up's warmup_size: the mini-batches would "
                "repeat observations and the warm-up would end early, biasing the evidence. "
                f"Use reservoir_size >= {smallest}, or None to keep every observation")

    def _check_growth(self):
        if self.max_particles is None:
            return
        if self.max_particles < self.n_particles:
            raise ValueError(f"max_particles={self.max_particles} must be at least "
                             f"n_particles={self.n_particles} (or None: no growth)")
        if self.n_islands > 1:
            raise ValueError("max_particles (particle growth) does not combine with "
                             f"n_islands={self.n_islands}; use one of them")


# What the annotations of SGAISConfig's fields accept (numpy scalars included).
_ACCEPTED = {int: numbers.Integral, float: numbers.Real, bool: (bool, np.bool_), str: str,
             type(None): type(None)}


def _check_type(name, value, annotation):
    kinds = typing.get_args(annotation) or (annotation,)
    is_bool = isinstance(value, (bool, np.bool_))
    if not isinstance(value, tuple(_ACCEPTED[k] for k in kinds)) or (is_bool and bool not in kinds):
        raise ValueError(f"SGAISConfig.{name} must be of type {annotation}, got {value!r}")


# Smallest value of the numeric settings (None, where allowed, passes).
_LOWER_BOUNDS = {
    "n_particles": 2, "batch_size": 1, "n_burnin": 1, "reservoir_size": 1, "warmup_size": 0,
    "warmup_factor": 1, "n_islands": 1, "first_chunk_size": 1, "annealing_steps_warning": 1,
    "curvature_ratio": 0.0, "cv_refresh_factor": 1.0, "max_particles": 2,
    "growth_threshold": 0.0, "move_ess": 0.0, "minibatch_size": 1,
}

# The values each string setting of SGAISConfig accepts.
_CHOICES = {
    "precondition": (None, "covariance", "model", "curvature"),
    "control_variate": (None, "shared", "particle"),
    "integrator": ("baoab", "sghmc"),
    "warmup_dtype": (None, "float32"),
}


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


@dataclass
class _ChunkTally:
    """Counts gathered while one chunk is conditioned on (becomes a ChunkInfo)."""

    n_steps: int = 0
    n_particles: int = 0
    n_resamplings: int = 0
    n_diverged: int = 0
    max_diverged_fraction: float = 0.0
    acceptances: list = field(default_factory=list)


@dataclass
class SGAISState:
    """Everything the engine carries between chunks (a plain record).

    Per-chunk measurements live in ``trace`` (:class:`ChunkInfo` records);
    the diagnostics counters below are derived from them, so undoing an
    update only needs the trace's length.
    """

    theta: torch.Tensor  # [M, d] particles
    log_W: np.ndarray  # [M] normalised log-weights, float64
    generator: torch.Generator
    reservoir: Reservoir
    cv: ControlVariate | None
    n_seen: int = 0
    log_evidence: float = 0.0
    exact_step_size: float = 0.5  # of the Metropolis-adjusted warmup moves, adapted
    trace: list = field(default_factory=list)  # one ChunkInfo per chunk
    island_starts: np.ndarray | None = None  # [G] first particle of each island
    # Variance of log_evidence accumulated over the weight segments closed
    # by resampling (see segment_variance).
    log_evidence_var: float = 0.0

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
        return math.sqrt(self.log_evidence_var + segment_variance(self.log_W))

    @property
    def weights(self):
        return np.exp(self.log_W)


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights, an empty data store."""
    M = config.n_particles
    theta = model.sample_prior(M, generator, dtype=dtype, device=device)
    cv = None
    if config.control_variate is not None:
        R = 1 if config.control_variate == "shared" else M  # "particle": one each
        ref = theta.mean(0, keepdim=True) if R == 1 else theta.clone()
        cv = ControlVariate(theta_ref=ref, grad_sum=torch.zeros_like(ref))
    return SGAISState(
        theta=theta,
        log_W=np.full(M, -math.log(M)),
        generator=generator,
        reservoir=Reservoir(capacity=config.reservoir_size),
        cv=cv,
        island_starts=islands.island_starts(M, islands.n_islands_for(M, config.n_islands)),
    )


def update(model, state, config, batch, move=None, callback=None):
    """Condition the particles on ``batch``, in the chunks of :func:`chunk_ends`.

    ``move(model, state, config, chunk, lam)`` returns a :class:`MoveResult`
    (or the moved particles alone) and leaves ``state`` as it was; the
    default is :func:`sghmc_move`. ``callback(state, lam, n_pending)`` runs
    after every annealing step (``lam`` reached, ``n_pending`` the size of
    the chunk not yet counted in ``state.n_seen``) and after each chunk
    (``lam = 1``, ``n_pending = 0``).
    """
    steps = [0]  # annealing steps of the current chunk
    move = _counting(sghmc_move if move is None else move, steps, callback)
    start, longest = 0, (0, 0, 0)
    for end in chunk_ends(state.n_seen, batch_size_of(batch), config):
        chunk = tuple(t[start:end] for t in batch)
        steps[0] = 0
        _condition_on_chunk(model, state, config, chunk, move)
        longest = max(longest, (steps[0], state.n_seen - (end - start), end - start))
        start = end
        if callback is not None:
            callback(state, 1.0, 0)
    _warn_if_long(longest, config)
    return state


def chunk_ends(n_seen, n_new, config):
    """Ends (offsets into the new data) of the chunks that ``n_new`` observations form.

    Chunk boundaries depend only on the stream position: multiples of
    ``batch_size``, and within the first ``batch_size`` observations the
    points ``batch_size / 2^k`` (``k = K, ..., 1``, the smallest at least
    ``first_chunk_size``; only when that is set and with ``exact_warmup``).
    The chunks nearest the prior need the most annealing steps per
    observation; kept small, each of their steps (exact moves over the data
    seen) costs a fraction of a full chunk's (see docs/benchmarks.rst).
    Feeding a stream in pieces that end on these boundaries gives the
    numbers of one call.
    """
    b = config.batch_size
    ramp = []
    if config.first_chunk_size is not None and config.exact_warmup:
        k = 1
        while b // 2**k >= max(config.first_chunk_size, 1):
            ramp.append(b // 2**k)
            k += 1
    ends, n = [], n_seen
    while n < n_seen + n_new:
        later = [r for r in ramp if r > n]
        boundary = min(later) if later else (n // b + 1) * b
        n = min(boundary, n_seen + n_new)
        ends.append(n - n_seen)
    return ends


def _counting(move, steps, callback):
    """``move`` that counts the annealing steps (one move each) and reports them."""
    def counted_move(model, state, config, chunk, lam):
        result = move(model, state, config, chunk, lam)
        steps[0] += 1
        if callback is not None:
            callback(state, lam, batch_size_of(chunk))
        return result
    return counted_move


class AnnealingWarning(UserWarning):
    """A chunk needed unusually many annealing steps.

    Issued by ``fit`` / ``partial_fit`` of the SGAIS estimators when
    conditioning on one chunk took more annealing (tempering) steps than
    the ``annealing_steps_warning`` entry of ``engine_options`` (250 by
    default; ``None`` turns the warning off). The number of steps grows
    only slowly with how informative a chunk is, but fast when the data
    lie far in the tails of the prior (a prior-data conflict, e.g. targets
    on a scale of 100 under a unit prior) or of the posterior so far (a
    change in the stream): the fit becomes slow and the estimate loses
    accuracy.

    What to do: put the data on the scale the prior assumes (standardise
    the features and targets) or widen the prior; for a stream that
    changes, see :func:`skevidence.diagnostics.detect_shifts`.

    Public name: :class:`skevidence.exceptions.AnnealingWarning`.
    """


def _warn_if_long(longest, config):
    n_steps, n_before, size = longest
    if config.annealing_steps_warning is None or n_steps <= config.annealing_steps_warning:
        return
    warnings.warn(
        f"adding {size} observations after {n_before} took {n_steps} annealing steps "
        f"(more than {config.annealing_steps_warning}): the data lie far in the tails of "
        "the prior (prior-data conflict) or of the posterior so far (a change in the "
        "stream). Cost grows with the conflict and the estimate loses accuracy; put the "
        "data on the scale the prior assumes (e.g. standardise them) or widen the prior.",
        AnnealingWarning, stacklevel=3)


def _condition_on_chunk(model, state, config, chunk, move):
    """Anneal the particles from the posterior without ``chunk`` to the one with it.

    Appends the chunk's :class:`ChunkInfo` to ``state.trace``.
    """
    _maybe_refresh_reference(model, state, config)
    lam, tally = 0.0, _ChunkTally(n_particles=state.theta.shape[0])
    var_before = _variance_so_far(state)
    loglik = _chunk_log_likelihood(model, state.theta, chunk)
    while lam < 1.0:
        remaining = 1.0 - lam
        target = config.target_ess * state.theta.shape[0]
        delta = next_increment(state.log_W, loglik, remaining, target)
        if remaining - delta <= 1e-9 * remaining:
            delta = remaining
        _reweight(state, loglik, delta)
        lam = 1.0 if delta == remaining else lam + delta
        tally.n_steps += 1
        resampled = _resample(state, _islands_to_resample(state, config))
        tally.n_resamplings += resampled
        if lam < 1.0:
            grown = _maybe_grow(state, config, var_before)
            tally.n_resamplings += grown
            resampled += grown
            tally.n_particles = max(tally.n_particles, state.theta.shape[0])
        else:  # the chunk's last move starts from n_particles again
            shrunk = _shrink(state, config)
            tally.n_resamplings += shrunk
            resampled += shrunk
        if _skips_move(state, config, tally, lam, resampled):
            break
        _apply_move(state, move(model, state, config, chunk, lam), tally)
        _tally_divergences(tally, *_discard_diverged(state))
        if lam < 1.0:  # (after the chunk's last move the loop ends)
            loglik = _chunk_log_likelihood(model, state.theta, chunk)
    state.reservoir.append(chunk, state.generator)
    if state.cv is not None:
        state.cv.add_chunk(model, chunk)
    state.n_seen += batch_size_of(chunk)
    state.trace.append(_chunk_info(state, tally))


def _skips_move(state, config, tally, lam, resampled):
    """Whether a chunk taken in one annealing step can keep its particles unmoved.

    Past the warm-up a chunk of ``b`` observations adds about ``(d / 2) b /
    n`` nats of information, so late in a stream one annealing step takes it
    with the weights' ESS still near ``M``. The weighted particles represent
    the posterior already; they need a move only once the ESS, falling over
    the chunks, is below ``move_ess * M``, or resampling made copies (IBIS,
    Chopin 2002). Chunks of several steps keep every move: their weights
    have moved away from the particles' positions, and skipping any of
    their moves let the cloud lag the posterior and biased the evidence low
    on long streams (see docs/benchmarks.rst).
    """
    threshold = config.move_ess
    if threshold is None or lam < 1.0 or tally.n_steps > 1 or resampled:
        return False
    if state.n_seen < config.warmup_size:
        return False
    return ess(state.log_W) >= threshold * state.theta.shape[0]


def _variance_so_far(state):
    """Estimated Var(log_evidence): closed segments plus the current one."""
    return state.log_evidence_var + segment_variance(state.log_W)


def _maybe_grow(state, config, var_before):
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
    stays the sum of segment variances. Returns 1 when it resampled.
    """
    M = state.theta.shape[0]
    if config.max_particles is None or M >= config.max_particles:
        return 0
    budget = config.growth_threshold * M / config.n_particles**2
    if _variance_so_far(state) - var_before <= budget:
        return 0
    _resample_to(state, min(2 * M, config.max_particles))
    return 1


def _shrink(state, config):
    """Resample a grown particle set back to ``n_particles`` (1 if it did)."""
    if state.theta.shape[0] <= config.n_particles:
        return 0
    _resample_to(state, config.n_particles)
    return 1


def _resample_to(state, m):
    """Systematic resampling of all particles to ``m`` equally weighted ones (one island)."""
    state.log_evidence_var += segment_variance(state.log_W)
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    cumulative = np.cumsum(np.exp(state.log_W))
    positions = (u + np.arange(m)) / m * cumulative[-1]
    index = np.minimum(np.searchsorted(cumulative, positions, side="right"),
                       cumulative.shape[0] - 1)
    index_t = torch.as_tensor(index, device=state.theta.device)
    state.theta = state.theta[index_t]
    state.log_W = np.full(m, -math.log(m))
    if state.cv is not None:
        state.cv.select(index_t)


def _apply_move(state, result, tally):
    acceptance = take_move(state, result)
    if acceptance is not None:
        tally.acceptances.append(acceptance)


def take_move(state, result):
    """Take the moved particles, and the adapted step size, from a move's result.

    ``result`` is a :class:`MoveResult` or a tensor of particles; returns
    the move's acceptance rate (None for unadjusted moves).
    """
    if isinstance(result, torch.Tensor):
        result = MoveResult(result)
    state.theta = result.theta
    if result.step_size is not None:
        state.exact_step_size = result.step_size
    return result.acceptance


def _tally_divergences(tally, n_lost, fraction, n_resampled):
    tally.n_diverged += n_lost
    tally.max_diverged_fraction = max(tally.max_diverged_fraction, fraction)
    tally.n_resamplings += n_resampled


def _chunk_info(state, tally):
    acceptances = tally.acceptances
    return ChunkInfo(
        n_seen=state.n_seen, log_evidence=state.log_evidence,
        n_annealing_steps=tally.n_steps, ess=ess(state.log_W),
        log_evidence_std=state.log_evidence_std, n_particles=tally.n_particles,
        n_resamplings=tally.n_resamplings, n_diverged=tally.n_diverged,
        max_diverged_fraction=tally.max_diverged_fraction,
        n_adjusted_moves=len(acceptances),
        acceptance=sum(acceptances) / len(acceptances) if acceptances else math.nan)


def record_chunk(state, n_annealing_steps, ess_value=None, acceptance=None, n_diverged=0,
                 max_diverged_fraction=0.0):
    """Append the :class:`ChunkInfo` of a chunk conditioned on by another method.

    For the baselines that share this state (``ais``, ``nested``, the
    sequential estimators): ``ess_value`` defaults to the weights' ESS,
    ``acceptance`` is the mean acceptance of one adjusted run (or None).
    """
    state.trace.append(ChunkInfo(
        n_seen=state.n_seen, log_evidence=state.log_evidence,
        n_annealing_steps=int(n_annealing_steps),
        ess=ess(state.log_W) if ess_value is None else float(ess_value),
        log_evidence_std=state.log_evidence_std, n_particles=state.theta.shape[0],
        n_resamplings=0, n_diverged=int(n_diverged),
        max_diverged_fraction=float(max_diverged_fraction),
        n_adjusted_moves=0 if acceptance is None else 1,
        acceptance=math.nan if acceptance is None else float(acceptance)))


def _chunk_log_likelihood(model, theta, chunk):
    """Summed log-likelihood of the chunk per particle; non-finite -> -inf."""
    ll = model.log_likelihood(theta, chunk).sum(1).to(torch.float64).cpu().numpy()
    return np.where(np.isfinite(ll), ll, -np.inf)


def _reweight(state, loglik, delta):
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
    state.log_evidence += log_increment
    state.log_W = log_w - log_increment


def _islands_to_resample(state, config):
    """Islands whose weights degenerated (ESS below the threshold) or hold zeros."""
    starts = state.island_starts
    sizes = islands.island_sizes(state.log_W.shape[0], starts)
    has_zero = np.logical_or.reduceat(~np.isfinite(state.log_W), starts)
    low = islands.island_ess(state.log_W, starts) < config.resample_threshold * sizes
    return has_zero | low


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


def _resample(state, which):
    """Systematic resampling within the islands flagged in ``which`` ``[G]``.

    Returns the number of islands resampled.
    """
    live = np.isfinite(islands.island_log_mass(state.log_W, state.island_starts))
    which = which & live
    if not which.any():
        return 0
    if which.shape[0] == 1:
        state.log_evidence_var += segment_variance(state.log_W)
    u = float(torch.rand(1, generator=state.generator, dtype=torch.float64,
                         device=state.theta.device))
    index, state.log_W = islands.systematic_resample_islands(
        state.log_W, u, state.island_starts, which)
    index_t = torch.as_tensor(index, device=state.theta.device)
    state.theta = state.theta[index_t]
    if state.cv is not None:
        state.cv.select(index_t)
    return int(which.sum())


def _discard_diverged(state):
    """Give particles that left the finite numbers zero weight and resample.

    A rare divergence of one particle is repaired here instead of poisoning
    the evidence with NaN; if every particle diverged there is nothing to
    repair from and the error says so. Returns the number of live particles
    lost, their share of the live ones, and the islands resampled.
    """
    ok = torch.isfinite(state.theta).all(1).cpu().numpy()
    if ok.all():
        return 0, 0.0, 0
    live = np.isfinite(state.log_W)
    if not (ok & live).any():
        raise FloatingPointError(
            f"all particles diverged after {state.n_seen} observations. Likely "
            "causes: data far from unit scale (standardise features and targets, "
            "e.g. StandardScaler), a learning_rate too large for this posterior "
            "(try a tenth of it), or too few particles"
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
    state.log_W = log_normalize(log_W + np.repeat(shift, sizes))
    state.theta = torch.where(torch.as_tensor(ok, device=state.theta.device)[:, None],
                              state.theta, torch.zeros_like(state.theta))
    return lost, fraction, _resample(state, np.logical_or.reduceat(~ok, starts))


def _maybe_refresh_reference(model, state, config):
    cv = state.cv
    if cv is None or state.n_seen == 0:
        return
    if state.n_seen < _refresh_factor(cv, config) * max(cv.n_at_refresh, 1):
        return
    if cv.theta_ref.shape[0] == 1:
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        new_ref = (W @ state.theta)[None, :]
    else:
        new_ref = state.theta.clone()
    cv.refresh(model, new_ref, state.reservoir.data(), state.n_seen)


def _refresh_factor(cv, config):
    """Growth of the data between two refreshes of the control variate's reference.

    The mini-batch noise grows with the particles' distance from the
    reference, and a reference that lags the moving posterior biases the
    evidence low (see docs/benchmarks.rst), so one shared reference, cheap
    to move (two gradients per stored observation, amortised over the
    growth of the data), follows the particles closely (1.1); one reference
    per particle costs ``M`` times as much, so it moves less often (2.0).
    """
    if config.cv_refresh_factor is not None:
        return config.cv_refresh_factor
    return 1.1 if cv.theta_ref.shape[0] == 1 else 2.0


def _preconditioner(model, state, config, chunk, lam):
    d = state.theta.shape[1]
    if _uses_curvature(model, state, config):
        return precision_preconditioner(_laplace_precision(model, state, config, chunk, lam))
    if config.precondition in ("covariance", "curvature"):  # curvature unknown: covariance
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        shrinkage = config.precondition_shrinkage
        if shrinkage == "ledoit-wolf":
            shrinkage = ledoit_wolf_shrinkage(state.theta, W)
        return covariance_preconditioner(state.theta, W, shrinkage)
    n_eff = state.n_seen + lam * batch_size_of(chunk)
    return isotropic_preconditioner(d, n_eff, state.theta)


def _uses_curvature(model, state, config):
    M, d = state.theta.shape
    wanted = config.precondition == "curvature" or (
        config.precondition == "covariance" and M < config.curvature_ratio * d)
    return wanted and type(model).fisher_information is not Model.fisher_information


def _laplace_precision(model, state, config, chunk, lam):
    """Precision of the tempered posterior's Laplace approximation, averaged over the particles.

    ``prior + lam * chunk + past`` curvature, each the particles' weighted
    mean (``Model.expected_fisher_information``); the past data's term comes
    from the whole store while it is small, otherwise from a mini-batch of
    ``batch_size`` scaled to the data seen.
    """
    theta = state.theta
    W = torch.as_tensor(state.weights, dtype=theta.dtype, device=theta.device)
    live = W > 0  # diverged particles carry zero weight (and zeroed parameters)
    theta, W = theta[live], W[live]
    mean = W @ theta
    precision = model.prior_precision(mean)
    if precision is None:
        precision = torch.zeros(mean.shape[0], mean.shape[0], dtype=mean.dtype,
                                device=mean.device)
    precision = precision + lam * model.expected_fisher_information(theta, W, chunk)
    size = state.reservoir.size
    if size > 0:
        store = state.reservoir.data()
        if size > 2 * config.batch_size:
            idx = state.reservoir.sample_indices(config.batch_size, state.generator)
            past = (state.n_seen / config.batch_size) * model.expected_fisher_information(
                theta, W, take(store, idx))
        else:
            past = (state.n_seen / size) * model.expected_fisher_information(theta, W, store)
        precision = precision + past
    return 0.5 * (precision + precision.T)


def _n_moves(state, config):
    """More moves while the posterior is still broad and changes fast."""
    if state.n_seen < config.warmup_size:
        return config.n_burnin * config.warmup_factor
    return config.n_burnin


def sghmc_move(model, state, config, chunk, lam):
    """SGHMC on the tempered posterior ``p(C|theta)^lam p(past|theta) p(theta)``.

    During the warm-up (see ``SGAISConfig.exact_warmup``) the move is
    :func:`exact_move` instead.
    """
    if _in_exact_warmup(state, config):
        return exact_move(model, state, config, chunk, lam)
    n_past = state.n_seen
    minibatch_size = config.minibatch_size or config.batch_size
    generator = state.generator
    store = state.reservoir.data() if n_past > 0 else None

    def grad_log_density(theta):
        g = model.grad_log_prior(theta) + lam * model.grad_log_likelihood(theta, chunk)
        if n_past == 0:
            return g
        idx = state.reservoir.sample_indices(minibatch_size, generator)
        minibatch = take(store, idx)
        if state.cv is not None:
            return g + state.cv.minibatch_gradient(model, theta, minibatch, n_past)
        return g + (n_past / minibatch_size) * model.grad_log_likelihood(theta, minibatch)

    kernel = baoab if config.integrator == "baoab" else sghmc

    def run(theta, grad, chol):
        return kernel(theta, grad, _n_moves(state, config),
                      _sghmc_step_size(model, state, config),
                      config.momentum_decay, chol, generator)

    return MoveResult(_in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                                     grad_log_density))


def _sghmc_step_size(model, state, config):
    """``learning_rate``; with the curvature preconditioner, at most the warm-up's adapted step.

    The Metropolis-adjusted warm-up adapts its step to keep most proposals
    (EXACT_ACCEPTANCE). With hundreds of parameters that step falls below
    ``learning_rate``, and unadjusted moves with the larger step leave the
    cloud below the posterior, biasing the evidence low (see
    docs/benchmarks.rst). With the particles' covariance (enough
    particles) the cap is not applied.
    """
    # (The curvature test first: n_adjusted_moves sums over the whole trace.)
    if not _uses_curvature(model, state, config) or state.n_adjusted_moves == 0:
        return config.learning_rate
    return min(config.learning_rate, state.exact_step_size)


def _in_exact_warmup(state, config):
    return (config.exact_warmup and state.n_seen < config.warmup_size
            and state.reservoir.size == state.n_seen)


def exact_move(model, state, config, chunk, lam):
    """Metropolis-adjusted moves (:func:`ghmc`) on the exact tempered posterior.

    The log density sums the likelihood of every stored observation, so
    this is for small ``n`` only (the warm-up). Its step size adapts from
    move to move toward an acceptance rate of EXACT_ACCEPTANCE: the result
    carries the acceptance and the next move's step size.
    """
    work = _warmup_dtype(state, config)
    chunk_w = model.prepare_batch(_cast_batch(chunk, work))
    store = state.reservoir.data() if state.n_seen > 0 else None
    store = model.prepare_batch(_cast_batch(store, work)) if store is not None else None

    def log_density_and_grad(theta):
        log_lik, g_lik = model.log_likelihood_and_grad(theta, chunk_w)
        log_p = model.log_prior(theta) + lam * log_lik
        g = model.grad_log_prior(theta) + lam * g_lik
        if store is not None:
            log_lik, g_lik = model.log_likelihood_and_grad(theta, store)
            log_p, g = log_p + log_lik, g + g_lik
        return log_p, g

    measured = {}

    def run(theta, log_density_and_grad, chol):
        theta, measured["acceptance"] = ghmc(
            theta, log_density_and_grad, _n_moves(state, config), state.exact_step_size,
            config.momentum_decay, chol, state.generator)
        return theta

    theta = _in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                           log_density_and_grad, with_log_density=True,
                                           dtype=work)
    acceptance = measured["acceptance"]
    step = state.exact_step_size * math.exp(2.0 * (acceptance - EXACT_ACCEPTANCE))
    return MoveResult(theta, acceptance, min(max(step, 1e-4), 4.0))


def _warmup_dtype(state, config):
    """The dtype of the exact warm-up's moves: ``config.warmup_dtype`` if lower."""
    if config.warmup_dtype == "float32" and state.theta.dtype == torch.float64:
        return torch.float32
    return state.theta.dtype


def _cast_batch(batch, dtype):
    """The floating tensors of ``batch`` in ``dtype`` (labels stay integers)."""
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)


def _in_preconditioned_coordinates(model, state, config, chunk, lam, run, target,
                                   with_log_density=False, dtype=None):
    """``run(theta, target, chol)`` with the preconditioner of ``config``.

    With ``precondition="model"`` the kernel runs in the coordinates
    ``theta / s``, ``s = model.posterior_scale``: a per-particle diagonal
    preconditioner ``diag(s_i^2)``. Particles in different modes of a
    multimodal posterior (label switching) then each move on their own
    scale, which one covariance across the cloud cannot give. ``s`` is
    computed once per move and held fixed during its steps. ``dtype`` (default:
    the particles') is the one ``run`` works in; the result comes back in
    the particles' dtype.
    """
    like = state.theta
    dtype = like.dtype if dtype is None else dtype
    if config.precondition != "model":
        chol = _preconditioner(model, state, config, chunk, lam).to(dtype)
        return run(like.to(dtype), target, chol).to(like.dtype)
    n_eff = state.n_seen + lam * batch_size_of(chunk)
    scale = model.posterior_scale(like, n_eff).to(dtype)
    d = like.shape[1]
    eye = torch.eye(d, dtype=dtype, device=like.device)
    if with_log_density:
        def scaled(z):
            log_p, g = target(z * scale)
            return log_p, g * scale
    else:
        def scaled(z):
            return target(z * scale) * scale
    return (run(like.to(dtype) / scale, scaled, eye) * scale).to(like.dtype)


@dataclass
class Checkpoint:
    """What :func:`rollback` needs to undo a failed :func:`update`."""

    theta: torch.Tensor
    log_W: np.ndarray
    generator_state: torch.Tensor
    n_seen: int
    log_evidence: float
    log_evidence_var: float
    exact_step_size: float
    trace_len: int
    reservoir: tuple
    cv: tuple | None


def checkpoint(state):
    """Snapshot the state at O(M d) cost (plus the reservoir when bounded).

    An unbounded store only ever appends, so its size is enough to undo an
    update; a bounded reservoir overwrites slots and is copied (its size is
    fixed, so the copy does not grow with the stream).
    """
    res = state.reservoir
    buffers = tuple(b.clone() for b in res.buffers) if res.capacity is not None else res.buffers
    cv = None
    if state.cv is not None:
        cv = (state.cv.theta_ref, state.cv.grad_sum.clone(), state.cv.n_at_refresh)
    return Checkpoint(state.theta, state.log_W.copy(), state.generator.get_state(),
                      state.n_seen, state.log_evidence, state.log_evidence_var,
                      state.exact_step_size, len(state.trace),
                      (res.n_seen, res.size, buffers), cv)


def rollback(state, ckpt):
    """Restore ``state`` to ``ckpt`` in place."""
    state.theta, state.log_W = ckpt.theta, ckpt.log_W
    state.generator.set_state(ckpt.generator_state)
    state.n_seen, state.log_evidence = ckpt.n_seen, ckpt.log_evidence
    state.log_evidence_var, state.exact_step_size = ckpt.log_evidence_var, ckpt.exact_step_size
    del state.trace[ckpt.trace_len:]  # the diagnostics counters follow the trace
    state.reservoir.n_seen, state.reservoir.size, state.reservoir.buffers = ckpt.reservoir
    if ckpt.cv is not None:
        state.cv.theta_ref, state.cv.grad_sum, state.cv.n_at_refresh = ckpt.cv
