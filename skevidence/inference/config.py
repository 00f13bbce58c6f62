"""The SGAIS engine's settings: one frozen record, validated on creation."""

from dataclasses import dataclass, fields
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import (Interval, StrOptions,
                                             validate_parameter_constraints)

__all__ = ["SGAISConfig", "CONSTRAINTS", "Number", "LATE_PHASE"]

# The late phase starts at this many warm-up lengths of data: the posterior is
# near Gaussian there, so the importance-sampling folds start and
# ``late_burnin_factor`` scales the SGHMC steps (fewer steps any earlier, while
# a mixture's posterior is still far from Gaussian, raise the evidence's error).
LATE_PHASE = 4


class Number(Interval):
    """scikit-learn's ``Interval``, refusing booleans (``True`` is no count or rate)."""

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


def _at_least(kind, low, optional=False):
    return [Number(kind, low, None, closed="left")] + ([None] if optional else [])


# The values each field accepts, in the constraint objects of the estimators'
# parameters (which take theirs from here). A string must be one of its
# options exactly: a typo must not fall back silently to another behaviour.
CONSTRAINTS = {
    "n_particles": _at_least(Integral, 2),
    "batch_size": _at_least(Integral, 1),
    "n_burnin": _at_least(Integral, 1),
    "learning_rate": [Number(Real, 0, None, closed="neither")],
    "momentum_decay": [Number(Real, 0, 1, closed="right")],
    "target_ess": [Number(Real, 0, 1, closed="right")],
    "resample_threshold": [Number(Real, 0, 1, closed="both")],
    "reservoir_size": _at_least(Integral, 1, optional=True),
    "precondition": [StrOptions({"covariance", "model", "curvature"}), None],
    "control_variate": [StrOptions({"shared", "particle"}), None],
    "cv_refresh_factor": _at_least(Real, 1.0, optional=True),
    "warmup_size": _at_least(Integral, 0),
    "warmup_factor": _at_least(Integral, 1),
    "integrator": [StrOptions({"baoab", "sghmc"})],
    "curvature_ratio": _at_least(Real, 0.0),
    "exact_warmup": ["boolean"],
    "warmup_dtype": [StrOptions({"float32"}), None],
    "n_islands": _at_least(Integral, 1),
    "annealing_steps_warning": _at_least(Integral, 1, optional=True),
    "max_particles": _at_least(Integral, 2, optional=True),
    "growth_threshold": _at_least(Real, 0.0),
    "move_ess": _at_least(Real, 0.0, optional=True),
    "minibatch_size": _at_least(Integral, 1, optional=True) + [StrOptions({"auto"})],
    "chunk_growth": _at_least(Real, 0.0),
    "fold_importance": ["boolean"],
    "late_burnin_factor": [Number(Real, 0, None, closed="neither")],
}


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
    n_particles, batch_size, n_burnin, learning_rate, momentum_decay, \
target_ess, resample_threshold, reservoir_size
        The estimators' parameters of the same names, with their defaults
        (128, 500, 20, 0.1, 0.2, 0.9, 0.5 and None): the particles, the
        observations per chunk, the moves per annealing step, the SGHMC
        step and friction, the conditional ESS kept by each annealing step
        and the ESS below which to resample (fractions of the particles),
        and the observations kept for the mini-batches (None: all).
    precondition : {"covariance", "model", "curvature"} or None, \
default="covariance"
        Metric of the moves. ``"covariance"``: the particles' weighted
        covariance, so the step follows the posterior's scale and
        correlations (the model's curvature instead when there are too few
        particles, see ``curvature_ratio``); ``"model"``: a diagonal scale from
        the model's ``posterior_scale``, shared by the particles in the
        adjusted moves (``Model.shared_posterior_scale``; a mixture's by
        component, so that particles in different relabelled modes each
        move on their components' scale, which one covariance across the
        cloud cannot give) and each particle's own in the
        stochastic-gradient moves; ``"curvature"``:
        the model's Laplace precision averaged over the particles (the
        default of :class:`~skevidence.EvidenceLinearRegression`); ``None``:
        isotropic, ``learning_rate / n`` after ``n`` observations.
    control_variate : {"shared", "particle"} or None, default="shared"
        Control variate of the mini-batch gradient of the past data, whose
        noise otherwise grows with the data seen: ``"shared"``, one
        reference point (the particles' mean; for unimodal posteriors);
        ``"particle"``, one per particle (particles in different modes each
        keep their own, at ``n_particles`` times the cost of a refresh);
        ``None``, plain mini-batches. Of second order where the model has a
        ``fisher_information`` and the linear term cuts the noise (for one
        reference per particle, a mixture's, the term of one anchor in each
        particle's labelling of the components).
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
        the warm-up (at most: the exact moves over rows stop early where
        the particles' correlation with their starting points has settled).
    integrator : {"baoab", "sghmc"}, default="baoab"
        Integrator of the stochastic-gradient moves: the BAOAB splitting of
        the Langevin dynamics, exact in distribution for a Gaussian target
        at any stable step, or the paper's first-order SGHMC update, whose
        stationary variance is inflated by a term of the order of the step.
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
        still diverge. Models with summary statistics
        (``Model.summarize``, linear regression) keep these moves past the
        warm-up.
    warmup_dtype : {"float32"} or None, default=None
        ``"float32"`` runs the exact warm-up's moves in single precision
        (the weights stay in the estimator's ``dtype``), at less cost; a
        rounding of the log density only perturbs the Metropolis
        test. ``None`` moves in the particles' dtype.
        :class:`~skevidence.EvidenceLogisticRegression` uses ``"float32"``.
    n_islands : int, default=1
        Resampling stays within each of this many groups of particles
        (fewer for small clouds), each an independent sampler whose spread
        of evidence estimates gives ``log_evidence_std_``. Does not combine
        with ``max_particles``.
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
    minibatch_size : int, "auto" or None, default="auto"
        Observations per mini-batch of the past-data gradient (``None``:
        ``batch_size``). ``"auto"``: 250 while the control variate is of
        second order, 1000 otherwise, or, for one shared reference, more
        (up to 16000) where the noise measured at the particles each time
        the data double asks for them: enough rows for a noise variance of
        0.5% of the posterior score's, per coordinate in the posterior's
        metric (models with a ``fisher_information``). The noise of the
        mini-batches biases the evidence low on long streams and
        over-disperses the cloud (see
        :doc:`/benchmarks`). A mini-batch is drawn without replacement
        from a store of up to 16 mini-batches, and is the whole store
        (an exact gradient) when that is smaller.
    chunk_growth : float, default=0.0
        Chunks longer than ``batch_size`` once the data grow: a chunk is
        ``chunk_growth`` times the observations before it, in whole
        ``batch_size`` units (at least one). A chunk's annealing steps
        grow like the square root of its length, so fewer, longer chunks
        take fewer steps (and moves) in all where each fixed chunk takes
        several; where one step suffices, fixed chunks cost less, as
        the moves of single-step chunks are skipped (``move_ess``) while
        every step evaluates the whole chunk. On long streams of a
        logistic model 1/16 (the default of
        :class:`~skevidence.EvidenceLogisticRegression`) takes less CPU,
        with a smaller error bar that still covers the error
        (:ref:`long streams <long-streams>`).
    fold_importance : bool, default=True
        For models whose posterior has one mode, possibly up to
        relabellings (``Model.unimodal`` or ``Model.relabelling_maps``:
        linear and logistic regression, mixtures of up to 6 components,
        where the particles show one mode) and a store of every
        observation: each time
        the data seen double from ``4 * warmup_size`` on, combine the
        running log evidence with an importance-sampling estimate from a
        Student-t at the posterior mode (128 draws over the store),
        weighting each by its inverse variance, so that the error no
        longer accrues with every decade of data (:ref:`trust`). For
        models with a mode search (``Model.mode_candidates``: the
        mixtures), also search for modes the particles missed after the
        first chunk, each time the data seen double and at the end of a
        fit, and move the particles to one whose mass, by importance
        sampling, dwarfs theirs (``importance_steps.move_to_missed_mode``). For models
        whose posterior has one mode, also condition the first chunk by
        importance sampling from a t at its mode instead of annealing from
        the prior, where the draws' ESS allows (``sgais._start_by_importance``;
        not with particle growth, ``max_particles``). ``False`` keeps the
        annealing's estimate and particles alone, as the baselines
        ``method="smc"`` and ``"ais"`` always do.
    late_burnin_factor : float, default=1.0
        Once ``4 * warmup_size`` observations are seen, where the posterior
        is near Gaussian and a chunk moves it little, the SGHMC moves
        (``method="sgais"`` and ``"sequential"``) take ``late_burnin_factor
        * n_burnin`` steps (rounded, at least one).
        :class:`~skevidence.EvidenceGMM` uses 0.5: as accurate where the
        posterior is near Gaussian, in less CPU (:ref:`why
        <mixture-late-steps>`); half the steps from the warm-up's end on
        raise the error of small fits.
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
    curvature_ratio: float = 2.0
    exact_warmup: bool = True
    warmup_dtype: str | None = None
    n_islands: int = 1
    annealing_steps_warning: int | None = 250
    max_particles: int | None = None
    growth_threshold: float = 1.0
    move_ess: float | None = 0.5
    minibatch_size: int | str | None = "auto"
    chunk_growth: float = 0.0
    fold_importance: bool = True
    late_burnin_factor: float = 1.0

    @property
    def late_start(self):
        """Observations after which the late phase starts (``LATE_PHASE`` warm-ups)."""
        return LATE_PHASE * max(self.warmup_size, 1)

    def __post_init__(self):
        validate_parameter_constraints(
            CONSTRAINTS, {f.name: getattr(self, f.name) for f in fields(self)},
            caller_name="SGAISConfig")
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
