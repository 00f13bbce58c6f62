"""The simulated data sets of the paper (Cameron, Eggers & Kroon 2019, section 6),
and the radiata pine data, the literature's standard test of evidence estimators.

Every generator draws its true parameters once from the model's prior, then
``n_samples`` i.i.d. observations. Each random ingredient (parameters,
inputs, labels or component choices, noise) comes from its own child stream
of ``np.random.SeedSequence(random_state)``, so the data are
prefix-consistent: for a fixed ``random_state`` the first ``n`` rows of a
data set of size ``N >= n`` are the data set of size ``n``, and the true
parameters do not depend on ``n_samples``. They return numpy arrays.
"""

import inspect
import numbers
from importlib import resources

import numpy as np
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, validate_params

__all__ = [
    "make_linear_regression",
    "make_logistic_regression",
    "make_gaussian_mixture",
    "make_shifting_clusters",
    "load_radiata_pine",
]


def _streams(random_state, n):
    """``n`` independent generators from ``random_state``."""
    if isinstance(random_state, np.random.Generator):
        return random_state.spawn(n)
    if not isinstance(random_state, np.random.SeedSequence):
        random_state = np.random.SeedSequence(random_state)
    return [np.random.default_rng(s) for s in random_state.spawn(n)]


# Argument constraints, checked by scikit-learn's ``validate_params``.
_COUNT = [Interval(numbers.Integral, 1, None, closed="left")]
_POSITIVE = [Interval(numbers.Real, 0, np.inf, closed="neither")]
_SEED = [None, numbers.Integral, np.random.SeedSequence, np.random.Generator]
_COMMON = {"n_samples": _COUNT, "random_state": _SEED, "return_params": ["boolean"]}


def _validated(**constraints):
    """``validate_params`` with the common arguments and ``constraints``."""
    return validate_params({**_COMMON, **constraints}, prefer_skip_nested_validation=True)


def _categorical(cum_weights, u):
    """Index of the category of each uniform ``u`` given cumulative weights."""
    K = cum_weights.shape[-1]
    index = (cum_weights[..., :-1] < u[:, None]).sum(axis=1)
    return np.minimum(index, K - 1)


@_validated(n_features=_COUNT, noise_std=_POSITIVE, prior_std=_POSITIVE)
def make_linear_regression(n_samples, n_features=5, noise_std=1.0, prior_std=1.0,
                           random_state=None, return_params=False):
    """Linear regression data with coefficients drawn from the prior (Appendix B.1).

    ``y = X @ coef + intercept + eps`` with ``X ~ N(0, I)``,
    ``eps ~ N(0, noise_std^2)`` and ``coef, intercept ~ N(0, prior_std^2)``:
    the model of :class:`~skevidence.EvidenceLinearRegression`.

    Parameters
    ----------
    n_samples : int
        Number of observations.
    n_features : int, default=5
        Number of input features (the paper's 5).
    noise_std : float, default=1.0
        Standard deviation of the observation noise.
    prior_std : float, default=1.0
        Standard deviation of the prior the true coefficients are drawn from.
    random_state : int, numpy SeedSequence or Generator, or None, default=None
        Seed of the three child streams (parameters, inputs, noise).
    return_params : bool, default=False
        Also return the true parameters.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Inputs.
    y : ndarray of shape (n_samples,)
        Targets.
    params : dict
        Only when ``return_params``: ``coef`` (n_features,) and
        ``intercept`` (float).

    Examples
    --------
    >>> from skevidence.datasets import make_linear_regression
    >>> X, y, params = make_linear_regression(100, random_state=0, return_params=True)
    >>> X.shape, y.shape, params["coef"].shape
    ((100, 5), (100,), (5,))
    """
    noise_std, prior_std = float(noise_std), float(prior_std)
    r_par, r_x, r_eps = _streams(random_state, 3)
    coef = prior_std * r_par.standard_normal(n_features)
    intercept = prior_std * r_par.standard_normal()
    X = r_x.standard_normal((n_samples, n_features))
    y = X @ coef + intercept + noise_std * r_eps.standard_normal(n_samples)
    if return_params:
        return X, y, {"coef": coef, "intercept": float(intercept)}
    return X, y


@_validated(n_features=_COUNT, prior_std=_POSITIVE,
            n_classes=[Interval(numbers.Integral, 2, None, closed="left")])
def make_logistic_regression(n_samples, n_features=10, n_classes=4, prior_std=1.0,
                             random_state=None, return_params=False):
    """Softmax regression data with parameters drawn from the prior (Appendix B.2).

    ``x ~ N(0, I)`` and ``p(y = k | x) = softmax_k(W x + b)`` with every
    entry of ``W`` (n_classes x n_features) and ``b`` drawn from
    ``N(0, prior_std^2)``: the model of
    :class:`~skevidence.EvidenceLogisticRegression`. The defaults are the
    paper's (10 features, 4 classes, 44 parameters); ``random_state=1``
    gives the nested-sampling reference data ``logistic_seed1_N1000.npz``.

    Parameters
    ----------
    n_samples : int
        Number of observations.
    n_features : int, default=10
        Number of input features.
    n_classes : int, default=4
        Number of classes (at least 2).
    prior_std : float, default=1.0
        Standard deviation of the prior the true parameters are drawn from.
    random_state : int, numpy SeedSequence or Generator, or None, default=None
        Seed of the three child streams (parameters, inputs, label uniforms).
    return_params : bool, default=False
        Also return the true parameters.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Inputs.
    y : ndarray of shape (n_samples,), dtype int64
        Class labels in ``0 .. n_classes - 1``.
    params : dict
        Only when ``return_params``: ``coef`` (n_classes, n_features) and
        ``intercept`` (n_classes,).

    Examples
    --------
    >>> from skevidence.datasets import make_logistic_regression
    >>> X, y = make_logistic_regression(500, random_state=1)
    >>> X.shape, sorted(set(y.tolist()))
    ((500, 10), [0, 1, 2, 3])
    """
    prior_std = float(prior_std)
    r_par, r_x, r_u = _streams(random_state, 3)
    coef = prior_std * r_par.standard_normal((n_classes, n_features))
    intercept = prior_std * r_par.standard_normal(n_classes)
    X = r_x.standard_normal((n_samples, n_features))
    logits = X @ coef.T + intercept
    logits -= logits.max(axis=1, keepdims=True)
    proba = np.exp(logits)
    proba /= proba.sum(axis=1, keepdims=True)
    y = _categorical(np.cumsum(proba, axis=1), r_u.random(n_samples)).astype(np.int64)
    if return_params:
        return X, y, {"coef": coef, "intercept": intercept}
    return X, y


@_validated(n_features=_COUNT, n_components=_COUNT)
def make_gaussian_mixture(n_samples, n_features=2, n_components=5, random_state=None,
                          return_params=False):
    """Diagonal Gaussian mixture data with parameters drawn from the prior (Appendix B.3).

    The prior of the paper: weights ``~ Dirichlet(1, ..., 1)``, variances
    ``sigma2[k, j] ~ InvGamma(shape 1, scale 1)`` and means
    ``mu[k, j] | sigma2[k, j] ~ N(0, 4 sigma2[k, j])``; each observation
    picks a component by its weight and adds ``N(0, diag(sigma2[k]))``
    noise to its mean. The defaults are the paper's (2-D, 5 components);
    ``random_state=1`` gives the reference data ``gmm_seed1_N1000.npz``
    and ``gmm_seed1_N10000.npz``.

    Parameters
    ----------
    n_samples : int
        Number of observations.
    n_features : int, default=2
        Dimension of the data.
    n_components : int, default=5
        Number of mixture components.
    random_state : int, numpy SeedSequence or Generator, or None, default=None
        Seed of the three child streams (parameters, component uniforms,
        noise).
    return_params : bool, default=False
        Also return the true parameters and the component of each
        observation.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
        Observations.
    params : dict
        Only when ``return_params``: ``weights`` (n_components,), ``means``
        and ``variances`` (n_components, n_features), ``labels``
        (n_samples,) the component of each observation.

    Examples
    --------
    >>> from skevidence.datasets import make_gaussian_mixture
    >>> X, params = make_gaussian_mixture(1000, random_state=1, return_params=True)
    >>> X.shape, params["means"].shape
    ((1000, 2), (5, 2))
    """
    r_par, r_z, r_eps = _streams(random_state, 3)
    weights = r_par.dirichlet(np.ones(n_components))
    # InvGamma(shape a, scale s) is s / Gamma(a, 1).
    variances = 1.0 / r_par.gamma(1.0, 1.0, size=(n_components, n_features))
    means = np.sqrt(4.0 * variances) * r_par.standard_normal((n_components, n_features))
    labels = _categorical(np.cumsum(weights), r_z.random(n_samples))
    X = means[labels] + np.sqrt(variances[labels]) * r_eps.standard_normal((n_samples, n_features))
    if return_params:
        return X, {"weights": weights, "means": means, "variances": variances, "labels": labels}
    return X


# The clusters of the distribution-shift experiment (paper, section 6.2),
# which the paper shows only as histograms: 2-D isotropic Gaussians, the
# first three active from the start, two more after 1000 observations and
# the last two after 10_000. Clusters 3 and 5 overlap clusters 0 and 1, so
# the number of clusters is not obvious from a histogram, as in the paper.
_SHIFT_MEANS = np.array([
    [-4.0, 0.0], [4.0, 0.0], [0.0, 5.0],
    [-2.5, 1.5], [0.0, -5.0],
    [5.0, 2.0], [-6.0, -5.0],
])
_SHIFT_STDS = np.array([1.0, 1.0, 1.0, 0.8, 1.2, 0.7, 1.0])
_SHIFT_CHANGE_POINTS = (1000, 10_000)
_SHIFT_ACTIVE = (3, 5, 7)


@_validated()
def make_shifting_clusters(n_samples=100_000, random_state=None, return_params=False):
    """Clustered 2-D data whose number of clusters grows: the paper's section 6.2.

    The first 1000 observations come from 3 Gaussian clusters, the next
    9000 from 5 (the first 3 and two more) and the rest from 7 (the
    previous 5 and two more); within a phase every active cluster is
    equally likely. Some clusters overlap. An online evidence of mixture
    models with 3, 5 and 7 components shows the change points; shuffling
    the rows gives the stationary version of the same data.

    The paper does not list its cluster parameters; the ones used here are
    fixed (only the draws depend on ``random_state``), with isotropic
    standard deviations between 0.7 and 1.2 and centres within 8 of the
    origin.

    Parameters
    ----------
    n_samples : int, default=100_000
        Number of observations (the paper's 100_000). Fewer keep the
        prefix of the stream: 1000 or less are all from the first phase.
    random_state : int, numpy SeedSequence or Generator, or None, default=None
        Seed of the two child streams (cluster uniforms, noise).
    return_params : bool, default=False
        Also return the cluster parameters.

    Returns
    -------
    X : ndarray of shape (n_samples, 2)
        Observations, in stream order.
    labels : ndarray of shape (n_samples,), dtype int64
        The cluster (0 to 6) of each observation.
    params : dict
        Only when ``return_params``: ``means`` (7, 2), ``stds`` (7,),
        ``change_points`` (1000, 10_000) and ``n_active`` (3, 5, 7), the
        number of clusters in each phase.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence.datasets import make_shifting_clusters
    >>> X, labels = make_shifting_clusters(20_000, random_state=0)
    >>> [len(np.unique(labels[a:b])) for a, b in [(0, 1000), (1000, 10_000), (10_000, 20_000)]]
    [3, 5, 7]
    """
    r_z, r_eps = _streams(random_state, 2)
    position = np.arange(n_samples)
    n_active = np.asarray(_SHIFT_ACTIVE)[np.searchsorted(_SHIFT_CHANGE_POINTS, position,
                                                         side="right")]
    u = r_z.random(n_samples)
    labels = np.minimum(np.floor(u * n_active), n_active - 1).astype(np.int64)
    noise = r_eps.standard_normal((n_samples, 2))
    X = _SHIFT_MEANS[labels] + _SHIFT_STDS[labels, None] * noise
    if return_params:
        params = {"means": _SHIFT_MEANS.copy(), "stds": _SHIFT_STDS.copy(),
                  "change_points": _SHIFT_CHANGE_POINTS, "n_active": _SHIFT_ACTIVE}
        return X, labels, params
    return X, labels


def load_radiata_pine(*, return_X_y=False):
    """The radiata pine data: compression strength against two measures of density.

    Maximum compression strength parallel to the grain of 42 specimens of
    radiata pine, with their density and their density adjusted for resin
    content (Williams 1959). Which of the two densities predicts strength
    better is the standard test of evidence estimators on real data: with
    the conjugate prior of Friel & Wyse (2012) (coefficients given the
    noise ``N((3000, 185), sigma^2 diag(1 / 0.06, 1 / 6))`` on the centred
    predictor, ``1 / sigma^2 ~ Gamma(3, rate 2 * 300^2)``) the published log
    evidences are -310.1283 (density) and -301.7046 (adjusted density).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        ``data`` (42, 2): density and adjusted density; ``target`` (42,):
        strength (psi); ``feature_names``; ``DESCR``.

    References
    ----------
    Williams, E. J. (1959). *Regression Analysis*. Wiley.

    Friel, N. & Wyse, J. (2012). Estimating the evidence -- a review.
    *Statistica Neerlandica* 66(3), 288-308.

    Examples
    --------
    >>> from skevidence.datasets import load_radiata_pine
    >>> X, y = load_radiata_pine(return_X_y=True)
    >>> X.shape, y.shape
    ((42, 2), (42,))
    """
    with resources.files("skevidence").joinpath("data", "radiata_pine.csv").open() as f:
        table = np.loadtxt(f, delimiter=",", skiprows=1)
    X, y = table[:, 1:], table[:, 0]
    if return_X_y:
        return X, y
    return Bunch(data=X, target=y, feature_names=["density", "adjusted_density"],
                 DESCR=inspect.cleandoc(load_radiata_pine.__doc__).split("\n\n")[1])
