"""Systematic resampling of the engine."""

import numpy as np

from skevidence.inference.annealing import log_normalize
from skevidence.inference.resampling import systematic_resample


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
