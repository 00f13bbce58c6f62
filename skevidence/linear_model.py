"""Linear models with an online evidence: EvidenceLinearRegression and
EvidenceLogisticRegression."""

import warnings

import numpy as np
import torch
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils import check_X_y
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import validate_data

from ._base import (EXACT_WARMUP_DOC, EXACT_WARMUP_SINGLE_DOC, FINITE, POSITIVE_FINITE,
                    SHARED_PARAMS_DOC, TRUST_ATTRIBUTES_DOC, BaseEvidenceEstimator, normalize_proba)
from ._arviz import feature_coords
from .models import LinearRegressionModel, LogisticRegressionModel

__all__ = ["EvidenceLinearRegression", "EvidenceLogisticRegression"]


# Default scale of the noise prior, as a fraction of the spread of y over the
# first chunk: InvGamma(1, s^2) with s = 0.1 sd(y) puts 99% of the prior mass
# of sigma^2 below var(y); in log sigma^2 its density at var(y) / 2 (R^2 of
# 0.5) is 3 nats and at 1e-3 var(y) (R^2 of 0.999) 7 nats below its mode, so
# it favours neither weak nor strong fits much, while a spread of a few units
# of log sigma^2 keeps the first chunk's annealing short.
_NOISE_PRIOR_FRACTION = 0.1

# Feature scales (root mean square of a column) outside this range draw a
# warning from EvidenceLogisticRegression: its prior is per unit of feature.
_UNIT_SCALE_RANGE = (0.1, 10.0)


def _warn_if_unscaled(X):
    """Warn when some feature's scale is far from 1 (the prior's unit)."""
    rms = np.sqrt(np.mean(np.square(X), axis=0))
    low, high = _UNIT_SCALE_RANGE
    far = (rms > high) | ((rms < low) & (rms > 0))
    if far.any():
        columns = np.flatnonzero(far)
        shown = ", ".join(f"{j} ({rms[j]:.3g})" for j in columns[:5])
        more = f" and {len(columns) - 5} more" if len(columns) > 5 else ""
        warnings.warn(
            f"features {shown}{more} have a root-mean-square scale outside "
            f"[{low}, {high}]. The N(0, prior_std^2) prior is per unit of feature, so on "
            "unscaled features it is far too wide or too narrow and the evidence "
            "describes that prior; standardise the features, e.g. "
            "make_pipeline(StandardScaler(), EvidenceLogisticRegression()).",
            UserWarning, stacklevel=5)


class EvidenceLinearRegression(RegressorMixin, BaseEvidenceEstimator):
    __doc__ = f"""Bayesian linear regression with its log evidence, fitted online by SGAIS.

    The model is ``y = X @ coef + intercept + eps``, ``eps ~ N(0, sigma^2)``,
    with the conjugate (Normal-Inverse-Gamma) prior

    * ``coef_j | sigma^2 ~ N(0, sigma^2 prior_std^2)``: coefficients in units
      of the noise; on standardised features ``prior_std=1`` is the
      unit-information prior (worth one observation);
    * ``intercept | sigma^2 ~ N(m, sigma^2 prior_std^2)``, ``m`` the mean of
      ``y`` over the first chunk;
    * ``sigma^2 ~ InvGamma(1, s^2)``, ``s`` one tenth of the standard
      deviation of ``y`` over the first chunk (``noise_std=None``, the
      default), or ``sigma = noise_std`` known.

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
    prior_std : float, default=1.0
        Prior standard deviation of the coefficients and the intercept, in
        units of the noise standard deviation.
    noise_std : float or None, default=None
        ``None``: the noise variance is unknown, with the inverse-gamma
        prior above, and integrated out. A number: the known noise standard
        deviation. ``noise_std=1.0, prior_std=1.0, intercept_prior_mean=0.0``
        is the model of Cameron, Eggers & Kroon (2019), Appendix B.1.
    intercept_prior_mean : float or None, default=None
        Prior mean of the intercept; ``None`` takes the mean of ``y`` over
        the first chunk.
    noise_prior_scale : float or None, default=None
        Scale ``s`` of the noise prior ``InvGamma(1, s^2)``
        (``E[1 / sigma^2] = 1 / s^2``); ``None`` takes 0.1 times the
        standard deviation of ``y`` over the first chunk (its root mean
        square without an intercept). Unused with known noise.
{SHARED_PARAMS_DOC.format(learning_rate=0.1, warmup=EXACT_WARMUP_DOC)}

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
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles ``[coef, intercept, log sigma^2]`` (the
        intercept without ``fit_intercept``, ``log sigma^2`` with known
        noise left out).
    particle_weights_ : ndarray of shape (n_particles,)
        Their normalised importance weights.
    n_features_in_ : int
        Number of features seen during ``fit``.
    n_samples_seen_ : int
        Number of observations conditioned on.

    Notes
    -----
    SGAIS samples ``[coef, intercept, log sigma^2]``; every setting of the
    engine is equivariant under ``y -> a y + c``, so the annealing path and
    the cost do not depend on the units of ``y`` either.

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

    _parameter_constraints = {
        **BaseEvidenceEstimator._parameter_constraints,
        "fit_intercept": ["boolean"],
        "prior_std": [POSITIVE_FINITE],
        "noise_std": [POSITIVE_FINITE, None],
        "intercept_prior_mean": [FINITE, None],
        "noise_prior_scale": [POSITIVE_FINITE, None],
    }

    def __init__(
        self,
        *,
        fit_intercept=True,
        prior_std=1.0,
        noise_std=None,
        intercept_prior_mean=None,
        noise_prior_scale=None,
        n_particles=128,
        max_particles=None,
        batch_size=500,
        n_burnin=20,
        learning_rate=0.1,
        momentum_decay=0.2,
        target_ess=0.9,
        resample_threshold=0.5,
        reservoir_size=None,
        device="cpu",
        dtype="float64",
        random_state=None,
        verbose=0,
        engine_options=None,
        method="sgais",
    ):
        self.fit_intercept = fit_intercept
        self.prior_std = prior_std
        self.noise_std = noise_std
        self.intercept_prior_mean = intercept_prior_mean
        self.noise_prior_scale = noise_prior_scale
        self.n_particles = n_particles
        self.max_particles = max_particles
        self.batch_size = batch_size
        self.n_burnin = n_burnin
        self.learning_rate = learning_rate
        self.momentum_decay = momentum_decay
        self.target_ess = target_ess
        self.resample_threshold = resample_threshold
        self.reservoir_size = reservoir_size
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose
        self.engine_options = engine_options
        self.method = method

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

    def _make_model(self, X, y, priors=None):
        mean, scale = self._data_priors(y) if priors is None else priors
        return LinearRegressionModel(
            X.shape[1], self.fit_intercept, self.prior_std, self.noise_std,
            intercept_prior_mean=mean,
            noise_prior_scale=1.0 if scale is None else scale,
        )

    def _validate_training_data(self, X, y, reset):
        return validate_data(self, X, y, reset=reset, dtype=np.float64, y_numeric=True)

    def _to_batch(self, X, y):
        return self._as_tensor(X), self._as_tensor(y)

    def fit(self, X, y):
        """Fit the posterior and the evidence on ``(X, y)``, starting over.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Targets.

        Returns
        -------
        self : EvidenceLinearRegression
            The fitted estimator.
        """
        return self._fit(X, y, reset=True)

    def partial_fit(self, X, y):
        """Condition the current posterior and evidence on one more batch.

        The first call starts from the prior (whose data-set hyper-parameters
        come from its first ``batch_size`` observations). The result does not
        depend on how the stream is cut into calls beyond the engine's own
        chunking (chunks of ``batch_size`` within each call).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs of the new batch.
        y : array-like of shape (n_samples,)
            Targets of the new batch.

        Returns
        -------
        self : EvidenceLinearRegression
            The updated estimator.
        """
        return self._fit(X, y, reset=not hasattr(self, "_state"))

    def _set_fitted_attributes(self):
        super()._set_fitted_attributes()
        model = self._model
        self.intercept_prior_mean_ = model.intercept_prior_mean
        self.noise_prior_scale_ = model.noise_prior_scale if model.unknown_noise else None
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
        return params, {"coef": ["feature"]}, {"feature": feature_coords(self)}

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
        return model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))


class EvidenceLogisticRegression(ClassifierMixin, BaseEvidenceEstimator):
    __doc__ = f"""Bayesian multinomial logistic regression with its log evidence, by SGAIS.

    The model is ``p(y = k | x) = softmax_k(W x + b)`` where every class
    ``k`` has its own weight vector ``W[k]`` and bias ``b[k]``, all with
    independent ``N(0, prior_std^2)`` priors (Cameron, Eggers & Kroon 2019,
    Appendix B.2). The parameterisation is kept as in the paper although it
    is redundant: the evidence belongs to this model, so two classes have
    ``2 (n_features + 1)`` parameters. ``fit`` starts over; ``partial_fit``
    conditions the current posterior on more data, at a cost per batch that
    does not grow with the data already seen. Predictions average the
    particles' class probabilities with their importance weights (the
    posterior predictive).

    The prior is per unit of feature, so standardise the features first
    (``make_pipeline(StandardScaler(), EvidenceLogisticRegression())``);
    ``fit`` warns when a feature's root-mean-square scale is outside
    [0.1, 10].

    Parameters
    ----------
    fit_intercept : bool, default=True
        Whether every class has a bias (with the same prior as the weights).
    prior_std : float, default=1.0
        Standard deviation of the Gaussian prior on every weight and bias.
{SHARED_PARAMS_DOC.format(learning_rate=0.1, warmup=EXACT_WARMUP_SINGLE_DOC)}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels, sorted.
    log_evidence_ : float
        Estimate of ``log p(y | X)`` for all data seen so far.
{TRUST_ATTRIBUTES_DOC}
    coef_ : ndarray of shape (n_classes, n_features)
        Posterior mean of the weights, one row per class.
    intercept_ : ndarray of shape (n_classes,)
        Posterior mean of the biases (zeros when ``fit_intercept=False``).
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles ``[coef.ravel(), intercept]``.
    particle_weights_ : ndarray of shape (n_particles,)
        Their normalised importance weights.
    n_features_in_ : int
        Number of features seen during ``fit``.
    n_samples_seen_ : int
        Number of observations conditioned on.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : maximum a posteriori point
        estimate of the same model (with a penalty instead of the prior).
    EvidenceLinearRegression : the regression counterpart, with an exact
        evidence to check against.

    Notes
    -----
    With fewer than two particles per parameter (``n_particles < 2 d``) the
    preconditioner is the inverse Laplace precision at the particles' mean,
    since ``M`` particles span only ``M - 1`` dimensions; otherwise it is
    the particles' covariance. The errors against importance sampling on
    the paper's setting, and the measurements behind each default, are in
    the user guide (:ref:`settings`) and on :doc:`the benchmarks page
    </benchmarks>`.

    References
    ----------
    Cameron, Eggers & Kroon (2019), Stochastic gradient annealed importance
    sampling for efficient online marginal likelihood estimation, Entropy
    21(11).

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import EvidenceLogisticRegression
    >>> from skevidence.datasets import make_logistic_regression
    >>> X, y = make_logistic_regression(1000, n_features=3, n_classes=3, random_state=0)
    >>> clf = EvidenceLogisticRegression(random_state=0).fit(X, y)
    >>> clf.classes_
    array([0, 1, 2])
    >>> clf.predict_proba(X[:2]).shape
    (2, 3)
    >>> bool(np.isfinite(clf.log_evidence_))
    True
    """

    _parameter_constraints = {
        **BaseEvidenceEstimator._parameter_constraints,
        "fit_intercept": ["boolean"],
        "prior_std": [POSITIVE_FINITE],
    }

    # warmup_dtype="float32": the exact warm-up (the first 1000 observations,
    # thousands of adjusted steps, most of a short fit) costs about half in
    # single precision, and the rounding only perturbs the Metropolis test:
    # the evidence agreed with double precision within its error bar (see
    # the benchmarks page, docs/benchmarks.rst).
    _engine_defaults = {"warmup_dtype": "float32"}

    def __init__(
        self,
        *,
        fit_intercept=True,
        prior_std=1.0,
        n_particles=128,
        max_particles=None,
        batch_size=500,
        n_burnin=20,
        learning_rate=0.1,
        momentum_decay=0.2,
        target_ess=0.9,
        resample_threshold=0.5,
        reservoir_size=None,
        device="cpu",
        dtype="float64",
        random_state=None,
        verbose=0,
        engine_options=None,
        method="sgais",
    ):
        self.fit_intercept = fit_intercept
        self.prior_std = prior_std
        self.n_particles = n_particles
        self.max_particles = max_particles
        self.batch_size = batch_size
        self.n_burnin = n_burnin
        self.learning_rate = learning_rate
        self.momentum_decay = momentum_decay
        self.target_ess = target_ess
        self.resample_threshold = resample_threshold
        self.reservoir_size = reservoir_size
        self.device = device
        self.dtype = dtype
        self.random_state = random_state
        self.verbose = verbose
        self.engine_options = engine_options
        self.method = method

    def _make_model(self, X, y):
        return LogisticRegressionModel(X.shape[1], len(self.classes_), self.fit_intercept,
                                       self.prior_std)

    def _validate_training_data(self, X, y, reset, classes=None):
        """Check ``X, y`` and encode the labels as indices into ``classes_``.

        ``fit`` takes the classes from ``y`` (at least two); the first
        ``partial_fit`` needs them in ``classes``, as in scikit-learn, since
        a batch need not hold every class; later batches may only use them.
        """
        X, y = validate_data(self, X, y, reset=reset, dtype=np.float64)
        check_classification_targets(y)
        if reset:
            self.classes_ = self._initial_classes(y, classes)
            self._check_data_magnitude(X, None)  # raise on overflow before warning on scale
            _warn_if_unscaled(X)
        elif classes is not None and not np.array_equal(unique_labels(classes), self.classes_):
            raise ValueError(f"`classes={classes!r}` is not the same as on the first call "
                             f"to partial_fit, was: {self.classes_!r}")
        unknown = ~np.isin(y, self.classes_)
        if unknown.any():
            raise ValueError(f"y contains labels not in classes_ {self.classes_!r}: "
                             f"{np.unique(y[unknown])!r}")
        return X, np.searchsorted(self.classes_, y)

    def _initial_classes(self, y, classes):
        if classes is None:
            classes = unique_labels(y)
            if len(classes) < 2:
                raise ValueError(f"y has only one class ({classes[0]!r}); logistic regression "
                                 "needs at least two. Pass every class to partial_fit with "
                                 "`classes=` to fit a batch that shows only some of them.")
            return classes
        classes = unique_labels(classes)
        if len(classes) < 2:
            raise ValueError(f"classes must hold at least two labels, got {classes!r}")
        return classes

    def _to_batch(self, X, y):
        return self._as_tensor(X), self._as_tensor(y, dtype=torch.long)

    def fit(self, X, y):
        """Fit the posterior and the evidence on ``(X, y)``, starting over.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        y : array-like of shape (n_samples,)
            Class labels (at least two distinct ones).

        Returns
        -------
        self : EvidenceLogisticRegression
            The fitted estimator.
        """
        return self._fit(X, y, reset=True)

    def partial_fit(self, X, y, classes=None):
        """Condition the current posterior and evidence on one more batch.

        The first call starts from the prior and must name every class in
        ``classes`` (a batch need not show them all); later calls may omit
        it, and their labels must belong to ``classes_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs of the new batch.
        y : array-like of shape (n_samples,)
            Class labels of the new batch.
        classes : array-like of shape (n_classes,), default=None
            All the classes of the stream; required on the first call,
            and if given later it must equal ``classes_``.

        Returns
        -------
        self : EvidenceLogisticRegression
            The updated estimator.
        """
        first = not hasattr(self, "_state")
        if first and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        return self._fit(X, y, reset=first, classes=classes)

    def _set_fitted_attributes(self):
        super()._set_fitted_attributes()
        mean = self.particle_weights_ @ self.particles_
        K, p = len(self.classes_), self.n_features_in_
        self.coef_ = mean[: K * p].reshape(K, p)
        self.intercept_ = mean[K * p :] if self.fit_intercept else np.zeros(K)

    def _natural_parameters(self, theta):
        W, b = self._model.unpack(theta)
        params = {"coef": W}
        if self._model.fit_intercept:
            params["intercept"] = b
        return (params, {"coef": ["class", "feature"], "intercept": ["class"]},
                {"class": list(self.classes_), "feature": feature_coords(self)})

    def _observed_targets(self, y):
        return self.classes_[y]  # the labels, not their indices

    def predict_log_proba(self, X):
        """Log of the posterior-predictive class probabilities.

        ``log sum_m w_m softmax(W_m x + b_m)`` over the weighted particles,
        computed in log space (logsumexp), so tiny probabilities keep their
        digits.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns follow ``classes_``.
        """
        n_classes = len(getattr(self, "classes_", ()))  # fitted or not, checked next
        return self._predict_in_blocks(X, self._log_proba_block, width=n_classes)

    def _log_proba_block(self, Xt):
        log_p = self._model.predict_log_proba(self._particles_tensor(), Xt)  # [M, B, K]
        with np.errstate(divide="ignore"):
            log_w = torch.as_tensor(np.log(self.particle_weights_), device=self.device)
        log_proba = torch.logsumexp(log_w[:, None, None] + log_p, dim=0)
        # The mixture sums to one exactly; renormalise its rounding away.
        return (log_proba - torch.logsumexp(log_proba, dim=1, keepdim=True)).clamp_max(0.0)

    def predict_proba(self, X):
        """Posterior-predictive class probabilities.

        The average of the particles' softmax probabilities weighted by
        ``particle_weights_``; unlike a point estimate it widens where the
        posterior is uncertain.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows in [0, 1] that sum to one to machine precision; columns
            follow ``classes_``.
        """
        return normalize_proba(np.exp(self.predict_log_proba(X)))

    def decision_function(self, X):
        """Scores from the posterior-predictive probabilities.

        The log predictive probabilities (:meth:`predict_log_proba`); with
        two classes, as in scikit-learn, a single column: the log odds of
        ``classes_[1]`` against ``classes_[0]``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Larger means more likely; the predicted class has the largest.
        """
        log_proba = self.predict_log_proba(X)
        if log_proba.shape[1] == 2:
            return log_proba[:, 1] - log_proba[:, 0]
        return log_proba

    def predict(self, X):
        """The class with the largest posterior-predictive probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        log_proba = self.predict_log_proba(X)  # checks fitted before classes_ is read
        return self.classes_[np.argmax(log_proba, axis=1)]
