"""``to_inference_data`` for what a user holds: an evidence estimator, a pipeline that
ends in one, or a search whose best candidate is either."""

from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from ._arviz import to_inference_data as _estimator_inference_data

__all__ = ["to_inference_data"]


def to_inference_data(estimator, X=None, y=None, *, n_draws=None, resample=True,
                      random_state=None):
    """The fitted posterior and evidence of an estimator, a pipeline or a search, as ArviZ data.

    The export of :meth:`EvidenceLinearRegression.to_inference_data
    <skevidence.EvidenceLinearRegression.to_inference_data>` (groups
    ``posterior``, ``sample_stats``, and with ``X`` the ``log_likelihood``
    and the data), reached from where a fitted model sits in a workflow:

    * a :class:`~sklearn.pipeline.Pipeline` whose last step is an evidence
      estimator: ``X`` goes through the other steps first, and the features
      are labelled by their ``get_feature_names_out`` (a
      ``PolynomialFeatures`` step's ``x0 x1``, a ``StandardScaler``'s input
      names), so ``az.summary`` names every coefficient;
    * an :class:`~skevidence.EvidenceSearch`: its ``best_estimator_``
      (an estimator or a pipeline);
    * an evidence estimator itself.

    Resampled draws come in four chains (an arbitrary grouping of
    exchangeable draws, so ``r_hat`` is near 1 by construction and says
    nothing of convergence: the fit's ``diagnostics_`` does). ``az.loo``
    needs a few thousand distinct draws for its Pareto-k check to pass on
    most rows; draws are copies of the particles, so fit with
    ``n_particles`` of that order when leave-one-out matters.

    Parameters
    ----------
    estimator : fitted evidence estimator, Pipeline or EvidenceSearch
        What to export.
    X : array-like of shape (n_samples, n_features), default=None
        Observations at which to evaluate the pointwise log likelihood, as
        the pipeline or search takes them (before any transformer).
    y : array-like of shape (n_samples,), default=None
        Their targets, for a supervised model.
    n_draws : int or None, default=None
        Number of draws, a multiple of 4; ``None`` gives at least one per
        particle.
    resample : bool, default=True
        ``False`` exports the weighted particles (one chain, weights in
        ``sample_stats["weight"]``).
    random_state : int, RandomState instance or None, default=None
        Seeds the resampling.

    Returns
    -------
    data : arviz.InferenceData or xarray.DataTree
        ArviZ's container for the ArviZ installed.

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skevidence import EvidenceLinearRegression, to_inference_data
    >>> data = load_diabetes()
    >>> X, y = data.data[:200, :3], data.target[:200]
    >>> pipe = make_pipeline(StandardScaler(),
    ...                      EvidenceLinearRegression(n_particles=64, random_state=0))
    >>> pipe = pipe.fit(X, y)
    >>> idata = to_inference_data(pipe, X, y, random_state=0)
    >>> idata.posterior["coef"].shape
    (4, 16, 3)
    >>> idata.posterior["coef"].coords["feature"].values.tolist()
    ['x0', 'x1', 'x2']
    """
    if hasattr(estimator, "best_estimator_") or hasattr(estimator, "param_grid"):
        check_is_fitted(estimator, "best_estimator_")
        estimator = estimator.best_estimator_
    names = None
    if isinstance(estimator, Pipeline) and len(estimator) > 1:
        steps, estimator = estimator[:-1], estimator[-1]
        check_is_fitted(estimator, "log_evidence_")
        if X is not None:
            X = steps.transform(X)
        names = _feature_names_out(steps)
    elif isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    return _estimator_inference_data(estimator, X, y, n_draws=n_draws, resample=resample,
                                     random_state=random_state, feature_names=names)


def _feature_names_out(steps):
    """The names of the features the steps hand on, or None where a step cannot name them."""
    try:
        return list(steps.get_feature_names_out())
    except (AttributeError, ValueError, TypeError):
        return None
