import sys
from pathlib import Path

import numpy as np
import pytest
import torch

# the stand-in members of the meta-estimator tests live beside the tests
sys.path.insert(0, str(Path(__file__).parent))

# The tests' tensors are small: one intra-op thread is as fast, and it keeps
# the suite from stalling in OpenMP spin-waits when the cores are shared
# (pytest-xdist, CI runners with other jobs). SKEVIDENCE_NUM_THREADS=2 runs
# the fits on two (skevidence.set_config).
torch.set_num_threads(1)


# Settings for tests about behaviour, not accuracy: a few particles and
# moves, small chunks (one definition for the estimator and meta tests).
CHEAP = dict(n_particles=16, n_burnin=2, batch_size=100, random_state=0)


def single_precision_sum_bound(model, theta, batch, extra_ulps=16):
    """A bound on how far a single-precision ``grad_log_likelihood`` sum over
    ``batch`` can lie from the double one, ``[M, d]``: ``gamma_n * sum_rows
    |row's gradient|`` (Higham's bound on a recursive sum of ``n`` terms,
    ``gamma_n = n u / (1 - n u)``, ``u = 2^-24``), with ``extra_ulps`` more for
    each row's own few operations. For models whose gradient is a sum of
    per-row terms with no cancellation after the sum (not the mixture's)."""
    rowwise = torch.func.vmap(lambda row: model.grad_log_likelihood(theta, row))
    terms = rowwise(tuple(t[:, None] for t in batch)).abs().sum(0)
    n = batch[0].shape[0] + extra_ulps
    u = 2.0**-24
    return n * u / (1 - n * u) * terms


def paper_linear_data(n_samples, seed, n_features=5):
    """The paper's linear-regression data: true parameters from the prior, noise std 1."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(n_features + 1)
    X = rng.standard_normal((n_samples, n_features))
    y = X @ w[:-1] + w[-1] + rng.standard_normal(n_samples)
    return X, y


def gaussian_blobs(n, centers, scales, weights, seed):
    """``n`` draws of a diagonal Gaussian mixture (one row of ``scales`` per component)."""
    rng = np.random.default_rng(seed)
    z = rng.choice(len(weights), size=n, p=weights)
    centers = np.asarray(centers, dtype=float)
    scales = np.broadcast_to(np.asarray(scales, dtype=float).reshape(len(weights), -1),
                             centers.shape)
    return centers[z] + scales[z] * rng.standard_normal((n, centers.shape[1]))


@pytest.fixture
def linear_data():
    return paper_linear_data


@pytest.fixture
def baoab_calls(monkeypatch):
    """A list that gains one entry per stochastic-gradient (BAOAB) move of the engine."""
    from skevidence.inference import kernels, moves

    calls = []

    def counted(*args):
        calls.append(args[2])  # the move's number of steps
        return kernels.baoab(*args)

    monkeypatch.setattr(moves, "baoab", counted)
    return calls
