"""Transition kernels and preconditioners of the engine."""

import inspect
import math

import numpy as np
import pytest
import torch

from skevidence.inference.kernels import _Settling, baoab, covariance_preconditioner, ghmc


def _gaussian_target(cov):
    precision = torch.linalg.inv(cov)

    def log_density_and_grad(theta):
        g = -theta @ precision
        return 0.5 * (theta * g).sum(1), g

    return log_density_and_grad


@pytest.mark.parametrize("step_size", [0.3, 1.5])
def test_ghmc_leaves_a_correlated_gaussian_invariant(step_size):
    cov = torch.tensor([[4.0, 1.9], [1.9, 1.0]], dtype=torch.float64)
    chol = torch.linalg.cholesky(cov)
    g = torch.Generator().manual_seed(0)
    M = 20_000
    theta = torch.randn(M, 2, generator=g, dtype=torch.float64) @ chol.T  # exact draws
    theta, acceptance = ghmc(theta, _gaussian_target(cov), 10, step_size, 0.2, chol, g)
    assert 0.3 < acceptance < 1.0
    # Standard error of a variance estimate from M draws is var * sqrt(2 / M)
    # (about 1% here, the moves correlate the draws a little): 5% is > 4 SE.
    np.testing.assert_allclose(torch.cov(theta.T).numpy(), cov.numpy(), rtol=0.05, atol=0.05)
    np.testing.assert_allclose(theta.mean(0).numpy(), 0.0, atol=0.05)


def test_ghmc_rejects_instead_of_diverging():
    # A step 100 times too long for the target's scale: the unadjusted
    # BAOAB kernel blows up, the Metropolis-adjusted one stays put.
    cov = torch.eye(3, dtype=torch.float64) * 1e-4
    chol = torch.eye(3, dtype=torch.float64)
    g = torch.Generator().manual_seed(1)
    start = 1e-2 * torch.randn(64, 3, generator=g, dtype=torch.float64)
    theta, acceptance = ghmc(start, _gaussian_target(cov), 20, 1.0, 0.2, chol, g)
    assert torch.isfinite(theta).all() and acceptance < 0.05
    target = _gaussian_target(cov)
    wild = baoab(start, lambda t: target(t)[1], 20, 1.0, 0.2, chol, g)
    assert not torch.isfinite(wild).all() or wild.abs().max() > 1e6


def test_covariance_preconditioner_is_the_weighted_covariance():
    g = torch.Generator().manual_seed(2)
    theta = torch.randn(500, 3, generator=g, dtype=torch.float64) * torch.tensor([1.0, 10.0, 0.1])
    W = torch.full((500,), 1 / 500, dtype=torch.float64)
    chol = covariance_preconditioner(theta, W)
    centred = theta - theta.mean(0)
    # only the factorisation's jitter (1e-12 of the mean variance) differs
    np.testing.assert_allclose((chol @ chol.T).numpy(), (centred.T @ centred / 500).numpy(),
                               rtol=1e-7, atol=1e-9)


def test_covariance_preconditioner_of_a_collapsed_cloud_is_defined_or_a_clear_error():
    W = torch.full((8,), 1 / 8, dtype=torch.float64)
    same = torch.ones(8, 3, dtype=torch.float64)  # every particle a copy of one
    assert torch.isfinite(covariance_preconditioner(same, W)).all()
    broken = torch.full((8, 3), math.nan, dtype=torch.float64)
    with pytest.raises(FloatingPointError, match="not positive definite"):
        covariance_preconditioner(broken, W)


def _counted(target):
    calls = []

    def log_density_and_grad(theta):
        calls.append(1)
        return target(theta)

    return log_density_and_grad, calls


def test_ghmc_stops_once_the_correlation_with_the_start_settles():
    # Exact draws with the right metric: each coordinate forgets its start
    # within a few steps, then its correlation only wanders (by about
    # 1 / sqrt(M) = 0.03 from block to block, below the 0.05 asked).
    cov = torch.tensor([[4.0, 1.9], [1.9, 1.0]], dtype=torch.float64)
    chol = torch.linalg.cholesky(cov)
    g = torch.Generator().manual_seed(3)
    M = 1000
    start = torch.randn(M, 2, generator=g, dtype=torch.float64) @ chol.T
    target, calls = _counted(_gaussian_target(cov))
    theta, _ = ghmc(start, target, 40, 1.0, 0.2, chol, g, settle=True)
    steps = len(calls) - 1  # one call at the start
    block = inspect.signature(_Settling).parameters["block"].default
    assert 2 * block <= steps < 40 and steps % block == 0
    # still draws of the target: a variance's standard error is sqrt(2 / M) = 4.5%
    # of it at M = 1000, so 20% is over 4 of them
    np.testing.assert_allclose(torch.cov(theta.T).numpy(), cov.numpy(), rtol=0.2, atol=0.2)
    target, calls = _counted(_gaussian_target(cov))
    ghmc(start, target, 40, 1.0, 0.2, chol, g)
    assert len(calls) == 41  # no settle: every step


def test_settling_waits_while_the_correlation_still_falls():
    g = torch.Generator().manual_seed(4)
    start = torch.randn(500, 10, generator=g, dtype=torch.float64)
    fresh = torch.randn(500, 10, generator=g, dtype=torch.float64)
    settling = _Settling(start, 0.05)

    def mixed(rho):  # correlation about rho with the start
        return rho * start + math.sqrt(1.0 - rho**2) * fresh

    assert not settling.settled(mixed(0.9))  # the first block only records
    assert not settling.settled(mixed(0.7))
    assert not settling.settled(mixed(0.5))
    assert settling.settled(mixed(0.49))
