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


def test_next_increment_is_the_crossing_within_its_tolerance():
    # Weights from flat to degenerate, likelihoods from flat to spread over 1e6 nats,
    # particles without weight or likelihood: the increment meets the target and a
    # step 5 tolerances (in log delta) longer does not.
    rng = np.random.default_rng(1)
    for case in range(200):
        M = 128
        with np.errstate(divide="ignore"):  # a flat Dirichlet can give exact zeros
            log_W = np.log(rng.dirichlet(np.ones(M) * [0.05, 1.0, 20.0][case % 3]))
        loglik = rng.normal(-500.0, 10 ** rng.uniform(-1, 6), size=M)
        if case % 4 == 0:
            log_W[rng.integers(M, size=5)] = -np.inf
            loglik[rng.integers(M, size=5)] = -np.inf
        target = 0.9 * M
        delta = next_increment(log_W, loglik, 1.0, target, tol=1e-6)
        if conditional_ess(log_W, loglik, np.exp(-50.0)) < target:
            # weight on particles without likelihood: unreachable, the smallest step
            assert delta == pytest.approx(np.exp(-50.0))
            continue
        if delta == 1.0:
            continue
        assert conditional_ess(log_W, loglik, delta) >= target * (1 - 1e-12)
        assert conditional_ess(log_W, loglik, delta * np.exp(5e-6)) < target
