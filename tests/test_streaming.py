"""Streams through pipelines (skevidence/_streaming.py) and the meta-estimators over them."""

import copy
import warnings

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.decomposition import PCA
from sklearn.manifold import TSNE
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import (
    FunctionTransformer,
    PolynomialFeatures,
    SplineTransformer,
    StandardScaler,
)

from skevidence import EvidenceLinearRegression
from skevidence.ensemble import BayesianModelAverager
from skevidence.model_selection import EvidenceSearch
from tests.conftest import CHEAP, paper_linear_data


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(loc=2.0, scale=3.0, size=(300, 3))
    y = X @ [1.0, -0.5, 0.2] + 0.3 + rng.normal(size=300)
    return X, y


def test_quick_start_streamed_matches_frozen_features():
    # The README's comparison, fed in 10 batches: the scaler is fitted on
    # the first 45 rows and then frozen, so each candidate's evidence is
    # that of its model on those frozen features. Over random_state 0, 1, 2
    # the streamed log evidences lay 0.83, -0.23, 0.21 (degree 1; std
    # 0.23-0.24) and 1.25, -1.02, -0.20 (degree 2; std 0.51-0.53) of their
    # std from the exact values: 4 std bounds that spread.
    X, y = load_diabetes(return_X_y=True)
    model = make_pipeline(PolynomialFeatures(include_bias=False), StandardScaler(),
                          EvidenceLinearRegression(random_state=0))
    grid = {"polynomialfeatures__degree": [1, 2]}
    streamed = EvidenceSearch(model, grid)
    for X_batch, y_batch in zip(np.array_split(X, 10), np.array_split(y, 10)):
        streamed.partial_fit(X_batch, y_batch)
    one_shot = EvidenceSearch(model, grid).fit(X, y)
    r = streamed.results_
    np.testing.assert_array_equal(r["rank"], one_shot.results_["rank"])
    assert streamed.best_params_ == {"polynomialfeatures__degree": 1}
    assert np.all(r["n_samples_seen"] == len(y))
    for candidate, log_z, std in zip(streamed.candidates_, r["log_evidence"],
                                     r["log_evidence_std"]):
        scaler = candidate.named_steps["standardscaler"]
        assert scaler.n_samples_seen_ == 45  # fitted on the first batch only
        exact = candidate[-1].exact_log_evidence(candidate[:-1].transform(X), y)
        assert abs(log_z - exact) < 4 * std, (log_z, exact, std)


def test_stateless_and_frozen_steps(data):
    X, y = data
    pipe = make_pipeline(FunctionTransformer(np.tanh), PCA(n_components=2),
                         EvidenceLinearRegression(**CHEAP))
    search = EvidenceSearch(pipe, {"evidencelinearregression__prior_std": [0.3, 1.0]})
    search.partial_fit(X[:100], y[:100])
    pcas = [c.named_steps["pca"] for c in search.candidates_]
    components = [pca.components_.copy() for pca in pcas]
    search.partial_fit(X[100:], y[100:])
    for candidate, pca, before, params in zip(search.candidates_, pcas, components,
                                              search.results_["params"]):
        assert candidate.named_steps["pca"] is pca
        np.testing.assert_array_equal(pca.components_, before)  # frozen
        # The same as streaming the last step on the frozen features by hand.
        Xt = candidate[:-1].transform(X)
        ref = EvidenceLinearRegression(**CHEAP).set_params(
            prior_std=params["evidencelinearregression__prior_std"])
        ref.partial_fit(Xt[:100], y[:100]).partial_fit(Xt[100:], y[100:])
        assert candidate[-1].log_evidence_ == ref.log_evidence_
    assert search.predict(X[:4]).shape == (4,)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")  # CHEAP settings
def test_spline_with_given_knots_is_stateless(data):
    # Given knots, the spline basis does not depend on the batch that
    # fitted it: the streamed candidate equals the last step streamed on
    # the features of the whole data.
    X, y = data
    knots = np.tile(np.linspace(-12.0, 16.0, 5), (3, 1)).T
    spline = SplineTransformer(knots=knots, extrapolation="linear")
    pipe = make_pipeline(spline, EvidenceLinearRegression(**CHEAP))
    search = EvidenceSearch(pipe, {"splinetransformer__degree": [1, 3]})
    search.partial_fit(X[:100], y[:100]).partial_fit(X[100:], y[100:])
    for candidate, params in zip(search.candidates_, search.results_["params"]):
        Xt = clone(spline).set_params(degree=params["splinetransformer__degree"]) \
            .fit(X).transform(X)
        np.testing.assert_array_equal(candidate[:-1].transform(X), Xt)
        ref = EvidenceLinearRegression(**CHEAP)
        ref.partial_fit(Xt[:100], y[:100]).partial_fit(Xt[100:], y[100:])
        assert candidate[-1].log_evidence_ == ref.log_evidence_


def test_partial_fit_after_fit_keeps_the_fitted_transformers(data):
    X, y = data
    members = [("bare", EvidenceLinearRegression(**CHEAP)),
               ("scaled", make_pipeline(StandardScaler(), EvidenceLinearRegression(**CHEAP)))]
    bma = BayesianModelAverager(members).fit(X[:200], y[:200])
    scaler = bma.named_estimators_["scaled"][0]
    mean = scaler.mean_.copy()
    bma.partial_fit(X[200:], y[200:])
    np.testing.assert_array_equal(scaler.mean_, mean)
    assert bma.n_samples_seen_ == 300


def test_refused_transformer_changes_nothing(data):
    X, y = data
    members = [("bare", EvidenceLinearRegression(**CHEAP)),
               ("embedded", make_pipeline(TSNE(n_components=1),
                                          EvidenceLinearRegression(**CHEAP)))]
    bma = BayesianModelAverager(members)
    with pytest.raises(ValueError, match=r"step 'tsne' \(TSNE\) of 'embedded' cannot stream: "
                                         "it has no transform"):
        bma.partial_fit(X[:100], y[:100])
    assert not hasattr(bma, "estimators_")
    search = EvidenceSearch(members[1][1], {"tsne__perplexity": [5.0]})
    with pytest.raises(ValueError, match="no transform"):
        search.partial_fit(X[:100], y[:100])
    assert not hasattr(search, "results_")


def test_failed_partial_fit_leaves_meta_estimators_as_they_were(data):
    X, y = data
    X = np.abs(X) + 0.1
    logged = make_pipeline(FunctionTransformer(np.log), EvidenceLinearRegression(**CHEAP))
    bma = BayesianModelAverager([("bare", EvidenceLinearRegression(**CHEAP)),
                                 ("logged", logged)]).partial_fit(X[:100], y[:100])
    search = EvidenceSearch(logged, {"functiontransformer__func": [np.abs, np.log]})
    search.partial_fit(X[:100], y[:100])
    # A negative entry: the first member of each (bare; abs) takes the
    # batch before the log one rejects the NaN it makes.
    X_bad = X[100:150].copy()
    X_bad[3, 0] = -1.0
    for meta, members_of in ((bma, lambda m: m.estimators_),
                             (search, lambda m: m.candidates_)):
        before = dict(vars(meta))
        finals = [dict(vars(m[-1] if hasattr(m, "steps") else m)) for m in members_of(meta)]
        with np.errstate(invalid="ignore"), pytest.raises(ValueError, match="NaN"):
            meta.partial_fit(X_bad, y[100:150])
        assert vars(meta).keys() == before.keys()
        for key, value in before.items():
            assert vars(meta)[key] is value, key
        for member, saved in zip(members_of(meta), finals):
            final = member[-1] if hasattr(member, "steps") else member
            assert final.n_samples_seen_ == 100
            assert vars(final).keys() == saved.keys()
            for key, value in saved.items():
                assert vars(final)[key] is value, key
        meta.partial_fit(X[100:], y[100:])  # and it goes on from there
        assert all((m[-1] if hasattr(m, "steps") else m).n_samples_seen_ == 300
                   for m in members_of(meta))


# -- weights that follow a changing stream -----------------------------------------


def _changing_stream(seed):
    """1-D x, 4000 rows: ``y = x + 3 x^2 + noise`` for the first 2000, then ``x + noise``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(4000, 1))
    y = x[:, 0] + rng.normal(scale=0.3, size=4000)
    y[:2000] += 3.0 * x[:2000, 0] ** 2
    return x, y


@pytest.mark.parametrize("seed", [0, 1])
def test_forgetting_follows_the_change(seed):
    # Over seeds 0, 1, 2 the linear member's weight with forgetting=0.9 was
    # 0 (in double precision) at the change and above 0.999999 from 400,
    # 400, 200 rows after it (the bar: 0.9 within 1000 rows); without
    # forgetting the quadratic member still led by 1170-1450 nats of
    # evidence at row 3000 and by 990-1120 at the end.
    x, y = _changing_stream(seed)
    settings = dict(n_particles=32, n_burnin=5, random_state=seed)

    def members():
        return [("linear", EvidenceLinearRegression(**settings)),
                ("quadratic", make_pipeline(PolynomialFeatures(2),
                                            EvidenceLinearRegression(**settings)))]

    forgetting = BayesianModelAverager(members(), forgetting=0.9)
    static = BayesianModelAverager(members())
    linear_weights, static_weights = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cheap settings: trust warnings are not the point
        for start in range(0, 4000, 200):
            batch = slice(start, start + 200)
            forgetting.partial_fit(x[batch], y[batch])
            static.partial_fit(x[batch], y[batch])
            linear_weights.append(forgetting.weights_[0])
            static_weights.append(static.weights_[0])
    linear_weights, static_weights = np.array(linear_weights), np.array(static_weights)
    assert np.all(linear_weights[:10] < 0.1)          # the quadratic law: quadratic leads
    assert np.all(linear_weights[14:] > 0.9)          # from 1000 rows after the change
    assert np.all(static_weights < 0.1)               # no forgetting: the past still rules
    # predict mixes the members with the current weights.
    X_new = np.linspace(-1, 1, 5)[:, None]
    means = [est.predict(X_new) for est in forgetting.estimators_]
    np.testing.assert_allclose(forgetting.predict(X_new),
                               forgetting.weights_ @ np.array(means), rtol=1e-12)


def test_forgetting_one_is_the_static_weights(data):
    # alpha = 1 telescopes to log prior + log evidence: equal up to the
    # rounding of a few additions of numbers of order |log evidence| (~500).
    X, y = data
    members = [("narrow", EvidenceLinearRegression(prior_std=0.3, **CHEAP)),
               ("wide", EvidenceLinearRegression(prior_std=1.0, **CHEAP))]
    prior = [0.3, 0.7]
    one = BayesianModelAverager(members, prior=prior, forgetting=1.0)
    none = BayesianModelAverager(members, prior=prior)
    for batch in np.array_split(np.arange(300), 3):
        one.partial_fit(X[batch], y[batch])
        none.partial_fit(X[batch], y[batch])
        np.testing.assert_allclose(one.weights_, none.weights_, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(one.log_evidences_, none.log_evidences_)


def test_forgetting_update_rule(data):
    X, y = data
    members = [("narrow", EvidenceLinearRegression(prior_std=0.3, **CHEAP)),
               ("wide", EvidenceLinearRegression(prior_std=1.0, **CHEAP))]
    alpha, prior = 0.5, np.array([0.2, 0.8])
    bma = BayesianModelAverager(members, prior=prior, forgetting=alpha)
    log_w, past = np.log(prior), np.zeros(2)
    for batch in np.array_split(np.arange(300), 3):
        bma.partial_fit(X[batch], y[batch])
        log_w = alpha * log_w + bma.log_evidences_ - past
        log_w -= np.logaddexp.reduce(log_w)
        past = bma.log_evidences_
        np.testing.assert_allclose(bma.weights_, np.exp(log_w), rtol=1e-12)


@pytest.mark.parametrize("forgetting", [0.0, -0.5, 1.5, "fast"])
def test_forgetting_validated(data, forgetting):
    X, y = data
    bma = BayesianModelAverager([("a", EvidenceLinearRegression(**CHEAP))],
                                forgetting=forgetting)
    with pytest.raises(ValueError, match="forgetting"):
        bma.partial_fit(X[:100], y[:100])
    assert not hasattr(bma, "estimators_")


def test_forgetting_clone_and_params():
    bma = BayesianModelAverager([("a", EvidenceLinearRegression(**CHEAP))], forgetting=0.8)
    assert bma.get_params()["forgetting"] == 0.8
    assert clone(bma).forgetting == 0.8
    assert bma.set_params(forgetting=None).forgetting is None


# -- distributed streams ----------------------------------------------------------------


def _partial_fit_task(model, X, y):
    # As dask_ml.wrappers.Incremental does: each block's task conditions a
    # copy of the model the previous task returned.
    model = copy.deepcopy(model)
    return model.partial_fit(X, y)


def test_dask_array_blocks_stream_on_a_local_cluster():
    # The chain of partial_fit tasks that dask_ml's Incremental builds over
    # a dask array's blocks, built by hand (so it runs without dask_ml) and
    # run on a local dask cluster. Over
    # random_state 0-4 the log evidence lay 0.38, -1.20, 0.97, 0.41, -1.65 of
    # its std (0.10-0.20) from the exact one: 4 std bounds that spread.
    da = pytest.importorskip("dask.array")
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    X, y = paper_linear_data(20000, 0)
    X_blocks = da.from_array(X, chunks=(2000, -1)).to_delayed().ravel()
    y_blocks = da.from_array(y, chunks=2000).to_delayed()
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None):
        model = dask.delayed(EvidenceLinearRegression(random_state=0))
        for X_block, y_block in zip(X_blocks, y_blocks):
            model = dask.delayed(_partial_fit_task)(model, X_block, y_block)
        est = model.compute()
    _assert_the_loops_numbers(est, X, y)


def _assert_the_loops_numbers(est, X, y, block=2000):
    """A stream fed through dask in ``block``-row blocks: within 4 std of the exact
    evidence, and the numbers of feeding the blocks to ``partial_fit`` in a loop
    (the stream's order and the estimator's seeded state travel with the model)."""
    assert est.n_samples_seen_ == len(y)
    exact = est.exact_log_evidence(X, y)
    assert abs(est.log_evidence_ - exact) < 4 * est.log_evidence_std_
    ref = EvidenceLinearRegression(random_state=0)
    for start in range(0, len(y), block):
        ref.partial_fit(X[start:start + block], y[start:start + block])
    assert est.log_evidence_ == ref.log_evidence_


def test_dask_ml_incremental_on_a_local_cluster():
    # dask_ml's own wrapper over the same stream: Incremental feeds the
    # dask array's blocks in order (shuffle_blocks=False) to partial_fit on
    # the cluster. Over random_state 0, 1, 2 the log evidence lay 0.38,
    # 1.04, 2.77 of its std (0.11-0.13) from the exact one: 4 std bounds
    # that spread.
    dask_ml_wrappers = pytest.importorskip("dask_ml.wrappers")
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    X, y = paper_linear_data(20000, 0)
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1,
                            dashboard_address=None):
        inc = dask_ml_wrappers.Incremental(EvidenceLinearRegression(random_state=0),
                                           shuffle_blocks=False)
        inc.fit(da.from_array(X, chunks=(2000, -1)), da.from_array(y, chunks=2000))
    _assert_the_loops_numbers(inc.estimator_, X, y)
