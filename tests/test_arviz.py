"""to_inference_data: the fitted posterior and evidence as ArviZ data."""

import logging
import math
import sys
import warnings

import numpy as np
import pytest
import torch
from sklearn.datasets import load_diabetes
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import (EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression,
                        EvidenceModel)
from skevidence.datasets import make_logistic_regression
from skevidence.models import Model
from skevidence.models._linear_conjugate import conjugate_update

from tests.conftest import CHEAP, gaussian_blobs, paper_linear_data

az = pytest.importorskip("arviz")
pd = pytest.importorskip("pandas")
stats = pytest.importorskip("scipy.stats")


@pytest.fixture(scope="module")
def linear():
    X, y = paper_linear_data(400, seed=0, n_features=3)
    reg = EvidenceLinearRegression(**{**CHEAP, "n_particles": 128}).fit(X, y)
    return reg, X, y


def _groups(data):
    """Group names of an InferenceData (ArviZ 0.x) or a DataTree (ArviZ 1.x)."""
    if hasattr(data, "children"):
        return set(data.children)
    return set(data.groups())


def _elpd(loo):
    """The ELPD estimate of ``az.loo``'s result (``elpd_loo`` in ArviZ 0.x, ``elpd`` in 1.x)."""
    return loo.elpd_loo if hasattr(loo, "elpd_loo") else loo.elpd


def _natural_linear(reg):
    """Natural ``[coef, intercept, noise_variance]`` of ``reg.particles_`` ([coef, b, log s2])."""
    P = reg.particles_
    return np.column_stack([P[:, :-1], np.exp(P[:, -1])])


def _draw_means(idata):
    post = idata.posterior
    # (over every chain: the draws are one sample, grouped in chains)
    scalars = [post[name].values.mean() for name in ("intercept", "noise_variance")]
    return np.concatenate([post["coef"].values.mean((0, 1)), scalars])


def test_groups_netcdf_round_trip_and_summary(linear, tmp_path):
    reg, X, y = linear
    idata = reg.to_inference_data(X, y, random_state=0)
    assert idata.posterior["coef"].dims == ("chain", "draw", "feature")
    assert idata.posterior["coef"].shape == (4, 32, 3)
    assert idata.posterior["coef"].coords["feature"].values.tolist() == ["x0", "x1", "x2"]
    assert idata.posterior["intercept"].shape == (4, 32)
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "observation")
    assert idata.log_likelihood["y"].shape == (4, 32, 400)
    np.testing.assert_array_equal(idata.observed_data["y"].values, y)
    np.testing.assert_array_equal(idata.constant_data["X"].values, X)
    stats_ = idata.sample_stats
    np.testing.assert_array_equal(stats_["log_marginal_likelihood"].values[0],
                                  reg.evidence_trace_["log_evidence"])
    np.testing.assert_array_equal(stats_["log_marginal_likelihood_std"].values[0],
                                  reg.evidence_trace_["log_evidence_std"])
    np.testing.assert_array_equal(stats_["n_seen"].values, reg.evidence_trace_["n_seen"])
    assert float(stats_["log_evidence"][0]) == reg.log_evidence_
    assert float(stats_["log_evidence_std"][0]) == reg.log_evidence_std_
    assert "weight" not in stats_

    path = tmp_path / "linear.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    for group in ("posterior", "prior", "log_likelihood", "sample_stats", "observed_data",
                  "constant_data"):
        assert back[group].equals(idata[group]), group

    summary = az.summary(back, var_names=["coef", "intercept", "noise_variance"], kind="stats")
    assert list(summary.index) == ["coef[x0]", "coef[x1]", "coef[x2]", "intercept",
                                   "noise_variance"]


def test_without_data_only_posterior_prior_and_stats(linear):
    reg, _, _ = linear
    idata = reg.to_inference_data(random_state=0)
    assert _groups(idata) == {"posterior", "prior", "sample_stats"}


def test_prior_group_draws_from_the_stated_prior():
    # 4000 draws: the coefficients' prior means and standard deviations
    # (sigma g_j with sigma^2 ~ InvGamma(3, 3 s^2), so sd = g_j s sqrt(3 / 2),
    # the t's with 6 dof) within 5 standard errors (the mean's about 0.016
    # g_j s; the standard deviation's about 0.02 of it for a t_6).
    X, y = paper_linear_data(200, seed=1, n_features=3)
    mean, std = np.array([1.5, -2.0, 0.0]), np.array([0.3, 2.0, 1.0])
    reg = EvidenceLinearRegression(**{**CHEAP, "n_particles": 64}, prior_mean=mean,
                                   prior_std=std, intercept_prior_mean=0.5,
                                   intercept_prior_std=4.0, noise_prior_shape=3.0,
                                   noise_prior_scale=0.8).fit(X, y)
    idata = reg.to_inference_data(n_draws=4000, random_state=0)
    prior = idata.prior
    assert prior["coef"].dims == ("chain", "draw", "feature")
    assert prior["coef"].shape == (4, 1000, 3)
    coef = prior["coef"].values.reshape(4000, 3)
    sd = std * 0.8 * np.sqrt(1.5)
    np.testing.assert_allclose(coef.mean(0), mean, atol=5 * 0.016 * sd.max())
    np.testing.assert_allclose(coef.std(0) / sd, 1.0, atol=0.1)
    assert prior["intercept"].values.mean() == pytest.approx(0.5, abs=5 * 0.016 * 4 * 0.98)
    # E[1 / sigma^2] = 1 / s^2 under InvGamma(a, a s^2).
    assert np.mean(1.0 / prior["noise_variance"].values) == pytest.approx(1 / 0.64, rel=0.05)
    again = reg.to_inference_data(n_draws=4000, random_state=0)
    np.testing.assert_array_equal(again.prior["coef"].values.reshape(4000, 3), coef)


def test_resampled_draws_match_weighted_particles(linear):
    reg, _, _ = linear
    nat, W = _natural_linear(reg), reg.particle_weights_
    mean = W @ nat
    sd = np.sqrt(W @ np.square(nat - mean))
    # Resampling noise: over 300 resampling seeds of this fit (128 particles,
    # ESS 120) the draws' means were off the weighted means by 0.023-0.034
    # weighted sd (sd per coordinate), at most 0.086; on diabetes (ESS 92,
    # 200 seeds) by 0.02-0.06, at most 0.12. 0.25 is four of the largest sd.
    for seed in range(3):
        idata = reg.to_inference_data(random_state=seed)
        np.testing.assert_array_less(np.abs(_draw_means(idata) - mean) / sd, 0.25)
    more = reg.to_inference_data(n_draws=1000, random_state=0)
    assert more.posterior["coef"].shape == (4, 250, 3)
    with pytest.raises(ValueError, match="multiple of 4"):
        reg.to_inference_data(n_draws=1001)
    # The same random_state gives the same draws.
    a, b = (reg.to_inference_data(random_state=3).posterior["coef"].values for _ in range(2))
    np.testing.assert_array_equal(a, b)


def test_resample_false_keeps_particles_and_weights(linear):
    reg, X, y = linear
    idata = reg.to_inference_data(X, y, resample=False)
    W = idata.sample_stats["weight"].values[0]
    np.testing.assert_array_equal(W, reg.particle_weights_)
    assert idata.sample_stats["weight"].dims == ("chain", "draw")
    nat = _natural_linear(reg)
    post = idata.posterior
    draws = np.column_stack([post["coef"].values[0], post["intercept"].values[0],
                             post["noise_variance"].values[0]])
    np.testing.assert_allclose(draws, nat, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(W @ draws[:, :3], reg.coef_, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(W @ draws[:, 4], reg.noise_variance_, rtol=1e-10)
    # log_likelihood rows follow the particles: the model's own at particle 0
    theta = reg._particles_tensor()[:1]
    own = reg._model.log_likelihood(theta, (torch.as_tensor(X), torch.as_tensor(y)))[0].numpy()
    np.testing.assert_allclose(idata.log_likelihood["y"].values[0, 0], own, rtol=1e-12)
    with pytest.raises(ValueError, match="n_draws"):
        reg.to_inference_data(resample=False, n_draws=5)


def test_argument_errors(linear):
    reg, X, y = linear
    with pytest.raises(ValueError, match="n_draws"):
        reg.to_inference_data(n_draws=0)
    with pytest.raises(ValueError, match="without X"):
        reg.to_inference_data(y=y)
    with pytest.raises(ValueError, match="pass X and y"):
        reg.to_inference_data(X)
    with pytest.raises(ValueError, match="features"):
        reg.to_inference_data(X[:, :2], y)


def test_import_error_says_how_to_install(linear, monkeypatch):
    reg, _, _ = linear
    monkeypatch.setitem(sys.modules, "arviz", None)  # `import arviz` now raises ImportError
    with pytest.raises(ImportError, match="pip install arviz"):
        reg.to_inference_data()


@pytest.mark.parametrize("est", [EvidenceLinearRegression(), EvidenceLogisticRegression(),
                                 EvidenceGMM(), EvidenceModel(Model())])
def test_unfitted_raises(est):
    with pytest.raises(NotFittedError):
        est.to_inference_data()


def test_logistic_class_labels():
    X, y = make_logistic_regression(300, n_features=2, n_classes=3, random_state=0)
    labels = np.array(["ant", "bee", "cat"])[y]
    clf = EvidenceLogisticRegression(**CHEAP).fit(X, labels)
    idata = clf.to_inference_data(X, labels, random_state=0)
    coef = idata.posterior["coef"]
    assert coef.dims == ("chain", "draw", "class", "feature")
    assert coef.coords["class"].values.tolist() == ["ant", "bee", "cat"]
    assert idata.posterior["intercept"].dims == ("chain", "draw", "class")
    assert idata.observed_data["y"].values.tolist() == labels.tolist()
    # the pointwise log likelihood is the log probability of the observed class
    ll = idata.log_likelihood["y"].values
    assert ll.shape == (4, 4, 300)
    exact = clf.to_inference_data(X, labels, resample=False)
    W = exact.sample_stats["weight"].values[0]
    np.testing.assert_allclose(np.einsum("m,mkp->kp", W, exact.posterior["coef"].values[0]),
                               clf.coef_, rtol=1e-12, atol=1e-12)
    theta = clf._particles_tensor()
    X_t = torch.as_tensor(X, dtype=theta.dtype)  # the estimator's dtype (float32 here)
    log_p = clf._model.predict_log_proba(theta, X_t).numpy()  # [M, n, K]
    np.testing.assert_allclose(exact.log_likelihood["y"].values[0],
                               log_p[:, np.arange(300), y], rtol=1e-6)
    with pytest.raises(ValueError, match="labels not in classes_"):
        clf.to_inference_data(X, np.where(labels == "cat", "dog", labels))
    # The prior group: the same variables and labels, draws from the stated prior.
    stated = EvidenceLogisticRegression(**CHEAP, prior_mean=[[5.0, 0.0], [0.0, 0.0],
                                                             [0.0, -5.0]],
                                        prior_std=0.01, intercept_prior_mean=[1.0, 2.0, 3.0])
    prior = stated.fit(X, labels).to_inference_data(n_draws=200, random_state=0).prior
    assert prior["coef"].dims == ("chain", "draw", "class", "feature")
    assert prior["coef"].coords["class"].values.tolist() == ["ant", "bee", "cat"]
    # prior_std 0.01: 200 draws' means within 0.01 of the stated means.
    np.testing.assert_allclose(prior["coef"].values.mean((0, 1)), stated.prior_.prior_mean,
                               atol=0.01)
    np.testing.assert_allclose(prior["intercept"].values.mean((0, 1)), [1.0, 2.0, 3.0],
                               atol=0.01)


def test_mixture_weights_sum_to_one():
    X = gaussian_blobs(300, [[-3.0, 0.0], [3.0, 1.0]], [1.0, 0.5], [0.4, 0.6], seed=0)
    gmm = EvidenceGMM(n_components=2, **CHEAP).fit(X)
    idata = gmm.to_inference_data(X, random_state=0)
    post = idata.posterior
    assert post["weights"].dims == ("chain", "draw", "component")
    assert post["means"].dims == ("chain", "draw", "component", "feature")
    draws = gmm.particles_.shape[0] // 4  # the n_init runs' particles pooled
    assert post["variances"].shape == (4, draws, 2, 2)
    np.testing.assert_allclose(post["weights"].sum("component").values, 1.0, rtol=1e-12)
    assert (post["variances"].values > 0).all()
    assert idata.log_likelihood["X"].shape == (4, draws, 300)
    np.testing.assert_array_equal(idata.observed_data["X"].values, X)
    assert "constant_data" not in _groups(idata)
    prior = idata.prior
    assert prior["means"].dims == ("chain", "draw", "component", "feature")
    np.testing.assert_allclose(prior["weights"].sum("component").values, 1.0, rtol=1e-12)
    assert (prior["variances"].values > 0).all()
    # the pointwise log likelihood sums to the estimator's log density
    exact = gmm.to_inference_data(X, resample=False)
    np.testing.assert_allclose(exact.log_likelihood["X"].values[0, gmm._best_particle],
                               gmm._model.log_likelihood(gmm._particles_tensor(),
                                                         (torch.as_tensor(X),))[
                                   gmm._best_particle].numpy(), rtol=1e-12)


class _Mean(Model):
    """``x ~ N(mu, 1)``, ``mu ~ N(0, 1)``; ``named`` adds an ``unpack`` with names."""

    n_params = 2

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        return torch.randn(n, 2, generator=generator, dtype=dtype, device=device)

    def log_prior(self, theta):
        return -0.5 * theta.square().sum(1) - math.log(2 * math.pi)

    def log_likelihood(self, theta, batch):
        (X,) = batch
        return -0.5 * ((X[None] - theta[:, None]) ** 2).sum(2) - math.log(2 * math.pi)


class _NamedMean(_Mean):
    def unpack(self, theta):
        return {"mu": theta}


def test_user_model_theta_and_named_unpack():
    X = np.random.default_rng(0).normal(1.0, 1.0, size=(200, 2))
    est = EvidenceModel(_Mean(), **CHEAP).fit(X)
    idata = est.to_inference_data(X, random_state=0)
    assert idata.posterior["theta"].dims == ("chain", "draw", "param")
    assert idata.posterior["theta"].shape == (4, 4, 2)
    assert idata.log_likelihood["X"].shape == (4, 4, 200)
    named = EvidenceModel(_NamedMean(), **CHEAP).fit(X).to_inference_data(resample=False)
    assert list(named.posterior.data_vars) == ["mu"]
    np.testing.assert_array_equal(named.posterior["mu"].values[0], est.particles_)
    # The prior group comes from the user's sample_prior, named by its unpack.
    assert list(named.prior.data_vars) == ["mu"] and named.prior["mu"].shape == (1, 16, 2)


@pytest.fixture(scope="module")
def diabetes_pipeline():
    # 1024 particles: with the default 128, PSIS-LOO on diabetes was off the
    # exact LOO by -1.14 to +0.15 nats over 5 seeds with Pareto k up to 1.4;
    # with 1024 by -0.44 to +0.06 (seed 0: +0.06), k at most 0.49. The fit
    # takes about 5 s.
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    pipe = make_pipeline(StandardScaler(),
                         EvidenceLinearRegression(n_particles=1024, random_state=0))
    pipe.set_output(transform="pandas")
    pipe.fit(X, y)
    return pipe, pipe[0].transform(X), y


def _exact_loo(reg, X, y):
    """Exact leave-one-out log predictive densities of the conjugate model, ``[n]``.

    With the fitted (frozen) priors of ``reg._model``: ``y_i`` given the other
    points is Student t, from the full-data posterior by the rank-one
    downdate (leverage ``h_i``, residual ``e_i``): location residual
    ``e_i / (1 - h_i)``, scale^2 ``b_-i / (a_-i (1 - h_i))``, ``2 a_-i`` degrees
    of freedom.
    """
    model = reg._model
    Phi, r, L, m = conjugate_update(model, (torch.tensor(X), torch.tensor(y)))
    Ainv, Phi = torch.cholesky_inverse(L).numpy(), Phi.numpy()
    e = (r - torch.as_tensor(Phi) @ m).numpy()
    h = np.einsum("ij,jk,ik->i", Phi, Ainv, Phi)
    quad = e @ e + float(m @ m) / model.prior_std**2
    n = y.shape[0]
    a = 1.0 + 0.5 * (n - 1)  # NOISE_PRIOR_SHAPE + (n - 1) / 2
    b = model.noise_prior_scale**2 + 0.5 * (quad - e**2 / (1 - h))
    return stats.t.logpdf(e / (1 - h), df=2 * a, scale=np.sqrt(b / (a * (1 - h))))


def test_loo_matches_exact_conjugate_loo(diabetes_pipeline):
    pipe, Xs, y = diabetes_pipeline
    reg = pipe[-1]
    X, y = Xs.to_numpy(copy=True), y.to_numpy(copy=True)  # writable, for torch
    exact = _exact_loo(reg, X, y)
    # the downdate formula is log Z(all) - log Z(all but i) under the same priors
    for i in (0, 100, 441):
        keep = np.arange(y.shape[0]) != i
        assert exact[i] == pytest.approx(reg.exact_log_evidence(X, y)
                                         - reg.exact_log_evidence(X[keep], y[keep]), abs=1e-8)
    idata = reg.to_inference_data(Xs, y, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ArviZ's notes on the Pareto k
        loo = az.loo(idata, pointwise=True)
    assert float(np.max(loo.pareto_k)) < 0.7
    assert abs(_elpd(loo) - exact.sum()) < 1.0


def test_dataframe_feature_names_in_summary(diabetes_pipeline):
    pipe, Xs, _ = diabetes_pipeline
    idata = pipe[-1].to_inference_data(random_state=0)
    names = ["age", "sex", "bmi", "bp", "s1", "s2", "s3", "s4", "s5", "s6"]
    assert idata.posterior["coef"].coords["feature"].values.tolist() == names
    summary = az.summary(idata, var_names=["coef"], kind="stats")
    assert list(summary.index) == [f"coef[{name}]" for name in names]


def test_a_pipeline_exports_with_its_feature_names_and_summarises_cleanly(caplog):
    # scikit-learn's diabetes in a StandardScaler pipeline, fitted on a frame:
    # the coefficients carry the frame's column names, and az.summary raises
    # no warning (ArviZ logs its shape check: two chains at least).
    pd = pytest.importorskip("pandas")
    from sklearn.datasets import load_diabetes
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    from skevidence import EvidenceSearch, to_inference_data
    from skevidence.exceptions import EvidenceTieWarning

    data = load_diabetes()
    X = pd.DataFrame(data.data, columns=data.feature_names)
    pipe = make_pipeline(StandardScaler(), EvidenceLinearRegression(**CHEAP)).fit(X, data.target)
    idata = to_inference_data(pipe, X, data.target, random_state=0)
    assert idata.posterior["coef"].coords["feature"].values.tolist() == data.feature_names
    np.testing.assert_allclose(idata.constant_data["X"].values, pipe[0].transform(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = az.summary(idata)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "coef[age]" in summary.index and summary["r_hat"].notna().all()
    # A search hands on its best candidate, a pipeline whose features are products.
    search = EvidenceSearch(make_pipeline(PolynomialFeatures(include_bias=False),
                                          EvidenceLinearRegression(**CHEAP)),
                            {"polynomialfeatures__degree": [1, 2]})
    with warnings.catch_warnings():  # (CHEAP settings may leave the two tied)
        warnings.simplefilter("ignore", EvidenceTieWarning)
        search.fit(X.iloc[:, :2], data.target)
    names = to_inference_data(search).posterior["coef"].coords["feature"].values.tolist()
    assert names[:2] == ["age", "sex"] and len(names) in (2, 5)
