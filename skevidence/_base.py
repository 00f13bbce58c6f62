"""Shared estimator base: parameters, validation, and driving the engine.

Subclasses (the public estimators) only say which model they fit, how
their inputs become tensors, and which fitted attributes they expose; this
class turns ``fit`` / ``partial_fit`` into calls of the engine that
``method`` names (SGAIS by default; ``skevidence.inference.ENGINES``), one
run or ``n_init`` independent runs merged (``_runs``), and guarantees that
a failed call leaves a fitted estimator as it was.
"""

import dataclasses
import warnings

from numbers import Integral

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions

from ._config import with_torch_threads
from ._posterior import PosteriorMixin
from ._runs import IndependentRunsMixin
from ._trust import TrustDiagnosticsMixin
from ._validation import check_device, check_magnitude, resolve_dtype
from .inference import ENGINES, sgais
from .inference.config import CONSTRAINTS

__all__ = ["BaseEvidenceEstimator", "PreconditionWarning"]

# Below this many particles the weights of the cloud degenerate within the
# first chunk and the evidence's error grows far beyond its reported std.
_MIN_RELIABLE_PARTICLES = 16


def _trace_arrays(records):
    """``evidence_trace_``: one array per field of the engine's per-chunk records."""
    return {f.name: np.array([getattr(r, f.name) for r in records],
                             dtype=np.int64 if f.type is int else np.float64)
            for f in dataclasses.fields(sgais.ChunkInfo)}


def store_init_params(estimator, params):
    """The body of an estimator's ``__init__``: every argument (``locals()``) stored as given."""
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


class PreconditionWarning(UserWarning):
    """An update diverged under a metric shared by the particles and was rerun with
    each particle's own (``engine_options={'precondition': 'model'}``)."""


class BaseEvidenceEstimator(IndependentRunsMixin, PosteriorMixin, TrustDiagnosticsMixin,
                            BaseEstimator):
    """Base class of the SGAIS estimators. Not for direct use.

    It holds the parameters every estimator shares, their constraints, and
    ``fit`` / ``partial_fit``. Subclasses add their model's parameters
    (``{**BaseEvidenceEstimator._parameter_constraints, ...}``, and
    ``store_init_params(self, locals())`` in ``__init__``), implement the
    hooks ``_make_model(X, y)``, ``_validate_training_data`` and
    ``_to_batch``; ``_engine_defaults`` holds the engine settings that
    depend on the model (a user overrides them per instance with
    ``engine_options``).
    """

    # Engine settings that are per model rather than per user (read-only:
    # per-instance changes go through engine_options).
    _engine_defaults = {}

    # The SGAISConfig fields that the estimators' own parameters set.
    _ENGINE_PARAMS = ("n_particles", "max_particles", "batch_size", "n_burnin", "learning_rate",
                      "momentum_decay", "target_ess", "resample_threshold", "reservoir_size")

    # Declared ranges of the settings, checked by ``_validate_params`` at the
    # start of every fit (before any state changes). ``device`` and ``dtype``
    # are checked by hand: availability with an install hint, and numpy or
    # torch dtypes normalised.
    _parameter_constraints = {
        **{name: CONSTRAINTS[name] for name in (
            "n_particles", "max_particles", "batch_size", "n_burnin", "learning_rate",
            "momentum_decay", "target_ess", "resample_threshold", "reservoir_size")},
        "device": "no_validation",
        "dtype": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "engine_options": [dict, None],
        "method": [StrOptions(set(ENGINES))],
        "n_init": [Interval(Integral, 1, None, closed="left")],
    }

    def __init__(self, *, n_particles=128, max_particles=None, batch_size=500, n_burnin=20,
                 learning_rate=0.1, momentum_decay=0.2, target_ess=0.9, resample_threshold=0.5,
                 reservoir_size=None, device="cpu", dtype="float64", random_state=None,
                 verbose=0, engine_options=None, method="sgais", n_init=1):
        store_init_params(self, locals())

    def _check_params(self):
        """Validate the settings: the declared constraints, then what they cannot say."""
        self._validate_params()
        self._check_method()
        self._check_n_particles()
        self._engine_config()  # unknown or invalid engine_options raise here
        resolve_dtype(self.dtype)
        check_device(self.device)

    def _check_method(self):
        """``ValueError`` for a ``method`` that cannot run with the other settings."""
        if self._engine.keeps_every_observation and self.reservoir_size is not None:
            bounded = " and ".join(repr(name) for name, engine in ENGINES.items()
                                   if not engine.keeps_every_observation)
            raise ValueError(f"method={self.method!r} uses every observation seen; "
                             f"reservoir_size must be None (only {bounded} bound their memory)")

    def _check_continued_method(self):
        """``ValueError`` when ``partial_fit`` would continue a fit of another method."""
        fitted = self.__dict__.get("_method_fitted", "sgais")
        if fitted != self.method:
            raise ValueError(f"partial_fit cannot continue a method={fitted!r} fit with "
                             f"method={self.method!r}; call fit to start over")

    @property
    def _engine(self):
        return ENGINES[self.method]

    def _warn_full_data_refit(self):
        """Say once per estimator that a full-data method refits on partial_fit."""
        if self._engine.refits_from_prior and not self.__dict__.get("_refit_warned"):
            warnings.warn(f"method={self.method!r} is not online: partial_fit keeps every "
                          "observation and reruns it from the prior on all data seen",
                          UserWarning, stacklevel=5)
            self._refit_warned = True

    def _check_n_particles(self):
        m = self.n_particles
        if m < _MIN_RELIABLE_PARTICLES:
            warnings.warn(
                f"n_particles={m} is below {_MIN_RELIABLE_PARTICLES}: the evidence can be "
                "many nats off, far beyond its log_evidence_std_, because the weights of so "
                "few particles degenerate; use at least "
                f"{_MIN_RELIABLE_PARTICLES} (see the benchmarks page)",
                ConvergenceWarning, stacklevel=2)

    def _engine_config(self):
        """The engine's settings: parameters, per-model defaults, then ``engine_options``."""
        options = self.engine_options or {}
        allowed = {f.name for f in dataclasses.fields(sgais.SGAISConfig)}
        unknown = sorted(set(options) - allowed)
        if unknown:
            raise ValueError(f"engine_options has unknown settings {unknown}; the engine's "
                             f"settings are {sorted(allowed - set(self._ENGINE_PARAMS))}")
        shadowed = sorted(set(options) & set(self._ENGINE_PARAMS))
        if shadowed:
            raise ValueError(f"engine_options sets {shadowed}, which are parameters of "
                             f"{type(self).__name__}: set them with the parameters instead")
        params = {name: getattr(self, name) for name in self._ENGINE_PARAMS}
        return sgais.SGAISConfig(**params, **{**self._engine_defaults, **options})

    @property
    def _torch_dtype(self):
        return resolve_dtype(self.dtype)

    def _as_tensor(self, a, dtype=None):
        dtype = self._torch_dtype if dtype is None else dtype
        a = np.ascontiguousarray(a)
        if not a.flags.writeable:  # torch cannot share read-only memory (e.g. a memmap)
            a = a.copy()
        return torch.as_tensor(a, dtype=dtype, device=self.device)

    def _make_generator(self):
        seed = check_random_state(self.random_state).randint(np.iinfo(np.int32).max)
        generator = torch.Generator(device=self.device)
        generator.manual_seed(int(seed))
        return generator

    # -- fitting -----------------------------------------------------------------

    def fit(self, X, y=None):
        """Fit the posterior and the evidence on ``X`` (and ``y``), starting over.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations (inputs), in the order they are conditioned on.
        y : array-like of shape (n_samples,) or (n_samples, n_targets), default=None
            Targets: required by the regression and the classifier (class
            labels, at least two distinct ones), ignored by the mixture,
            optional for a user's model (passed to it as the second tensor of
            the batch).

        Returns
        -------
        self : object
            The fitted estimator.
        """
        return self._fit(X, y, reset=True)

    def partial_fit(self, X, y=None):
        """Condition the current posterior and evidence on one more batch.

        The first call starts from the prior (and sets the priors that the
        estimator takes from the data). The result does not depend on how
        the stream is cut into calls beyond the engine's own chunking (chunks
        of ``batch_size`` within each call). A failed call leaves the
        estimator as it was.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations (inputs) of the new batch.
        y : array-like of shape (n_samples,) or (n_samples, n_targets), default=None
            Their targets, as in :meth:`fit` (for a user's model, given on
            every call or on none).

        Returns
        -------
        self : object
            The updated estimator.
        """
        return self._fit(X, y, reset=not self._started())

    def _started(self):
        """Whether a fit is under way for ``partial_fit`` to continue."""
        return "_state" in vars(self) or "_runs" in vars(self)

    def _fit(self, X, y, reset, **kwargs):
        """``fit`` / ``partial_fit``: one run, or ``n_init`` independent runs merged."""
        if not reset:
            self._check_continued_runs()
        if self.n_init > 1:
            return self._fit_runs(X, y, reset, **kwargs)
        return self._fit_one(X, y, reset, **kwargs)

    @with_torch_threads
    def _fit_one(self, X, y, reset, **kwargs):
        """Validate, then run the engine; the estimator changes only if all of it succeeds."""
        new = object.__new__(type(self))
        vars(new).update(vars(self))
        new._check_params()
        if not reset:
            new._check_continued_method()
        X, y = new._validate_training_data(X, y, reset=reset, **kwargs)
        new._check_data_magnitude(X, y)
        engine = new._engine
        if reset:
            new._config = new._engine_config()
            vars(new).pop("_gap_checked", None)  # a new run: check it afresh
            new._model = new._make_model(X, y)
            new._state = engine.init(new._model, new._config, new._make_generator(),
                                     dtype=new._torch_dtype, device=new.device)
            new._method_fitted = new.method
        else:
            new._warn_full_data_refit()
        new._state = new._updated(new._to_batch(X, y), X.shape[0])
        new._set_fitted_attributes()
        new._warn_if_untrustworthy()
        vars(self).clear()
        vars(self).update(vars(new))
        return self

    def _updated(self, batch, n_new):
        """The engine's state conditioned on ``batch``; where moves scaled by one metric
        for the whole cloud diverge, the update again from the same state with each
        particle's own (:class:`PreconditionWarning`)."""
        try:
            return self._engine.update(self._model, self._state, self._config, batch,
                                       callback=self._progress_printer(n_new))
        except FloatingPointError as error:
            fallback = self._per_particle_metric_config()
            if fallback is None:
                raise
            warnings.warn(
                f"{type(self).__name__}: moves scaled by one metric for all particles "
                f"diverged ({str(error).split('. ')[0]}); the update runs again with each particle's own scale "
                "(engine_options={'precondition': 'model'}, which later updates keep). "
                "Setting it up front saves the failed attempt.", PreconditionWarning)
            self._config = fallback
            return self._engine.update(self._model, self._state, self._config, batch,
                                       callback=self._progress_printer(n_new))

    def _per_particle_metric_config(self):
        """The settings with ``precondition='model'``, where the run used a metric shared
        by the particles that the user did not choose (None otherwise).

        A shared metric (the particles' covariance, or the curvature at their
        mean) sets one step for every particle. Where the posterior is far
        steeper on one side than its spread (the coefficient of a one-hot
        column for a rare category) a particle on the steep side takes steps
        far beyond its stable size and diverges; the model's scale at each
        particle's own position keeps its steps stable.
        """
        chosen = "precondition" in (self.engine_options or {})
        if self.method != "sgais" or chosen or self._config.precondition == "model":
            return None
        return dataclasses.replace(self._config, precondition="model")

    def _progress_printer(self, n_new):
        """A tqdm bar over the observations of this call (``verbose >= 1``)."""
        if not self.verbose:
            return None
        from tqdm.auto import tqdm

        n_start = self._state.n_seen
        elapsed = getattr(self, "_progress_seconds", 0.0) if n_start > 0 else 0.0
        bar = tqdm(total=n_start + n_new, initial=n_start, unit="obs",
                   desc=type(self).__name__, dynamic_ncols=True)
        # Elapsed time and the closing average rate cover the earlier calls too.
        bar.start_t -= elapsed
        bar.initial = 0

        def report(state, lam, n_pending):
            bar.set_postfix({"n_seen": state.n_seen, "lam": f"{lam:.3g}",
                             "log_evidence": f"{state.log_evidence:.2f}"}, refresh=False)
            bar.update(int(state.n_seen + lam * n_pending) - bar.n)
            if state.n_seen - n_start >= n_new:
                bar.refresh()
                self._progress_seconds = bar.format_dict["elapsed"]
                bar.close()

        return report

    def _set_fitted_attributes(self):
        state = self._state
        self.log_evidence_ = float(state.debiased_log_evidence)
        self.evidence_trace_ = _trace_arrays(state.trace)
        self.log_evidence_std_ = float(state.log_evidence_std)
        self.n_samples_seen_ = int(state.n_seen)
        self.particles_ = state.theta.detach().to("cpu", torch.float64).numpy().copy()
        self.particle_weights_ = np.exp(state.log_W)
        self._set_model_attributes()

    def _set_model_attributes(self):
        """The model's fitted attributes, from ``particles_`` and ``particle_weights_``
        (subclasses add theirs)."""

    def _check_data_magnitude(self, X, y):
        check_magnitude(X, "X", self._torch_dtype)
        check_magnitude(y, "y", self._torch_dtype)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
