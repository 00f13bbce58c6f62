"""A Bayesian model average's members and its posterior predictive.

The members of :class:`~skevidence.BayesianModelAverager`: their names,
the fitted attributes and posterior model probabilities ``weights_``
derived from their evidence, and the tags they share. Its predictions: the
members' ones mixed with those weights.
"""

import numpy as np
from sklearn.utils import Bunch, ClassifierTags, RegressorTags, get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._docstrings import method_doc
from ._meta import final_step, log_softmax, read_evidences, warn_if_tied
from ._validation import normalize_proba
from .inference.annealing import logsumexp

__all__ = ["AveragedPredictionsMixin", "members_are", "checked_names_and_members", "set_members",
           "updated_log_weights", "with_member_tags"]


def checked_names_and_members(averager):
    """The names and the members of ``averager.estimators``, as two lists, once checked
    to be a non-empty list of (name, estimator) tuples with distinct string names."""
    if not isinstance(averager.estimators, (list, tuple)) or len(averager.estimators) == 0:
        raise ValueError(
            "estimators must be a non-empty list of (name, estimator) tuples, "
            f"got {averager.estimators!r}"
        )
    try:
        names, members = zip(*averager.estimators)
    except (TypeError, ValueError) as exc:
        raise ValueError("estimators must be a list of (name, estimator) tuples") from exc
    if not all(isinstance(name, str) for name in names):
        raise ValueError(f"estimator names must be strings, got {list(names)!r}")
    averager._validate_names(names)
    averager._check_estimators_are_instances(members)
    return list(names), list(members)


def set_members(averager, names, fitted, kind, log_prior, previous=None):
    """Check the ``fitted`` members and derive every fitted attribute of ``averager``
    from them; returns ``averager``.

    ``previous``: ``(log weights, log evidences)`` before this
    ``partial_fit`` batch, or ``None`` when the members' whole evidence
    is one batch (``fit``, the first ``partial_fit``, ``from_fitted``).
    Called from the averager's public methods directly: the tie warning's
    stack level points at their caller.
    """
    evidences = read_evidences(fitted, names, log_prior)
    log_evidences, stds, log_posterior = (evidences.log_evidences, evidences.stds,
                                          evidences.log_posterior)
    log_weights = updated_log_weights(averager.forgetting, log_prior, log_evidences,
                                      log_posterior, previous)
    if kind == "classifier":
        classes = np.unique(np.concatenate([np.asarray(est.classes_) for est in fitted]))
    # Everything is assigned once all checks have passed.
    averager.estimators_ = list(fitted)
    averager.named_estimators_ = Bunch(**dict(zip(names, fitted)))
    averager.log_evidences_ = log_evidences
    averager.log_evidence_stds_ = stds
    averager.log_evidence_ = float(logsumexp(log_posterior))
    averager._log_weights = log_weights
    averager.weights_ = np.exp(log_weights)
    if kind == "classifier":
        averager.classes_ = classes
    sources = {"n_samples_seen_": final_step(fitted[0]),
               "n_features_in_": fitted[0], "feature_names_in_": fitted[0]}
    for attr, source in sources.items():
        averager.__dict__.pop(attr, None)
        if hasattr(source, attr):
            setattr(averager, attr, getattr(source, attr))
    if averager.forgetting is None:
        warn_if_tied(log_posterior, stds, names, stacklevel=4)
    return averager


def updated_log_weights(forgetting, log_prior, log_evidences, log_posterior, previous):
    """Normalised log weights after a batch: dynamic model averaging with ``forgetting``."""
    if forgetting is None:
        return log_softmax(log_posterior)
    log_weights, past_log_evidences = ((log_prior, 0.0) if previous is None else previous)
    # The batch's log predictive under each member: its gain in evidence.
    return log_softmax(forgetting * log_weights + (log_evidences - past_log_evidences))


def with_member_tags(tags, kind, members):
    """The averager's ``tags``, of the members' ``kind``, with what every member (or any)
    requires of the data."""
    member_tags = [get_tags(est) for est in members]
    tags.estimator_type = kind
    if kind == "classifier":
        tags.classifier_tags = ClassifierTags()
    elif kind == "regressor":
        tags.regressor_tags = RegressorTags()
    tags.target_tags.required = any(t.target_tags.required for t in member_tags)
    tags.input_tags.sparse = all(t.input_tags.sparse for t in member_tags)
    tags.input_tags.allow_nan = all(t.input_tags.allow_nan for t in member_tags)
    tags.non_deterministic = any(t.non_deterministic for t in member_tags)
    return tags


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
