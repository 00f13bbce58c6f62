"""Bayesian model averaging of evidence estimators: BayesianModelAverager."""

import numbers
import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.pipeline import Pipeline
from sklearn.utils import Bunch, ClassifierTags, RegressorTags, get_tags
from sklearn.utils.metaestimators import _BaseComposition, available_if
from sklearn.utils.validation import check_is_fitted

from ._base import normalize_proba

__all__ = ["BayesianModelAverager", "EvidenceTieWarning"]

# Estimator types whose predictive distributions can be averaged.
_KINDS = ("regressor", "classifier", "density_estimator")


# -- helpers shared with model_selection ---------------------------------------


def _log_sum_exp(a):
    """``log(sum(exp(a)))`` along the first axis, safe for ``-inf`` entries."""
    a = np.asarray(a, dtype=np.float64)
    top = np.max(a, axis=0)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return top + np.log(np.sum(np.exp(a - top), axis=0))


def _log_softmax(a):
    a = np.asarray(a, dtype=np.float64)
    return a - _log_sum_exp(a)


def _final_step(estimator):
    """The estimator that carries the evidence: the last step of a Pipeline."""
    while isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    return estimator


def _estimator_kind(estimator):
    return get_tags(estimator).estimator_type


def _members_kind(estimators):
    """The common estimator type of ``estimators``; ValueError if there is none."""
    kinds = {_estimator_kind(est) for est in estimators}
    if len(kinds) > 1:
        raise ValueError(
            "all estimators must be of the same kind (regressor, classifier or "
            f"density estimator) to average their predictions, got {sorted(map(str, kinds))}"
        )
    (kind,) = kinds
    if kind not in _KINDS:
        raise ValueError(
            f"estimators must be regressors, classifiers or density estimators, got {kind!r}"
        )
    return kind


def _fitted_log_evidence(estimator, name):
    """``log_evidence_`` of a fitted member, checked to be a finite number."""
    value = getattr(_final_step(estimator), "log_evidence_", None)
    if value is None:
        raise ValueError(
            f"estimator {name!r} ({type(estimator).__name__}) has no log_evidence_ after "
            "fitting; only estimators that compute their evidence can be averaged"
        )
    if not (isinstance(value, numbers.Real) and np.isfinite(value)):
        raise ValueError(f"estimator {name!r} has a non-finite log_evidence_ {value!r}")
    return float(value)


class EvidenceTieWarning(UserWarning):
    """The two most probable models are closer than their evidences' error bars.

    Issued by :class:`BayesianModelAverager` and
    :class:`~skevidence.model_selection.EvidenceSearch` when the two
    largest ``log_evidence + log_prior`` differ by less than
    ``2 sqrt(s1^2 + s2^2)``, with ``s1``, ``s2`` their ``log_evidence_std_``:
    the ranking of the two (and their posterior probabilities) is within
    the Monte Carlo noise of the estimates. Refit with more
    ``n_particles`` (the std falls about as ``1 / sqrt(n_particles)``) to
    separate them.
    """


def _fitted_log_evidence_std(estimator):
    """``log_evidence_std_`` of a fitted member; ``nan`` (unknown) when it has none."""
    value = getattr(_final_step(estimator), "log_evidence_std_", None)
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value):
        return float(value)
    return float("nan")


def _warn_if_tied(log_posterior, stds, names, stacklevel=3):
    """EvidenceTieWarning when the best two are within ``2 sqrt(s1^2 + s2^2)``.

    An unknown std (``nan``: a member without ``log_evidence_std_``) counts
    as 0, so members that report no error bar never trigger the warning
    by themselves.
    """
    if len(log_posterior) < 2:
        return
    first, second = np.argsort(-np.asarray(log_posterior), kind="stable")[:2]
    s = np.nan_to_num(np.asarray(stds, dtype=np.float64)[[first, second]], nan=0.0)
    bar = 2.0 * float(np.sqrt(np.sum(s**2)))
    diff = float(log_posterior[first] - log_posterior[second])
    if diff < bar:
        warnings.warn(
            f"the two most probable models {names[first]!r} and {names[second]!r} differ by "
            f"{diff:.3g} nats in log posterior, less than twice their combined Monte Carlo "
            f"error ({bar:.3g} nats): their ranking is not resolved; refit with more "
            "n_particles to separate them",
            EvidenceTieWarning, stacklevel=stacklevel)


def _check_same_data(estimators, names):
    """Raise unless every member that counts its data has seen as many samples."""
    seen = {name: getattr(_final_step(est), "n_samples_seen_", None)
            for name, est in zip(names, estimators)}
    counts = {n for n in seen.values() if n is not None}
    if len(counts) > 1:
        raise ValueError(
            "the estimators must be fitted on the same data for their evidences to be "
            f"comparable, but they have seen different numbers of samples: {seen}"
        )


def _fit_one(estimator, X, y, **fit_params):
    return estimator.fit(X, y, **fit_params)


def _partial_fit_one(estimator, X, y, **fit_params):
    return estimator.partial_fit(X, y, **fit_params)


def _check_prior(prior, names):
    """Validated log prior probabilities, one per name, in the order of ``names``."""
    n = len(names)
    if prior is None:
        return np.full(n, -np.log(n))
    if isinstance(prior, dict):
        unknown = sorted(set(prior) - set(names))
        missing = [name for name in names if name not in prior]
        if unknown or missing:
            raise ValueError(
                "prior must give a probability for every estimator name and no other; "
                f"unknown names {unknown}, missing names {missing}"
            )
        prior = [prior[name] for name in names]
    try:
        p = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"prior must be array-like of probabilities, got {prior!r}") from exc
    if p.shape != (n,):
        raise ValueError(f"prior must have one entry per estimator ({n}), got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"prior probabilities must be finite and non-negative, got {p}")
    if abs(p.sum() - 1.0) > 1e-8:
        raise ValueError(f"prior probabilities must sum to 1, got sum {p.sum()!r}")
    with np.errstate(divide="ignore"):
        return np.log(p)


# -- the estimator -------------------------------------------------------------


def _members_are(*kinds):
    """``available_if`` check: the members are of one of ``kinds``."""

    def check(self):
        try:
            return self._kind() in kinds
        except (TypeError, ValueError):
            return False

    return check


def _members_have(method):
    def check(self):
        members = getattr(self, "estimators_", None)
        if members is None:
            try:
                members = [est for _, est in self.estimators]
            except (TypeError, ValueError):
                return False
        return all(hasattr(est, method) for est in members)

    return check


class BayesianModelAverager(_BaseComposition):
    """Average the predictions of several models, weighted by their evidence.

    Bayesian model averaging: every member ``M_k`` is fitted on the same
    data ``D``, gets the posterior probability
    ``p(M_k | D) = p(D | M_k) p(M_k) / sum_j p(D | M_j) p(M_j)`` from its
    ``log_evidence_`` and the ``prior``, and the prediction is the mixture of
    the members' posterior predictives with these weights. The members must
    all be regressors, all classifiers or all density estimators, and must
    expose ``log_evidence_`` once fitted (every skevidence estimator does;
    a :class:`~sklearn.pipeline.Pipeline` whose last step does is accepted
    too, its evidence being that of the last step on the transformed inputs).

    The evidences are only comparable when every member has been
    conditioned on exactly the same data. ``fit`` and ``partial_fit``
    guarantee this for the members they fit, and check that the members'
    ``n_samples_seen_`` agree.

    The averager is a regressor, a classifier or a density estimator as its
    members are: :func:`sklearn.base.is_regressor` and
    :func:`sklearn.base.is_classifier` follow them, and only the matching
    methods are available (``predict`` for regressors and classifiers,
    ``predict_proba`` for classifiers, ``score_samples`` for density
    estimators).

    Parameters
    ----------
    estimators : list of (str, estimator) tuples
        The candidate models. They are cloned by ``fit`` and by the first
        ``partial_fit``.
    prior : array-like of shape (n_estimators,), dict or None, default=None
        Prior model probabilities ``p(M_k)``, in the order of
        ``estimators`` or as a dict keyed by estimator name. They must be
        non-negative and sum to 1 (to 1e-8). ``None`` is uniform.
    n_jobs : int or None, default=None
        Number of jobs fitting members in parallel with joblib; ``None``
        means 1 unless in a :func:`joblib.parallel_backend` context (so a
        dask backend spreads the members over a cluster), ``-1`` all cores.

    Attributes
    ----------
    estimators_ : list of estimators
        The fitted members.
    named_estimators_ : :class:`~sklearn.utils.Bunch`
        The fitted members by name.
    log_evidences_ : ndarray of shape (n_estimators,)
        The members' ``log p(D | M_k)``.
    log_evidence_stds_ : ndarray of shape (n_estimators,)
        The members' ``log_evidence_std_`` (Monte Carlo standard deviation
        of ``log_evidences_``), ``nan`` for members that report none. An
        :class:`EvidenceTieWarning` is issued when the two most probable
        members are closer than twice their combined std.
    weights_ : ndarray of shape (n_estimators,)
        Posterior model probabilities ``p(M_k | D)``; they sum to 1.
    log_evidence_ : float
        ``log sum_k p(M_k) p(D | M_k)``, the evidence of the averaged model.
    classes_ : ndarray of shape (n_classes,)
        Classifiers only: the union of the members' classes.
    n_samples_seen_ : int
        Number of samples every member has seen (when the members count them).
    n_features_in_ : int
        Number of features seen during ``fit``.

    See Also
    --------
    skevidence.model_selection.EvidenceSearch : fit a grid of candidates and rank
        them by evidence; its ``to_averager`` returns a fitted averager.
    sklearn.ensemble.VotingRegressor : unweighted (or fixed-weight) averaging.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skevidence import EvidenceLinearRegression
    >>> from skevidence.ensemble import BayesianModelAverager
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = X @ [1.0, -0.5] + rng.normal(size=300)
    >>> bma = BayesianModelAverager([
    ...     ("narrow", EvidenceLinearRegression(prior_std=0.1, random_state=0)),
    ...     ("wide", EvidenceLinearRegression(prior_std=1.0, random_state=0)),
    ... ])
    >>> model = make_pipeline(StandardScaler(), bma).fit(X, y)
    >>> bool(bma.weights_[1] > bma.weights_[0])
    True
    >>> mean, std = model.predict(X[:3], return_std=True)
    >>> mean.shape, std.shape
    ((3,), (3,))
    """

    def __init__(self, estimators, *, prior=None, n_jobs=None):
        self.estimators = estimators
        self.prior = prior
        self.n_jobs = n_jobs

    def get_params(self, deep=True):
        """Get the parameters, with ``<name>__<param>`` for the members' ones.

        Parameters
        ----------
        deep : bool, default=True
            Also return the parameters of the member estimators.

        Returns
        -------
        params : dict
            Parameter names mapped to their values.
        """
        return self._get_params("estimators", deep=deep)

    def set_params(self, **params):
        """Set the parameters, members' ones as ``<name>__<param>``.

        Parameters
        ----------
        **params : keyword arguments
            Parameters of the averager or of its members.

        Returns
        -------
        self : BayesianModelAverager
            This estimator.
        """
        self._set_params("estimators", **params)
        return self

    # -- validation ------------------------------------------------------------

    def _names_and_members(self):
        if not isinstance(self.estimators, (list, tuple)) or len(self.estimators) == 0:
            raise ValueError(
                "estimators must be a non-empty list of (name, estimator) tuples, "
                f"got {self.estimators!r}"
            )
        try:
            names, members = zip(*self.estimators)
        except (TypeError, ValueError) as exc:
            raise ValueError("estimators must be a list of (name, estimator) tuples") from exc
        if not all(isinstance(name, str) for name in names):
            raise ValueError(f"estimator names must be strings, got {list(names)!r}")
        self._validate_names(names)
        self._check_estimators_are_instances(members)
        return list(names), list(members)

    def _kind(self):
        return _members_kind(self._names_and_members()[1])

    def _check_inputs(self):
        """Validate the parameters; return names, members, kind and log prior."""
        names, members = self._names_and_members()
        kind = _members_kind(members)
        return names, members, kind, _check_prior(self.prior, names)

    # -- fitting ---------------------------------------------------------------

    def fit(self, X, y=None, **fit_params):
        """Clone and fit every member on ``(X, y)``, then weight them by evidence.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs.
        y : array-like of shape (n_samples,) or None, default=None
            Targets (``None`` for density estimators).
        **fit_params : dict
            Passed to every member's ``fit``.

        Returns
        -------
        self : BayesianModelAverager
            The fitted averager.
        """
        names, members, kind, log_prior = self._check_inputs()
        fitted = Parallel(n_jobs=self.n_jobs)(
            delayed(_fit_one)(clone(est), X, y, **fit_params) for est in members
        )
        self._set_members(names, fitted, kind, log_prior)
        return self

    @available_if(_members_have("partial_fit"))
    def partial_fit(self, X, y=None, classes=None):
        """Condition every member on one more batch and update the weights.

        The members are cloned on the first call (or after ``fit``, the
        fitted ones continue). If a member fails, the members already
        updated are not rolled back, and the averager keeps its previous
        fitted attributes; the ``n_samples_seen_`` check then reports the
        mismatch on the next call.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs of the batch.
        y : array-like of shape (n_samples,) or None, default=None
            Targets of the batch (``None`` for density estimators).
        classes : array-like of shape (n_classes,) or None, default=None
            Classifiers only: every class of the stream, needed on the first
            call (as in scikit-learn's ``partial_fit``).

        Returns
        -------
        self : BayesianModelAverager
            The updated averager.
        """
        names, members, kind, log_prior = self._check_inputs()
        if classes is not None and kind != "classifier":
            raise ValueError("classes is only used when the estimators are classifiers")
        if hasattr(self, "estimators_"):
            if len(self.estimators_) != len(members):
                raise ValueError("estimators changed since the averager was fitted; call fit")
            members = self.estimators_
            _check_same_data(members, names)
        else:
            members = [clone(est) for est in members]
        kwargs = {"classes": classes} if kind == "classifier" else {}
        updated = Parallel(n_jobs=self.n_jobs)(
            delayed(_partial_fit_one)(est, X, y, **kwargs) for est in members
        )
        self._set_members(names, updated, kind, log_prior)
        return self

    def _set_members(self, names, fitted, kind, log_prior):
        """Check the fitted members and derive every fitted attribute from them."""
        log_evidences = np.array([_fitted_log_evidence(est, name)
                                  for name, est in zip(names, fitted)])
        _check_same_data(fitted, names)
        if kind == "classifier":
            classes = np.unique(np.concatenate([np.asarray(est.classes_) for est in fitted]))
        log_posterior = log_evidences + log_prior
        stds = np.array([_fitted_log_evidence_std(est) for est in fitted])
        # Everything is assigned once all checks have passed.
        self.estimators_ = list(fitted)
        self.named_estimators_ = Bunch(**dict(zip(names, fitted)))
        self.log_evidences_ = log_evidences
        self.log_evidence_stds_ = stds
        self.log_evidence_ = float(_log_sum_exp(log_posterior))
        self.weights_ = np.exp(_log_softmax(log_posterior))
        if kind == "classifier":
            self.classes_ = classes
        sources = {"n_samples_seen_": _final_step(fitted[0]),
                   "n_features_in_": fitted[0], "feature_names_in_": fitted[0]}
        for attr, source in sources.items():
            self.__dict__.pop(attr, None)
            if hasattr(source, attr):
                setattr(self, attr, getattr(source, attr))
        _warn_if_tied(log_posterior, stds, names, stacklevel=4)
        return self

    # -- predictions -----------------------------------------------------------

    @available_if(_members_are("regressor", "classifier"))
    def predict(self, X, return_std=False):
        """Posterior-predictive prediction of the averaged model.

        Regressors: the mixture mean ``sum_k w_k mean_k`` and, with
        ``return_std=True``, the mixture standard deviation
        ``sqrt(sum_k w_k (std_k^2 + (mean_k - mean)^2))`` (every member must
        accept ``return_std``). Classifiers: the class of largest averaged
        probability.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.
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

    @available_if(_members_are("classifier"))
    def predict_proba(self, X):
        """Averaged class probabilities ``sum_k w_k p_k(c | x)``.

        A class some member does not know gets probability 0 from it.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``; rows in [0, 1] that sum
            to 1 to machine precision.
        """
        check_is_fitted(self, "weights_")
        probas = self._aligned_member_probas(X, "predict_proba")
        return normalize_proba(np.tensordot(self.weights_, probas, axes=1))

    @available_if(_members_are("classifier"))
    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`, computed in log space.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Columns in the order of ``classes_``.
        """
        check_is_fitted(self, "weights_")
        if all(hasattr(est, "predict_log_proba") for est in self.estimators_):
            log_probas = self._aligned_member_probas(X, "predict_log_proba")
        else:
            with np.errstate(divide="ignore"):
                log_probas = np.log(self._aligned_member_probas(X, "predict_proba"))
        with np.errstate(divide="ignore"):
            log_w = np.log(self.weights_)
        log_proba = _log_sum_exp(log_w[:, None, None] + log_probas)
        # renormalise the rounding away, so that exp() never exceeds 1
        return np.minimum(log_proba - _log_sum_exp(log_proba.T)[:, None], 0.0)

    @available_if(_members_are("density_estimator"))
    def score_samples(self, X):
        """Log density of the averaged model, ``log sum_k w_k p_k(x)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Inputs.

        Returns
        -------
        log_density : ndarray of shape (n_samples,)
            Log posterior-predictive density of every sample.
        """
        check_is_fitted(self, "weights_")
        scores = np.stack([np.asarray(est.score_samples(X), dtype=np.float64)
                           for est in self.estimators_])
        with np.errstate(divide="ignore"):
            log_w = np.log(self.weights_)
        return _log_sum_exp(log_w[:, None] + scores)

    @available_if(_members_are(*_KINDS))
    def score(self, X, y=None, sample_weight=None):
        """R^2 (regressors), accuracy (classifiers) or mean log density.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Test inputs.
        y : array-like of shape (n_samples,) or None, default=None
            True targets (ignored for density estimators).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Sample weights.

        Returns
        -------
        score : float
            The score of the averaged predictions.
        """
        kind = self._kind()
        if kind == "regressor":
            return float(r2_score(y, self.predict(X), sample_weight=sample_weight))
        if kind == "classifier":
            return float(accuracy_score(y, self.predict(X), sample_weight=sample_weight))
        return float(np.average(self.score_samples(X), weights=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        try:
            _, members = self._names_and_members()
            kind = _members_kind(members)
        except (TypeError, ValueError):
            return tags
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
