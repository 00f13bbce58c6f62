"""The evidence of a model written by the user: EvidenceModel and log_evidence.

A user brings a :class:`skevidence.models.Model` (a torch prior and
log-likelihood over an unconstrained parameter vector) and gets its log
evidence, error bar and streaming updates from the same engine as the
built-in estimators, through public names only.
"""

from dataclasses import dataclass, field

import numpy as np
import torch
from sklearn.utils.validation import validate_data

from ._base import BaseEvidenceEstimator, store_init_params
from ._docstrings import TRUST_ATTRIBUTES_DOC, WEIGHTS_ATTRIBUTES_DOC, shared_params_doc, warmup_doc
from .models.base import Model

__all__ = ["EvidenceModel", "EvidenceResult", "check_model", "log_evidence"]

# Particles used by check_model's trial evaluation.
_N_TRIAL = 3


def _fail(model, what):
    raise ValueError(f"{type(model).__name__} does not meet the Model contract: {what} "
                     "(see skevidence.models.Model)")


def check_model(model, batch, dtype=torch.float64, device="cpu"):
    """Check that ``model`` keeps the :class:`~skevidence.models.Model` contract on ``batch``.

    Draws a few particles from the prior and evaluates the log prior, the
    log-likelihood and their gradients once, checking shapes, dtypes and
    finiteness. :class:`EvidenceModel` calls it before fitting, so that a
    mistake in a model gives a clear message instead of an error deep in
    the sampler.

    Parameters
    ----------
    model : Model
        The model to check.
    batch : tuple of torch.Tensor
        A few observations, ``(X,)`` or ``(X, y)``, rows first.
    dtype : torch.dtype, default=torch.float64
        Floating-point type of the particles.
    device : str, default="cpu"
        Torch device of the particles.

    Raises
    ------
    ValueError
        Naming the first method whose output is wrong.

    Examples
    --------
    >>> import torch
    >>> from skevidence.generic import check_model
    >>> from skevidence.models import LinearRegressionModel
    >>> X, y = torch.randn(5, 2, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    >>> check_model(LinearRegressionModel(n_features=2), (X, y))
    """
    if not isinstance(model, Model):
        raise TypeError(f"model must be a skevidence.models.Model, got {type(model).__name__}")
    d = getattr(model, "n_params", None)
    if not isinstance(d, (int, np.integer)) or isinstance(d, bool) or d < 1:
        _fail(model, f"n_params must be a positive integer, got {d!r}")
    generator = torch.Generator(device=device).manual_seed(0)
    with torch.no_grad():
        theta = model.sample_prior(_N_TRIAL, generator, dtype=dtype, device=device)
        _check_output(model, "sample_prior", theta, (_N_TRIAL, d), dtype)
        _check_output(model, "log_prior", model.log_prior(theta), (_N_TRIAL,), dtype)
        B = batch[0].shape[0]
        _check_output(model, "log_likelihood", model.log_likelihood(theta, batch), (_N_TRIAL, B),
                      dtype, finite=False)
        _check_output(model, "log_likelihood_sum", model.log_likelihood_sum(theta, batch),
                      (_N_TRIAL,), dtype, finite=False)
    _check_output(model, "grad_log_prior", model.grad_log_prior(theta), (_N_TRIAL, d), dtype)
    grad = model.grad_log_likelihood(theta, batch)
    _check_output(model, "grad_log_likelihood", grad, (_N_TRIAL, d), dtype, finite=False)
    # The default sums the parts checked above; an override is checked itself.
    if type(model).log_joint_and_grad is not Model.log_joint_and_grad:
        log_joint, grad_joint = model.log_joint_and_grad(theta, model.prepare_batch(batch))
        _check_output(model, "log_joint_and_grad", log_joint, (_N_TRIAL,), dtype, finite=False)
        _check_output(model, "log_joint_and_grad", grad_joint, (_N_TRIAL, d), dtype, finite=False)


def _check_output(model, name, value, shape, dtype, finite=True):
    """``ValueError`` unless ``value`` is a tensor of ``shape`` and ``dtype`` (and finite)."""
    if not isinstance(value, torch.Tensor):
        _fail(model, f"{name} must return a torch.Tensor, got {type(value).__name__}")
    if tuple(value.shape) != shape:
        _fail(model, f"{name} returned shape {tuple(value.shape)}, expected {shape}")
    if value.dtype != dtype:
        _fail(model, f"{name} returned {value.dtype}, expected the particles' {dtype}")
    # A likelihood may be -inf at some prior draws (a zero-probability datum),
    # never NaN; a prior draw must have a finite prior density.
    bad = torch.isnan(value) if not finite else ~torch.isfinite(value)
    if bad.any():
        _fail(model, f"{name} returned {'NaN' if not finite else 'non-finite'} values at "
                     "draws from the prior")


class EvidenceModel(BaseEvidenceEstimator):
    __doc__ = f"""Log evidence of a user-written model, by SGAIS, with streaming updates.

    The generic estimator behind :func:`log_evidence`: ``fit`` /
    ``partial_fit`` condition the posterior of any
    :class:`skevidence.models.Model` on the rows of ``X`` (and ``y``), which
    reach it as the tensors ``(X,)`` or ``(X, y)`` in ``dtype``, one
    ``log_likelihood`` term per row (:ref:`custom_models`).

    Parameters
    ----------
    model : Model
        The probabilistic model; see :doc:`/user_guide/custom_models`.
        It is checked (shapes, dtypes, finiteness at prior draws) before
        any state changes.
{shared_params_doc(learning_rate=0.1, warmup=warmup_doc(why=False))}

    Attributes
    ----------
    log_evidence_ : float
        Estimate of ``log p(data)`` for all data seen so far.
{TRUST_ATTRIBUTES_DOC}
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles (the model's unconstrained ``theta``).
{WEIGHTS_ATTRIBUTES_DOC}

    See Also
    --------
    log_evidence : the same in one call, returning a result record.
    skevidence.models.Model : the contract a model implements.

    Notes
    -----
    The engine settings are those of the linear models: the step size
    scaled by the particles' covariance and one shared control-variate
    reference. Models with a multimodal posterior may need more particles
    and moves (compare runs with different ``random_state``).

    References
    ----------
    Cameron, S. A., Eggers, H. C. & Kroon, S. (2019). Stochastic gradient
    annealed importance sampling for efficient online marginal likelihood
    estimation. Entropy 21(11), 1109.

    Examples
    --------
    A Gaussian mean with a Gaussian prior, written as a model:

    >>> import math, numpy as np, torch
    >>> from skevidence import EvidenceModel
    >>> from skevidence.models import Model
    >>> class GaussianMean(Model):
    ...     n_params = 1
    ...     def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
    ...         return torch.randn(n, 1, generator=generator, dtype=dtype, device=device)
    ...     def log_prior(self, theta):
    ...         return -0.5 * theta[:, 0] ** 2 - 0.5 * math.log(2 * math.pi)
    ...     def log_likelihood(self, theta, batch):
    ...         (X,) = batch
    ...         return -0.5 * (X[:, 0] - theta) ** 2 - 0.5 * math.log(2 * math.pi)
    >>> X = np.random.default_rng(0).normal(1.0, 1.0, size=(200, 1))
    >>> est = EvidenceModel(GaussianMean(), n_particles=64, random_state=0).fit(X[:100])
    >>> est = est.partial_fit(X[100:])
    >>> est.n_samples_seen_
    200
    >>> exact = (-0.5 * 200 * math.log(2 * math.pi) - 0.5 * math.log(201)
    ...          - 0.5 * ((X ** 2).sum() - X.sum() ** 2 / 201))
    >>> bool(abs(est.log_evidence_ - exact) < 0.5)
    True
    """

    _parameter_constraints = {
        **BaseEvidenceEstimator._parameter_constraints,
        "model": [Model],
    }

    def __init__(
        self, model, *,
        n_particles=128, max_particles=None, batch_size=500, n_burnin=20,
        learning_rate=0.1, momentum_decay=0.2, target_ess=0.9, resample_threshold=0.5,
        reservoir_size=None, device="cpu", dtype="float64", random_state=None, verbose=0,
        engine_options=None, method="sgais", n_init=1,
    ):
        store_init_params(self, locals())

    # -- validation and the model ----------------------------------------------------

    def _make_model(self, X, y):
        # A few rows are enough to catch a broken contract before the engine runs.
        trial = self._to_batch(X[:8], None if y is None else y[:8])
        check_model(self.model, trial, dtype=self._torch_dtype, device=self.device)
        return self.model

    def _validate_training_data(self, X, y, reset):
        if not reset and (y is None) != (self._y_ndim is None):
            raise ValueError("y must be given on every call or on none: the first call had "
                             + ("no y" if self._y_ndim is None else "a y"))
        if y is None:
            X = validate_data(self, X, reset=reset, dtype=np.float64)
        else:
            X, y = validate_data(self, X, y, reset=reset, dtype=np.float64, multi_output=True,
                                 y_numeric=True)
            if not reset and y.ndim != self._y_ndim:
                raise ValueError(f"y has {y.ndim} dimension(s); the first call's had "
                                 f"{self._y_ndim}")
        if reset:
            self._y_ndim = None if y is None else y.ndim
        return X, y

    def _to_batch(self, X, y):
        if y is None:
            return (self._as_tensor(X),)
        return self._as_tensor(X), self._as_tensor(y)

    def _takes_y(self):
        return self._y_ndim is not None


@dataclass(frozen=True)
class EvidenceResult:
    """What :func:`log_evidence` returns.

    Attributes
    ----------
    log_evidence : float
        Estimate of ``log p(data)``.
    log_evidence_std : float
        Its estimated Monte Carlo standard deviation (one run).
    particles : ndarray of shape (n_particles, n_params)
        Posterior particles (the model's unconstrained ``theta``).
    weights : ndarray of shape (n_particles,)
        Their normalised importance weights.
    trace : dict of ndarray
        One entry per chunk, as ``EvidenceModel.evidence_trace_``.
    diagnostics : dict
        Health of the run, as ``EvidenceModel.diagnostics_``.
    """

    log_evidence: float
    log_evidence_std: float
    particles: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    trace: dict = field(repr=False)
    diagnostics: dict = field(repr=False)


def log_evidence(model, X, y=None, *, n_particles=128, batch_size=500, random_state=None,
                 **settings):
    """Log evidence ``log p(data)`` of a user-written model, by SGAIS.

    A one-call route to the engine for any :class:`skevidence.models.Model`:
    the rows of ``X`` (and ``y``) are the observations, conditioned on in
    chunks of ``batch_size``. For streams use :class:`EvidenceModel` and its
    ``partial_fit``.

    Parameters
    ----------
    model : Model
        The probabilistic model; see :doc:`/user_guide/custom_models`.
    X : array-like of shape (n_samples, n_features)
        Observations (inputs).
    y : array-like of shape (n_samples,) or (n_samples, n_targets), default=None
        Targets, the second tensor of the model's batch.
    n_particles : int, default=128
        Number of weighted particles.
    batch_size : int, default=500
        Chunk and mini-batch size.
    random_state : int, RandomState instance or None, default=None
        Seed of the engine; the same value gives the same numbers.
    **settings
        Any other parameter of :class:`EvidenceModel` (``n_burnin``,
        ``learning_rate``, ``target_ess``, ``dtype``, ``device``...).

    Returns
    -------
    result : EvidenceResult
        ``log_evidence``, ``log_evidence_std``, ``particles``, ``weights``,
        ``trace`` and ``diagnostics``.

    Warns
    -----
    sklearn.exceptions.ConvergenceWarning
        When the run is not trustworthy (see ``result.diagnostics["warnings"]``).

    Examples
    --------
    >>> import numpy as np, torch
    >>> import skevidence
    >>> from skevidence.models import LinearRegressionModel
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = X @ [1.0, -0.5] + rng.normal(size=300)
    >>> model = LinearRegressionModel(n_features=2)
    >>> result = skevidence.log_evidence(model, X, y, n_particles=64, random_state=0)
    >>> round(result.log_evidence, 1), round(result.log_evidence_std, 2)
    (-413.4, 0.01)
    >>> round(model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y))), 1)
    -413.4
    >>> result.particles.shape
    (64, 3)
    """
    est = EvidenceModel(model, n_particles=n_particles, batch_size=batch_size,
                        random_state=random_state, **settings).fit(X, y)
    return EvidenceResult(
        log_evidence=est.log_evidence_,
        log_evidence_std=est.log_evidence_std_,
        particles=est.particles_,
        weights=est.particle_weights_,
        trace=est.evidence_trace_,
        diagnostics=est.diagnostics_,
    )
