import numpy as np
import pytest
from sklearn.base import is_classifier, is_regressor
from sklearn.datasets import make_blobs
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils import get_tags

from tests._standins import NoEvidenceRegressor, StandInClassifier, StandInDensity
from skevidence import EvidenceLinearRegression
from skevidence.ensemble import BayesianModelAverager
from tests.conftest import CHEAP



def softmax(a):
    a = np.asarray(a) - np.max(a)
    return np.exp(a) / np.exp(a).sum()


@pytest.fixture(scope="module")
def regression_data():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=3.0, scale=2.0, size=(200, 2))
    y = X @ [1.0, -0.5] + 0.3 + rng.normal(size=200)
    return X, y


@pytest.fixture(scope="module")
def classification_data():
    X, y = make_blobs(n_samples=120, centers=3, cluster_std=3.0, random_state=0)
    return X, y


def linreg_members():
    return [
        ("narrow", EvidenceLinearRegression(prior_std=0.3, **CHEAP)),
        ("wide", EvidenceLinearRegression(prior_std=1.0, **CHEAP)),
    ]


def classifier_members():
    return [("c1", StandInClassifier(C=0.01, penalty=3.0)),
            ("c2", StandInClassifier(C=1.0, penalty=5.0)),
            ("c3", StandInClassifier(C=100.0, penalty=4.0))]


def test_regressor_in_pipeline(regression_data):
    X, y = regression_data
    bma = BayesianModelAverager(linreg_members())
    model = make_pipeline(StandardScaler(), bma).fit(X, y)
    assert is_regressor(model) and is_regressor(bma) and not is_classifier(bma)
    np.testing.assert_allclose(bma.weights_.sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(bma.weights_, softmax(bma.log_evidences_), rtol=0, atol=1e-12)
    expected_log_evidence = np.logaddexp.reduce(bma.log_evidences_) - np.log(2)
    np.testing.assert_allclose(bma.log_evidence_, expected_log_evidence, atol=1e-12)
    assert bma.n_samples_seen_ == len(y) and bma.n_features_in_ == 2
    assert list(bma.named_estimators_) == ["narrow", "wide"]

    Xs = model[0].transform(X[:5])
    mean, std = model.predict(X[:5], return_std=True)
    outs = [est.predict(Xs, return_std=True) for est in bma.estimators_]
    expected_mean = sum(w * m for w, (m, _) in zip(bma.weights_, outs))
    second_moment = sum(w * (s**2 + m**2) for w, (m, s) in zip(bma.weights_, outs))
    expected_var = second_moment - expected_mean**2
    np.testing.assert_allclose(mean, expected_mean, atol=1e-12)
    np.testing.assert_allclose(std, np.sqrt(expected_var), rtol=1e-9)
    np.testing.assert_allclose(model.predict(X[:5]), mean, atol=1e-12)
    assert np.isfinite(model.score(X, y))


def test_classifier_in_pipeline(classification_data):
    X, y = classification_data
    bma = BayesianModelAverager(classifier_members())
    model = make_pipeline(StandardScaler(), bma).fit(X, y)
    assert is_classifier(model) and is_classifier(bma) and not hasattr(bma, "score_samples")
    np.testing.assert_array_equal(bma.classes_, [0, 1, 2])
    np.testing.assert_allclose(bma.weights_, softmax(bma.log_evidences_), rtol=0, atol=1e-12)
    # The stand-ins' evidences differ by a few nats, so no weight is 0 or 1.
    assert np.all(bma.weights_ > 1e-6)

    Xs = model[0].transform(X)
    proba = model.predict_proba(X)
    expected = sum(w * est.predict_proba(Xs) for w, est in zip(bma.weights_, bma.estimators_))
    np.testing.assert_allclose(proba, expected, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.exp(model.predict_log_proba(X)), proba, rtol=1e-10)
    np.testing.assert_array_equal(model.predict(X), bma.classes_[proba.argmax(1)])
    assert 0.0 <= model.score(X, y) <= 1.0


def test_classes_aligned_to_union(classification_data):
    X, y = classification_data
    keep = y != 2
    bma = BayesianModelAverager(classifier_members()).fit(X, y)
    # Replace one member by one that never saw class 2.
    partial = StandInClassifier(C=1.0).fit(X[keep], y[keep])
    bma.estimators_[1] = partial
    proba = bma.predict_proba(X)
    assert proba.shape == (len(X), 3)
    w = bma.weights_
    expected_col2 = w[0] * bma.estimators_[0].predict_proba(X)[:, 2] + \
        w[2] * bma.estimators_[2].predict_proba(X)[:, 2]
    np.testing.assert_allclose(proba[:, 2], expected_col2, atol=1e-12)


def test_duplicated_member_splits_weight(classification_data):
    X, y = classification_data
    members = classifier_members()
    bma = BayesianModelAverager(members + [("c2_copy", members[1][1])]).fit(X, y)
    single = BayesianModelAverager(members).fit(X, y)
    np.testing.assert_allclose(bma.weights_[1], bma.weights_[3], rtol=1e-12)
    # Duplicating a model doubles its prior mass relative to the others.
    np.testing.assert_allclose(bma.weights_[[0, 2]] / bma.weights_[1],
                               single.weights_[[0, 2]] / single.weights_[1], rtol=1e-10)


def test_duplicated_linreg_member_splits_weight(regression_data):
    X, y = regression_data
    est = EvidenceLinearRegression(**CHEAP)
    bma = BayesianModelAverager([("a", est), ("b", est)]).fit(X, y)
    assert bma.log_evidences_[0] == bma.log_evidences_[1]
    np.testing.assert_allclose(bma.weights_, [0.5, 0.5], rtol=0, atol=1e-12)


def test_density_members(classification_data):
    X, _ = classification_data
    bma = BayesianModelAverager([("h1", StandInDensity(bandwidth=0.5)),
                                 ("h2", StandInDensity(bandwidth=1.0)),
                                 ("h3", StandInDensity(bandwidth=2.0))]).fit(X)
    assert get_tags(bma).estimator_type == "density_estimator"
    assert not hasattr(bma, "predict") and not hasattr(bma, "predict_proba")
    scores = np.stack([est.score_samples(X) for est in bma.estimators_])
    expected = np.log(bma.weights_ @ np.exp(scores))
    np.testing.assert_allclose(bma.score_samples(X), expected, rtol=1e-12)
    assert bma.score(X) == pytest.approx(expected.mean(), rel=1e-12)


def test_prior(classification_data):
    X, y = classification_data
    prior = np.array([0.2, 0.5, 0.3])
    bma = BayesianModelAverager(classifier_members(), prior=prior).fit(X, y)
    np.testing.assert_allclose(bma.weights_, softmax(bma.log_evidences_ + np.log(prior)),
                               atol=1e-12)
    as_dict = BayesianModelAverager(classifier_members(),
                                    prior={"c3": 0.3, "c1": 0.2, "c2": 0.5}).fit(X, y)
    np.testing.assert_allclose(as_dict.weights_, bma.weights_, atol=1e-15)
    zero = BayesianModelAverager(classifier_members(), prior=[0.0, 0.5, 0.5]).fit(X, y)
    assert zero.weights_[0] == 0.0 and np.isfinite(zero.log_evidence_)


def test_partial_fit_matches_members(regression_data):
    X, y = regression_data
    bma = BayesianModelAverager(linreg_members())
    bma.partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
    for name, est in linreg_members():
        ref = est.partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
        assert bma.named_estimators_[name].log_evidence_ == ref.log_evidence_
    assert bma.n_samples_seen_ == 200
    np.testing.assert_allclose(bma.weights_, softmax(bma.log_evidences_), atol=1e-12)


def test_partial_fit_classifier(classification_data):
    X, y = classification_data
    bma = BayesianModelAverager(classifier_members())
    bma.partial_fit(X[:60], y[:60], classes=[0, 1, 2]).partial_fit(X[60:], y[60:])
    full = BayesianModelAverager(classifier_members()).fit(X, y)
    np.testing.assert_allclose(bma.log_evidences_, full.log_evidences_, rtol=1e-10)


@pytest.mark.parametrize("prior, match", [
    ([0.5, 0.6], "sum to 1"),
    ([1.5, -0.5], "non-negative"),
    ([1.0], "one entry per estimator"),
    ({"narrow": 0.5, "other": 0.5}, "unknown names"),
    ({"narrow": 1.0}, "missing names"),
])
def test_bad_prior(regression_data, prior, match):
    X, y = regression_data
    bma = BayesianModelAverager(linreg_members(), prior=prior)
    with pytest.raises(ValueError, match=match):
        bma.fit(X, y)
    assert not hasattr(bma, "estimators_")


def test_prior_tolerance(classification_data):
    X, y = classification_data
    BayesianModelAverager(classifier_members(), prior=[0.2, 0.5, 0.3 + 5e-9]).fit(X, y)
    with pytest.raises(ValueError, match="sum to 1"):
        BayesianModelAverager(classifier_members(), prior=[0.2, 0.5, 0.3 + 2e-8]).fit(X, y)


def test_bad_estimators(regression_data):
    X, y = regression_data
    with pytest.raises(ValueError, match="non-empty"):
        BayesianModelAverager([]).fit(X, y)
    mixed = [("reg", EvidenceLinearRegression(**CHEAP)), ("clf", StandInClassifier())]
    with pytest.raises(ValueError, match="same kind"):
        BayesianModelAverager(mixed).fit(X, y)
    with pytest.raises(ValueError, match="no log_evidence_"):
        BayesianModelAverager([("reg", EvidenceLinearRegression(**CHEAP)),
                               ("none", NoEvidenceRegressor())]).fit(X, y)
    with pytest.raises(ValueError, match="not unique"):
        BayesianModelAverager([("a", EvidenceLinearRegression()),
                               ("a", EvidenceLinearRegression())]).fit(X, y)


def test_failed_fit_keeps_previous_state(regression_data):
    X, y = regression_data
    bma = BayesianModelAverager(linreg_members()).fit(X, y)
    before = bma.weights_.copy()
    bma.set_params(prior=[0.7, 0.7])
    with pytest.raises(ValueError, match="sum to 1"):
        bma.fit(X, y)
    np.testing.assert_array_equal(bma.weights_, before)


def test_members_must_see_same_data(regression_data):
    X, y = regression_data
    bma = BayesianModelAverager(linreg_members()).fit(X, y)
    bma.estimators_[1].partial_fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="same data"):
        bma.partial_fit(X[:10], y[:10])


def test_set_params_nested():
    bma = BayesianModelAverager(linreg_members())
    bma.set_params(wide__prior_std=2.0)
    assert bma.get_params()["wide__prior_std"] == 2.0
    assert bma.estimators[1][1].prior_std == 2.0


# -- real skevidence members ---------------------------------------------------------


def test_logistic_members_in_pipeline(classification_data):
    from skevidence import EvidenceLogisticRegression

    X, y = classification_data
    members = [(f"prior{s}", EvidenceLogisticRegression(prior_std=s, **CHEAP))
               for s in (0.3, 1.0, 3.0)]
    model = make_pipeline(StandardScaler(), BayesianModelAverager(members)).fit(X, y)
    bma = model[-1]
    np.testing.assert_allclose(bma.weights_.sum(), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(bma.weights_, softmax(bma.log_evidences_), rtol=0, atol=1e-12)
    Xs = model[0].transform(X)
    expected = sum(w * est.predict_proba(Xs) for w, est in zip(bma.weights_, bma.estimators_))
    np.testing.assert_allclose(model.predict_proba(X), expected, rtol=0, atol=1e-10)


def test_gmm_members_score_samples(classification_data):
    from skevidence import EvidenceGMM

    X, _ = classification_data
    members = [(f"k{k}", EvidenceGMM(n_components=k, **CHEAP)) for k in (1, 3)]
    bma = BayesianModelAverager(members).fit(X)
    expected = np.logaddexp.reduce(
        [np.log(w) + est.score_samples(X) for w, est in zip(bma.weights_, bma.estimators_)], axis=0)
    np.testing.assert_allclose(bma.score_samples(X), expected, rtol=1e-12)
    np.testing.assert_allclose(bma.weights_, softmax(bma.log_evidences_), rtol=0, atol=1e-12)
