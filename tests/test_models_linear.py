import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal

from skevidence.models import LinearRegressionModel
from tests.conftest import paper_linear_data


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("prior_std, noise_std", [(1.0, 1.0), (0.3, 2.0)])
def test_exact_log_evidence_matches_dense_gaussian(fit_intercept, prior_std, noise_std):
    X, y = paper_linear_data(40, seed=3, n_features=3)
    model = LinearRegressionModel(3, fit_intercept, prior_std, noise_std)
    Phi = np.hstack([X, np.ones((40, 1))]) if fit_intercept else X
    cov = noise_std**2 * np.eye(40) + prior_std**2 * Phi @ Phi.T
    dense = multivariate_normal(np.zeros(40), cov).logpdf(y)
    exact = model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    assert exact == pytest.approx(dense, abs=1e-9)


def test_analytic_gradients_match_autograd():
    X, y = paper_linear_data(30, seed=1)
    model = LinearRegressionModel(5, prior_std=0.7, noise_std=1.3)
    theta = torch.randn(4, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    auto_lik = super(LinearRegressionModel, model).grad_log_likelihood(theta, batch)
    auto_prior = super(LinearRegressionModel, model).grad_log_prior(theta)
    torch.testing.assert_close(model.grad_log_likelihood(theta, batch), auto_lik)
    torch.testing.assert_close(model.grad_log_prior(theta), auto_prior)


def test_posterior_is_prior_times_likelihood_normalised():
    # log p(theta | D) = log p(D | theta) + log p(theta) - log p(D) at any theta.
    X, y = paper_linear_data(25, seed=2)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    model = LinearRegressionModel(5)
    mean, cov = model.posterior(batch)
    theta = mean[None, :] + 0.1
    log_post = multivariate_normal(mean.numpy(), cov.numpy()).logpdf(theta.numpy()[0])
    rhs = (model.log_likelihood(theta, batch).sum() + model.log_prior(theta)).item()
    assert log_post == pytest.approx(rhs - model.exact_log_evidence(batch), abs=1e-8)
