"""Bayesian model averaging of evidence estimators: BayesianModelAverager."""

from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.metrics import accuracy_score, r2_score
from sklearn.utils._param_validation import Interval
from sklearn.utils.metaestimators import _BaseComposition, available_if

from ._averaging import (
    AveragedPredictionsMixin,
    checked_names_and_members,
    members_are,
    set_members,
    with_member_tags,
)
from ._docstrings import method_doc
from ._meta import (
    _KINDS,
    EvidenceTieWarning,
    check_prior,
    check_same_data,
    fit_members,
    members_kind,
    partial_fit_members,
    partial_fit_params,
)
from ._streaming import can_partial_fit, check_streamable, restored_on_error

__all__ = ["BayesianModelAverager", "EvidenceTieWarning"]


def _members_can_partial_fit(self):
    """``available_if`` check: every member (or its Pipeline's last step) streams."""
    members = getattr(self, "estimators_", None)
    if members is None:
        try:
            members = [est for _, est in self.estimators]
        except (TypeError, ValueError):
            return False
    return all(can_partial_fit(est) for est in members)


class BayesianModelAverager(AveragedPredictionsMixin, _BaseComposition):
    """Average the predictions of several models, weighted by their evidence.

    The prediction mixes the members' posterior predictives with weights
    ``p(M_k | D)`` from their ``log_evidence_`` and the ``prior``
    (:ref:`model_averaging`). The members, fitted on the same data (``fit``
    and ``partial_fit`` check their ``n_samples_seen_``), must all be
    regressors, classifiers or density estimators with ``log_evidence_``
    (or pipelines whose last step has it); the averager is of their kind.

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
    forgetting : float in (0, 1] or None, default=None
        Forgetting factor ``alpha`` of dynamic model averaging, for streams
        whose law changes: after every ``partial_fit`` batch the log weights
        become ``alpha * log w_k + log p(batch | past, M_k)``, renormalised,
        so a batch ``t`` batches back counts ``alpha**t`` times. ``None``:
        the weights are the posterior model probabilities of all data seen.
        ``1`` gives them too (up to rounding). See Notes.

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
        :class:`~skevidence.exceptions.EvidenceTieWarning` is issued when the two most probable
        members are closer than twice their combined std.
    weights_ : ndarray of shape (n_estimators,)
        The current model weights, used by ``predict``; they sum to 1.
        Posterior model probabilities ``p(M_k | D)`` without
        ``forgetting``, the dynamic model averaging weights with it.
    log_evidence_ : float
        ``log sum_k p(M_k) p(D | M_k)``, the evidence of the averaged model
        (of all the data, whatever ``forgetting``).
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

    Notes
    -----
    Members may be Pipelines ending in an evidence estimator. ``fit`` fits
    them as scikit-learn does; ``partial_fit`` fits their transformers on
    the first batch and then keeps them frozen, so each member's evidence
    is that of its model on the frozen features (:ref:`streaming`). A
    transformer without ``transform`` cannot be frozen and is refused.

    With ``forgetting=alpha``, the weights follow dynamic model averaging
    (Raftery, Karny & Ettler, 2010): before each batch the model
    probabilities are flattened, ``w_k <- w_k**alpha / sum_j w_j**alpha``,
    then updated by the batch's predictive likelihood,
    ``w_k <- w_k p(batch | past, M_k) / sum_j ...``. The log predictive
    ``log p(batch | past, M_k)`` is the member's gain in ``log_evidence_``
    over the call. The prior is the starting weights; ``fit`` (and
    :meth:`from_fitted`) count as one batch. The log weight a batch gave
    shrinks by ``alpha`` with every later batch (a memory of about
    ``1 / (1 - alpha)`` batches), so a model that predicts the recent
    batches better regains the weight once the old evidence against it has
    worn off, where without forgetting it would keep it down. The members'
    posteriors do not forget. The
    :class:`~skevidence.exceptions.EvidenceTieWarning` concerns the
    evidences of all the data, so it is issued only without forgetting.

    References
    ----------
    Raftery, A. E., Karny, M. & Ettler, P. (2010). Online prediction under
    model uncertainty via dynamic model averaging: application to a cold
    rolling mill. *Technometrics*, 52(1), 52-66.

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

    Streaming, with a pipeline member and weights that forget:

    >>> from sklearn.preprocessing import PolynomialFeatures
    >>> bma = BayesianModelAverager([
    ...     ("linear", EvidenceLinearRegression(random_state=0)),
    ...     ("quadratic", make_pipeline(PolynomialFeatures(2),
    ...                                 EvidenceLinearRegression(random_state=0))),
    ... ], forgetting=0.9)
    >>> for X_batch, y_batch in zip(np.array_split(X, 3), np.array_split(y, 3)):
    ...     bma = bma.partial_fit(X_batch, y_batch)
    >>> bma.n_samples_seen_, bool(bma.weights_[0] > 0.5)
    (300, True)
    """

    # Declared once, checked by ``_validate_params`` before any state
    # changes; ``estimators`` and ``prior`` are checked by hand, with
    # messages that name the member.
    _parameter_constraints = {
        "estimators": "no_validation",
        "prior": "no_validation",
        "n_jobs": [Integral, None],
        "forgetting": [Interval(Real, 0, 1, closed="right"), None],
    }

    def __init__(self, estimators, *, prior=None, n_jobs=None, forgetting=None):
        self.estimators = estimators
        self.prior = prior
        self.n_jobs = n_jobs
        self.forgetting = forgetting

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
        return checked_names_and_members(self)

    def _kind(self):
        return members_kind(self._names_and_members()[1])

    def _check_inputs(self):
        """Validate the parameters; return names, members, kind and log prior."""
        self._validate_params()
        names, members = self._names_and_members()
        kind = members_kind(members)
        return names, members, kind, check_prior(self.prior, names)

    # -- fitting ---------------------------------------------------------------

    @method_doc
    def fit(self, X, y=None, **fit_params):
        """Clone and fit every member on ``(X, y)``, then weight them by evidence.

        Parameters
        ----------
        {fit_Xy}
        **fit_params : dict
            Passed to every member's ``fit``.

        Returns
        -------
        self : BayesianModelAverager
            The fitted averager.
        """
        names, members, kind, log_prior = self._check_inputs()
        fitted, _ = fit_members([clone(est) for est in members], X, y, self.n_jobs,
                                **fit_params)
        set_members(self, names, fitted, kind, log_prior)
        return self

    @available_if(_members_can_partial_fit)
    @method_doc
    def partial_fit(self, X, y=None, classes=None):
        """Condition every member on one more batch and update the weights.

        The members are cloned on the first call (or after ``fit``, the
        fitted ones continue). A Pipeline member's transformers are fitted
        on the first batch and then frozen (see Notes); one that cannot be
        frozen is refused before any member changes. If any member fails,
        every member and the averager are left as they were.

        {batch}

        Returns
        -------
        self : BayesianModelAverager
            The updated averager.
        """
        names, members, kind, log_prior = self._check_inputs()
        kwargs = partial_fit_params(kind, classes)
        first = not hasattr(self, "estimators_")
        if not first:
            if len(self.estimators_) != len(members):
                raise ValueError("estimators changed since the averager was fitted; call fit")
            members = self.estimators_
            check_same_data(members, names)
        for name, est in zip(names, members):
            check_streamable(est, name)
        if first:
            members = [clone(est) for est in members]
            previous = None
        else:
            previous = (self._log_weights, self.log_evidences_)
        with restored_on_error(members):
            updated, _ = partial_fit_members(members, X, y, self.n_jobs, first, **kwargs)
            set_members(self, names, updated, kind, log_prior, previous)
        return self

    @classmethod
    def from_fitted(cls, estimators, *, prior=None, n_jobs=None, forgetting=None):
        """An averager of members already fitted on the same data, without refitting.

        Parameters
        ----------
        estimators : list of (str, estimator) tuples
            Named fitted members (each with a ``log_evidence_``, or a Pipeline
            whose last step has one). They are shared, not copied.
        prior : array-like of shape (n_estimators,), dict or None, default=None
            As in the constructor.
        n_jobs : int or None, default=None
            As in the constructor (used by later ``partial_fit`` calls).
        forgetting : float in (0, 1] or None, default=None
            As in the constructor; the members' evidence so far counts as
            one batch.

        Returns
        -------
        averager : BayesianModelAverager
            Fitted; its ``estimators`` parameter holds unfitted clones.

        Examples
        --------
        >>> import numpy as np
        >>> from skevidence import EvidenceLinearRegression
        >>> from skevidence.ensemble import BayesianModelAverager
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 2))
        >>> y = X @ [1.0, -0.5] + rng.normal(size=100)
        >>> members = [(f"s={s}", EvidenceLinearRegression(prior_std=s, random_state=0)
        ...             .fit(X, y)) for s in (0.1, 1.0)]
        >>> BayesianModelAverager.from_fitted(members).weights_.shape
        (2,)
        """
        averager = cls([(name, clone(est)) for name, est in estimators], prior=prior,
                       n_jobs=n_jobs, forgetting=forgetting)
        names, _, kind, log_prior = averager._check_inputs()
        return set_members(averager, names, [est for _, est in estimators], kind, log_prior)

    @available_if(members_are(*_KINDS))
    @method_doc
    def score(self, X, y=None, sample_weight=None):
        """R^2 (regressors), accuracy (classifiers) or mean log density.

        Parameters
        ----------
        {test_Xy}
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
            kind = members_kind(members)
        except (TypeError, ValueError):
            return tags
        return with_member_tags(tags, kind, members)
