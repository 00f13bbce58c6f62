"""The annealing schedule: effective sample sizes and the next increment."""

import numpy as np
import pytest

from skevidence.inference.annealing import conditional_ess, ess, log_normalize, next_increment


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
