import numpy as np
import pytest

from skevidence.datasets import (
    make_gaussian_mixture,
    make_linear_regression,
    make_logistic_regression,
    make_shifting_clusters,
)

# Check values of the nested-sampling reference data sets: the sums of their
# arrays as printed in shared/reference/REFERENCE.md (the files themselves
# live outside the repository). A float64 sum to the last digit changes
# with any element, so this is a bit-for-bit check in practice.
LOGISTIC_N1000_SUMS = (-146.48717623020627, 1505)
GMM_SUMS = {1000: -1872.4873444190998, 10_000: -16762.602005766155}


def _sum_tolerance(X):
    """How far two computations of ``X.sum()`` may differ where each entry may
    differ by a few ulps (numpy's transcendental functions differ between CPUs'
    vector units) and the sum is rounded: ``(n + 4) eps sum |X|``."""
    return (X.size + 4) * np.finfo(np.float64).eps * float(np.abs(X).sum())


def test_logistic_regression_reproduces_the_reference_data():
    X, y = make_logistic_regression(1000, random_state=1)
    assert X.shape == (1000, 10) and X.dtype == np.float64 and y.dtype == np.int64
    assert float(X.sum()) == pytest.approx(LOGISTIC_N1000_SUMS[0], rel=0, abs=_sum_tolerance(X))
    assert int(y.sum()) == LOGISTIC_N1000_SUMS[1]
    assert np.bincount(y).tolist() == [214, 309, 235, 242]


@pytest.mark.parametrize("n", [1000, 10_000])
def test_gaussian_mixture_reproduces_the_reference_data(n):
    X = make_gaussian_mixture(n, random_state=1)
    assert X.shape == (n, 2)
    assert float(X.sum()) == pytest.approx(GMM_SUMS[n], rel=0, abs=_sum_tolerance(X))


@pytest.mark.parametrize(
    "make",
    [
        lambda n, s: make_linear_regression(n, random_state=s, return_params=True),
        lambda n, s: make_logistic_regression(n, random_state=s, return_params=True),
        lambda n, s: make_gaussian_mixture(n, random_state=s, return_params=True),
        lambda n, s: make_shifting_clusters(n, random_state=s, return_params=True),
    ],
)
def test_prefix_consistent_and_reproducible(make):
    small, large, again, other = make(300, 5), make(2000, 5), make(2000, 5), make(2000, 6)
    for a, b in zip(small[:-1], large[:-1]):
        np.testing.assert_array_equal(a, b[:300])
    for a, b in zip(large[:-1], again[:-1]):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(large[0], other[0])
    # True parameters do not depend on n_samples.
    for key, value in small[-1].items():
        if key != "labels":
            np.testing.assert_array_equal(value, large[-1][key])


def test_linear_regression_follows_its_parameters():
    X, y, params = make_linear_regression(20_000, n_features=3, noise_std=0.5, prior_std=2.0,
                                          random_state=0, return_params=True)
    assert X.shape == (20_000, 3) and y.shape == (20_000,)
    resid = y - X @ params["coef"] - params["intercept"]
    # Residual std is noise_std; its standard error at n = 2e4 is 0.0025.
    assert abs(resid.std() - 0.5) < 0.02
    assert abs(resid.mean()) < 0.02


def test_logistic_regression_labels_follow_the_softmax():
    X, y, params = make_logistic_regression(20_000, n_features=2, n_classes=3, random_state=3,
                                            return_params=True)
    assert params["coef"].shape == (3, 2) and params["intercept"].shape == (3,)
    assert y.dtype == np.int64 and set(np.unique(y)) <= {0, 1, 2}
    logits = X @ params["coef"].T + params["intercept"]
    proba = np.exp(logits - logits.max(1, keepdims=True))
    proba /= proba.sum(1, keepdims=True)
    # Class frequencies match the mean probabilities: binomial standard
    # error at n = 2e4 is at most 0.0035, so 0.02 is over 5 of them.
    np.testing.assert_allclose(np.bincount(y, minlength=3) / len(y), proba.mean(0), atol=0.02)


def test_gaussian_mixture_components_follow_their_parameters():
    X, params = make_gaussian_mixture(50_000, n_features=3, n_components=2, random_state=2,
                                      return_params=True)
    labels = params["labels"]
    assert X.shape == (50_000, 3) and params["means"].shape == (2, 3)
    assert params["weights"].sum() == pytest.approx(1.0)
    for k in range(2):
        Xk = X[labels == k]
        # Standard error of a component mean with >= a few hundred points
        # and variances below ~30: well under 0.5.
        np.testing.assert_allclose(Xk.mean(0), params["means"][k], atol=0.5)
        np.testing.assert_allclose(Xk.var(0) / params["variances"][k], 1.0, atol=0.2)


def test_shifting_clusters_add_clusters_at_the_change_points():
    X, labels, params = make_shifting_clusters(30_000, random_state=0, return_params=True)
    assert X.shape == (30_000, 2) and labels.shape == (30_000,)
    assert params["change_points"] == (1000, 10_000) and params["n_active"] == (3, 5, 7)
    phases = [labels[:1000], labels[1000:10_000], labels[10_000:]]
    assert [np.unique(p).tolist() for p in phases] == [[0, 1, 2], list(range(5)),
                                                        list(range(7))]
    # Clusters are equally likely within a phase: at n = 2e4 and 7 clusters
    # the binomial standard error of a share is 0.0025.
    np.testing.assert_allclose(np.bincount(phases[2]) / len(phases[2]), 1 / 7, atol=0.015)
    k = labels == 4
    np.testing.assert_allclose(X[k].mean(0), params["means"][4], atol=0.1)
    assert make_shifting_clusters(random_state=0)[0].shape == (100_000, 2)


@pytest.mark.parametrize(
    "call",
    [
        lambda: make_linear_regression(0),
        lambda: make_linear_regression(10, noise_std=-1.0),
        lambda: make_logistic_regression(10, n_classes=1),
        lambda: make_logistic_regression(10, prior_std=np.inf),
        lambda: make_gaussian_mixture(10, n_components=0),
        lambda: make_shifting_clusters(2.5),
        lambda: make_linear_regression(10, random_state="seed"),
    ],
)
def test_bad_arguments_raise_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_generator_random_state_is_accepted():
    a = make_logistic_regression(50, random_state=np.random.default_rng(0))
    b = make_logistic_regression(50, random_state=np.random.default_rng(0))
    np.testing.assert_array_equal(a[0], b[0])
