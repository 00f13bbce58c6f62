"""Mixture models with an online evidence: EvidenceGMM."""

import numbers

import numpy as np
import torch
from sklearn.base import DensityMixin
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, validate_parameter_constraints
from sklearn.utils.validation import check_is_fitted, validate_data

from ._arviz import feature_coords
from ._base import BaseEvidenceEstimator, store_init_params
from ._docstrings import (TRUST_ATTRIBUTES_DOC, WEIGHTS_ATTRIBUTES_DOC, method_doc,
                          shared_params_doc, warmup_doc)
from ._posterior import NaturalParameters
from ._prior import PriorRecord
from ._validation import FINITE, POSITIVE_FINITE, normalize_proba
from .models import GaussianMixtureModel

__all__ = ["EvidenceGMM"]

# With ``variance_scale=None`` the inverse-gamma scale of every variance is
# this fraction of the feature's variance in the first batch.
DATA_VARIANCE_FRACTION = 0.1

_N_INIT_WHY = """
        A mixture's posterior often has such modes (components that
        overlap, differ much in weight, or explain no data), so three runs
        of 64 particles are the default, at about twice the cost of one run
        of 128: two runs often agree by chance where a third does not
        (:ref:`the mixture sweep <mixture-sweep>`). ``n_init=1, n_particles=128`` is the
        single run."""

# The argument of ``EvidenceGMM.sample``, validated as the parameters are.
_SAMPLE_CONSTRAINTS = {"n_samples": [Interval(numbers.Integral, 1, None, closed="left")]}


class EvidenceGMM(DensityMixin, BaseEvidenceEstimator):
    __doc__ = f"""Bayesian Gaussian mixture (diagonal covariances) with its log evidence, by SGAIS.

    The model is a mixture of ``n_components`` Gaussians with diagonal
    covariances, the component assignments marginalised, and the priors of
    Cameron, Eggers & Kroon (2019, Appendix B.3): ``weights ~
    Dirichlet(alpha)``, ``variances ~ InvGamma(variance_shape,
    variance_scale)`` and ``means | variance ~ N(mean_prior,
    mean_variance_factor * variance)``, independently over components and
    features. By default the prior follows the data's scale, as
    :class:`sklearn.mixture.BayesianGaussianMixture`'s does: ``mean_prior``
    is the mean and ``variance_scale`` a tenth of the variance of every
    feature in the first batch (all of ``X`` in ``fit``, the first call's
    batch in ``partial_fit``), then frozen (``mean_prior_``,
    ``variance_scale_``), so rescaling the data by ``c`` only shifts every
    ``log_evidence_`` by ``-n_samples * n_features * log(c)``. The paper's
    fixed priors are ``mean_prior=0.0, variance_scale=1.0``.

    The log evidence ranks mixtures of different sizes (:ref:`estimators`).

    Parameters
    ----------
    n_components : int, default=5
        Number of mixture components.
    weight_concentration : float, default=1.0
        Symmetric Dirichlet concentration ``alpha`` of the weights.
    variance_shape : float, default=1.0
        Shape of the inverse-gamma prior on every variance.
    variance_scale : float or None, default=None
        Scale of the inverse-gamma prior on every variance; ``None`` takes
        ``0.1`` times each feature's variance in the first batch (a feature
        constant there gets 1).
    mean_prior : float or None, default=None
        Prior mean of every component mean; ``None`` takes each feature's
        mean in the first batch.
    mean_variance_factor : float, default=4.0
        Prior variance of a mean, as a multiple of its component's variance.
{shared_params_doc(learning_rate=0.007, warmup=warmup_doc(2000), n_particles=64, n_init=3,
                   n_init_why=_N_INIT_WHY)}

    Attributes
    ----------
    mean_prior_ : ndarray of shape (n_features,)
        Prior mean of the component means, per feature, as used (given or
        from the first batch).
    variance_scale_ : ndarray of shape (n_features,)
        Inverse-gamma scale of the variances, per feature, as used.
    prior_ : PriorRecord
        The whole prior in use, resolved: ``weight_concentration``,
        ``variance_shape``, ``variance_scale`` and ``mean_prior`` (per
        feature) and ``mean_variance_factor``.
    log_evidence_ : float
        Estimate of ``log p(X)`` for all data seen so far.
{TRUST_ATTRIBUTES_DOC}
    weights_ : ndarray of shape (n_components,)
        Mixture weights of the highest-weight particle. Posterior means
        over particles are meaningless under label switching, so the point
        summaries come from one particle.
    means_ : ndarray of shape (n_components, n_features)
        Component means of the highest-weight particle.
    covariances_ : ndarray of shape (n_components, n_features)
        Diagonal covariances of the highest-weight particle (as
        :class:`sklearn.mixture.GaussianMixture` with
        ``covariance_type="diag"``).
    particles_ : ndarray of shape (n_particles, n_params)
        Posterior particles in the unconstrained space
        ``[logits (n_components - 1), means, log variances]``.
{WEIGHTS_ATTRIBUTES_DOC}

    See Also
    --------
    sklearn.mixture.GaussianMixture : maximum-likelihood mixture (EM).
    sklearn.mixture.BayesianGaussianMixture : variational mixture.

    Notes
    -----
    The posterior of a mixture is multimodal (the ``K!`` relabellings and
    poorer local optima), so the engine settings differ from the linear
    models (``engine_options`` overrides them): one control-variate
    reference per particle and a diagonal preconditioner from the model's
    Fisher information, shared by component in the adjusted moves. The
    warm-up up to 2000 observations (the linear models: 1000) is
    Metropolis-adjusted, since the posterior of a mixture stays far from
    Gaussian for longer (:ref:`settings`); past 8000 observations, where
    it is near Gaussian, the SGHMC moves take half of ``n_burnin`` steps
    (``late_burnin_factor=0.5`` in ``engine_options``; 1.0 keeps all).

    References
    ----------
    Cameron, S. A., Eggers, H. C. & Kroon, S. (2019). Stochastic gradient
    annealed importance sampling for efficient online marginal likelihood
    estimation. Entropy 21(11), 1109.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import EvidenceGMM
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(-3, 1, (300, 2)), rng.normal(3, 1, (300, 2))])
    >>> X = rng.permutation(X)
    >>> one = EvidenceGMM(n_components=1, n_particles=64, random_state=0).fit(X)
    >>> two = EvidenceGMM(n_components=2, n_particles=64, random_state=0).fit(X)
    >>> bool(two.log_evidence_ > one.log_evidence_)
    True
    >>> two.predict_proba(X[:3]).shape
    (3, 2)
    >>> X_new, labels = two.sample(5)
    >>> X_new.shape
    (5, 2)
    """

    # A longer exact warm-up (the posterior stays far from Gaussian longer), in double
    # precision (single precision's rounding can lose a light component on long streams).
    # Half the SGHMC steps in the late phase (past 4 * warmup_size, 8000 rows), where the
    # posterior is near Gaussian and a chunk moves it little: as accurate, at less cost.
    _engine_defaults = {"precondition": "model", "control_variate": "particle",
                        "exact_warmup": True, "warmup_factor": 2, "warmup_size": 2000,
                        "late_burnin_factor": 0.5}

    _parameter_constraints = {
        **BaseEvidenceEstimator._parameter_constraints,
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "weight_concentration": [POSITIVE_FINITE],
        "variance_shape": [POSITIVE_FINITE],
        "variance_scale": [POSITIVE_FINITE, None],
        "mean_prior": [FINITE, None],
        "mean_variance_factor": [POSITIVE_FINITE],
    }

    def __init__(
        self, *, n_components=5, weight_concentration=1.0, variance_shape=1.0, variance_scale=None,
        mean_prior=None, mean_variance_factor=4.0,
        n_particles=64, max_particles=None, batch_size=500, n_burnin=20,
        learning_rate=0.007, momentum_decay=0.2, target_ess=0.9, resample_threshold=0.5,
        reservoir_size=None, device="cpu", dtype="float64", random_state=None, verbose=0,
        engine_options=None, method="sgais", n_init=3,
    ):
        store_init_params(self, locals())

    # -- validation and the model ----------------------------------------------------

    def _make_model(self, X, y=None, priors=None):
        mean_prior, variance_scale = self._prior_location(X) if priors is None else priors
        return GaussianMixtureModel(
            X.shape[1], self.n_components, self.weight_concentration, self.variance_shape,
            variance_scale, mean_prior, self.mean_variance_factor,
        )

    def _prior_location(self, X):
        """Prior mean and inverse-gamma scale per feature: given, or from ``X``."""
        mean_prior = X.mean(0) if self.mean_prior is None else self.mean_prior
        if self.variance_scale is not None:
            return mean_prior, self.variance_scale
        variance = X.var(0) if X.shape[0] > 1 else np.zeros(X.shape[1])
        scale = DATA_VARIANCE_FRACTION * variance
        return mean_prior, np.where(scale > 0, scale, 1.0)

    def _validate_training_data(self, X, y, reset):
        X = validate_data(self, X, reset=reset, dtype=np.float64)
        return X, None

    def _to_batch(self, X, y):
        return (self._as_tensor(X),)

    def _set_model_attributes(self):
        super()._set_model_attributes()
        self.mean_prior_ = self._model.mean_prior.copy()
        self.variance_scale_ = self._model.variance_scale.copy()
        model = self._model
        self.prior_ = PriorRecord(
            "weights ~ Dirichlet(weight_concentration);\n"
            "    variances[k, j] ~ InvGamma(variance_shape, variance_scale[j]);\n"
            "    means[k, j] | variances ~ N(mean_prior[j], "
            "mean_variance_factor * variances[k, j])",
            weight_concentration=model.weight_concentration,
            variance_shape=model.variance_shape, variance_scale=model.variance_scale,
            mean_prior=model.mean_prior, mean_variance_factor=model.mean_variance_factor)
        best = int(np.argmax(self.particle_weights_))
        self._best_particle = best
        theta = self._particles_tensor()[best : best + 1]
        log_w, means, variances = self._model.unpack(theta)
        self.weights_ = log_w[0].exp().cpu().numpy()
        self.means_ = means[0].cpu().numpy()
        self.covariances_ = variances[0].cpu().numpy()

    def _takes_y(self):
        return False

    def _natural_parameters(self, theta):
        log_w, means, variances = self._model.unpack(theta)
        return NaturalParameters(
            {"weights": log_w.exp(), "means": means, "variances": variances},
            {"weights": ["component"], "means": ["component", "feature"],
             "variances": ["component", "feature"]},
            {"component": np.arange(self._model.n_components), "feature": feature_coords(self)})

    # -- predictions -------------------------------------------------------------------

    @method_doc
    def score_samples(self, X):
        """Log posterior-predictive density of every sample.

        ``log p(x | data) ~ logsumexp_i (log W_i + log p(x | theta_i))``
        over the weighted particles ``(theta_i, W_i)``.

        {X}

        {log_density}
        """
        return self._predict_in_blocks(X, self._log_density_block)

    def _log_density_block(self, Xt):
        loglik = self._model.log_likelihood(self._particles_tensor(), (Xt,))  # [M, B]
        log_W = torch.log(self._weights_tensor())
        return torch.logsumexp(log_W[:, None] + loglik, dim=0)

    def score(self, X, y=None):
        """Mean log posterior-predictive density of ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Points to evaluate.
        y : None
            Ignored; present for API consistency.

        Returns
        -------
        log_density : float
            Mean of :meth:`score_samples`.
        """
        return float(self.score_samples(X).mean())

    @method_doc
    def predict_proba(self, X):
        """Component probabilities of every sample under the highest-weight particle.

        Averaging responsibilities over particles would mix components
        that differ only by their labels, so the labels are those of the
        single particle with the largest weight (as ``weights_``,
        ``means_`` and ``covariances_``).

        {X}

        Returns
        -------
        proba : ndarray of shape (n_samples, n_components)
            Responsibilities in [0, 1]; every row sums to 1 to machine
            precision.
        """
        n_components = self.n_components
        return normalize_proba(self._predict_in_blocks(X, self._responsibilities_block,
                                                       width=n_components))

    def _responsibilities_block(self, Xt):
        best = self._best_particle
        theta = self._particles_tensor()[best : best + 1]
        return self._model.responsibilities(theta, Xt)[0]

    @method_doc
    def predict(self, X):
        """Most probable component of every sample, under the highest-weight particle.

        {X}

        Returns
        -------
        labels : ndarray of shape (n_samples,)
            Component indices, as in :meth:`predict_proba`.
        """
        return self.predict_proba(X).argmax(axis=1)

    def sample(self, n_samples=1):
        """Draw from the posterior predictive.

        Each sample picks a particle by its weight, a component by that
        particle's mixture weights, and a point from the component. The
        draws use a fresh ``torch.Generator`` seeded from ``random_state``,
        so the engine's own generator, and with it later ``partial_fit``
        calls, are left untouched.

        Parameters
        ----------
        n_samples : int, default=1
            Number of samples.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            The samples.
        labels : ndarray of shape (n_samples,)
            Component index of every sample, within its particle.
        """
        check_is_fitted(self, "log_evidence_")
        validate_parameter_constraints(_SAMPLE_CONSTRAINTS, {"n_samples": n_samples},
                                       caller_name="sample")
        generator = self._make_generator()
        log_w, means, variances = self._model.unpack(self._particles_tensor())
        particle = torch.multinomial(self._weights_tensor(), n_samples, replacement=True,
                                     generator=generator)
        labels = torch.multinomial(log_w[particle].exp(), 1, generator=generator)[:, 0]
        eps = torch.randn(n_samples, self.n_features_in_, generator=generator,
                          dtype=torch.float64, device=self.device)
        X = means[particle, labels] + variances[particle, labels].sqrt() * eps
        return X.cpu().numpy(), labels.cpu().numpy()

    def exact_log_evidence(self, X):
        """Closed-form ``log p(X)`` for ``n_components=1`` (Normal-Inverse-Gamma).

        Computed in float64; it does not need the estimator to be fitted.
        Priors taken from the data are those frozen by the last ``fit``
        (``mean_prior_``, ``variance_scale_``) when there is one,
        else computed from ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Observations.

        Returns
        -------
        log_evidence : float
            The exact log marginal likelihood.

        Raises
        ------
        NotImplementedError
            When ``n_components > 1`` (no closed form exists).
        """
        self._check_params()
        X = check_array(X, dtype=np.float64)
        mean_prior, variance_scale = self._prior_location(X)
        if hasattr(self, "mean_prior_") and X.shape[1] == self.mean_prior_.shape[0]:
            # Priors from the data are those frozen by fit, so that the
            # result compares with log_evidence_.
            mean_prior = self.mean_prior_ if self.mean_prior is None else mean_prior
            variance_scale = self.variance_scale_ if self.variance_scale is None \
                else variance_scale
        model = self._make_model(X, priors=(mean_prior, variance_scale))
        # a copy: torch.as_tensor warns on a read-only view (a DataFrame's values)
        return model.exact_log_evidence((torch.tensor(X),))
