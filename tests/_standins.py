"""Test-only stand-ins for evidence estimators that are not the ones under test.

They wrap scikit-learn estimators and set ``log_evidence_`` deterministically
from the data, so the meta-estimators can be tested on classifiers and
density estimators independently of the SGAIS ones.
"""

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, DensityMixin
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KernelDensity


class StandInClassifier(ClassifierMixin, BaseEstimator):
    """Logistic regression whose "evidence" is its training log-likelihood minus ``penalty``."""

    def __init__(self, C=1.0, penalty=0.0):
        self.C = C
        self.penalty = penalty

    def _fit_inner(self, X, y):
        self.model_ = LogisticRegression(C=self.C).fit(X, y)
        self.classes_ = self.model_.classes_
        self.n_features_in_ = self.model_.n_features_in_
        log_p = self.model_.predict_log_proba(X)
        rows = np.searchsorted(self.classes_, y)
        self.log_evidence_ = float(log_p[np.arange(len(y)), rows].sum() - self.penalty)

    def fit(self, X, y):
        self._fit_inner(X, y)
        self.n_samples_seen_ = len(y)
        return self

    def partial_fit(self, X, y, classes=None):
        # Refits on everything seen so far: enough for a stand-in.
        X_all = np.vstack([self.X_seen_, X]) if hasattr(self, "X_seen_") else np.asarray(X)
        y_all = np.concatenate([self.y_seen_, y]) if hasattr(self, "y_seen_") else np.asarray(y)
        self.X_seen_, self.y_seen_ = X_all, y_all
        return self.fit(X_all, y_all)

    def predict_proba(self, X):
        return self.model_.predict_proba(X)

    def predict(self, X):
        return self.model_.predict(X)


class StandInDensity(DensityMixin, BaseEstimator):
    """Kernel density whose "evidence" is its training log density."""

    def __init__(self, bandwidth=1.0):
        self.bandwidth = bandwidth

    def fit(self, X, y=None):
        self.model_ = KernelDensity(bandwidth=self.bandwidth).fit(X)
        self.n_features_in_ = self.model_.n_features_in_
        self.n_samples_seen_ = len(X)
        self.log_evidence_ = float(self.model_.score(X))
        return self

    def score_samples(self, X):
        return self.model_.score_samples(X)

    def score(self, X, y=None):
        return float(np.mean(self.score_samples(X)))


class NoEvidenceRegressor(BaseEstimator):
    """A regressor without ``log_evidence_``."""

    def fit(self, X, y):
        self.n_features_in_ = np.asarray(X).shape[1]
        return self

    def predict(self, X):
        return np.zeros(len(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.estimator_type = "regressor"
        return tags


__all__ = ["StandInClassifier", "StandInDensity", "NoEvidenceRegressor"]
