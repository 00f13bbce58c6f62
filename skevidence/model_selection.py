"""Model comparison by evidence over a parameter grid: EvidenceSearch."""

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.model_selection import ParameterGrid
from sklearn.utils import get_tags
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from ._docstrings import method_doc
from ._meta import (
    check_prior,
    final_step,
    fit_members,
    log_softmax,
    partial_fit_members,
    partial_fit_params,
    read_evidences,
    warn_if_tied,
)
from ._streaming import can_partial_fit, check_streamable, restored_on_error
from .ensemble import BayesianModelAverager

__all__ = ["EvidenceSearch"]


def _candidate_name(params):
    """A readable member name for an averager: ``"degree=3, alpha=0.1"``."""
    text = ", ".join(f"{key}={value!r}" for key, value in sorted(params.items()))
    # Averager names may not contain "__" (it separates nested parameters).
    return text.replace("__", ".") or "default"


def _min_rank(scores):
    """Rank 1 for the largest score; ties share the smallest rank."""
    order = np.sort(-scores)
    return np.searchsorted(order, -scores, side="left") + 1


def _search_estimator_has(method):
    """``available_if`` check on the best estimator, or the template before fit."""

    def check(self):
        estimator = getattr(self, "best_estimator_", self.estimator)
        return hasattr(estimator, method)

    return check


class EvidenceSearch(BaseEstimator):
    """Rank the candidates of a parameter grid by their Bayesian evidence.

    Like :class:`~sklearn.model_selection.GridSearchCV` without
    cross-validation: every candidate, a clone of ``estimator`` (with its
    ``random_state``) with its parameters set, is fitted once on all the
    data (with joblib) and scored by its ``log_evidence_``
    (:ref:`model_selection`); ``partial_fit`` updates the ranking online.

    Parameters
    ----------
    estimator : estimator
        Template of the candidates; it (or the last step of a Pipeline) must
        expose ``log_evidence_`` once fitted.
    param_grid : dict or list of dicts
        Parameter names mapped to lists of values, as for
        :class:`~sklearn.model_selection.ParameterGrid`.
    n_jobs : int or None, default=None
        Number of candidates fitted in parallel by joblib (``None``: 1
        unless in a :func:`joblib.parallel_backend` context; ``-1``: all
        cores).
    prior : array-like of shape (n_candidates,) or None, default=None
        Prior probabilities of the candidates, in the order of
        ``ParameterGrid(param_grid)``; non-negative, summing to 1. ``None``
        is uniform.

    Attributes
    ----------
    results_ : dict of ndarray
        One entry per candidate, loadable into a ``pandas.DataFrame``:
        ``params`` (dicts), one masked ``param_<name>`` column per parameter,
        ``log_evidence``, ``log_evidence_std`` (the candidate's
        ``log_evidence_std_``, ``nan`` if it reports none; an
        :class:`~skevidence.exceptions.EvidenceTieWarning` is issued when the
        best two are closer than ``2 sqrt(s1^2 + s2^2)``),
        ``posterior_probability`` (``p(M_k | D)``),
        ``log_bayes_factor`` (``log p(D | M_k) - log p(D | M_best)``),
        ``rank`` (1 for the most probable candidate), ``n_samples_seen``
        and ``fit_time`` (seconds, summed over ``partial_fit`` calls).
    candidates_ : list of estimators
        The fitted candidates, in the order of ``results_``.
    best_index_ : int
        Index of the candidate of largest posterior probability (largest
        evidence under a uniform prior).
    best_params_ : dict
        Its parameters.
    best_estimator_ : estimator
        The fitted candidate itself.
    best_log_evidence_ : float
        Its ``log_evidence_``.
    n_features_in_ : int
        Number of features seen during ``fit`` (when the estimator counts them).
    classes_ : ndarray of shape (n_classes,)
        Classifiers only: the classes of the best estimator.

    See Also
    --------
    skevidence.ensemble.BayesianModelAverager : average the candidates instead of
        picking one; :meth:`to_averager` builds it.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression
    >>> from skevidence.model_selection import EvidenceSearch
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = X @ [1.0, -0.5] + rng.normal(size=300)
    >>> search = EvidenceSearch(EvidenceLinearRegression(random_state=0),
    ...                         {"prior_std": [0.01, 1.0]}).fit(X, y)
    >>> search.best_params_
    {'prior_std': 1.0}
    >>> search.results_["rank"]
    array([2, 1])
    >>> search.to_averager().weights_.shape
    (2,)
    """

    def __init__(self, estimator, param_grid, *, n_jobs=None, prior=None):
        self.estimator = estimator
        self.param_grid = param_grid
        self.n_jobs = n_jobs
        self.prior = prior

    def _candidate_params(self):
        try:
            candidates = list(ParameterGrid(self.param_grid))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"invalid param_grid: {exc}") from exc
        if not candidates:
            raise ValueError("param_grid gives no candidate")
        return candidates

    def _log_prior(self, candidates):
        return check_prior(self.prior, [str(i) for i in range(len(candidates))])

    @method_doc
    def fit(self, X, y=None, **fit_params):
        """Fit every candidate on all of ``(X, y)`` and rank them by evidence.

        Parameters
        ----------
        {fit_Xy}
        **fit_params : dict
            Passed to every candidate's ``fit``.

        Returns
        -------
        self : EvidenceSearch
            The fitted search.
        """
        params = self._candidate_params()
        log_prior = self._log_prior(params)
        fitted, times = fit_members([clone(self.estimator).set_params(**p) for p in params],
                                    X, y, self.n_jobs, **fit_params)
        self._set_results(params, fitted, times, log_prior)
        return self

    @available_if(lambda self: can_partial_fit(self.estimator))
    @method_doc
    def partial_fit(self, X, y=None, classes=None):
        """Condition every candidate on one more batch and update the ranking.

        A Pipeline's transformers are fitted on the first batch and then
        frozen, so each candidate's evidence is that of its model on the
        frozen features (:ref:`streaming`); a grid may set the
        transformers' parameters (``polynomialfeatures__degree``). A
        transformer that cannot be frozen is refused before any candidate
        changes; if any candidate fails, the search is left as it was.

        {batch}

        Returns
        -------
        self : EvidenceSearch
            The updated search.
        """
        params = self._candidate_params()
        log_prior = self._log_prior(params)
        first = not hasattr(self, "candidates_")
        if first:
            candidates = [clone(self.estimator).set_params(**p) for p in params]
            times = np.zeros(len(params))
        else:
            if len(self.candidates_) != len(params):
                raise ValueError("param_grid changed since the search was fitted; call fit")
            candidates, times = self.candidates_, self.results_["fit_time"]
        for p, candidate in zip(params, candidates):
            check_streamable(candidate, _candidate_name(p))
        kwargs = partial_fit_params(get_tags(self.estimator).estimator_type, classes)
        with restored_on_error(candidates):
            updated, new_times = partial_fit_members(candidates, X, y, self.n_jobs, first,
                                                     **kwargs)
            self._set_results(params, updated, times + new_times, log_prior)
        return self

    def _set_results(self, params, fitted, fit_times, log_prior):
        names = [str(i) for i in range(len(fitted))]
        evidences = read_evidences(fitted, names, log_prior)
        log_evidence, stds = evidences.log_evidences, evidences.stds
        log_posterior = log_softmax(evidences.log_posterior)
        best = int(np.argmax(log_posterior))
        results = {"params": np.empty(len(params), dtype=object)}
        results["params"][:] = params
        results.update(self._param_columns(params))
        results["log_evidence"] = log_evidence
        results["log_evidence_std"] = stds
        results["posterior_probability"] = np.exp(log_posterior)
        results["log_bayes_factor"] = log_evidence - log_evidence[best]
        results["rank"] = _min_rank(log_posterior)
        seen = [getattr(final_step(est), "n_samples_seen_", -1) for est in fitted]
        results["n_samples_seen"] = np.array(seen, dtype=np.int64)
        results["fit_time"] = np.asarray(fit_times, dtype=np.float64)

        self.results_ = results
        self.candidates_ = fitted
        self.best_index_ = best
        self.best_params_ = params[best]
        self.best_estimator_ = fitted[best]
        self.best_log_evidence_ = float(log_evidence[best])
        for attr in ("n_features_in_", "feature_names_in_", "classes_"):
            self.__dict__.pop(attr, None)
            if hasattr(self.best_estimator_, attr):
                setattr(self, attr, getattr(self.best_estimator_, attr))
        warn_if_tied(log_evidence + log_prior, results["log_evidence_std"],
                      [_candidate_name(p) for p in params], stacklevel=4)

    @staticmethod
    def _param_columns(params):
        """One masked object column ``param_<name>`` per parameter, as in cv_results_."""
        names = sorted({name for p in params for name in p})
        columns = {}
        for name in names:
            column = np.ma.MaskedArray(np.empty(len(params), dtype=object),
                                       mask=True, dtype=object)
            for i, p in enumerate(params):
                if name in p:
                    column[i] = p[name]
            columns[f"param_{name}"] = column
        return columns

    def to_averager(self):
        """A fitted :class:`~skevidence.ensemble.BayesianModelAverager` of all candidates.

        The candidates are shared, not refitted; the averager's members are
        named after their parameters and its prior is this search's prior.

        Returns
        -------
        averager : BayesianModelAverager
            Weights equal to ``results_["posterior_probability"]``.
        """
        check_is_fitted(self, "results_")
        params = list(self.results_["params"])
        names = [_candidate_name(p) for p in params]
        if len(set(names)) < len(names):
            names = [f"{i}: {name}" for i, name in enumerate(names)]
        return BayesianModelAverager.from_fitted(list(zip(names, self.candidates_)),
                                                 prior=self.prior, n_jobs=self.n_jobs)

    # -- delegation to the best candidate ---------------------------------------

    @available_if(_search_estimator_has("predict"))
    @method_doc
    def predict(self, X, **predict_params):
        """Predict with the best candidate (``predict_params`` such as ``return_std``).

        {X}
        **predict_params : dict
            Passed to ``best_estimator_.predict``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            The best candidate's prediction (a tuple with ``return_std``).
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X, **predict_params)

    @available_if(_search_estimator_has("predict_proba"))
    @method_doc
    def predict_proba(self, X):
        """Class probabilities of the best candidate.

        {X}

        {proba}
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_proba(X)

    @available_if(_search_estimator_has("predict_log_proba"))
    @method_doc
    def predict_log_proba(self, X):
        """Log class probabilities of the best candidate.

        {X}

        {log_proba}
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_search_estimator_has("score_samples"))
    @method_doc
    def score_samples(self, X):
        """Log density of the best candidate.

        {X}

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            Its ``score_samples``.
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score_samples(X)

    @available_if(_search_estimator_has("score"))
    @method_doc
    def score(self, X, y=None, **score_params):
        """The best candidate's own ``score``.

        Parameters
        ----------
        {test_Xy}
        **score_params : dict
            Passed to ``best_estimator_.score``.

        Returns
        -------
        score : float
            R^2, accuracy or mean log density, as the estimator defines it.
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, **score_params)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = sub.classifier_tags
        tags.regressor_tags = sub.regressor_tags
        tags.target_tags.required = sub.target_tags.required
        tags.input_tags.sparse = sub.input_tags.sparse
        tags.input_tags.allow_nan = sub.input_tags.allow_nan
        tags.non_deterministic = sub.non_deterministic
        return tags
