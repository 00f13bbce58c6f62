"""Every estimator and ``method`` on a CUDA device: fit, partial_fit, predict and score,
pickling and the fitted attributes' types (skipped without CUDA)."""

import os
import pickle
import sys

import numpy as np
import pytest
import torch
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import (BayesianModelAverager, EvidenceGMM, EvidenceLinearRegression,
                        EvidenceLogisticRegression, EvidenceSearch, log_evidence)
from skevidence.datasets import make_linear_regression, make_logistic_regression
from skevidence.models import LinearRegressionModel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
from bench_gmm_reference import make_clusters  # noqa: E402

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

METHODS = ["sgais", "ais", "smc", "nested", "sequential", "sequential-nested", "online-nested"]
# Every method in single precision; the default one in double precision too.
CASES = [(m, "float32") for m in METHODS] + [("sgais", "float64")]
REGRESSION = make_linear_regression(400, random_state=0)
IRIS = load_iris(return_X_y=True)
CLUSTERS = make_clusters(200, "separated", 0)


def common(dtype="float32"):
    return {"device": "cuda", "dtype": dtype, "random_state": 0}


def check_fitted(est):
    z, s = est.log_evidence_, est.log_evidence_std_
    assert isinstance(z, float) and np.isfinite(z), f"log_evidence_ = {z!r}"
    assert isinstance(s, float) and np.isfinite(s), f"log_evidence_std_ = {s!r}"
    assert pickle.loads(pickle.dumps(est)).log_evidence_ == z
    return est


@pytest.mark.parametrize("method, dtype", CASES)
def test_linear(method, dtype):
    X, y = REGRESSION
    est = check_fitted(EvidenceLinearRegression(method=method, n_particles=64,
                                                **common(dtype)).fit(X, y))
    pred = est.predict(X[:5])
    assert isinstance(pred, np.ndarray) and pred.shape == (5,), type(pred)
    est.score(X, y)
    if method in ("sgais", "sequential"):
        check_fitted(est.partial_fit(X[:50], y[:50]))


@pytest.mark.parametrize("method, dtype", CASES)
def test_logistic_iris(method, dtype):
    X, y = IRIS
    pipe = make_pipeline(StandardScaler(), EvidenceLogisticRegression(
        method=method, n_particles=64, **common(dtype))).fit(X, y)
    check_fitted(pipe[-1])
    proba = pipe.predict_proba(X[:5])
    assert isinstance(proba, np.ndarray) and np.allclose(proba.sum(1), 1.0)
    pipe.score(X, y)


@pytest.mark.parametrize("method, dtype", CASES)
def test_gmm(method, dtype):
    est = check_fitted(EvidenceGMM(n_components=3, method=method, n_particles=32,
                                   **common(dtype)).fit(CLUSTERS))
    labels = est.predict(CLUSTERS[:5])
    assert isinstance(labels, np.ndarray) and labels.shape == (5,)
    est.score_samples(CLUSTERS[:5])


def test_logistic_growth():
    est = EvidenceLogisticRegression(n_particles=32, max_particles=128, **common())
    check_fitted(est.fit(*make_logistic_regression(3000, random_state=0)))


def test_past_the_warm_up():
    # The stochastic-gradient phase of each model (past 5000 rows the logistic
    # chunk's term is subsampled).
    check_fitted(EvidenceLogisticRegression(**common()).fit(
        *make_logistic_regression(8000, random_state=0)))
    check_fitted(EvidenceGMM(n_components=3, **common()).fit(
        make_clusters(5000, "separated", 0)))
    check_fitted(EvidenceLinearRegression(**common()).fit(
        *make_linear_regression(5000, random_state=0)))


def test_averager_and_search():
    X, y = REGRESSION
    BayesianModelAverager([
        ("weak", EvidenceLinearRegression(n_particles=32, **common())),
        ("strong", EvidenceLinearRegression(n_particles=32, prior_std=0.1, **common()))],
    ).fit(X, y).predict(X[:5])
    EvidenceSearch(EvidenceGMM(n_particles=32, **common()),
                   {"n_components": [1, 2, 3]}).fit(CLUSTERS)


def test_user_model():
    X, y = REGRESSION
    result = log_evidence(LinearRegressionModel(n_features=X.shape[1]), X, y, n_particles=64,
                          **common())
    assert np.isfinite(result.log_evidence) and isinstance(result.particles, np.ndarray)


def test_same_seed_same_numbers():
    X, y = make_logistic_regression(2000, random_state=0)
    a = EvidenceLogisticRegression(**common()).fit(X, y).log_evidence_
    b = EvidenceLogisticRegression(**common()).fit(X, y).log_evidence_
    assert a == b, (a, b)
