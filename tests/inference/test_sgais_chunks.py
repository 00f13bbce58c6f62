"""Chunk boundaries of the engine, annealing steps against informativeness, the long-chunk warning."""

import warnings

import numpy as np
import pytest
import torch

from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_linear_regression
from skevidence.inference import sgais
from skevidence.models import LinearRegressionModel
from tests.conftest import paper_linear_data


def test_first_batch_comes_in_doubling_chunks_then_whole_batches():
    config = sgais.SGAISConfig(first_chunk_size=16)
    assert sgais.chunk_ends(0, 2100, config) == [31, 62, 125, 250, 500, 1000, 1500, 2000, 2100]
    # Boundaries depend on the stream position only: a call starting at 40 or
    # at 1010 ends its chunks on the same boundaries as one long call.
    assert sgais.chunk_ends(40, 500, config) == [22, 85, 210, 460, 500]
    assert sgais.chunk_ends(1010, 600, config) == [490, 600]
    assert sgais.chunk_ends(0, 20, config) == [20]
    # The default: whole batches from the start (the paper's chunking).
    assert sgais.chunk_ends(0, 1200, sgais.SGAISConfig()) == [500, 1000, 1200]
    assert sgais.chunk_ends(700, 900, sgais.SGAISConfig()) == [300, 800, 900]
    # Mini-batch moves (no exact warm-up) cost the same on any chunk: no ramp.
    no_exact = sgais.SGAISConfig(exact_warmup=False, first_chunk_size=16)
    assert sgais.chunk_ends(0, 600, no_exact) == [500, 600]
    assert sgais.chunk_ends(0, 300, sgais.SGAISConfig(batch_size=100, first_chunk_size=20)) == [
        25, 50, 100, 200, 300]


def test_updates_split_on_a_ramp_boundary_equal_one_update():
    model = LinearRegressionModel(5)
    X, y = (torch.as_tensor(a) for a in paper_linear_data(700, 3))
    config = sgais.SGAISConfig(n_particles=32, n_burnin=3, first_chunk_size=16)
    full = sgais.update(model, sgais.init(model, config, torch.Generator().manual_seed(1)),
                        config, (X, y))
    split = sgais.init(model, config, torch.Generator().manual_seed(1))
    split = sgais.update(model, split, config, (X[:125], y[:125]))
    split = sgais.update(model, split, config, (X[125:], y[125:]))
    assert split.log_evidence == full.log_evidence and torch.equal(split.theta, full.theta)
    assert [info.n_seen for info in split.trace] == [31, 62, 125, 250, 500, 700]


def _first_batch_steps(noise_std):
    X, y = make_linear_regression(500, noise_std=noise_std, random_state=1)
    # prior_std is in units of the noise: 1 / noise_std keeps the weights'
    # prior at N(0, 1) while the likelihood's precision grows.
    reg = EvidenceLinearRegression(noise_std=noise_std, prior_std=1.0 / noise_std, n_burnin=2,
                                   random_state=0).fit(X, y)
    return int(reg.evidence_trace_["n_annealing_steps"].sum())


def test_annealing_steps_grow_logarithmically_with_informativeness():
    # Each factor 1e4 in the likelihood's precision adds about 45 steps to
    # the first chunk (37, 82, 126 measured for noise_std 1, 1e-2, 1e-4 with
    # n_burnin=20; 53, 96, 142, 185 down to 1e-6 with doubling first chunks;
    # seeds move them by a few steps): growth like log(precision), where a
    # linear growth would give thousands.
    steps = [_first_batch_steps(s) for s in (1.0, 1e-2, 1e-4)]
    assert steps[0] < steps[1] < steps[2] <= 220
    assert steps[2] - steps[1] <= 1.5 * (steps[1] - steps[0]) + 10


def test_a_chunk_with_many_annealing_steps_warns_and_a_normal_one_does_not():
    model = LinearRegressionModel(5)
    X, y = (torch.as_tensor(a) for a in paper_linear_data(300, 4))
    quiet = sgais.SGAISConfig(n_particles=32, n_burnin=2)
    state = sgais.init(model, quiet, torch.Generator().manual_seed(0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sgais.update(model, state, quiet, (X, y))
    strict = sgais.SGAISConfig(n_particles=32, n_burnin=2, annealing_steps_warning=3)
    state = sgais.init(model, strict, torch.Generator().manual_seed(0))
    with pytest.warns(sgais.AnnealingWarning, match="prior-data conflict"):
        state = sgais.update(model, state, strict, (X, y))
    assert state.n_seen == 300 and np.isfinite(state.log_evidence)
