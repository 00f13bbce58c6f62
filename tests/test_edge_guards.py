"""Guards at the edge: bad settings and data fail early and clearly;
probabilities are probabilities; predictions in blocks equal one block."""

import dataclasses
import types
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import log_loss
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import skevidence._posterior as posterior
import skevidence._validation as validation
from skevidence import (BayesianModelAverager, EvidenceGMM, EvidenceLinearRegression,
                        EvidenceLogisticRegression)
from skevidence.inference import kernels, sgais

CHEAP = dict(n_particles=16, n_burnin=2, random_state=0)


@pytest.fixture(scope="module")
def wine():
    return load_wine(return_X_y=True)


@pytest.fixture(scope="module")
def reg_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    return X, X @ [1.0, -2.0, 0.5] + rng.normal(size=300)


def fitted_state(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") or k.startswith("_")}


def assert_unchanged(before, est):
    after = fitted_state(est)
    assert before.keys() == after.keys()
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(after[key], value)
        else:
            assert after[key] is value or after[key] == value


# -- n_particles, dtype, device ------------------------------------------------------


def test_n_particles_below_two_raises_and_below_floor_warns(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match=r"n_particles.*\[2, inf\)"):
        EvidenceLinearRegression(n_particles=1).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="n_particles=8 is below 16.*nats"):
        EvidenceLinearRegression(n_particles=8, n_burnin=2, random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        EvidenceLinearRegression(**CHEAP).fit(X, y)  # 16 is at the floor: no warning


@pytest.mark.parametrize("options, message", [
    ({"n_island": 4}, r"unknown settings \['n_island'\].*n_islands"),
    ({"n_particles": 64}, r"sets \['n_particles'\].*parameters"),
    ({"n_islands": 0}, r"'n_islands' parameter of SGAISConfig must be an int in the range \[1, inf\)"),
    ({"exact_warmup": "no"}, r"'exact_warmup' parameter of SGAISConfig must be an instance of 'bool'"),
    ({"integrator": "BAOAB"}, r"'integrator' parameter of SGAISConfig must be a str among"),
])
def test_bad_engine_options_raise_before_any_state_changes(reg_data, options, message):
    X, y = reg_data
    reg = EvidenceLinearRegression(**CHEAP).fit(X, y)
    before = fitted_state(reg)
    with pytest.raises(ValueError, match=message):
        reg.set_params(engine_options=options).partial_fit(X, y)
    assert_unchanged(before, reg)


def test_engine_options_override_the_model_defaults_per_instance(reg_data):
    X, _ = reg_data
    plain = EvidenceGMM(n_components=2, n_init=1, **CHEAP).fit(X)
    islands = EvidenceGMM(n_components=2, n_init=1, engine_options={"n_islands": 2},
                          **CHEAP).fit(X)
    assert islands._config.n_islands == 2 and islands.diagnostics_["n_islands"] == 2
    # The model's own settings stay, and no other instance is affected.
    assert islands._config.precondition == plain._config.precondition == "model"
    assert plain._config.n_islands == 1 and EvidenceGMM._engine_defaults.get("n_islands") is None


@pytest.mark.parametrize("dtype", [np.float32, np.dtype("float32"), torch.float32, "float32"])
def test_numpy_and_torch_dtypes_are_accepted(reg_data, dtype):
    X, y = reg_data
    reference = EvidenceLinearRegression(dtype="float32", **CHEAP).fit(X, y)
    est = EvidenceLinearRegression(dtype=dtype, **CHEAP).fit(X, y)
    assert est.log_evidence_ == reference.log_evidence_  # same precision, same numbers


@pytest.mark.parametrize("dtype", ["int64", np.int32, torch.int64, "float16", None])
def test_other_dtypes_are_rejected(reg_data, dtype):
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        EvidenceLinearRegression(dtype=dtype).fit(*reg_data)


def test_unavailable_cuda_fails_at_validation_and_says_how_to_install(reg_data, monkeypatch):
    X, y = reg_data
    est = EvidenceLinearRegression(**CHEAP).fit(X, y)
    before = fitted_state(est)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    est.set_params(device="cuda")
    for call in (lambda: est.fit(X, y), lambda: est.partial_fit(X, y)):
        with pytest.raises(ValueError, match="pip install torch --index-url"):
            call()
    assert_unchanged(before, est)
    with pytest.raises(ValueError, match="not a torch device"):
        EvidenceLinearRegression(device="no-such-device").fit(X, y)


# -- data beyond what float arithmetic supports ----------------------------------------


@pytest.mark.parametrize("make", [
    lambda: EvidenceLogisticRegression(**CHEAP),
    lambda: EvidenceLinearRegression(**CHEAP),
    lambda: EvidenceGMM(n_components=1, **CHEAP),
])
def test_huge_features_raise_before_any_state_changes(reg_data, make):
    X, y = reg_data
    target = (y > 0).astype(int) if isinstance(make(), EvidenceLogisticRegression) else y
    est = make().fit(X, target)
    before = fitted_state(est)
    for call in (est.fit, est.partial_fit):
        with pytest.raises(ValueError, match="e\\+300, beyond.*Rescale"):
            call(X * 1e300, target)
        assert_unchanged(before, est)


def test_float32_bound_and_huge_targets(reg_data):
    X, y = reg_data
    with pytest.raises(ValueError, match="float32 computations.*dtype='float64'"):
        EvidenceLinearRegression(dtype="float32", **CHEAP).fit(X * 1e10, y)
    with pytest.raises(ValueError, match="^y has entries.*in a pipeline\.$"):
        EvidenceLinearRegression(**CHEAP).fit(X, y * 1e300)


def test_engine_failures_name_the_data_scale():
    state = types.SimpleNamespace(log_W=np.log(np.full(4, 0.25)), n_seen=500)
    with pytest.raises(FloatingPointError, match="scale.*StandardScaler"):
        sgais._reweight(state, np.full(4, -np.inf), 1.0)
    state = types.SimpleNamespace(log_W=state.log_W, n_seen=500,
                                  theta=torch.full((4, 2), float("nan")))
    with pytest.raises(FloatingPointError, match="scale.*learning_rate"):
        sgais._discard_diverged(state)
    with pytest.raises(FloatingPointError, match="scale.*learning_rate.*n_particles"):
        kernels.covariance_preconditioner(torch.full((4, 2), float("nan"), dtype=torch.float64),
                                          torch.full((4,), 0.25, dtype=torch.float64))


# -- unscaled features -------------------------------------------------------------------


def test_logistic_warns_on_unscaled_features_only(wine):
    X, y = wine
    with pytest.warns(UserWarning, match="features 0 .*12 \\(810\\).*StandardScaler"):
        EvidenceLogisticRegression(**CHEAP).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_pipeline(StandardScaler(), EvidenceLogisticRegression(**CHEAP)).fit(X, y)


# -- probabilities are probabilities ---------------------------------------------------


def test_normalize_proba_removes_rounding_above_one():
    raw = np.array([[1.0000000000000004, 1e-300], [0.3, 0.7000000000000002], [0.0, 1.0]])
    proba = validation.normalize_proba(raw)
    assert proba.max() <= 1.0 and proba.min() >= 0.0
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=0, atol=2e-16)


def assert_probabilities(proba):
    assert np.all((proba >= 0.0) & (proba <= 1.0))
    # a row of k terms, normalised by their float sum, sums to 1 within k ulps
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=0, atol=proba.shape[1] * 2.3e-16)


def test_wine_probabilities_work_with_log_loss_and_scorers(wine):
    X, y = wine
    pipe = make_pipeline(StandardScaler(),
                         EvidenceLogisticRegression(prior_std=10, n_particles=32, n_burnin=4,
                                                    random_state=0))
    proba = pipe.fit(X, y).predict_proba(X)
    assert_probabilities(proba)
    assert np.isfinite(log_loss(y, proba))
    assert np.all(np.exp(pipe.predict_log_proba(X)) <= 1.0)
    scores = cross_val_score(pipe, X, y, scoring="neg_log_loss", cv=3)
    assert np.all(np.isfinite(scores))


def test_gmm_and_averager_probabilities(wine):
    X, y = wine
    Xs = StandardScaler().fit_transform(X)[:, :2]
    gmm = EvidenceGMM(n_components=3, **CHEAP).fit(Xs)
    assert_probabilities(gmm.predict_proba(Xs))
    members = [(f"prior{s}", EvidenceLogisticRegression(prior_std=s, **CHEAP)) for s in (1, 10)]
    bma = BayesianModelAverager(members).fit(Xs, y)
    assert_probabilities(bma.predict_proba(Xs))
    assert np.all(bma.predict_log_proba(Xs) <= 0.0)


# -- predictions in blocks -------------------------------------------------------------


def test_blocked_predictions_equal_one_block(wine, monkeypatch):
    X, y = wine
    Xs = StandardScaler().fit_transform(X)[:, :3]
    clf = EvidenceLogisticRegression(**CHEAP).fit(Xs, y)
    reg = EvidenceLinearRegression(**CHEAP).fit(Xs, Xs[:, 0] + y)
    gmm = EvidenceGMM(n_components=2, **CHEAP).fit(Xs)
    outputs = {
        "log_proba": lambda: clf.predict_log_proba(Xs),
        "proba": lambda: clf.predict_proba(Xs),
        "decision": lambda: clf.decision_function(Xs),
        "labels": lambda: clf.predict(Xs),
        "mean_std": lambda: np.stack(reg.predict(Xs, return_std=True)),
        "density": lambda: gmm.score_samples(Xs),
        "components": lambda: gmm.predict_proba(Xs),
    }
    whole = {name: f() for name, f in outputs.items()}
    # 16 particles x 3 classes: blocks of 5 rows, the last one shorter
    monkeypatch.setattr(posterior, "_PREDICT_BLOCK_ELEMENTS", 16 * 3 * 5)
    for name, f in outputs.items():
        # rowwise arithmetic: blocks change nothing but the matrix kernels'
        # summation order (relative differences of a few ulps)
        np.testing.assert_allclose(f(), whole[name], rtol=1e-12, atol=1e-300, err_msg=name)


@pytest.mark.parametrize("size", [20, 499, 999])
def test_reservoir_smaller_than_the_warmup_is_rejected_before_state_changes(reg_data, size):
    # A store below max(batch_size, warmup_size) = 1000 ends the exact
    # warm-up early; 499 and 400 gave evidences 13 and 300 nats off.
    X, y = reg_data
    reg = EvidenceLinearRegression(**CHEAP).fit(X, y)
    before = fitted_state(reg)
    with pytest.raises(ValueError, match="reservoir_size"):
        reg.set_params(reservoir_size=size).partial_fit(X, y)
    assert fitted_state(reg).keys() == before.keys()
    assert reg.log_evidence_ == before["log_evidence_"]


def test_engine_settings_are_declared_once():
    # One table of constraints for every engine setting; the estimators'
    # parameters of the same name use those very objects.
    from skevidence.inference.config import CONSTRAINTS, SGAISConfig

    names = {f.name for f in dataclasses.fields(SGAISConfig)}
    assert set(CONSTRAINTS) == names
    shared = set(EvidenceLinearRegression._parameter_constraints) & names
    assert {"n_particles", "batch_size", "learning_rate", "reservoir_size"} <= shared
    for name in shared:
        assert EvidenceLinearRegression._parameter_constraints[name] is CONSTRAINTS[name]
    for bad in (dict(n_particles=True), dict(learning_rate=False), dict(move_ess=-0.1)):
        with pytest.raises(ValueError, match="parameter of SGAISConfig"):
            SGAISConfig(**bad)
