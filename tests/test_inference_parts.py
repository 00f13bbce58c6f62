"""Unit tests of the engine's small parts: ESS, increments, resampling, reservoir, optimiser."""

import math

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from skevidence.inference.annealing import conditional_ess, ess, log_normalize, next_increment
from skevidence.inference.posterior_gap import maximize
from skevidence.inference.reservoir import Reservoir
from skevidence.inference.resampling import systematic_resample


def test_ess_of_uniform_and_degenerate_weights():
    assert ess(np.zeros(10)) == pytest.approx(10.0)
    assert ess(np.array([0.0] + [-np.inf] * 9)) == pytest.approx(1.0)
    # Log space: weights far below float underflow still give the right ESS.
    assert ess(np.array([-2000.0, -2000.0])) == pytest.approx(2.0)


def test_next_increment_meets_target_and_is_maximal():
    rng = np.random.default_rng(0)
    loglik = rng.normal(-700.0, 30.0, size=64)
    log_W = log_normalize(rng.normal(size=64))
    target = 0.9 * 64
    delta = next_increment(log_W, loglik, 1.0, target)
    assert 0 < delta < 1
    assert conditional_ess(log_W, loglik, delta) >= target
    assert conditional_ess(log_W, loglik, delta * 1.001) < target


def test_next_increment_takes_the_whole_step_when_it_is_cheap():
    loglik = np.full(16, -3.0)
    assert next_increment(np.full(16, -np.log(16)), loglik, 0.25, 0.9 * 16) == 0.25


def test_systematic_resampling_counts_are_floor_or_ceil_of_expected():
    rng = np.random.default_rng(1)
    log_W = log_normalize(rng.normal(scale=2.0, size=50))
    for u in (0.0, 0.37, 0.999):
        counts = np.bincount(systematic_resample(log_W, u), minlength=50)
        expected = 50 * np.exp(log_W)
        assert counts.sum() == 50
        assert np.all(counts >= np.floor(expected) - 1e-9)
        assert np.all(counts <= np.ceil(expected) + 1e-9)


def test_systematic_resampling_to_another_count():
    rng = np.random.default_rng(2)
    log_W = log_normalize(rng.normal(scale=2.0, size=50))
    for n in (7, 200):
        for u in (0.0, 0.61):
            counts = np.bincount(systematic_resample(log_W, u, n), minlength=50)
            expected = n * np.exp(log_W)
            assert counts.sum() == n
            assert np.all(counts >= np.floor(expected) - 1e-9)
            assert np.all(counts <= np.ceil(expected) + 1e-9)


def _column(values):
    return (torch.as_tensor(values, dtype=torch.float64)[:, None],)


def test_unbounded_store_keeps_everything_in_order_with_amortised_growth():
    store, g = Reservoir(), torch.Generator().manual_seed(0)
    sizes = [1, 7, 499, 501, 5000, 3, 1024]
    grown, start = 0, 0
    for n in sizes:
        before = store.buffers[0] if store.buffers else None
        store = store.append(_column(np.arange(start, start + n)), g)
        grown += before is not None and store.buffers[0] is not before
        start += n
    data = store.data()[0][:, 0].numpy()
    np.testing.assert_array_equal(data, np.arange(start))
    # Capacity doubles, so the buffer is re-allocated O(log n) times, not per chunk.
    assert grown <= int(np.ceil(np.log2(start))) and store.buffers[0].shape[0] < 2 * start


@pytest.mark.parametrize("capacity", [None, 30])
def test_append_returns_a_new_store_and_leaves_the_old_one_as_it_was(capacity):
    g = torch.Generator().manual_seed(0)
    old = Reservoir(capacity=capacity).append(_column(np.arange(20)), g)
    kept = old.data()[0].clone()
    one = old.append(_column(np.arange(100, 140)), g)
    other = old.append(_column(np.arange(200, 240)), g)  # a second branch from the same store
    assert (old.size, old.n_seen) == (20, 20) and torch.equal(old.data()[0], kept)
    assert one.n_seen == other.n_seen == 60
    if capacity is None:
        np.testing.assert_array_equal(one.data()[0][20:, 0], np.arange(100, 140))
        np.testing.assert_array_equal(other.data()[0][20:, 0], np.arange(200, 240))
    else:
        assert set(one.data()[0][:, 0].tolist()) <= set(range(20)) | set(range(100, 140))
        assert set(other.data()[0][:, 0].tolist()) <= set(range(20)) | set(range(200, 240))


def test_bounded_reservoir_is_a_uniform_sample_of_the_stream():
    # Each of the n stream items must be in the size-k reservoir with
    # probability k / n, whatever the chunking. Over R = 2000 independent
    # streams the inclusion counts are multinomial-like; a chi-square test at
    # a fixed seed checks uniformity (p > 0.001; a slot-selection bias of a
    # few percent gives p < 1e-6 at this R).
    n, k, R = 200, 20, 2000
    g = torch.Generator().manual_seed(123)
    counts = np.zeros(n)
    for _ in range(R):
        store = Reservoir(capacity=k)
        for lo, hi in [(0, 5), (5, 50), (50, 51), (51, 130), (130, 200)]:
            store = store.append(_column(np.arange(lo, hi)), g)
        kept = store.data()[0][:, 0].numpy().astype(int)
        assert len(kept) == k and len(set(kept)) == k
        counts[kept] += 1
    assert chisquare(counts).pvalue > 1e-3
    assert counts.sum() == R * k


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
