"""Shared estimator base: parameters, validation, and driving the engine.

Subclasses (the public estimators) only say which model they fit, how
their inputs become tensors, and which fitted attributes they expose; this
class turns ``fit`` / ``partial_fit`` into calls of the engine that
``method`` names (SGAIS by default; ``skevidence.inference.ENGINES``) and
guarantees that a failed call leaves a fitted estimator as it was.
"""

import dataclasses
import math
import numbers
import warnings
from collections.abc import Mapping

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from ._config import torch_threads, with_torch_threads
from .inference import ENGINES, posterior_gap, sgais

__all__ = ["BaseEvidenceEstimator", "EXACT_WARMUP_DOC", "EXACT_WARMUP_SINGLE_DOC",
           "SHARED_PARAMS_DOC", "TRUST_ATTRIBUTES_DOC", "normalize_proba"]

# Thresholds of the untrustworthy-run warning (see _untrustworthy_reasons).
# Final ESS below this fraction of the particles: the islands' weights (or
# one island's) have degenerated.
ESS_COLLAPSE = 0.05

_DTYPES = {"float32": torch.float32, "float64": torch.float64}

# Below this many particles the evidence is unreliable: the weights of a
# small cloud degenerate within the first chunk, and the estimate's error
# grows far beyond its reported std (see the benchmarks page,
# docs/benchmarks.rst).
_MIN_RELIABLE_PARTICLES = 16

# Prediction works on blocks of rows whose per-particle intermediate
# ([n_particles, rows, width] float64) has at most this many elements
# (2**22: 32 MiB), so memory stays bounded whatever the number of rows.
_PREDICT_BLOCK_ELEMENTS = 2**22

CUDA_INSTALL_HINT = ("install a CUDA build of torch, e.g. `python -m pip install torch "
                     "--index-url https://download.pytorch.org/whl/cu128` (see the README)")


def _resolve_dtype(dtype):
    """torch dtype of a ``dtype`` parameter: a name, a numpy or a torch float type."""
    if isinstance(dtype, torch.dtype):
        name = str(dtype).removeprefix("torch.")
    elif dtype is None:
        name = None
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name not in _DTYPES:
        raise ValueError(f"dtype must be float32 or float64 (a name, numpy or torch dtype), "
                         f"got {dtype!r}")
    return _DTYPES[name]


def _check_device(device):
    """``ValueError`` unless ``device`` names a torch device this build can use."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device {device!r} is not a torch device") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        why = ("this torch build has no CUDA support" if torch.version.cuda is None
               else "torch sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)")
        raise ValueError(f"device={device!r} is not available: {why}; {CUDA_INSTALL_HINT}, "
                         "or use device='cpu'")
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(f"device={device!r} is not available in this torch build "
                         f"({first_line})") from exc


def max_abs_input(dtype):
    """Largest input magnitude the engine accepts: ``finfo(dtype).max ** 0.25``.

    About 1e77 in float64 and 4e9 in float32. The engine forms squares of
    products of inputs and parameters (gradients' second moments, the
    Fisher information), which overflow beyond it.
    """
    return float(torch.finfo(dtype).max) ** 0.25


def normalize_proba(proba):
    """Rows of probabilities in [0, 1] that sum to one to machine precision.

    Exponentiated log probabilities and weighted averages of probabilities
    can exceed 1 by a rounding error (1.0000000000000004), which
    ``sklearn.metrics.log_loss`` rejects.
    """
    proba = np.clip(np.asarray(proba, dtype=np.float64), 0.0, None)
    proba /= proba.sum(axis=1, keepdims=True)
    return np.clip(proba, 0.0, 1.0, out=proba)


def _check_magnitude(a, name, dtype):
    """``ValueError`` when ``a`` holds entries too large for the computation."""
    if a is None or not np.issubdtype(np.asarray(a).dtype, np.floating) or a.size == 0:
        return
    bound = max_abs_input(dtype)
    largest = float(np.max(np.abs(a)))
    if largest > bound:
        raise ValueError(
            f"{name} has entries as large as {largest:.3g}, beyond the {bound:.3g} that "
            f"{str(dtype).removeprefix('torch.')} computations support (products of the data "
            "and the parameters would overflow). Rescale the data, e.g. with "
            "sklearn.preprocessing.StandardScaler in a pipeline."
        )

# How the first 1000 observations are absorbed, per estimator (the {warmup}
# field of SHARED_PARAMS_DOC).
EXACT_WARMUP_DOC = """While
        fewer than 1000 observations have been seen the moves are instead
        ``2 * n_burnin`` Metropolis-adjusted (generalised HMC) steps on the
        exact tempered posterior (cheap while the data are few): small data
        sets give the least Gaussian posteriors (separable classes,
        uncentred features), where unadjusted steps can diverge."""
# The same, for the estimators whose warm-up moves run in float32
# (SGAISConfig.warmup_dtype; the weights stay in ``dtype``).
EXACT_WARMUP_SINGLE_DOC = EXACT_WARMUP_DOC.replace(
    "steps on the\n", "steps in single\n        precision on the\n")

# The fitted attributes that say how far to trust the estimate (all estimators).
TRUST_ATTRIBUTES_DOC = """    log_evidence_std_ : float
        Estimated Monte Carlo standard deviation of ``log_evidence_`` from
        this one run: the variances of the weight segments between
        resamplings, ``1 / ESS - 1 / n_particles`` each, summed (exact for
        particles that are independent posterior draws when a segment
        starts). It does not capture the sampler's bias: particles that
        lag the posterior (see ``diagnostics_``) or miss a mode give an
        error beyond it. Its calibration against exact evidences is on
        :doc:`the benchmarks page </benchmarks>`.
    evidence_trace_ : dict of ndarray
        One entry per chunk: ``n_seen``, ``log_evidence``,
        ``n_annealing_steps``, ``ess`` (of the weights after the chunk),
        ``log_evidence_std``, ``n_particles`` (the most used during the
        chunk), ``n_resamplings``, ``n_diverged``,
        ``max_diverged_fraction``, ``n_adjusted_moves`` and
        ``acceptance`` (their mean acceptance; NaN when there were none).
    diagnostics_ : dict
        Health of the last ``fit`` / ``partial_fit``: ``n_diverged``,
        ``max_diverged_fraction`` (largest share of particles lost in one
        move), ``n_resamplings``, ``n_annealing_steps`` (per chunk),
        ``adjusted_acceptance`` (mean acceptance of the Metropolis-adjusted
        warm-up moves), ``ess``, ``log_evidence_std``, ``posterior_gap``
        (the particles' mean log posterior below what a short L-BFGS run
        from the best particle reaches; about ``n_params / 2`` at the
        posterior) with its ``posterior_gap_threshold`` and
        ``posterior_gap_n_seen`` (the check reruns when the data seen have
        doubled), and ``warnings``. A :class:`~sklearn.exceptions.ConvergenceWarning` is
        issued with the entries of ``warnings`` that say most particles
        diverged in one move, the ESS collapsed, or the gap exceeds its
        threshold; a chunk that needed more annealing steps than the
        ``annealing_steps_warning`` entry of ``engine_options`` (250 by
        default) is listed there too, but warned about by
        :class:`~skevidence.exceptions.AnnealingWarning`."""

SHARED_PARAMS_DOC = """\
    n_particles : int, default=128
        Number of weighted particles ``M``. The evidence estimator's own
        floor (weight degeneracy) falls with ``M``; 128 keeps it small
        against the differences between models at little cost (the paper's
        10 leave a large bias even with exact posterior draws; see
        :doc:`/benchmarks`). At least 2; below 16 a ``ConvergenceWarning``
        says the evidence can be far off.
    max_particles : int or None, default=None
        ``None`` uses ``n_particles`` throughout. An integer (at least
        ``n_particles``) turns on Adaptive Resample-Move: a chunk whose
        share of the variance of ``log_evidence_`` grows large (one that
        needs many annealing steps, such as the first, from the prior)
        resamples its particles to twice as many, up to ``max_particles``,
        and back to ``n_particles`` before its last move;
        ``evidence_trace_["n_particles"]`` shows the count per chunk.
        The default is ``None`` because, for the same CPU time, a larger
        fixed ``n_particles`` reduced the variance of ``log_evidence_``
        more than growth did (see :doc:`/benchmarks`).
    batch_size : int, default=500
        Size of the chunks the data are added in (the paper's 500). Chunks
        end at every multiple of ``batch_size`` in the stream and at the end
        of every ``fit`` / ``partial_fit`` call, so calls that end on such
        multiples give the numbers of one ``fit``. The mini-batches of past
        data have their own size (``minibatch_size`` of ``engine_options``).
    n_burnin : int, default=20
        SGHMC steps after every annealing step (the paper's 20). {warmup}
    learning_rate : float, default={learning_rate}
        SGHMC step size. With ``precondition='covariance'`` (the default)
        the step is ``learning_rate`` times the particles' covariance, so it
        is dimensionless and shrinks with the posterior as data arrive;
        otherwise it is ``learning_rate / n`` after ``n`` observations (the
        paper's ``eta = 0.1 / N`` with ``N`` replaced by the count seen so
        far, which a stream knows). Each estimator's default was chosen by
        measurement (see :ref:`settings` and :doc:`/benchmarks`).
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
        (reservoir sampling), so memory stays bounded. It must be at least
        ``batch_size`` and the exact warm-up's length (1000 observations;
        2000 for ``EvidenceGMM``): a smaller store biases the evidence.
    device : str, default="cpu"
        Torch device of the particles and data, e.g. ``"cuda"`` (which
        needs a CUDA build of torch; ``fit`` checks that it is available).
    dtype : {{"float64", "float32"}} or numpy / torch dtype, default="float64"
        Floating-point precision of the computation (``np.float32`` and
        ``torch.float32`` work too). ``float64`` is exact enough for a
        million observations; ``float32`` is faster on GPUs. Inputs larger
        than ``finfo(dtype).max ** 0.25`` in magnitude (about 1e77 in
        float64, 4e9 in float32) are rejected: products in the engine would
        overflow.
    random_state : int, RandomState instance or None, default=None
        Seeds the engine's private ``torch.Generator``; the same value gives
        the same numbers. The global torch seed is never used.
    verbose : int, default=0
        ``1`` shows a progress bar (tqdm, on stderr) over the observations
        of the current call, advanced at every annealing step and showing
        the temperature ``lam`` reached in the current chunk, the
        observations seen and the log evidence; its count and elapsed time
        continue across ``partial_fit`` calls. ``0`` prints nothing.
    engine_options : dict or None, default=None
        Advanced settings of the engine beyond the parameters above, by the
        names of the fields of
        :class:`~skevidence.inference.sgais.SGAISConfig`, whose page lists
        every key with its default and what it does (e.g. ``{{"n_islands": 4}}``
        or ``{{"precondition": "model"}}``).
        They override the estimator's own per-model engine settings; an
        unknown name, a value of the wrong type or range, or a name that
        is one of the parameters above raises ``ValueError`` at ``fit``.
    method : {{"sgais", "ais", "smc", "nested", "sequential", "sequential-nested", \
"online-nested"}}, default="sgais"
        The evidence estimator: SGAIS or one of the baselines of Cameron
        (2020), on the same model, data and fitted attributes (modules in
        ``skevidence/inference/``; ``n_particles`` particles or live points,
        ``n_burnin`` moves):

        * ``"sgais"``: stochastic gradient annealed importance sampling;
          online, at a cost per chunk that does not grow with the data seen;
        * ``"ais"``: annealed importance sampling (thesis Alg. 6) from the
          prior on all data, Metropolis-adjusted HMC moves, the same
          adaptive schedule and resampling (``target_ess``,
          ``resample_threshold``);
        * ``"smc"``: sequential importance resampling over chunks of
          ``batch_size`` (IBIS, Alg. 7), tempered within a chunk, with
          adjusted moves on all data seen; online, quadratic cost;
        * ``"nested"``: nested sampling (Alg. 5) with ``n_particles`` live
          points and constrained HMC that reflects off the likelihood
          contour; ``log_evidence_std_`` is ``sqrt(H / n_live)`` and the
          particles are its posterior samples, resampled;
        * ``"sequential"``: the sequential SG-MCMC estimator (section 4.1):
          one predictive estimate per chunk (chunks growing from one
          observation to ``batch_size``) from SGHMC particles, no
          reweighting; biased by design (it can fail where particles lag
          the posterior, e.g. linear regression with unknown noise);
        * ``"sequential-nested"``: the same after nested sampling on the
          first ``batch_size`` observations (the thesis's hybrid);
        * ``"online-nested"``: Bayesian updating with nested sampling
          (section 4.3), one run per chunk with the posterior so far as its
          prior (exact moves: quadratic cost).

        ``"ais"`` and ``"nested"`` are not online: ``partial_fit`` keeps the
        data and reruns them from the prior on all data seen (with a
        warning the first time). Every method but ``"sgais"`` and
        ``"sequential"`` keeps all observations (``reservoir_size`` must be
        None), and the adjusted moves adapt their own step size
        (``learning_rate`` is for SGHMC only)."""


def _trace_arrays(records):
    """``evidence_trace_``: one array per field of the engine's per-chunk records."""
    return {f.name: np.array([getattr(r, f.name) for r in records],
                             dtype=np.int64 if f.type is int else np.float64)
            for f in dataclasses.fields(sgais.ChunkInfo)}


# A positive finite real, and a finite real (NaN and infinities rejected).
POSITIVE_FINITE = Interval(numbers.Real, 0, np.inf, closed="neither")
FINITE = Interval(numbers.Real, -np.inf, np.inf, closed="neither")


class BaseEvidenceEstimator(BaseEstimator):
    """Base class of the SGAIS estimators. Not for direct use.

    Subclasses implement ``_make_model(X, y)``, ``_validate_training_data``
    and ``_to_batch`` and may override ``_engine_defaults`` (settings of the
    engine that depend on the model, not on the user; a user changes them
    per instance with the ``engine_options`` parameter).
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
        "n_particles": [Interval(numbers.Integral, 2, None, closed="left")],
        "max_particles": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_burnin": [Interval(numbers.Integral, 1, None, closed="left")],
        "learning_rate": [Interval(numbers.Real, 0, None, closed="neither")],
        "momentum_decay": [Interval(numbers.Real, 0, 1, closed="right")],
        "target_ess": [Interval(numbers.Real, 0, 1, closed="right")],
        "resample_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "reservoir_size": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "device": "no_validation",
        "dtype": "no_validation",
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "engine_options": [dict, None],
        "method": [StrOptions(set(ENGINES))],
    }

    def _check_params(self):
        """Validate the settings: the declared constraints, then what they cannot say."""
        self._validate_params()
        self._check_method()
        self._check_n_particles()
        self._engine_config()  # unknown or invalid engine_options raise here
        _resolve_dtype(self.dtype)
        _check_device(self.device)

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
                f"{_MIN_RELIABLE_PARTICLES} (the default is 128; see the benchmarks page)",
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
        return _resolve_dtype(self.dtype)

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

    @with_torch_threads
    def _fit(self, X, y, reset, **kwargs):
        """Validate, then run the engine; the estimator changes only if all of it succeeds.

        The fit runs on ``new``, a copy of the estimator (the helpers set
        their attributes there), and the engine returns a new state instead
        of editing the old one, so a failed call leaves ``self`` as it was.
        """
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
        new._state = engine.update(new._model, new._state, new._config, new._to_batch(X, y),
                                   callback=new._progress_printer(X.shape[0]))
        new._set_fitted_attributes()
        new._warn_if_untrustworthy()
        vars(self).clear()
        vars(self).update(vars(new))
        return self

    def _progress_printer(self, n_new):
        """A tqdm bar over the observations of this call (``verbose >= 1``).

        It advances at every annealing step, by the chunk's share of the
        temperature ``lam``, and its count and elapsed time continue those of
        earlier ``partial_fit`` calls.
        """
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
        self.log_evidence_ = float(state.log_evidence)
        self.evidence_trace_ = _trace_arrays(state.trace)
        self.log_evidence_std_ = float(state.log_evidence_std)
        self.n_samples_seen_ = int(state.n_seen)
        self.particles_ = state.theta.detach().to("cpu", torch.float64).numpy().copy()
        self.particle_weights_ = np.exp(state.log_W)

    def _check_data_magnitude(self, X, y):
        _check_magnitude(X, "X", self._torch_dtype)
        _check_magnitude(y, "y", self._torch_dtype)

    def _rows_per_block(self, width=1):
        """Rows per block, keeping [n_particles, rows, width] under _PREDICT_BLOCK_ELEMENTS."""
        return max(1, _PREDICT_BLOCK_ELEMENTS // (self.n_particles * max(width, 1)))

    def _predict_in_blocks(self, X, compute, width=1):
        """``compute(block)`` on row blocks of validated ``X``, concatenated.

        ``X`` is checked as :meth:`_check_fitted_input` does; ``compute`` takes
        a float64 tensor of rows and returns a tensor or a tuple of tensors
        with the rows first. Blocks keep the ``[n_particles, rows, width]``
        intermediates of the predictive averages under
        ``_PREDICT_BLOCK_ELEMENTS``; results equal those of one block.
        """
        X = self._check_fitted_input(X)
        rows = self._rows_per_block(width)
        with torch_threads(), torch.no_grad():
            parts = [compute(self._as_tensor(X[start : start + rows], torch.float64))
                     for start in range(0, max(X.shape[0], 1), rows)]
        if isinstance(parts[0], tuple):
            return tuple(torch.cat(column).cpu().numpy() for column in zip(*parts))
        return torch.cat(parts).cpu().numpy()

    # -- diagnostics -------------------------------------------------------------

    def _posterior_gap(self):
        """The posterior-gap check (see inference/posterior_gap.py), rerun only
        when the data seen have doubled since the last one, so that a
        stream fed in many small ``partial_fit`` calls pays for it about
        twice in all."""
        state = self._state
        last = getattr(self, "_gap_checked", None)
        if last is not None and state.n_seen < 2 * last[0]:
            return last[1]
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        gap = posterior_gap.posterior_gap(self._model, state.theta, W,
                                          state.reservoir.data(), state.n_seen)
        self._gap_checked = (state.n_seen, gap)
        return gap

    def _diagnostics(self):
        state = self._state
        M, d = state.theta.shape
        steps = self.evidence_trace_["n_annealing_steps"]
        gap, optimum, mean_log_p = self._posterior_gap()
        return {
            "n_diverged": int(state.n_diverged),
            "max_diverged_fraction": float(state.max_diverged_fraction),
            "n_resamplings": int(state.n_resamplings),
            "n_annealing_steps": steps.copy(),
            "adjusted_acceptance": (state.acceptance_sum / state.n_adjusted_moves
                                    if state.n_adjusted_moves else math.nan),
            "ess": float(sgais.ess(state.log_W)),
            "n_islands": int(state.island_starts.shape[0]),
            "log_evidence_std": self.log_evidence_std_,
            "posterior_gap": float(gap),
            "posterior_gap_n_seen": int(self._gap_checked[0]),
            "posterior_gap_threshold": float(posterior_gap.gap_threshold(
                d, state.n_seen / max(state.reservoir.size, 1))),
            "log_posterior_optimum": float(optimum),
            "mean_log_posterior": float(mean_log_p),
        }

    def _untrustworthy_reasons(self, diag):
        M = self._state.theta.shape[0]
        reasons = []
        if diag["max_diverged_fraction"] > 0.5:
            reasons.append(f"{diag['max_diverged_fraction']:.0%} of the particles diverged in one "
                           "move (reduce learning_rate)")
        if diag["ess"] < max(2.0, ESS_COLLAPSE * M):
            reasons.append(f"the effective sample size collapsed to {diag['ess']:.1f} of {M} "
                           "particles (increase n_particles)")
        if self._engine.trace_ess_is_predictive:
            # Below two, one particle carried the chunk: its delta-method
            # variance no longer bounds the error, which can then be far
            # larger than the reported std (e.g. after a shift in the stream).
            worst = float(self.evidence_trace_["ess"].min())
            if worst < 2.0:
                reasons.append(f"a chunk's predictive estimate rested on an ESS of {worst:.1f} "
                               f"of {M} particles (a shift in the data, or particles that "
                               "lag the posterior; try method='sgais')")
        gap = diag["posterior_gap"]
        if not math.isfinite(gap) or gap > diag["posterior_gap_threshold"]:
            reasons.append(
                f"the particles' mean log posterior is {gap:.4g} nats below what a short "
                f"optimisation from the best particle reaches (expected about "
                f"{self._state.theta.shape[1] / 2:.4g}): the particles have not reached the "
                "posterior (try a smaller learning_rate, more n_burnin or n_particles)")
        return reasons

    def _long_chunk_record(self):
        """The engine's AnnealingWarning for the longest chunk so far, as a list of 0 or 1."""
        threshold = self._config.annealing_steps_warning
        if not self._engine.anneals_online or threshold is None:
            return []
        steps = self.evidence_trace_["n_annealing_steps"]
        n_seen = self.evidence_trace_["n_seen"]
        k = steps.shape[0] - 1 - int(np.argmax(steps[::-1]))  # the last, as the engine picks
        if steps[k] <= threshold:
            return []
        n_before = int(n_seen[k - 1]) if k else 0
        return [sgais.long_chunk_message(int(steps[k]), n_before, int(n_seen[k]) - n_before,
                                         threshold)]

    def _warn_if_untrustworthy(self):
        """``diagnostics_``, and a ConvergenceWarning if the run is not trustworthy.

        A long chunk is warned about once, by the engine's AnnealingWarning;
        it is only recorded here so that ``diagnostics_["warnings"]`` lists it.
        """
        diag = self._diagnostics()
        reasons = self._untrustworthy_reasons(diag)
        diag["warnings"] = reasons + self._long_chunk_record()
        self.diagnostics_ = diag
        if reasons:
            warnings.warn(
                f"{type(self).__name__}: the evidence estimate is not trustworthy: "
                + "; ".join(reasons) + ". See diagnostics_.",
                ConvergenceWarning, stacklevel=4)

    def _check_fitted_input(self, X):
        """Validate prediction inputs and return them as a tensor batch."""
        check_is_fitted(self, "log_evidence_")
        return validate_data(self, X, reset=False, dtype=np.float64)

    def _weights_tensor(self):
        return torch.as_tensor(self.particle_weights_, dtype=torch.float64, device=self.device)

    def _particles_tensor(self):
        return self._state.theta.to(torch.float64)

    # -- export to ArviZ --------------------------------------------------------------

    def to_inference_data(self, X=None, y=None, *, n_draws=None, resample=True,
                          random_state=None):
        """The fitted posterior and evidence as ArviZ data, for ``az.summary``, ``az.loo``...

        Returns ArviZ's container for the ArviZ installed (``InferenceData``
        under ArviZ 0.x, an ``xarray.DataTree`` under 1.x), laid out as
        ArviZ's converters lay out MCMC output, with these groups:

        * ``posterior``: draws of the model's natural parameters, in one
          chain (``chain`` of size 1, ``draw`` of size ``n_draws``), with
          named dimensions. :class:`EvidenceLinearRegression`: ``coef``
          (``feature``), ``intercept`` (with ``fit_intercept``) and
          ``noise_variance`` (when the noise is unknown).
          :class:`EvidenceLogisticRegression`: ``coef`` (``class``,
          ``feature``) and ``intercept`` (``class``), classes labelled by
          ``classes_``. :class:`EvidenceGMM`: ``weights`` (``component``),
          ``means`` and ``variances`` (``component``, ``feature``); the
          components are not identified (relabelling them leaves the
          posterior unchanged), so where particles disagree on the order
          of the components, per-component summaries mix components: the
          label-switching caveat of every Bayesian mixture.
          :class:`EvidenceModel`: the model's ``theta`` (``param``), or the
          arrays of the model's ``unpack(theta)`` when that returns a dict
          of named parameters. Features are labelled by
          ``feature_names_in_`` after a pandas DataFrame, else ``x0, x1, ...``.
        * ``sample_stats``: ``log_marginal_likelihood`` and its error bar
          ``log_marginal_likelihood_std`` after every chunk (dimensions
          ``chain``, ``chunk``; coordinate ``n_seen``, the observations seen),
          as PyMC's ``sample_smc`` records one per stage, the last being
          the estimate; ``log_evidence`` and ``log_evidence_std`` (``chain``),
          the final ``log_evidence_`` and ``log_evidence_std_``;
          ``n_annealing_steps`` and ``ess`` per chunk; and with
          ``resample=False`` the particles' ``weight`` (``chain``, ``draw``).
        * ``log_likelihood`` (only when ``X`` is given, with ``y`` for a
          supervised model): ``log p(observation i | draw)``, dimensions
          ``chain``, ``draw``, ``observation``, named ``y`` (``X`` for the
          mixture and for models fitted without targets), so that
          ``az.loo`` and ``az.compare`` work.
        * ``observed_data`` (``y``, or ``X`` without targets) and
          ``constant_data`` (``X`` with targets), when ``X`` is given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), default=None
            Observations (inputs) at which to evaluate the pointwise log
            likelihood, usually the training data. ``None`` leaves out
            ``log_likelihood`` and the data groups.
        y : array-like of shape (n_samples,), default=None
            Their targets (labels for a classifier); required with ``X``
            when the estimator was fitted with targets, ignored by
            :class:`EvidenceGMM`.
        n_draws : int or None, default=None
            Number of draws; ``None`` gives one per particle. Only with
            ``resample=True``.
        resample : bool, default=True
            ``True``: equally weighted draws, by systematic resampling of
            the particles by their weights (then shuffled, since ArviZ reads
            the draws as a chain), which is what ArviZ's functions
            (``summary``, ``loo``, plots) assume. ``False``: the particles
            themselves, with their importance weights in
            ``sample_stats["weight"]``; ArviZ's functions ignore the
            weights, so use them for weighted summaries of your own.
        random_state : int, RandomState instance or None, default=None
            Seeds the resampling; the same value gives the same draws.

        Returns
        -------
        data : arviz.InferenceData or xarray.DataTree
            The groups above.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            When the estimator is not fitted.
        ImportError
            When ArviZ is not installed (``pip install arviz``, or
            ``pip install 'skevidence[arviz]'``).

        Examples
        --------
        >>> import numpy as np
        >>> from skevidence import EvidenceLinearRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(200, 2))
        >>> y = X @ [1.0, -0.5] + rng.normal(size=200)
        >>> reg = EvidenceLinearRegression(n_particles=64, random_state=0).fit(X, y)
        >>> idata = reg.to_inference_data(X, y, random_state=0)
        >>> idata.posterior["coef"].dims, idata.posterior["coef"].shape
        (('chain', 'draw', 'feature'), (1, 64, 2))
        >>> idata.posterior["coef"].coords["feature"].values.tolist()
        ['x0', 'x1']
        >>> idata.log_likelihood["y"].shape
        (1, 64, 200)
        >>> bool(idata.sample_stats["log_evidence"][0] == reg.log_evidence_)
        True
        """
        from ._arviz import to_inference_data

        return to_inference_data(self, X, y, n_draws=n_draws, resample=resample,
                                 random_state=random_state)

    def _takes_y(self):
        """Whether the model's observations are ``(X, y)`` (else ``X`` alone)."""
        return True

    def _observed_targets(self, y):
        """``y`` as it is shown in ``observed_data`` (validated, labels decoded)."""
        return y

    def _natural_parameters(self, theta):
        """``(params, dims, coords)`` of particles ``theta [M, d]`` for ``to_inference_data``.

        ``params`` maps names to arrays ``[M, ...]``, ``dims`` names to the
        names of their dimensions after the particles', ``coords`` dimension
        names to labels. This default, for user models: the arrays of the
        model's ``unpack(theta)`` when it returns a dict, else ``theta``.
        """
        unpack = getattr(self._model, "unpack", None)
        if callable(unpack):
            try:
                named = unpack(theta)
            except TypeError:  # an unpack of another signature: fall back on theta
                named = None
            if isinstance(named, Mapping):
                return dict(named), {}, {}
        return ({"theta": theta}, {"theta": ["param"]},
                {"param": np.arange(theta.shape[1])})

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = False
        return tags
