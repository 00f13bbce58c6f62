"""The baseline evidence estimators behind ``method=``: accuracy against the
closed form, agreement on a logistic model, and the API around them."""

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import make_linear_regression, make_logistic_regression
from skevidence.inference import ENGINES, Engine

METHODS = list(ENGINES)
# How far each method may err against the closed form: max(floor, 3 std)
# (the bar; the sequential estimator trades a bias for variance).
FLOOR = {"sequential": 3.0, "sequential-nested": 3.0}
# Fewer moves where a fit costs most (one nested-sampling run per chunk).
CHEAPER = {"online-nested": dict(n_burnin=8)}

# The paper's linear model (known noise, unit prior); 300 observations in
# chunks of 100, so that the online methods take several chunks.
PAPER = dict(noise_std=1.0, prior_std=1.0, intercept_prior_mean=0.0)
SMALL = dict(n_particles=64, batch_size=100, random_state=0)


@pytest.fixture(scope="module")
def linear_small():
    return make_linear_regression(300, random_state=3)


@pytest.mark.parametrize("method", METHODS)
def test_every_method_matches_the_closed_form(method, linear_small):
    X, y = linear_small
    est = EvidenceLinearRegression(method=method, **PAPER,
                                   **{**SMALL, **CHEAPER.get(method, {})}).fit(X, y)
    exact = est.exact_log_evidence(X, y)
    std = est.log_evidence_std_
    # Over seeds 0-5 the errors of every method stayed within 2 of its std
    # (nested: std about 0.5 at 64 live points, errors 0.05-0.6).
    assert 0.0 < std < 5.0
    assert abs(est.log_evidence_ - exact) <= max(FLOOR.get(method, 1.0), 3.0 * std)
    assert est.evidence_trace_["n_seen"][-1] == 300
    assert est.particles_.shape == (64, 6)
    assert est.score(X, y) > 0.5  # prediction works from the particles


@pytest.fixture(scope="module")
def logistic_fits():
    X, y = make_logistic_regression(200, n_features=2, n_classes=2, random_state=1)
    fits = {}
    for method in METHODS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fits[method] = EvidenceLogisticRegression(
                method=method, **{**SMALL, **CHEAPER.get(method, {})}).fit(X, y)
    return fits, X, y


def test_methods_agree_on_a_logistic_model(logistic_fits):
    fits, X, y = logistic_fits
    for a in METHODS:
        for b in METHODS:
            ea, eb = fits[a], fits[b]
            combined = np.hypot(ea.log_evidence_std_, eb.log_evidence_std_)
            floor = max(FLOOR.get(a, 1.0), FLOOR.get(b, 1.0))
            assert abs(ea.log_evidence_ - eb.log_evidence_) <= max(floor, 3.0 * combined), (a, b)
    for est in fits.values():
        assert est.score(X, y) > 0.7


def test_log_evidence_adds_half_the_variance_of_its_importance_weights(logistic_fits):
    fits, _, _ = logistic_fits
    for method, est in fits.items():
        raw = est._state.log_evidence  # the log of the unbiased estimate
        # The engine's estimate (sgais's log_evidence_ combines it with the check).
        added = est.diagnostics_["annealing_log_evidence"] - raw
        half_var = est.diagnostics_["annealing_log_evidence_std"]**2 / 2
        if method in ("nested", "online-nested"):
            assert added == 0.0, method  # nested sampling's estimate is no mean of weights
        elif method == "sequential-nested":
            assert 0.0 < added < half_var  # the sequential part only
        else:
            assert added == pytest.approx(half_var, rel=1e-9), method
        assert est.evidence_trace_["log_evidence"][-1] == est.diagnostics_["annealing_log_evidence"]


def test_every_method_declares_the_engine_contract():
    for name, engine in ENGINES.items():
        assert isinstance(engine, Engine) and engine.name == name
        assert all(callable(f) for f in (engine.init, engine.update))
    bounded = sorted(name for name, engine in ENGINES.items()
                     if not engine.keeps_every_observation)
    assert bounded == ["sequential", "sgais"]


def test_unknown_method_and_bounded_store_are_rejected():
    X, y = make_linear_regression(50, random_state=0)
    with pytest.raises(ValueError, match="method"):
        EvidenceLinearRegression(method="mcmc").fit(X, y)
    for method in [name for name, engine in ENGINES.items() if engine.keeps_every_observation]:
        with pytest.raises(ValueError, match="reservoir_size"):
            EvidenceLinearRegression(method=method, reservoir_size=20).fit(X, y)


def test_partial_fit_cannot_switch_method_and_loses_nothing():
    X, y = make_linear_regression(100, random_state=0)
    est = EvidenceLinearRegression(method="smc", n_particles=16, n_burnin=2, batch_size=50,
                                   random_state=0).partial_fit(X[:50], y[:50])
    before = (est.log_evidence_, est.particles_.copy(), est._state.n_seen)
    est.set_params(method="ais")
    with pytest.raises(ValueError, match="partial_fit cannot continue"):
        est.partial_fit(X[50:], y[50:])
    assert (est.log_evidence_, est._state.n_seen) == (before[0], before[2])
    np.testing.assert_array_equal(est.particles_, before[1])


@pytest.mark.parametrize("method", ["ais", "nested"])
def test_full_data_methods_refit_on_partial_fit(method):
    X, y = make_linear_regression(120, random_state=0)
    est = EvidenceLinearRegression(method=method, **PAPER, n_particles=32, n_burnin=4,
                                   random_state=0)
    est.partial_fit(X[:60], y[:60])
    with pytest.warns(UserWarning, match="not online"):
        est.partial_fit(X[60:], y[60:])
    assert est.n_samples_seen_ == 120
    np.testing.assert_array_equal(est.evidence_trace_["n_seen"], [60, 120])
    exact = est.exact_log_evidence(X, y)
    # Refit on all 120 rows: within the bar of the full fit.
    assert abs(est.log_evidence_ - exact) <= max(1.0, 3.0 * est.log_evidence_std_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["smc", "sequential", "online-nested"])
def test_online_methods_give_one_calls_numbers_when_streamed(method):
    # Chunk boundaries depend only on the stream position (30 is one for all three).
    X, y = make_linear_regression(60, random_state=0)
    params = dict(method=method, **PAPER, n_particles=16, n_burnin=2, batch_size=30,
                  random_state=0)
    whole = EvidenceLinearRegression(**params).fit(X, y)
    streamed = EvidenceLinearRegression(**params)
    streamed.partial_fit(X[:30], y[:30]).partial_fit(X[30:], y[30:])
    assert streamed.log_evidence_ == whole.log_evidence_
    np.testing.assert_array_equal(streamed.particles_, whole.particles_)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_same_seed_same_numbers():
    X, y = make_linear_regression(60, random_state=0)
    for method in sorted(set(ENGINES) - {"sgais"}):
        a, b = (EvidenceLinearRegression(method=method, **PAPER, n_particles=16, n_burnin=2,
                                         batch_size=30, random_state=5).fit(X, y)
                for _ in range(2))
        assert a.log_evidence_ == b.log_evidence_, method


def test_sequential_warns_when_one_particle_carries_a_chunk():
    # Two clusters in order: the second chunk lies where the particles of
    # the first have no mass, and its predictive rests on one particle.
    # With 200 rows a chunk the ESS was 1.0-1.09 for random_state 0-4
    # (with 60 rows 1.0-3.0: some seeds warned of a missed mode instead).
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-2, 0.5, (200, 1)), rng.normal(2, 0.5, (200, 1))])
    gmm = EvidenceGMM(n_init=1, n_components=2, method="sequential", n_particles=32, n_burnin=4,
                      batch_size=200, random_state=0)
    with pytest.warns(ConvergenceWarning, match="predictive estimate rested on an ESS"):
        gmm.fit(X)
    assert gmm.evidence_trace_["ess"].min() < 2.0


@pytest.mark.parametrize("method", ["ais", "nested"])
def test_mixture_runs_with_every_full_data_method(method):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-2, 0.5, (60, 1)), rng.normal(2, 0.5, (60, 1))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        gmm = EvidenceGMM(n_init=1, n_components=2, method=method, n_particles=32, n_burnin=4,
                          random_state=0).fit(X)
    assert np.isfinite(gmm.log_evidence_) and np.isfinite(gmm.log_evidence_std_)
    assert gmm.score_samples(X).shape == (120,)


@pytest.mark.parametrize("method", ["sequential", "online-nested"])
def test_adjusted_moves_adapt_their_step(method):
    # The baselines that call the engine's adjusted moves must take the
    # adapted step from the move's result: with the initial 0.5 kept,
    # "sequential" lost every particle after 1500 observations at N = 2000.
    X, y = make_linear_regression(200, random_state=0)
    est = EvidenceLinearRegression(method=method, **PAPER, **{**SMALL, **CHEAPER.get(method, {})})
    est.fit(X, y)
    assert est._state.exact_step_size != 0.5
    assert np.isfinite(est.diagnostics_["adjusted_acceptance"])


def test_nested_trajectories_follow_the_dimension_and_n_burnin(monkeypatch):
    # A new live point is a copy of a survivor that must decorrelate in every
    # direction: max(n_burnin, n_params) / 2 trajectories, so a larger
    # n_burnin still buys more (docs/user_guide/design_notes.rst, "nested-moves").
    from skevidence.inference import nested
    from skevidence.inference.config import SGAISConfig

    assert nested.n_trajectories(SGAISConfig(n_burnin=20), 6) == 10
    assert nested.n_trajectories(SGAISConfig(n_burnin=20), 44) == 22
    assert nested.n_trajectories(SGAISConfig(n_burnin=100), 44) == 50
    seen = []
    run = nested.nested_sampling

    def spy(*args, n_trajectories, **kwargs):
        seen.append(n_trajectories)
        return run(*args, n_trajectories=n_trajectories, **kwargs)

    monkeypatch.setattr(nested, "nested_sampling", spy)
    X, y = make_logistic_regression(60, n_features=3, n_classes=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 16 live points
        EvidenceLogisticRegression(method="nested", n_particles=16, n_burnin=4,
                                   random_state=0).fit(X, y)
    assert seen == [6]  # 12 parameters, more than n_burnin
