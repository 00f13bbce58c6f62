"""LogisticRegressionModel: likelihood, prior and gradients against direct formulas."""

import pytest
import torch

from skevidence.models import LogisticRegressionModel
from skevidence.models.base import Model


# -- the model ---------------------------------------------------------------------


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_analytic_gradients_match_autograd(fit_intercept):
    model = LogisticRegressionModel(3, 4, fit_intercept=fit_intercept, prior_std=0.7)
    gen = torch.Generator().manual_seed(0)
    theta = 3.0 * model.sample_prior(6, gen)  # large scores: saturated softmax too
    X = torch.randn(50, 3, generator=gen, dtype=torch.float64)
    y = torch.randint(4, (50,), generator=gen)
    torch.testing.assert_close(model.grad_log_likelihood(theta, (X, y)),
                               Model.grad_log_likelihood(model, theta, (X, y)))
    torch.testing.assert_close(model.grad_log_prior(theta), Model.grad_log_prior(model, theta))


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_weighted_terms_in_one_pass_match_one_call_per_term(fit_intercept):
    # The engine's past and chunk mini-batches, each row weighted by its
    # term's scale, against the base class's call per term.
    model = LogisticRegressionModel(3, 4, fit_intercept=fit_intercept)
    gen = torch.Generator().manual_seed(2)
    theta = model.sample_prior(6, gen)
    X = torch.randn(70, 3, generator=gen, dtype=torch.float64)
    y = torch.randint(4, (70,), generator=gen)
    terms = [(41.0, (X[:50], y[:50])), (0.6, (X[50:], y[50:]))]
    torch.testing.assert_close(model.weighted_grad_log_likelihood(theta, terms),
                               Model.weighted_grad_log_likelihood(model, theta, terms))
    torch.testing.assert_close(model.weighted_fisher_information(theta[0], terms),
                               Model.weighted_fisher_information(model, theta[0], terms))


def test_log_likelihood_and_prior_match_direct_formulas():
    model = LogisticRegressionModel(3, 4, prior_std=2.0)
    gen = torch.Generator().manual_seed(1)
    theta = model.sample_prior(5, gen)
    assert theta.shape == (5, model.n_params) and model.n_params == 16
    X = torch.randn(20, 3, generator=gen, dtype=torch.float64)
    y = torch.randint(4, (20,), generator=gen)
    W, b = theta[:, :12].reshape(5, 4, 3), theta[:, 12:]  # the documented layout
    logits = torch.einsum("np,mkp->mnk", X, W) + b[:, None, :]
    expected = torch.log_softmax(logits, -1)[:, torch.arange(20), y]
    torch.testing.assert_close(model.log_likelihood(theta, (X, y)), expected)
    proba = model.predict_proba(theta, X)
    assert proba.shape == (5, 20, 4)
    torch.testing.assert_close(proba, torch.softmax(logits, -1))
    prior = torch.distributions.Normal(0.0, 2.0).log_prob(theta).sum(1)
    torch.testing.assert_close(model.log_prior(theta), prior)


def test_log_likelihood_is_finite_for_huge_scores():
    model = LogisticRegressionModel(1, 2, fit_intercept=False)
    theta = torch.tensor([[1000.0, -1000.0]], dtype=torch.float64)
    X = torch.tensor([[1.0], [-1.0]], dtype=torch.float64)
    ll = model.log_likelihood(theta, (X, torch.tensor([1, 1])))
    assert ll[0, 0].item() == pytest.approx(-2000.0) and ll[0, 1].item() == pytest.approx(0.0)


def test_fused_log_likelihood_and_grad_match_the_separate_methods():
    model = LogisticRegressionModel(3, 4)
    g = torch.Generator().manual_seed(0)
    theta = 3.0 * torch.randn(5, model.n_params, generator=g, dtype=torch.float64)
    X = torch.randn(40, 3, generator=g, dtype=torch.float64)
    y = torch.randint(4, (40,), generator=g)
    log_lik, grad = model.log_likelihood_and_grad(theta, (X, y))
    expected_log_lik, expected_grad = Model.log_likelihood_and_grad(model, theta, (X, y))
    torch.testing.assert_close(log_lik, expected_log_lik, rtol=1e-12, atol=1e-10)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-12, atol=1e-10)


def test_prepared_batch_gives_the_same_log_likelihood_and_gradient():
    model = LogisticRegressionModel(3, 4)
    g = torch.Generator().manual_seed(1)
    theta = 3.0 * torch.randn(5, model.n_params, generator=g, dtype=torch.float64)
    X = torch.randn(40, 3, generator=g, dtype=torch.float64)
    y = torch.randint(4, (40,), generator=g)
    for a, b in zip(model.log_likelihood_and_grad(theta, (X, y)),
                    model.log_likelihood_and_grad(theta, model.prepare_batch((X, y)))):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-10)


# -- a stated prior ------------------------------------------------------------------


def _stated_model(fit_intercept=True):
    import numpy as np

    mean = np.arange(12.0).reshape(4, 3) / 4 - 1.0
    std = np.linspace(0.3, 3.0, 12).reshape(4, 3)
    return LogisticRegressionModel(3, 4, fit_intercept, prior_std=std, prior_mean=mean,
                                   intercept_prior_mean=[1.0, -1.0, 0.5, 0.0],
                                   intercept_prior_std=[0.5, 1.0, 2.0, 4.0]), mean, std


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_stated_prior_density_gradient_and_draws(fit_intercept):
    # The log prior against torch's Normal, in the documented layout
    # (weights class by class, then the biases); its gradient against
    # autograd; 20_000 draws' means and standard deviations within 5
    # standard errors (mean: std / 141; std: std / 200).
    model, mean, std = _stated_model(fit_intercept)
    loc = torch.as_tensor(mean).reshape(-1)
    scale = torch.as_tensor(std).reshape(-1)
    if fit_intercept:
        loc = torch.cat([loc, torch.tensor([1.0, -1.0, 0.5, 0.0], dtype=torch.float64)])
        scale = torch.cat([scale, torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=torch.float64)])
    theta = model.sample_prior(20_000, torch.Generator().manual_seed(0))
    torch.testing.assert_close(model.log_prior(theta[:5]),
                               torch.distributions.Normal(loc, scale).log_prob(theta[:5]).sum(1))
    torch.testing.assert_close(model.grad_log_prior(theta[:5]),
                               Model.grad_log_prior(model, theta[:5]))
    torch.testing.assert_close(model.prior_precision(theta[0]), torch.diag(scale**-2))
    assert torch.all((theta.mean(0) - loc).abs() <= 5 * scale / 141)
    assert torch.all((theta.std(0) / scale - 1).abs() <= 5 / 200)
    float32 = model.sample_prior(4, torch.Generator().manual_seed(0), dtype=torch.float32)
    assert float32.dtype == torch.float32 and model.log_prior(float32).dtype == torch.float32


def test_default_prior_keeps_the_isotropic_arithmetic():
    # Zero means and one scale: the i.i.d. N(0, s^2) path, as before per-weight priors.
    model = LogisticRegressionModel(3, 4, prior_std=[[2.0] * 3] * 4, intercept_prior_std=2.0)
    assert model.prior_std == 2.0 and model.prior_mean is None
