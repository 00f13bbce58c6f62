"""The base-2 normalisers against torch's natural-log ones, and the models' summed likelihoods."""

import math

import pytest
import torch

from skevidence.datasets import make_gaussian_mixture, make_logistic_regression
from skevidence.models import GaussianMixtureModel, LogisticRegressionModel
from skevidence.models._bits import (LOG2_E, POWER_FLOOR, log_normalizer_bits_, softmax_bits_,
                                     summed_log_normalizer_bits_)


@pytest.mark.parametrize("K", [1, 2, 3, 7])
@pytest.mark.parametrize("dtype, tol", [(torch.float64, 1e-9), (torch.float32, 1e-2)])
def test_normalisers_match_logsumexp(K, dtype, tol):
    # 137 rows: not a multiple of any product group, so the remainder path runs too.
    scores = 30.0 * torch.randn(5, K, 137, generator=torch.Generator().manual_seed(0),
                                dtype=torch.float64)
    scores[0, :, 3] = -math.inf  # a row every class rules out: -inf, not NaN
    expected = torch.logsumexp(scores, dim=1)
    bits = (scores * LOG2_E).to(dtype)
    rows, proba = log_normalizer_bits_(bits.clone(), with_proba=True)
    assert torch.equal(torch.isinf(rows), torch.isinf(expected)) and not rows.isnan().any()
    finite = torch.isfinite(expected)
    torch.testing.assert_close(rows.double()[finite], expected[finite], rtol=0, atol=tol)
    total, _ = summed_log_normalizer_bits_(bits[1:].clone())
    torch.testing.assert_close(total.double(), expected[1:].sum(1), rtol=1e-6, atol=tol)
    torch.testing.assert_close(softmax_bits_(bits[1:].clone()).double(),
                               torch.softmax(scores[1:], dim=1), rtol=0, atol=1e-5)
    assert proba is not None and not proba[1:].isnan().any()


def test_models_sum_what_they_return_per_row():
    generator = torch.Generator().manual_seed(0)
    X, y = make_logistic_regression(1037, random_state=1)
    logistic = LogisticRegressionModel(X.shape[1], 4)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    theta = torch.randn(8, logistic.n_params, generator=generator, dtype=torch.float64)
    torch.testing.assert_close(logistic.log_likelihood_sum(theta, batch),
                               logistic.log_likelihood(theta, batch).sum(1), rtol=1e-12, atol=0)
    X = make_gaussian_mixture(1037, random_state=1)
    X = X[0] if isinstance(X, tuple) else X
    gmm = GaussianMixtureModel(X.shape[1], n_components=3)
    theta = gmm.sample_prior(8, generator)
    batch = (torch.as_tensor(X),)
    torch.testing.assert_close(gmm.log_likelihood_sum(theta, batch),
                               gmm.log_likelihood(theta, batch).sum(1), rtol=1e-12, atol=0)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_far_classes_stay_clear_of_subnormal_numbers(dtype):
    # Classes 130-3000 bits below the top: their powers would be subnormal or
    # zero; floored at 2^POWER_FLOOR, normal numbers that no normaliser sees.
    bits = torch.tensor([[[0.0, 0.0], [-200.0, -130.0], [-3000.0, -1.0]]], dtype=dtype)
    expected = torch.logsumexp(bits.double() / LOG2_E, dim=1)
    rows, proba = log_normalizer_bits_(bits.clone(), with_proba=True)
    torch.testing.assert_close(rows.double(), expected, rtol=0, atol=1e-6)
    assert (proba >= torch.finfo(dtype).tiny).all()
    assert float(proba[0, 1, 0]) == pytest.approx(2.0 ** POWER_FLOOR)
