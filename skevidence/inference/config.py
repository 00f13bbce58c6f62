"""The SGAIS engine's settings: one frozen record, validated on creation."""

import numbers
import typing
from dataclasses import dataclass, fields

import numpy as np

__all__ = ["SGAISConfig"]


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
class SGAISConfig:
    """Settings of the engine; the estimators document the defaults."""

    n_particles: int = 128
    batch_size: int = 500
    n_burnin: int = 20
    learning_rate: float = 0.1
    momentum_decay: float = 0.2
    target_ess: float = 0.9
    resample_threshold: float = 0.5
    reservoir_size: int | None = None
    # "covariance", None (isotropic), "model" (posterior_scale) or "curvature"
    # (the model's Laplace precision at the particles' mean, see below).
    precondition: str | None = "covariance"
    control_variate: str | None = "shared"
    # The control variate's reference moves to the particles each time the
    # data seen grow by this factor (an O(R n) pass over the store for R
    # references). None: 1.1 for one shared reference, 2.0 for one per
    # particle (see _refresh_factor).
    cv_refresh_factor: float | None = None
    warmup_size: int = 1000
    # Moves per annealing step are n_burnin * warmup_factor below warmup_size.
    warmup_factor: int = 2
    integrator: str = "baoab"
    # Weight of the diagonal mixed into the covariance preconditioner. Any
    # positive weight leaks the wide marginal scales of a correlated posterior
    # (uncentred features, the redundant softmax parameterisation) into its
    # narrow directions and the sampler diverges there; it only helps when
    # n_particles is not much larger than the number of parameters.
    # "ledoit-wolf" picks the weight from the particles (ledoit_wolf_shrinkage).
    precondition_shrinkage: float | str = 0.0
    # With precondition="covariance", use the model's curvature instead when
    # n_particles < curvature_ratio * n_params and the model gives one
    # (Model.fisher_information): fewer particles than parameters span only
    # part of the space, and moves cannot leave that span.
    curvature_ratio: float = 2.0
    # Metropolis-adjusted moves on the exact tempered posterior while
    # n_seen < warmup_size and the store holds every observation (see
    # exact_move): few data give the least Gaussian posteriors, where a
    # step size that suits the particles' covariance can still diverge.
    exact_warmup: bool = True
    # "float32" runs the exact warm-up's moves in single precision (the
    # particles, data and preconditioner cast for the move, the weights
    # still in the particles' dtype): exponentials and products cost half,
    # and a rounding of ~1e-7 of the log density only perturbs the
    # Metropolis test. None moves in the particles' dtype.
    warmup_dtype: str | None = None
    # Particle islands (see islands.py): resampling stays within each of
    # this many islands (fewer for small clouds), whose spread of evidence
    # estimates gives log_evidence_std.
    n_islands: int = 1
    # An integer (e.g. 16) adds the first batch_size observations, with
    # exact_warmup, in chunks that double in size, ending at batch_size / 2^k
    # for k = K..1 (see chunk_ends), the smallest at least first_chunk_size;
    # None (the default) adds them in one chunk. With 16 the first 500
    # observations of the paper's logistic model took 1.5-2x less CPU, but
    # its errors at N = 1e4 were -0.80 +- 0.57 nats over 7 sampler seeds
    # against -0.31 +- 0.31 over 6 with one chunk (equal at N = 1e3 and on
    # linear regression, where it saves nothing), so it stays opt-in.
    first_chunk_size: int | None = None
    # Warn when a chunk needs more annealing steps than this (None: never).
    # The count grows only logarithmically with how informative a chunk is
    # (about 45 steps more per factor 1e4 in the likelihood's precision, on
    # the smallest first chunk), but linearly with a prior-data conflict
    # (data far in the prior's tails, e.g. targets on a scale of 100 under
    # a unit prior).
    annealing_steps_warning: int | None = 250
    # Adaptive Resample-Move (Fraccaro, Paquet & Winther 2016; see
    # maybe_grow): an integer lets a chunk that contributes much variance
    # grow the particle set, up to this many; None keeps n_particles.
    max_particles: int | None = None
    # A chunk doubles the particle count M (up to max_particles) each time
    # its share of Var(log Z) passes growth_threshold * M / n_particles^2.
    # The share accrues at a rate proportional to 1 / M per annealing step,
    # so the count grows like the square root of the chunk's steps, as the
    # paper's optimum R_n ~ sqrt(v_n) (its Theorem 1).
    growth_threshold: float = 1.0
    # Past warmup_size, a chunk taken in one annealing step skips its move
    # while the weights' ESS stays above move_ess * M and nothing was
    # resampled (see _skips_move); None moves after every step.
    move_ess: float | None = 0.5
    # Observations per mini-batch of the past-data gradient (None: batch_size).
    # Its noise biased the evidence low (paper's logistic model, N = 3e4,
    # seeds 0-3: -1.4 +- 1.0 nats with 500, -0.25 with 2000; at 1e6 -5.2
    # with 500, -0.35 with 1000; benchmarks/bench_logistic_stream.py).
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
        # every observation): on linear regression at N = 1500 a store of 499
        # gave an evidence 13 nats off, one of 400 300 nats.
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
