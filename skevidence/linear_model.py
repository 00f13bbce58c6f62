"""Linear models with an online evidence: EvidenceLinearRegression."""

import numpy as np
import torch
from sklearn.base import RegressorMixin
from sklearn.utils import check_X_y
from sklearn.utils.validation import validate_data

from ._base import SHARED_PARAMS_DOC, BaseEvidenceEstimator
from .models import LinearRegressionModel

__all__ = ["EvidenceLinearRegression"]


class EvidenceLinearRegression(RegressorMixin, BaseEvidenceEstimator):
    __doc__ = f"""Bayesian linear regression with its log evidence, fitted online by SGAIS.

    The model is ``y = X @ coef + intercept + eps`` with known noise
    ``eps ~ N(0, noise_std^2)`` and independent ``N(0, prior_std^2)`` priors
    on every coefficient and the intercept (Cameron & Dyer 2019,
    Appendix B.1). ``fit`` starts over; ``partial_fit`` conditions the
    current posterior on more data, at a cost per batch that does not grow
    with the data already seen. The evidence has a closed form,
    :meth:`exact_log_evidence`, which makes this estimator the reference
    point of the library's accuracy.

    Parameters
    ----------
    fit_intercept : bool, default=True
        Whether to fit an intercept (with the same prior as the weights).
    prior_std : float, default=1.0
        Standard deviation of the Gaussian prior on the coefficients.
    noise_std : float, default=1.0
        Known standard deviation of the observation noise.
{SHARED_PARAMS_DOC.format(learning_rate=0.1)}

    Attributes
    ----------
    log_evidence_ : float
        Estimate of ``log p(y | X)`` for all data seen so far.
    evidence_trace_ : dict of ndarray
        One entry per chunk: ``n_seen``, ``log_evidence``,
        ``n_annealing_steps`` and ``ess`` (of the weights after the chunk).
    coef_ : ndarray of shape (n_features,)
        Posterior mean of the coefficients.
    intercept_ : float
        Posterior mean of the intercept (0 when ``fit_intercept=False``).
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles ``[coef, intercept]``.
    particle_weights_ : ndarray of shape (n_particles,)
        Their normalised importance weights.
    n_features_in_ : int
        Number of features seen during ``fit``.
    n_samples_seen_ : int
        Number of observations conditioned on.

    Notes
    -----
    SGAIS as published (10 particles, ESS target 5 of 10, no resampling,
    plain mini-batch gradients) is 150-190 nats off at 1e5 observations of
    the paper's data. Switching the library's ingredients on one at a time
    (``benchmarks/ablation_linreg.py``, 5 data seeds, median error at 1e5):
    exact posterior draws in place of the sampler leave -19 nats with the
    paper's particles and -0.27 with 128 particles, target 0.9 and
    resampling (the estimator's own floor); with SGHMC instead of exact draws
    that setting is -145 nats, control-variate gradients bring it to -0.84,
    the covariance preconditioner with extra warm-up moves to -0.80 (and a
    smaller spread), and the BAOAB integrator to +0.01 (range -0.56 to
    +0.16). ``learning_rate=0.1`` is the largest step without measurable
    bias: at 0.2 the error over 8 sampler seeds on one data set was
    -0.66 +- 0.69 nats at 1e5, at 0.1 -0.23 +- 0.31, the spread of exact
    draws.

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
    >>> y = X @ [1.0, -0.5, 0.2] + 0.3 + rng.normal(size=2000)
    >>> reg = EvidenceLinearRegression(random_state=0).fit(X, y)
    >>> exact = reg.exact_log_evidence(X, y)
    >>> bool(abs(reg.log_evidence_ - exact) < 2.0)
    True
    >>> reg.predict(X[:2]).shape
    (2,)
    """

    def __init__(
        self,
        *,
        fit_intercept=True,
        prior_std=1.0,
        noise_std=1.0,
        n_particles=128,
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
    ):
        self.fit_intercept = fit_intercept
        self.prior_std = prior_std
        self.noise_std = noise_std
        self.n_particles = n_particles
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

    def _check_params(self):
        super()._check_params()
        for name in ("prior_std", "noise_std"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.number)) and np.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")

    def _make_model(self, X, y):
        return LinearRegressionModel(X.shape[1], self.fit_intercept, self.prior_std, self.noise_std)

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

        The first call starts from the prior. The result does not depend on
        how the stream is cut into calls beyond the engine's own chunking
        (chunks of ``batch_size`` within each call).

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
        mean = self.particle_weights_ @ self.particles_
        if self.fit_intercept:
            self.coef_, self.intercept_ = mean[:-1], float(mean[-1])
        else:
            self.coef_, self.intercept_ = mean, 0.0

    def predict(self, X, return_std=False):
        """Posterior-predictive mean (and standard deviation) at ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
        return_std : bool, default=False
            Also return the predictive standard deviation, which includes
            the observation noise ``noise_std``.

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
            Weighted average of the particles' predictions.
        y_std : ndarray of shape (n_samples,)
            Only when ``return_std`` is True.
        """
        X = self._check_fitted_input(X)
        Xt = torch.as_tensor(X, dtype=torch.float64, device=self.device)
        means = self._model.mean(self._particles_tensor(), Xt)  # [M, B]
        W = self._weights_tensor()
        mean = W @ means
        if not return_std:
            return mean.cpu().numpy()
        var = W @ (means - mean).square() + self._model.noise_std**2
        return mean.cpu().numpy(), var.sqrt().cpu().numpy()

    def exact_log_evidence(self, X, y):
        """Closed-form ``log p(y | X)`` under this estimator's prior and noise.

        Computed in float64 in O(n d^2) (matrix determinant lemma and
        Woodbury's identity); it does not need the estimator to be fitted.

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
        model = self._make_model(X, y)
        return model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
