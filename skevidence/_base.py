"""Shared estimator base: parameters, validation, and driving the engine.

Subclasses (the public estimators) only say which model they fit, how
their inputs become tensors, and which fitted attributes they expose; this
class turns ``fit`` / ``partial_fit`` into calls of the SGAIS engine and
guarantees that a failed call leaves a fitted estimator as it was.
"""

import numbers
import time

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from .inference import sgais

__all__ = ["BaseEvidenceEstimator", "EXACT_WARMUP_DOC", "SHARED_PARAMS_DOC"]

_DTYPES = {"float32": torch.float32, "float64": torch.float64}

# How the first 1000 observations are absorbed, per estimator (the {warmup}
# field of SHARED_PARAMS_DOC).
EXACT_WARMUP_DOC = """While
        fewer than 1000 observations have been seen the moves are instead
        ``2 * n_burnin`` Metropolis-adjusted (generalised HMC) steps on the
        exact tempered posterior (cheap while the data are few): small data
        sets give the least Gaussian posteriors (separable classes,
        uncentred features), where unadjusted steps can diverge."""

SHARED_PARAMS_DOC = """\
    n_particles : int, default=128
        Number of weighted particles ``M``. The evidence estimator's own
        floor (weight degeneracy) falls with ``M``; 128 keeps it well under a
        nat on the paper's models at little cost (the paper used 10, which
        leaves a bias of 10-20 nats even with exact posterior draws).
    batch_size : int, default=500
        Size of the chunks the data are added in, and of the mini-batches
        drawn from past data (the paper's 500).
    n_burnin : int, default=20
        SGHMC steps after every annealing step (the paper's 20). {warmup}
    learning_rate : float, default={learning_rate}
        SGHMC step size. With ``precondition='covariance'`` (the default)
        the step is ``learning_rate`` times the particles' covariance, so it
        is dimensionless and shrinks with the posterior as data arrive;
        otherwise it is ``learning_rate / n`` after ``n`` observations (the
        paper's ``eta = 0.1 / N`` with ``N`` replaced by the count seen so
        far, which a stream knows). Each estimator's default was chosen by
        measurement; its Notes say how.
    momentum_decay : float, default=0.2
        Friction ``alpha`` of SGHMC: the fraction of the momentum removed
        at every step (the paper's 0.2).
    target_ess : float, default=0.9
        Target of the adaptive annealing, as a fraction of ``n_particles``:
        each temperature increment is the largest whose conditional ESS
        stays above ``target_ess * n_particles``. The paper's 5 of 10
        particles (0.5) gives fewer annealing steps and a larger error.
    resample_threshold : float, default=0.5
        Resample (systematic) when the ESS of the weights falls below
        ``resample_threshold * n_particles``; ``0`` never resamples (the
        paper's setting, biased low by weight degeneracy).
    reservoir_size : int or None, default=None
        ``None`` keeps every observation for the mini-batches; an integer
        keeps a uniform random sample of that size of the stream
        (reservoir sampling), so memory stays bounded.
    device : str, default="cpu"
        Torch device of the particles and data, e.g. ``"cuda"``.
    dtype : {{"float64", "float32"}}, default="float64"
        Floating-point precision of the computation. ``float64`` is exact
        enough for a million observations; ``float32`` is faster on GPUs.
    random_state : int, RandomState instance or None, default=None
        Seeds the engine's private ``torch.Generator``; the same value gives
        the same numbers. The global torch seed is never used.
    verbose : int, default=0
        ``1`` prints progress (chunks done, observations seen, current log
        evidence, elapsed time) about once a second on long fits."""


class BaseEvidenceEstimator(BaseEstimator):
    """Base class of the SGAIS estimators. Not for direct use.

    Subclasses implement ``_make_model(X, y)``, ``_validate_training_data``
    and ``_to_batch`` and may override ``_engine_defaults`` (settings of the
    engine that depend on the model, not on the user).
    """

    # Engine settings that are per model rather than per user.
    _engine_defaults = {}

    def _check_finite_params(self, *names, positive=True):
        """``ValueError`` unless every named parameter is a finite (positive) real."""
        for name in names:
            value = getattr(self, name)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
            ok = ok and np.isfinite(value) and (value > 0 or not positive)
            if not ok:
                kind = "positive finite" if positive else "finite"
                raise ValueError(f"{name} must be a {kind} number, got {value!r}")

    def _check_params(self):
        def positive_int(name):
            value = getattr(self, name)
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

        def in_range(name, low, high, low_open=False):
            value = getattr(self, name)
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
            ok = ok and (value > low if low_open else value >= low) and value <= high
            if not ok:
                bracket = "(" if low_open else "["
                raise ValueError(f"{name} must be in {bracket}{low}, {high}], got {value!r}")

        positive_int("n_particles")
        positive_int("batch_size")
        positive_int("n_burnin")
        in_range("learning_rate", 0.0, np.inf, low_open=True)
        in_range("momentum_decay", 0.0, 1.0, low_open=True)
        in_range("target_ess", 0.0, 1.0, low_open=True)
        in_range("resample_threshold", 0.0, 1.0)
        if self.reservoir_size is not None:
            positive_int("reservoir_size")
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {self.dtype!r}")
        try:
            torch.device(self.device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(f"device {self.device!r} is not a torch device") from exc

    def _engine_config(self):
        return sgais.SGAISConfig(
            n_particles=self.n_particles,
            batch_size=self.batch_size,
            n_burnin=self.n_burnin,
            learning_rate=self.learning_rate,
            momentum_decay=self.momentum_decay,
            target_ess=self.target_ess,
            resample_threshold=self.resample_threshold,
            reservoir_size=self.reservoir_size,
            **self._engine_defaults,
        )

    @property
    def _torch_dtype(self):
        return _DTYPES[self.dtype]

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

    def _fit(self, X, y, reset, **kwargs):
        """Validate, then run the engine; on any failure restore the estimator."""
        saved = dict(self.__dict__)
        ckpt = None
        try:
            self._check_params()
            X, y = self._validate_training_data(X, y, reset=reset, **kwargs)
            if reset:
                self._config = self._engine_config()
                self._model = self._make_model(X, y)
                self._state = sgais.init(self._model, self._config, self._make_generator(),
                                         dtype=self._torch_dtype, device=self.device)
            else:
                ckpt = sgais.checkpoint(self._state)
            batch = self._to_batch(X, y)
            sgais.update(self._model, self._state, self._config, batch,
                         callback=self._progress_printer(X.shape[0]))
            self._set_fitted_attributes()
        except BaseException:
            if ckpt is not None:
                sgais.rollback(self._state, ckpt)
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise
        return self

    def _progress_printer(self, n_new):
        if not self.verbose:
            return None
        start = last = time.perf_counter()
        n_start = self._state.n_seen

        def report(state):
            nonlocal last
            now = time.perf_counter()
            done = state.n_seen - n_start
            if now - last < 1.0 and done < n_new:
                return
            last = now
            print(f"[{type(self).__name__}] chunks {len(state.trace)}, n_seen {state.n_seen}, "
                  f"log evidence {state.log_evidence:.3f}, elapsed {now - start:.1f}s", flush=True)

        return report

    def _set_fitted_attributes(self):
        state = self._state
        trace = np.array(state.trace, dtype=np.float64).reshape(-1, len(sgais.TRACE_FIELDS))
        self.log_evidence_ = float(state.log_evidence)
        self.evidence_trace_ = {
            "n_seen": trace[:, 0].astype(np.int64),
            "log_evidence": trace[:, 1],
            "n_annealing_steps": trace[:, 2].astype(np.int64),
            "ess": trace[:, 3],
        }
        self.n_samples_seen_ = int(state.n_seen)
        self.particles_ = state.theta.detach().to("cpu", torch.float64).numpy().copy()
        self.particle_weights_ = np.exp(state.log_W)

    def _check_fitted_input(self, X):
        """Validate prediction inputs and return them as a tensor batch."""
        check_is_fitted(self, "log_evidence_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _weights_tensor(self):
        return torch.as_tensor(self.particle_weights_, dtype=torch.float64, device=self.device)

    def _particles_tensor(self):
        return self._state.theta.to(torch.float64)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
