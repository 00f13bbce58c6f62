"""torch's thread count is scoped to every fit and prediction, and restored.

conftest.py pins torch to one thread for the whole suite, so these tests
set another count outside the estimator and check both sides of the scope.
"""

import dataclasses

import numpy as np
import pytest
import torch
from joblib import parallel_backend

import skevidence
from skevidence import EvidenceLinearRegression, EvidenceLogisticRegression, EvidenceSearch
from skevidence.inference import ENGINES
from tests.conftest import CHEAP


@pytest.fixture(autouse=True)
def default_thread_setting(monkeypatch):
    """These tests are of the default count: a SKEVIDENCE_NUM_THREADS set for the
    whole run (to run the suite with two threads) does not apply to them."""
    monkeypatch.delenv("SKEVIDENCE_NUM_THREADS", raising=False)


def replace_sgais_update(monkeypatch, update):
    """Run ``update`` in place of SGAIS's, through the registry the estimators read."""
    monkeypatch.setitem(ENGINES, "sgais", dataclasses.replace(ENGINES["sgais"], update=update))


@pytest.fixture
def outside_threads():
    """torch at 2 threads outside the estimators during the test, 1 afterwards."""
    saved = torch.get_num_threads()
    torch.set_num_threads(2)
    yield 2
    torch.set_num_threads(saved)


@pytest.fixture
def threads_in_engine(monkeypatch):
    """Record torch's thread count every time the engine runs."""
    seen = []
    update = ENGINES["sgais"].update

    def recording_update(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return update(*args, **kwargs)

    replace_sgais_update(monkeypatch, recording_update)
    return seen


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2))
    return X, X @ [1.0, -1.0] + rng.normal(size=200)


def test_fit_runs_on_one_thread_and_restores_the_count(data, outside_threads, threads_in_engine):
    assert skevidence.get_config()["n_threads"] == 1
    est = EvidenceLinearRegression(**CHEAP).fit(*data)
    est.partial_fit(*data)
    assert threads_in_engine == [1, 1]
    assert torch.get_num_threads() == outside_threads


class Stop(Exception):
    pass


def test_config_context_sets_the_count_inside_fit(data, monkeypatch):
    # The engine is stopped once the count is recorded: two threads on a
    # shared CI core are slow, and a failed fit must restore the count too.
    seen = []

    def record_and_stop(*args, **kwargs):
        seen.append(torch.get_num_threads())
        raise Stop

    replace_sgais_update(monkeypatch, record_and_stop)
    with skevidence.config_context(n_threads=2):
        assert skevidence.get_config()["n_threads"] == 2
        with pytest.raises(Stop):
            EvidenceLinearRegression(**CHEAP).fit(*data)
        assert torch.get_num_threads() == 1
        with skevidence.config_context(n_threads=None), pytest.raises(Stop):
            EvidenceLinearRegression(**CHEAP).fit(*data)  # torch's own count: 1 (conftest)
    assert seen == [2, 1]
    assert skevidence.get_config()["n_threads"] == 1
    assert torch.get_num_threads() == 1


def test_set_config_and_environment_variable(monkeypatch):
    monkeypatch.setenv("SKEVIDENCE_NUM_THREADS", "3")
    assert skevidence.get_config()["n_threads"] == 3
    monkeypatch.setenv("SKEVIDENCE_NUM_THREADS", "none")
    assert skevidence.get_config()["n_threads"] is None
    skevidence.set_config(n_threads=2)
    try:
        assert skevidence.get_config()["n_threads"] == 2  # set_config wins over the variable
    finally:
        skevidence._config._config["n_threads"] = skevidence._config._UNSET
    monkeypatch.setenv("SKEVIDENCE_NUM_THREADS", "two")
    with pytest.raises(ValueError, match="SKEVIDENCE_NUM_THREADS"):
        skevidence.get_config()
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_threads"):
            skevidence.set_config(n_threads=bad)


def test_count_restored_after_a_failed_fit_and_after_predict(data, outside_threads,
                                                             monkeypatch):
    X, y = data
    with pytest.raises(ValueError):
        EvidenceLinearRegression(**CHEAP).fit(X, y[:10])
    assert torch.get_num_threads() == outside_threads
    clf = EvidenceLogisticRegression(**CHEAP).fit(X, y > 0)
    seen = []
    predict_log_proba = clf._model.predict_log_proba
    monkeypatch.setattr(clf._model, "predict_log_proba",
                        lambda *a: seen.append(torch.get_num_threads()) or predict_log_proba(*a))
    clf.predict_proba(X)
    assert seen == [1]
    assert torch.get_num_threads() == outside_threads


def test_concurrent_fits_under_threading_backend_stay_on_one_thread(data, outside_threads,
                                                                    threads_in_engine):
    # Python threads share torch's count: no fit may restore it while
    # another still runs, and the last one out restores the caller's.
    search = EvidenceSearch(EvidenceLinearRegression(**CHEAP),
                            {"prior_std": [0.5, 1.0, 2.0, 4.0]}, n_jobs=2)
    with parallel_backend("threading", n_jobs=2):
        search.fit(*data)
    assert len(threads_in_engine) >= 4 and set(threads_in_engine) == {1}
    assert torch.get_num_threads() == outside_threads
    assert skevidence._config._active == []
