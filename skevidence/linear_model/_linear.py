"""EvidenceLinearRegression: Bayesian linear regression with its online evidence."""

import numpy as np
import torch
from sklearn.base import RegressorMixin
from sklearn.utils import check_X_y
from sklearn.utils.validation import validate_data

from .._arviz import feature_coords
from .._base import BaseEvidenceEstimator, store_init_params
from .._docstrings import TRUST_ATTRIBUTES_DOC, WEIGHTS_ATTRIBUTES_DOC, shared_params_doc
from .._posterior import NaturalParameters
from .._prior import PriorRecord, prior_array
from .._validation import FINITE, POSITIVE_FINITE
from ..models import LinearRegressionModel
from ..models.linear import NOISE_PRIOR_SHAPE

__all__ = ["EvidenceLinearRegression"]

# The noise prior's scale as a fraction of the spread of y over the first
# chunk: InvGamma(1, s^2) then favours neither weak nor strong fits much,
# and keeps the first chunk's annealing short.
_NOISE_PRIOR_FRACTION = 0.1


# The n_burnin paragraph's tail: linear regression never moves by SGHMC.
_EXACT_MOVES_DOC = """Linear
        regression instead takes ``n_burnin`` Metropolis-adjusted
        (generalised HMC) steps on the exact tempered posterior throughout,
        computed from the data's summary statistics (the Gram matrix) at a
        cost that does not grow with the data."""


class EvidenceLinearRegression(RegressorMixin, BaseEvidenceEstimator):
    __doc__ = f"""Bayesian linear regression with its log evidence, fitted online by SGAIS.

    The model is ``y = X @ coef + intercept + eps``, ``eps ~ N(0, sigma^2)``,
    with the conjugate (Normal-Inverse-Gamma) prior

    * ``coef_j | sigma^2 ~ N(prior_mean_j, sigma^2 prior_std_j^2)``:
      coefficients in units of the noise; on standardised features
      ``prior_std=1`` is the unit-information prior (worth one observation);
    * ``intercept | sigma^2 ~ N(m, sigma^2 intercept_prior_std^2)``, ``m``
      the mean of ``y`` over the first chunk unless ``intercept_prior_mean``
      is given;
    * ``sigma^2 ~ InvGamma(a, a s^2)`` (density ``(a s^2)^a / Gamma(a)
      sigma^(-2 (a + 1)) exp(-a s^2 / sigma^2)``, so ``E[1 / sigma^2] = 1 /
      s^2``), ``a = noise_prior_shape`` and ``s = noise_prior_scale``,
      by default one tenth of the standard deviation of ``y`` over the
      first chunk (``noise_std=None``, the default); or ``sigma =
      noise_std`` known.

    The first chunk is the first ``batch_size`` observations of the first
    ``fit`` / ``partial_fit`` call; ``m`` and ``s`` are then frozen
    (``intercept_prior_mean_``, ``noise_prior_scale_``), as
    ``BayesianGaussianMixture`` sets its priors from the data. Hence ``y``
    may be on any scale: ``y + c`` leaves the evidence unchanged (with an
    intercept), and
    ``c * y`` shifts it by exactly ``-n log |c|``, the Jacobian of the change
    of units, shared by every model fitted to the same ``y``, so Bayes
    factors do not depend on either. ``X`` should be standardised (e.g. a
    ``StandardScaler``): the prior is per unit of feature. The evidence has
    a closed form, :meth:`exact_log_evidence` (a multivariate t with unknown
    noise), the reference point of the library's accuracy. ``fit`` starts
    over; ``partial_fit`` conditions the current posterior on more data, at
    a cost per batch that does not grow with the data already seen.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Whether to fit an intercept.
    prior_mean : float or array-like of shape (n_features,), default=0.0
        Prior mean of the coefficients: one number for all, or one per
        feature.
    prior_std : float or array-like of shape (n_features,), default=1.0
        Prior standard deviation of the coefficients, in units of the noise
        standard deviation: one number for all, or one per feature.
    intercept_prior_std : float or None, default=None
        Prior standard deviation of the intercept, in units of the noise
        standard deviation; ``None`` takes ``prior_std`` (which must then be
        one number).
    noise_std : float or None, default=None
        ``None``: the noise variance is unknown, with the inverse-gamma
        prior above, and integrated out. A number: the known noise standard
        deviation. ``noise_std=1.0, prior_std=1.0, intercept_prior_mean=0.0``
        is the model of Cameron, Eggers & Kroon (2019), Appendix B.1.
    intercept_prior_mean : float or None, default=None
        Prior mean of the intercept; ``None`` takes the mean of ``y`` over
        the first chunk.
    noise_prior_shape : float, default=1.0
        Shape ``a`` of the noise prior ``InvGamma(a, a s^2)``; ``2 a`` is
        the degrees of freedom of the evidence's multivariate t. Unused with
        known noise.
    noise_prior_scale : float or None, default=None
        Scale ``s`` of the noise prior ``InvGamma(a, a s^2)``
        (``E[1 / sigma^2] = 1 / s^2``); ``None`` takes 0.1 times the
        standard deviation of ``y`` over the first chunk (its root mean
        square without an intercept). Unused with known noise.
{shared_params_doc(learning_rate=0.1, warmup=_EXACT_MOVES_DOC)}

    Attributes
    ----------
    log_evidence_ : float
        Estimate of ``log p(y | X)`` for all data seen so far.
{TRUST_ATTRIBUTES_DOC}
    coef_ : ndarray of shape (n_features,)
        Posterior mean of the coefficients.
    intercept_ : float
        Posterior mean of the intercept (0 when ``fit_intercept=False``).
    noise_variance_ : float
        Posterior mean of the noise variance (``noise_std ** 2`` if known).
    intercept_prior_mean_ : float
        The intercept's prior mean in use (0 when ``fit_intercept=False``).
    noise_prior_scale_ : float or None
        The noise prior's scale ``s`` in use (None with known noise).
    prior_ : PriorRecord
        The whole prior in use, resolved: ``prior_mean`` and ``prior_std``
        per feature, ``intercept_prior_mean`` and ``intercept_prior_std``
        (with ``fit_intercept``), and ``noise_prior_shape`` with
        ``noise_prior_scale``, or ``noise_std`` when the noise is known.
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles ``[coef, intercept, log sigma^2]`` (the
        intercept without ``fit_intercept``, ``log sigma^2`` with known
        noise left out).
{WEIGHTS_ATTRIBUTES_DOC}

    Notes
    -----
    Per-feature ``prior_mean`` and ``prior_std`` are checked at ``fit``
    against the number of features (finite; positive scales) before
    anything changes. A textbook natural conjugate prior ``beta | h ~
    N(beta_0, V_0 / h)``, ``h ~ Gamma(nu_0 / 2, rate=nu_0 s_0^2 / 2)`` with
    diagonal ``V_0`` is ``prior_mean=beta_0``, ``prior_std=sqrt(diag V_0)``,
    ``noise_prior_shape=nu_0 / 2`` and ``noise_prior_scale=s_0``.

    SGAIS samples ``[coef, intercept, log sigma^2]``; every setting of the
    engine is equivariant under ``y -> a y + c``, so the annealing path and
    the cost do not depend on the units of ``y`` either.

    The likelihood depends on the data only through their Gram matrix,
    which the engine sums chunk by chunk; so the moves are
    Metropolis-adjusted on the exact tempered posterior at every ``n``, in
    the metric of the posterior's precision, and adapt their own step:
    ``learning_rate`` matters only with ``engine_options={{"exact_warmup":
    False}}``.

    On the paper's model (``noise_std=1.0, prior_std=1.0,
    intercept_prior_mean=0.0``) the evidence can be checked against the
    closed form (``exact_log_evidence``); the errors, and the measurements
    behind each default, are in the user guide (:ref:`settings`) and on
    :doc:`the benchmarks page </benchmarks>`.

    References
    ----------
    Cameron, Eggers & Kroon (2019), Stochastic gradient annealed importance
    sampling for efficient online marginal likelihood estimation, Entropy
    21(11). Kass & Wasserman (1995), JASA 90(431) (unit-information prior).

    See Also
    --------
    sklearn.linear_model.BayesianRidge : point estimate of the same model family
        with the evidence maximised over the prior and noise precisions.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3))
    >>> y = 50.0 * (X @ [1.0, -0.5, 0.2] + 0.3 + rng.normal(size=2000))
    >>> reg = EvidenceLinearRegression(random_state=0).fit(X, y)
    >>> exact = reg.exact_log_evidence(X, y)
    >>> bool(abs(reg.log_evidence_ - exact) < 2.0)
    True
    >>> bool(45.0 < np.sqrt(reg.noise_variance_) < 55.0)  # the noise sd, 50
    True
    >>> mean, std = reg.predict(X[:2], return_std=True)
    >>> mean.shape, std.shape
    ((2,), (2,))
    """

    # The Laplace precision is the posterior's own (exact with known noise):
    # a better metric for the moves than the particles' noisy covariance. In
    # that metric the warm-up's exact moves need no extra steps: one per
    # annealing step is as accurate as two, at less cost (docs: benchmarks,
    # Linear regression).
    _engine_defaults = {"precondition": "curvature", "warmup_factor": 1}

    _parameter_constraints = {
        **BaseEvidenceEstimator._parameter_constraints,
        "fit_intercept": ["boolean"],
        # Numbers are checked here; arrays at fit, against n_features_in_.
        "prior_mean": [FINITE, "array-like"],
        "prior_std": [POSITIVE_FINITE, "array-like"],
        "noise_std": [POSITIVE_FINITE, None],
        "intercept_prior_mean": [FINITE, None],
        "intercept_prior_std": [POSITIVE_FINITE, None],
        "noise_prior_shape": [POSITIVE_FINITE],
        "noise_prior_scale": [POSITIVE_FINITE, None],
    }

    def __init__(
        self, *, fit_intercept=True, prior_mean=0.0, prior_std=1.0, noise_std=None,
        intercept_prior_mean=None, intercept_prior_std=None,
        noise_prior_shape=NOISE_PRIOR_SHAPE, noise_prior_scale=None,
        n_particles=128, max_particles=None, batch_size=500, n_burnin=20,
        learning_rate=0.1, momentum_decay=0.2, target_ess=0.9, resample_threshold=0.5,
        reservoir_size=None, device="cpu", dtype="float64", random_state=None, verbose=0,
        engine_options=None, method="sgais", n_init=1,
    ):
        store_init_params(self, locals())

    def _data_priors(self, y):
        """``(intercept_prior_mean, noise_prior_scale)`` set from the first chunk of ``y``."""
        y0 = np.asarray(y[: self.batch_size], dtype=np.float64)
        mean = self.intercept_prior_mean
        if mean is None:
            mean = float(y0.mean()) if self.fit_intercept else 0.0
        scale = self.noise_prior_scale
        if self.noise_std is not None:
            scale = None
        elif scale is None:
            rms = float(np.sqrt(np.mean(y0**2)))
            spread = float(y0.std()) if self.fit_intercept else rms
            # A constant first chunk has no spread: fall back on its size.
            spread = spread if spread > 0 else (rms if rms > 0 else 1.0)
            scale = _NOISE_PRIOR_FRACTION * spread
        return float(mean), scale

    def _coef_prior(self, n_features):
        """``(prior_mean, prior_std, intercept_prior_std)`` checked against ``n_features``."""
        mean = prior_array(self.prior_mean, "prior_mean", (n_features,))
        std = prior_array(self.prior_std, "prior_std", (n_features,), positive=True)
        intercept_std = self.intercept_prior_std
        if intercept_std is None and self.fit_intercept:
            if np.ndim(self.prior_std) != 0:
                raise ValueError("prior_std has one value per feature: state the intercept's "
                                 "with intercept_prior_std")
            intercept_std = float(self.prior_std)
        # A scalar stays a scalar, so the isotropic prior keeps its arithmetic.
        return (mean, self.prior_std if np.ndim(self.prior_std) == 0 else std,
                None if intercept_std is None else float(intercept_std))

    def _make_model(self, X, y, priors=None):
        coef_mean, coef_std, intercept_std = self._coef_prior(X.shape[1])
        mean, scale = self._data_priors(y) if priors is None else priors
        return LinearRegressionModel(
            X.shape[1], self.fit_intercept, coef_std, self.noise_std,
            intercept_prior_mean=mean,
            noise_prior_scale=1.0 if scale is None else scale,
            prior_mean=coef_mean, intercept_prior_std=intercept_std,
            noise_prior_shape=self.noise_prior_shape,
        )

    def _validate_training_data(self, X, y, reset):
        return validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True)

    def _to_batch(self, X, y):
        return self._as_tensor(X), self._as_tensor(y)

    def _set_model_attributes(self):
        super()._set_model_attributes()
        model = self._model
        self.intercept_prior_mean_ = model.intercept_prior_mean
        self.noise_prior_scale_ = model.noise_prior_scale if model.unknown_noise else None
        self.prior_ = _prior_record(model)
        # The engine's particles are in the prior's units; report natural ones.
        self.particles_ = model.natural(self._particles_tensor()).cpu().numpy()
        mean = self.particle_weights_ @ self.particles_[:, : model.n_coef]
        if self.fit_intercept:
            self.coef_, self.intercept_ = mean[:-1], float(mean[-1])
        else:
            self.coef_, self.intercept_ = mean, 0.0
        if model.unknown_noise:
            noise_var = model.noise_variance(self._particles_tensor()).cpu().numpy()
            self.noise_variance_ = float(self.particle_weights_ @ noise_var)
        else:
            self.noise_variance_ = model.noise_std**2

    def predict(self, X, return_std=False):
        """Posterior-predictive mean (and standard deviation) at ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the predictive standard deviation: the spread of the
            particles' means plus the noise (with unknown noise, averaged
            over its posterior: the standard deviation of the Student t
            predictive).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
            Weighted average of the particles' predictions.
        y_std : ndarray of shape (n_samples,)
            Only when ``return_std`` is True.
        """
        return self._predict_in_blocks(X, lambda Xt: self._predictive_moments(Xt, return_std))

    def _predictive_moments(self, Xt, return_std):
        theta = self._particles_tensor()
        means = self._model.mean(theta, Xt)  # [M, B]
        W = self._weights_tensor()
        mean = W @ means
        if not return_std:
            return mean
        var = W @ (means - mean).square() + W @ self._model.noise_variance(theta)
        return mean, var.sqrt()

    def _natural_parameters(self, theta):
        beta, log_var = self._model._split(theta)
        p = self.n_features_in_
        params = {"coef": beta[:, :p]}
        if self._model.fit_intercept:
            params["intercept"] = beta[:, p]
        if self._model.unknown_noise:
            params["noise_variance"] = log_var.exp()
        return NaturalParameters(params, {"coef": ["feature"]}, {"feature": feature_coords(self)})

    def _prior_draws(self, n, generator):
        """``n`` draws of the engine's parameters from the prior, float64 on the CPU."""
        return self._model.sample_prior(n, generator)

    def exact_log_evidence(self, X, y):
        """Closed-form ``log p(y | X)`` under this estimator's prior.

        A fitted estimator uses its fitted prior (``intercept_prior_mean_``,
        ``noise_prior_scale_``), so the result is comparable with
        ``log_evidence_`` however the data were streamed; an unfitted one the
        prior ``fit(X, y)`` would set. Computed in float64 in O(n d^2)
        (matrix determinant lemma and Woodbury's identity; no ``n x n``
        matrix).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        log_evidence : float
            The exact log marginal likelihood.
        """
        self._check_params()
        X, y = check_X_y(X, y, dtype=np.float64, y_numeric=True)
        priors = None
        if hasattr(self, "intercept_prior_mean_"):
            priors = (self.intercept_prior_mean_, self.noise_prior_scale_)
            if (self.noise_std is None) != (priors[1] is not None):
                priors = None  # noise_std was changed since the fit
        model = self._make_model(X, y, priors)
        # torch.tensor copies: check_X_y may hand back a read-only view (a
        # pandas Series's values), which torch.as_tensor warns about.
        return model.exact_log_evidence((torch.tensor(X), torch.tensor(y)))
        

def _prior_record(model):
    """The model's prior, resolved, as a :class:`PriorRecord`."""
    p = model.n_features
    std = model.coef_prior_std
    values = {"prior_mean": model.prior_mean.copy(), "prior_std": std[:p].copy()}
    coef = "coef_j | sigma^2 ~ N(prior_mean_j, sigma^2 prior_std_j^2)"
    parts = [coef]
    if model.fit_intercept:
        values["intercept_prior_mean"] = model.intercept_prior_mean
        values["intercept_prior_std"] = float(std[p])
        parts.append("intercept | sigma^2 ~ N(intercept_prior_mean, "
                     "sigma^2 intercept_prior_std^2)")
    if model.unknown_noise:
        values["noise_prior_shape"] = model.noise_prior_shape
        values["noise_prior_scale"] = model.noise_prior_scale
        parts.append("sigma^2 ~ InvGamma(noise_prior_shape, "
                     "noise_prior_shape * noise_prior_scale^2)")
    else:
        values["noise_std"] = model.noise_std
        parts.append("sigma = noise_std")
    return PriorRecord(";\n    ".join(parts), **values)
