"""The posterior predictive of a Bayesian model average: the members' predictions
mixed with the posterior model probabilities ``weights_``."""

import numpy as np
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._docstrings import method_doc
from ._validation import normalize_proba
from .inference.annealing import logsumexp

__all__ = ["AveragedPredictionsMixin", "members_are"]


def members_are(*kinds):
    """``available_if`` check: the members are of one of ``kinds``."""

    def check(self):
        try:
            return self._kind() in kinds
        except (TypeError, ValueError):
            return False

    return check


class AveragedPredictionsMixin:
    """The prediction methods of :class:`~skevidence.BayesianModelAverager`.

    The averager provides ``_kind()``, ``estimators_``, ``weights_`` and,
    for classifiers, ``classes_``.
    """

    @available_if(members_are("regressor", "classifier"))
    @method_doc
    def predict(self, X, return_std=False):
        """Posterior-predictive prediction of the averaged model.

        Regressors: the mixture mean ``sum_k w_k mean_k`` and, with
        ``return_std=True``, the mixture standard deviation
        ``sqrt(sum_k w_k (std_k^2 + (mean_k - mean)^2))`` (every member must
        accept ``return_std``). Classifiers: the class of largest averaged
        probability.

        {X}
        return_std : bool, default=False
            Regressors only: also return the predictive standard deviation.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted means (regression) or classes (classification).
        y_std : ndarray of shape (n_samples,)
            Only when ``return_std`` is True.
        """
        check_is_fitted(self, "weights_")
        if self._kind() == "classifier":
            if return_std:
                raise ValueError("return_std is only available for regressors")
            return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
        if not return_std:
            means = np.stack([np.asarray(est.predict(X), dtype=np.float64)
                              for est in self.estimators_])
            return self.weights_ @ means
        outputs = [est.predict(X, return_std=True) for est in self.estimators_]
        means = np.stack([np.asarray(m, dtype=np.float64) for m, _ in outputs])
        stds = np.stack([np.asarray(s, dtype=np.float64) for _, s in outputs])
        mean = self.weights_ @ means
        # The spread of the members' means around the mixture mean, added to
        # their own variances; this form does not cancel like E[y^2] - E[y]^2.
        var = self.weights_ @ (stds**2 + (means - mean) ** 2)
        return mean, np.sqrt(var)

    def _aligned_member_probas(self, X, method):
        """Members' ``method`` outputs with columns in the order of ``classes_``."""
        fill = -np.inf if method == "predict_log_proba" else 0.0
        out = []
        for est in self.estimators_:
            values = np.asarray(getattr(est, method)(X), dtype=np.float64)
            aligned = np.full((values.shape[0], len(self.classes_)), fill)
            aligned[:, np.searchsorted(self.classes_, est.classes_)] = values
            out.append(aligned)
        return np.stack(out)  # [K, n_samples, n_classes]

    @available_if(members_are("classifier"))
    @method_doc
    def predict_proba(self, X):
        """Averaged class probabilities ``sum_k w_k p_k(c | x)``.

        A class some member does not know gets probability 0 from it.

        {X}

        {proba} Rows sum to 1 to machine precision.
        """
        check_is_fitted(self, "weights_")
        probas = self._aligned_member_probas(X, "predict_proba")
        return normalize_proba(np.tensordot(self.weights_, probas, axes=1))

    @available_if(members_are("classifier"))
    @method_doc
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space.

        {X}

        {log_proba}
        """
        check_is_fitted(self, "weights_")
        if all(hasattr(est, "predict_log_proba") for est in self.estimators_):
            log_probas = self._aligned_member_probas(X, "predict_log_proba")
        else:
            with np.errstate(divide="ignore"):
                log_probas = np.log(self._aligned_member_probas(X, "predict_proba"))
        with np.errstate(divide="ignore"):
            log_w = np.log(self.weights_)
        log_proba = logsumexp(log_w[:, None, None] + log_probas)
        # renormalise the rounding away, so that exp() never exceeds 1
        return np.minimum(log_proba - logsumexp(log_proba.T)[:, None], 0.0)

    @available_if(members_are("density_estimator"))
    @method_doc
    def score_samples(self, X):
        """Log density of the averaged model, ``log sum_k w_k p_k(x)``.

        {X}

        {log_density}
        """
        check_is_fitted(self, "weights_")
        scores = np.stack([np.asarray(est.score_samples(X), dtype=np.float64)
                           for est in self.estimators_])
        with np.errstate(divide="ignore"):
            log_w = np.log(self.weights_)
        return logsumexp(log_w[:, None] + scores)
