"""EvidenceLogisticRegression: Bayesian multinomial logistic regression with its online
evidence."""

import warnings

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets, unique_labels
from sklearn.utils.validation import validate_data

from .._arviz import feature_coords
from .._base import BaseEvidenceEstimator, store_init_params
from .._docstrings import (TRUST_ATTRIBUTES_DOC, WEIGHTS_ATTRIBUTES_DOC, method_doc,
                           shared_params_doc, warmup_doc)
from .._posterior import NaturalParameters
from .._prior import PriorRecord, prior_array
from .._validation import FINITE, POSITIVE_FINITE, normalize_proba
from ..models import LogisticRegressionModel

__all__ = ["EvidenceLogisticRegression"]

# Fewer rows than this per class on average draw a warning. Most classes
# are then seen once or twice, so their coefficients are their prior's, and
# a target with nearly one label per row is more often a number read as
# class labels (scikit-learn's diabetes target: 214 values in 442 rows, 2.1
# rows per class) than a classification problem; scikit-learn's own check
# (more distinct labels than half the rows, 2 rows per class) lets that one
# through.
MIN_ROWS_PER_CLASS = 3


def warn_if_too_many_classes(n_rows, n_classes):
    """Warn when there are fewer than ``MIN_ROWS_PER_CLASS`` rows per class on average.

    Parameters
    ----------
    n_rows : int
        The rows of the whole data set.
    n_classes : int
        Its distinct labels.
    """
    if n_rows < MIN_ROWS_PER_CLASS * n_classes:
        warnings.warn(
            f"y has {n_classes} classes in {n_rows} rows ({n_rows / n_classes:.1f} rows per "
            f"class, fewer than {MIN_ROWS_PER_CLASS}): most classes are seen once or twice, "
            "and the fit's cost grows with the classes. If y is a quantity, not a label, "
            "use a regressor (EvidenceLinearRegression).", UserWarning, stacklevel=4)


def check_class_targets(y):
    """scikit-learn's check of a classification target, less its many-classes warning.

    :func:`warn_if_too_many_classes` replaces that warning: it is stricter,
    and it looks at the whole data set, never at a ``partial_fit`` batch.

    Parameters
    ----------
    y : array-like
        The labels.

    Raises
    ------
    ValueError
        For a continuous (or otherwise non-class) target, in scikit-learn's words.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The number of unique classes is greater than 50%",
                                UserWarning)
        check_classification_targets(y)


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


_SINGLE_PRECISION_WHY = """, and on CPUs for this
        model, whose time goes to exponentials and products over the data:
        a long stream takes markedly less CPU than in ``float64``, with
        errors of the same spread
        (:ref:`why <design_notes>`); ``log_evidence_`` and the weights are
        accumulated in double precision either way"""


class EvidenceLogisticRegression(ClassifierMixin, BaseEvidenceEstimator):
    __doc__ = f"""Bayesian multinomial logistic regression with its log evidence, by SGAIS.

    The model is ``p(y = k | x) = softmax_k(W x + b)`` where every class
    ``k`` has its own weight vector ``W[k]`` and bias ``b[k]``, all with
    independent Gaussian priors, ``W[k, j] ~ N(prior_mean[k, j],
    prior_std[k, j]^2)`` and ``b[k] ~ N(intercept_prior_mean[k],
    intercept_prior_std[k]^2)``; by default ``N(0, 1)`` for all, the model of
    Cameron, Eggers & Kroon (2019, Appendix B.2). The parameterisation is kept as in the paper although it
    is redundant: the evidence belongs to this model, so two classes have
    ``2 (n_features + 1)`` parameters. Predictions are the posterior
    predictive (:ref:`estimators`). The prior is per unit of feature, so
    standardise the features first; ``fit`` warns when a feature's
    root-mean-square scale is outside [0.1, 10] (:ref:`preparing_data`).

    Parameters
    ----------
    fit_intercept : bool, default=True
        Whether every class has a bias.
    prior_mean : float or array-like of shape (n_features,) or (n_classes, n_features), \
default=0.0
        Prior mean of the weights: one for all, one per feature (every
        class alike), or one per class and feature (rows in the order of
        ``classes_``; two classes have two rows).
    prior_std : float or array-like of shape (n_features,) or (n_classes, n_features), \
default=1.0
        Prior standard deviation of the weights, shaped as ``prior_mean``.
    intercept_prior_mean : float or array-like of shape (n_classes,), default=0.0
        Prior mean of the biases: one for all, or one per class.
    intercept_prior_std : float, array-like of shape (n_classes,) or None, default=None
        Prior standard deviation of the biases; ``None`` takes
        ``prior_std`` (which must then be one number).
{shared_params_doc(learning_rate=0.1, warmup=warmup_doc(single_precision=True),
                   dtype="float32", dtype_why=_SINGLE_PRECISION_WHY)}

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
    prior_ : PriorRecord
        The prior in use, resolved: ``prior_mean`` and ``prior_std`` of shape
        ``(n_classes, n_features)``, and with ``fit_intercept``
        ``intercept_prior_mean`` and ``intercept_prior_std`` of shape
        ``(n_classes,)``.
{WEIGHTS_ATTRIBUTES_DOC}

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
    the particles' covariance. Past the warm-up the moves' gradient of the
    past data is a second-order control-variate estimate (the Fisher
    information takes out the linear part) where that predicts the
    gradient across the particles. The errors against importance sampling on
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
        # Numbers are checked here; arrays at fit, against the features and classes.
        "prior_mean": [FINITE, "array-like"],
        "prior_std": [POSITIVE_FINITE, "array-like"],
        "intercept_prior_mean": [FINITE, "array-like"],
        "intercept_prior_std": [POSITIVE_FINITE, "array-like", None],
    }

    # The exact warm-up runs in single precision also with dtype="float64": its
    # rounding only perturbs the Metropolis test. Chunks grow with the data (a
    # sixteenth of it): fewer, longer chunks take fewer annealing steps and
    # moves in all on long streams, with as accurate an evidence
    # (docs: benchmarks, Logistic regression).
    _engine_defaults = {"warmup_dtype": "float32", "chunk_growth": 1 / 16}

    def __init__(
        self, *, fit_intercept=True, prior_mean=0.0, prior_std=1.0, intercept_prior_mean=0.0,
        intercept_prior_std=None,
        n_particles=128, max_particles=None, batch_size=500, n_burnin=20,
        learning_rate=0.1, momentum_decay=0.2, target_ess=0.9, resample_threshold=0.5,
        reservoir_size=None, device="cpu", dtype="float32", random_state=None, verbose=0,
        engine_options=None, method="sgais", n_init=1,
    ):
        store_init_params(self, locals())

    def _make_model(self, X, y):
        K, p = len(self.classes_), X.shape[1]
        mean = prior_array(self.prior_mean, "prior_mean", (K, p))
        std = prior_array(self.prior_std, "prior_std", (K, p), positive=True)
        intercept_mean = prior_array(self.intercept_prior_mean, "intercept_prior_mean", (K,))
        # (None with an array prior_std: the model refuses it, naming intercept_prior_std)
        intercept_std = self.intercept_prior_std
        if intercept_std is not None:
            intercept_std = prior_array(intercept_std, "intercept_prior_std", (K,),
                                        positive=True)
        # A number stays a number, so the default prior keeps its arithmetic.
        return LogisticRegressionModel(
            p, K, self.fit_intercept, self.prior_std if np.ndim(self.prior_std) == 0 else std,
            prior_mean=mean, intercept_prior_mean=intercept_mean,
            intercept_prior_std=intercept_std)

    def _validate_training_data(self, X, y, reset, classes=None):
        """Check ``X, y`` and encode the labels as indices into ``classes_``.

        The first ``partial_fit`` needs ``classes``, since a batch need not hold every class.
        """
        X, y = validate_data(self, X, y, reset=reset, dtype=np.float64)
        check_class_targets(y)
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
            # Only here, where y is all the data: a partial_fit batch may be
            # small, and says nothing of the stream's size.
            warn_if_too_many_classes(len(y), len(classes))
            if len(classes) < 2:
                raise ValueError(f"y has only one class ({classes[0]!r}); logistic regression "
                                 "needs at least two. Pass every class to partial_fit with "
                                 "`classes=` to fit a batch that shows only some of them.")
            return classes
        check_class_targets(np.asarray(classes))
        classes = unique_labels(classes)
        if len(classes) < 2:
            raise ValueError(f"classes must hold at least two labels, got {classes!r}")
        return classes

    def _to_batch(self, X, y):
        return self._as_tensor(X), self._as_tensor(y, dtype=torch.long)

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
        first = not self._started()
        if first and classes is None:
            raise ValueError("classes must be passed on the first call to partial_fit.")
        return self._fit(X, y, reset=first, classes=classes)

    def _set_model_attributes(self):
        super()._set_model_attributes()
        mean = self.particle_weights_ @ self.particles_
        K, p = len(self.classes_), self.n_features_in_
        self.coef_ = mean[: K * p].reshape(K, p)
        self.intercept_ = mean[K * p :] if self.fit_intercept else np.zeros(K)
        self.prior_ = _prior_record(self._model)

    def _natural_parameters(self, theta):
        W, b = self._model.unpack(theta)
        params = {"coef": W}
        if self._model.fit_intercept:
            params["intercept"] = b
        return NaturalParameters(params, {"coef": ["class", "feature"], "intercept": ["class"]},
                                 {"class": list(self.classes_), "feature": feature_coords(self)})

    def _observed_targets(self, y):
        return self.classes_[y]  # the labels, not their indices

    @method_doc
    def predict_log_proba(self, X):
        """Log of the posterior-predictive class probabilities.

        ``log sum_m w_m softmax(W_m x + b_m)`` over the weighted particles,
        computed in log space (logsumexp), so tiny probabilities keep their
        digits.

        {X}

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

    @method_doc
    def predict_proba(self, X):
        """Posterior-predictive class probabilities.

        The average of the particles' softmax probabilities weighted by
        ``particle_weights_``; unlike a point estimate it widens where the
        posterior is uncertain.

        {X}

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Rows in [0, 1] that sum to one to machine precision; columns
            follow ``classes_``.
        """
        return normalize_proba(np.exp(self.predict_log_proba(X)))

    @method_doc
    def decision_function(self, X):
        """Scores from the posterior-predictive probabilities.

        The log predictive probabilities (:meth:`predict_log_proba`); with
        two classes, as in scikit-learn, a single column: the log odds of
        ``classes_[1]`` against ``classes_[0]``.

        {X}

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_classes)
            Larger means more likely; the predicted class has the largest.
        """
        log_proba = self.predict_log_proba(X)
        if log_proba.shape[1] == 2:
            return log_proba[:, 1] - log_proba[:, 0]
        return log_proba

    @method_doc
    def predict(self, X):
        """The class with the largest posterior-predictive probability.

        {X}

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels from ``classes_``.
        """
        log_proba = self.predict_log_proba(X)  # checks fitted before classes_ is read
        return self.classes_[np.argmax(log_proba, axis=1)]


def _prior_record(model):
    """The model's prior, resolved, as a :class:`PriorRecord`."""
    K, p, n = model.n_classes, model.n_features, model.n_params
    mean = np.zeros(n) if model.prior_mean is None else model.prior_mean
    std = np.broadcast_to(np.asarray(model.prior_std, dtype=np.float64), (n,))
    values = {"prior_mean": mean[: K * p].reshape(K, p), "prior_std": std[: K * p].reshape(K, p)}
    density = "coef[k, j] ~ N(prior_mean[k, j], prior_std[k, j]^2)"
    if model.fit_intercept:
        values["intercept_prior_mean"] = mean[K * p :].copy()
        values["intercept_prior_std"] = std[K * p :].copy()
        density += ";\n    intercept[k] ~ N(intercept_prior_mean[k], intercept_prior_std[k]^2)"
    return PriorRecord(density + ", all independent", **values)
