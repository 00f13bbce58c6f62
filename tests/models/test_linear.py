import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal, multivariate_t

from skevidence.models import LinearRegressionModel
from skevidence.models.base import Model
from skevidence.models.linear import NOISE_PRIOR_SHAPE
from tests.conftest import paper_linear_data


def _design(X, fit_intercept):
    return np.hstack([X, np.ones((len(X), 1))]) if fit_intercept else X


def _prior_mean(Phi, fit_intercept, intercept_mean):
    mu = np.zeros(Phi.shape[1])
    if fit_intercept:
        mu[-1] = intercept_mean
    return Phi @ mu


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("prior_std, noise_std, intercept_mean",
                         [(1.0, 1.0, 0.0), (0.3, 2.0, 1.5)])
def test_known_noise_evidence_matches_dense_gaussian(fit_intercept, prior_std, noise_std,
                                                     intercept_mean):
    # y ~ N(Phi mu, sigma^2 (I + prior_std^2 Phi Phi^T)): prior_std is in noise units.
    X, y = paper_linear_data(40, seed=3, n_features=3)
    model = LinearRegressionModel(3, fit_intercept, prior_std, noise_std, intercept_mean)
    Phi = _design(X, fit_intercept)
    cov = noise_std**2 * (np.eye(40) + prior_std**2 * Phi @ Phi.T)
    dense = multivariate_normal(_prior_mean(Phi, fit_intercept, intercept_mean), cov).logpdf(y)
    exact = model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    assert exact == pytest.approx(dense, abs=1e-9)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("prior_std, scale, intercept_mean, y_scale",
                         [(1.0, 1.0, 0.0, 1.0), (0.4, 30.0, -20.0, 100.0)])
def test_unknown_noise_evidence_matches_dense_multivariate_t(fit_intercept, prior_std, scale,
                                                             intercept_mean, y_scale):
    # sigma^2 ~ InvGamma(a, s^2) integrated out: y is multivariate t with 2a
    # degrees of freedom, location Phi mu, shape (s^2 / a) (I + prior_std^2 Phi Phi^T).
    X, y = paper_linear_data(40, seed=4, n_features=3)
    y = y_scale * y
    model = LinearRegressionModel(3, fit_intercept, prior_std, None, intercept_mean, scale)
    Phi = _design(X, fit_intercept)
    a = NOISE_PRIOR_SHAPE
    shape = scale**2 / a * (np.eye(40) + prior_std**2 * Phi @ Phi.T)
    dense = multivariate_t(_prior_mean(Phi, fit_intercept, intercept_mean), shape,
                           df=2 * a).logpdf(y)
    exact = model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    assert exact == pytest.approx(dense, abs=1e-8)


@pytest.mark.parametrize("noise_std", [1.3, None])
def test_analytic_gradients_match_autograd(noise_std):
    X, y = paper_linear_data(30, seed=1)
    model = LinearRegressionModel(5, prior_std=0.7, noise_std=noise_std,
                                  intercept_prior_mean=0.4, noise_prior_scale=0.8)
    theta = model.sample_prior(4, torch.Generator().manual_seed(0))
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    torch.testing.assert_close(model.grad_log_likelihood(theta, batch),
                               Model.grad_log_likelihood(model, theta, batch))
    torch.testing.assert_close(model.grad_log_prior(theta), Model.grad_log_prior(model, theta))
    log_lik, _ = model.log_likelihood_and_grad(theta, batch)
    torch.testing.assert_close(log_lik, model.log_likelihood(theta, batch).sum(1))


def test_unknown_noise_prior_samples_match_the_prior_density():
    # Draws of log sigma^2 against the density exp(log_prior) of a model without
    # coefficients (n_coef = 1, the intercept, marginalised by a 1-d check of
    # log sigma^2 only): compare the empirical CDF at a few points with the
    # inverse-gamma CDF, exp(-s^2 / sigma^2) for shape 1. 20_000 draws give a
    # CDF standard error below 0.004; the tolerance is 0.015.
    model = LinearRegressionModel(2, noise_std=None, noise_prior_scale=3.0)
    theta = model.natural(model.sample_prior(20_000, torch.Generator().manual_seed(0)))
    sigma2 = theta[:, -1].exp().numpy()
    for q in [1.0, 9.0, 30.0, 300.0]:
        assert np.mean(sigma2 <= q) == pytest.approx(np.exp(-9.0 / q), abs=0.015)
    # Coefficients given sigma^2 are N(mu, sigma^2 prior_std^2): standardised, unit variance.
    z = (theta[:, :2] / theta[:, -1:].mul(0.5).exp()).numpy()
    assert np.std(z) == pytest.approx(1.0, abs=0.02)


def test_posterior_is_prior_times_likelihood_normalised():
    # log p(theta | D) = log p(D | theta) + log p(theta) - log p(D) at any theta.
    X, y = paper_linear_data(25, seed=2)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    model = LinearRegressionModel(5, intercept_prior_mean=0.5)
    mean, cov = model.posterior(batch)
    theta = mean[None, :] + 0.1
    log_post = multivariate_normal(mean.numpy(), cov.numpy()).logpdf(theta.numpy()[0])
    rhs = (model.log_likelihood(theta, batch).sum() + model.log_prior(theta)).item()
    assert log_post == pytest.approx(rhs - model.exact_log_evidence(batch), abs=1e-8)


def test_unknown_noise_log_prior_is_normalised():
    # One coefficient (no features, intercept only): integrate exp(log_prior)
    # over theta = ((b - 2) / 1.5, log sigma^2 - 2 log 1.5), the sampler's
    # coordinates: log sigma^2 - 2 log 1.5 in [-8, 20] (all but 1e-8 of the
    # inverse gamma) and theta_b within 10 prior standard deviations, on a
    # grid in (z, theta_l) with theta_b = 0.7 sigma z / 1.5 (Jacobian alike).
    model = LinearRegressionModel(0, noise_std=None, prior_std=0.7, intercept_prior_mean=2.0,
                                  noise_prior_scale=1.5)
    z = np.linspace(-10.0, 10.0, 801)
    theta_l = np.linspace(-8.0, 20.0, 2801)
    Z, L = np.meshgrid(z, theta_l, indexing="ij")
    jac = 0.7 * np.exp(0.5 * L)  # sigma / 1.5 = exp(theta_l / 2)
    theta = torch.as_tensor(np.stack([(jac * Z).ravel(), L.ravel()], 1))
    density = model.log_prior(theta).exp().numpy().reshape(Z.shape) * jac
    total = np.trapezoid(np.trapezoid(density, theta_l, axis=1), z)
    assert total == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize("kwargs", [dict(), dict(fit_intercept=False, noise_std=0.7),
                                    dict(noise_std=None, noise_prior_scale=2.0,
                                         intercept_prior_mean=3.0, prior_std=0.5)])
def test_prepared_batch_gives_the_same_log_likelihood_and_gradient(kwargs):
    # The exact warm-up evaluates Model.prepare_batch's batch (Gram statistics
    # around the ridge solution); targets offset by 3 check nothing cancels.
    g = torch.Generator().manual_seed(0)
    model = LinearRegressionModel(3, **kwargs)
    X = torch.randn(50, 3, generator=g, dtype=torch.float64)
    y = X @ torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64) + 3.0
    y = y + torch.randn(50, generator=g, dtype=torch.float64)
    theta = model.sample_prior(6, g)
    expected = Model.log_likelihood_and_grad(model, theta, (X, y))
    for a, b in zip(expected, model.log_likelihood_and_grad(theta, model.prepare_batch((X, y)))):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("prior", ["isotropic", "stated"])
def test_known_noise_curvature_is_the_exact_posterior_precision(prior):
    # Gaussian likelihood, Gaussian prior: prior precision plus Fisher
    # information is the posterior's precision, whatever theta; also with a
    # stated prior of per-coefficient means and scales.
    X, y = paper_linear_data(50, seed=4, n_features=3)
    model = (LinearRegressionModel(3, prior_std=0.5, noise_std=2.0) if prior == "isotropic"
             else _stated_model(True, noise_std=2.0))
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    theta = torch.randn(model.n_params, dtype=torch.float64)
    precision = model.prior_precision(theta) + model.fisher_information(theta, batch)
    _, covariance = model.posterior(batch)
    torch.testing.assert_close(precision, torch.linalg.inv(covariance))


def test_unknown_noise_fisher_information_is_the_expected_negative_hessian():
    # The coefficients' block is the negative Hessian of the log-likelihood
    # (it does not depend on y); the noise's block is its expectation over
    # y drawn from the model, n / 2.
    X, y = paper_linear_data(30, seed=5, n_features=2)
    model = LinearRegressionModel(2, noise_std=None, noise_prior_scale=1.5)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    thetas = torch.randn(3, model.n_params, dtype=torch.float64)
    weights = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    info = model.expected_fisher_information(thetas, weights, batch)
    c = model.n_coef
    hessians = [torch.autograd.functional.hessian(
        lambda t: model.log_likelihood(t[None], batch).sum(), theta) for theta in thetas]
    expected = -sum(w * h[:c, :c] for w, h in zip(weights, hessians))
    torch.testing.assert_close(info[:c, :c], expected)
    assert info[c, c] == pytest.approx(0.5 * len(y))
    assert torch.all(info[:c, c] == 0)
    single = model.fisher_information(thetas[0], batch)
    torch.testing.assert_close(single[:c, :c], -hessians[0][:c, :c])


@pytest.mark.parametrize("noise_std", [1.0, None])
def test_summed_summaries_stand_for_the_data(noise_std):
    # Two chunks' summaries, summed, give the log-likelihood and gradient of
    # the two chunks together, as prepare_batch does (the engine's exact
    # moves past the warm-up rely on it).
    X, y = paper_linear_data(300, seed=6, n_features=4)
    model = LinearRegressionModel(4, prior_std=0.7, noise_std=noise_std, intercept_prior_mean=0.5)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    first, second = (model.summarize(tuple(t[s] for t in batch))
                     for s in (slice(0, 120), slice(120, None)))
    summed = model.prepare_summary({key: first[key] + second[key] for key in first})
    theta = torch.randn(5, model.n_params, dtype=torch.float64)
    log_lik, grad = model.log_likelihood_and_grad(theta, summed)
    expected_log_lik, expected_grad = model.log_likelihood_and_grad(
        theta, model.prepare_batch(batch))
    torch.testing.assert_close(log_lik, expected_log_lik)
    torch.testing.assert_close(grad, expected_grad)
    torch.testing.assert_close(log_lik, model.log_likelihood(theta, batch).sum(1))


@pytest.mark.parametrize("noise_std", [0.8, None])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_log_joint_is_the_prior_plus_the_likelihood(noise_std, fit_intercept):
    # The fused quadratic form of prepared statistics (a summary's and a batch's)
    # against Model's default, log_prior + log_likelihood_and_grad; a tempered
    # weight takes the default path.
    X, y = paper_linear_data(200, seed=5, n_features=4)
    model = LinearRegressionModel(4, fit_intercept, prior_std=1.7, noise_std=noise_std,
                                  intercept_prior_mean=0.3, noise_prior_scale=1.3)
    data = (torch.as_tensor(X), torch.as_tensor(y))
    theta = 0.1 * model.sample_prior(32, torch.Generator().manual_seed(1))
    for prepared in (model.prepare_summary(model.summarize(data)), model.prepare_batch(data)):
        for weight in (1.0, 0.5):
            log_p, grad = model.log_joint_and_grad(theta, prepared, weight)
            ref_log_p, ref_grad = Model.log_joint_and_grad(model, theta, prepared, weight)
            # Values near 1e3: the two orders of summation agree to ~1e-12.
            torch.testing.assert_close(log_p, ref_log_p, rtol=1e-12, atol=1e-9)
            torch.testing.assert_close(grad, ref_grad, rtol=1e-10, atol=1e-9)


# A stated prior: coefficient means far from 0, unequal scales, its own
# intercept scale and a noise shape other than 1.
STATED = dict(prior_mean=[1.5, -2.0, 0.0], prior_std=[0.3, 2.0, 1.0],
              intercept_prior_mean=0.5, intercept_prior_std=4.0)


def _stated_model(fit_intercept, noise_std, shape=3.0, scale=0.8):
    kwargs = dict(STATED, intercept_prior_std=STATED["intercept_prior_std"] if fit_intercept
                  else None)
    return LinearRegressionModel(3, fit_intercept, noise_std=noise_std, noise_prior_scale=scale,
                                 noise_prior_shape=shape, **kwargs)


def _stated_dense(X, fit_intercept):
    """``Phi mu`` and ``I + Phi D Phi^T`` of the stated prior, dense ``N x N``."""
    Phi = _design(X, fit_intercept)
    mu = np.array(STATED["prior_mean"] + ([STATED["intercept_prior_mean"]] if fit_intercept
                                          else []))
    var = np.square(STATED["prior_std"] + ([STATED["intercept_prior_std"]] if fit_intercept
                                           else []))
    return Phi @ mu, np.eye(len(X)) + (Phi * var) @ Phi.T


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_stated_prior_known_noise_evidence_matches_dense_gaussian(fit_intercept):
    # y ~ N(Phi mu, sigma^2 (I + Phi diag(g^2) Phi^T)), formed densely; both
    # sides are float64 sums of ~40 terms of size ~1e2: 1e-9 is rounding.
    X, y = paper_linear_data(40, seed=3, n_features=3)
    model = _stated_model(fit_intercept, noise_std=1.7)
    loc, cov = _stated_dense(X, fit_intercept)
    dense = multivariate_normal(loc, 1.7**2 * cov).logpdf(y)
    exact = model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    assert exact == pytest.approx(dense, abs=1e-9)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("shape", [1.0, 3.0, 0.6])
def test_stated_prior_unknown_noise_evidence_matches_dense_multivariate_t(fit_intercept, shape):
    # sigma^2 ~ InvGamma(a, a s^2) integrated out: y is multivariate t with
    # 2a degrees of freedom, location Phi mu and shape s^2 (I + Phi D Phi^T).
    X, y = paper_linear_data(40, seed=4, n_features=3)
    model = _stated_model(fit_intercept, noise_std=None, shape=shape, scale=0.8)
    loc, cov = _stated_dense(X, fit_intercept)
    dense = multivariate_t(loc, 0.8**2 * cov, df=2 * shape).logpdf(y)
    exact = model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    assert exact == pytest.approx(dense, abs=1e-8)


def test_stated_prior_changes_the_evidence():
    # The stated means and scales are not ignored: each one alone moves the evidence.
    X, y = paper_linear_data(40, seed=4, n_features=3)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    base = LinearRegressionModel(3, noise_std=None).exact_log_evidence(batch)
    for kwargs in (dict(prior_mean=[1.0, 0.0, 0.0]), dict(prior_std=[1.0, 3.0, 1.0],
                                                          intercept_prior_std=1.0),
                   dict(intercept_prior_std=2.0), dict(noise_prior_shape=3.0)):
        other = LinearRegressionModel(3, noise_std=None, **kwargs).exact_log_evidence(batch)
        assert abs(other - base) > 1e-3


@pytest.mark.parametrize("noise_std", [1.3, None])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_stated_prior_gradients_joint_and_summaries_agree(noise_std, fit_intercept):
    # The analytic gradients against autograd, the prepared batch and the
    # summed summaries against the plain likelihood, the fused log joint
    # against prior plus likelihood: as for the isotropic prior above.
    X, y = paper_linear_data(200, seed=5, n_features=3)
    model = _stated_model(fit_intercept, noise_std)
    data = (torch.as_tensor(X), torch.as_tensor(y))
    theta = 0.1 * model.sample_prior(8, torch.Generator().manual_seed(2))
    torch.testing.assert_close(model.grad_log_prior(theta), Model.grad_log_prior(model, theta))
    torch.testing.assert_close(model.grad_log_likelihood(theta, data),
                               Model.grad_log_likelihood(model, theta, data))
    expected = Model.log_likelihood_and_grad(model, theta, data)
    for prepared in (model.prepare_batch(data), model.prepare_summary(model.summarize(data))):
        for a, b in zip(expected, model.log_likelihood_and_grad(theta, prepared)):
            torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-8)
        log_p, grad = model.log_joint_and_grad(theta, prepared)
        ref_log_p, ref_grad = Model.log_joint_and_grad(model, theta, prepared)
        torch.testing.assert_close(log_p, ref_log_p, rtol=1e-12, atol=1e-9)
        torch.testing.assert_close(grad, ref_grad, rtol=1e-10, atol=1e-9)


def test_stated_noise_shape_prior_samples_match_the_prior():
    # sigma^2 ~ InvGamma(3, 3 s^2), s = 2: the empirical CDF of 20_000 draws at
    # a few points against scipy's (standard error below 0.004; tolerance
    # 0.015); coefficients standardised by sigma g_j have unit variance, mean
    # prior_mean (standard error 0.007 on the variance of each column).
    from scipy.stats import invgamma

    model = _stated_model(True, noise_std=None, shape=3.0, scale=2.0)
    theta = model.natural(model.sample_prior(20_000, torch.Generator().manual_seed(0)))
    sigma2 = theta[:, -1].exp().numpy()
    reference = invgamma(3.0, scale=3.0 * 4.0)
    for q in [1.0, 3.0, 4.0, 8.0, 30.0]:
        assert np.mean(sigma2 <= q) == pytest.approx(reference.cdf(q), abs=0.015)
    mu = np.array(STATED["prior_mean"] + [STATED["intercept_prior_mean"]])
    g = np.array(STATED["prior_std"] + [STATED["intercept_prior_std"]])
    z = (theta[:, :4].numpy() - mu) / (np.sqrt(sigma2)[:, None] * g)
    np.testing.assert_allclose(z.std(0), 1.0, atol=0.03)
    np.testing.assert_allclose(z.mean(0), 0.0, atol=0.03)


def test_stated_noise_shape_log_prior_is_normalised():
    # As test_unknown_noise_log_prior_is_normalised, with a noise shape of 3
    # (its lighter right tail in theta_l: [-8, 12] holds all but 1e-9).
    model = LinearRegressionModel(0, noise_std=None, prior_std=0.7, intercept_prior_mean=2.0,
                                  noise_prior_scale=1.5, noise_prior_shape=3.0)
    z = np.linspace(-10.0, 10.0, 801)
    theta_l = np.linspace(-8.0, 12.0, 2801)
    Z, L = np.meshgrid(z, theta_l, indexing="ij")
    jac = 0.7 * np.exp(0.5 * L)
    theta = torch.as_tensor(np.stack([(jac * Z).ravel(), L.ravel()], 1))
    density = model.log_prior(theta).exp().numpy().reshape(Z.shape) * jac
    total = np.trapezoid(np.trapezoid(density, theta_l, axis=1), z)
    assert total == pytest.approx(1.0, abs=1e-5)


def test_per_feature_std_needs_the_intercept_std():
    with pytest.raises(ValueError, match="intercept_prior_std"):
        LinearRegressionModel(2, prior_std=[1.0, 2.0])
