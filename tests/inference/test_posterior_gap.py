"""The optimiser behind the posterior-gap check, and the spread check."""

import math

import pytest
import torch

from skevidence.inference.posterior_gap import (cloud_on_posterior, log_posterior_and_grad,
                                                 maximize, posterior_gap, spread_ratio)
from skevidence.models import Model
from skevidence.models.batches import row_blocks
from tests.inference.test_importance import _three_clusters


def _quadratic(precision, mode):
    def objective(z):
        diff = z - mode
        return float(-0.5 * diff @ precision @ diff), -(precision @ diff)
    return objective


def test_maximize_reaches_the_mode_of_an_ill_conditioned_quadratic():
    # Condition number 1e4 and correlations: plain gradient ascent would
    # need thousands of steps. In 30 steps this L-BFGS ends 0.009 nats below
    # the maximum (torch.optim.LBFGS with a strong-Wolfe search: 0.004); the
    # posterior-gap check compares gaps of several nats, so 0.05 is ample.
    gen = torch.Generator().manual_seed(0)
    q, _ = torch.linalg.qr(torch.randn(8, 8, generator=gen, dtype=torch.float64))
    precision = q @ torch.diag(torch.logspace(-2, 2, 8, dtype=torch.float64)) @ q.T
    mode = torch.randn(8, generator=gen, dtype=torch.float64)
    z, value = maximize(_quadratic(precision, mode), torch.zeros(8, dtype=torch.float64), 30)
    start = float(-0.5 * mode @ precision @ mode)
    assert -0.05 < value <= 0.0 and value > start


def test_maximize_never_leaves_the_finite_numbers():
    # log density -inf beyond z = 1: the climb toward the mode at 3 stops short.
    def objective(z):
        if float(z[0]) > 1.0:
            return -math.inf, torch.zeros_like(z)
        return float(-0.5 * (z[0] - 3.0) ** 2), -(z - 3.0)
    z, value = maximize(objective, torch.zeros(1, dtype=torch.float64), 30)
    assert math.isfinite(value) and float(z[0]) <= 1.0
    assert value >= -0.5 * 9.0  # never below the start


class _Gaussian(Model):
    """Prior N(0, I) and one observation per row of a unit-variance Gaussian
    likelihood: the posterior of ``n`` rows of zeros is N(0, I / (n + 1))."""

    n_params = 20

    def log_prior(self, theta):
        return -0.5 * (theta**2).sum(1)

    def log_likelihood(self, theta, block):
        (x,) = block
        return -0.5 * ((x[None, :, :] - theta[:, None, :]) ** 2).sum(2)


def _posterior_draws(d=20, M=256, n=9, seed=0):
    """``M`` exact posterior draws of :class:`_Gaussian` given ``n`` rows of zeros, equal weights."""
    gen = torch.Generator().manual_seed(seed)
    store = (torch.zeros(n, d, dtype=torch.float64),)
    draws = torch.randn(M, d, generator=gen, dtype=torch.float64) / math.sqrt(n + 1)
    return d, n, store, draws, torch.full((M,), 1 / M, dtype=torch.float64)


def test_spread_ratio_is_one_for_posterior_draws_and_falls_with_the_spread():
    # Stein's identity: -E[(theta - mean) . grad log p] = d for exact draws.
    # With 256 draws in 20 dimensions the ratio's standard error is about
    # 0.02; a cloud at half the posterior's scale has a ratio of 1/4.
    d, n, store, draws, W = _posterior_draws()
    ratio, se = spread_ratio(_Gaussian(), draws, W, store, n)
    assert abs(ratio - 1) < 4 * se and 0.01 < se < 0.04
    narrow, _ = spread_ratio(_Gaussian(), 0.5 * draws, W, store, n)
    assert abs(narrow - 0.25) < 0.02
    # A reservoir of a third of the rows, scaled up, sees the same curvature.
    assert math.isclose(spread_ratio(_Gaussian(), draws, W, (store[0][:3],), n)[0], ratio,
                        rel_tol=1e-9)


def test_posterior_gap_of_posterior_draws_is_half_the_dimension():
    # log p(mode) - log p(draw) is chi^2_d / 2 for a Gaussian posterior: mean
    # d / 2 = 10, and over 256 draws its standard error is sqrt(2 d) / 2 / 16 = 0.2
    # (seeds 0-3: 9.62 to 10.02).
    d, n, store, draws, W = _posterior_draws()
    gap, optimum, mean_log_p = posterior_gap(_Gaussian(), draws, W, store, n)
    assert abs(gap - d / 2) < 1.0
    assert optimum == pytest.approx(0.0, abs=1e-6)  # the log posterior's maximum, at 0
    # One pass over the store serves both checks; passing it changes nothing.
    cloud = cloud_on_posterior(_Gaussian(), draws, W, store, n)
    assert posterior_gap(_Gaussian(), draws, W, store, n, cloud=cloud) == (gap, optimum,
                                                                           mean_log_p)
    assert spread_ratio(_Gaussian(), draws, W, store, n, cloud=cloud) == spread_ratio(
        _Gaussian(), draws, W, store, n)


def test_the_cloud_is_summed_in_the_particles_precision():
    # The checks' verdicts rest on these sums: a single-precision pass errs by
    # a share of the rows' magnitudes that depends on the CPU's summation
    # order, so the cloud is the exact double-precision pass, bit for bit.
    X, model, start = _three_clusters(20000)
    store = (torch.as_tensor(X),)
    gen = torch.Generator().manual_seed(0)
    particles = start + 0.01 * torch.randn(16, start.shape[1], generator=gen, dtype=torch.float64)
    W = torch.full((16,), 1 / 16, dtype=torch.float64)
    cloud = cloud_on_posterior(model, particles, W, store, 20000)
    log_p, grad = log_posterior_and_grad(model, particles, row_blocks(store, 16), 1.0)
    assert cloud.log_p.dtype == cloud.grad.dtype == torch.float64
    assert torch.equal(cloud.log_p, log_p) and torch.equal(cloud.grad, grad)
