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


def test_chunks_end_on_multiples_of_batch_size_in_the_stream():
    config = sgais.SGAISConfig()
    assert sgais.chunk_ends(0, 1200, config) == [500, 1000, 1200]
    # Boundaries depend on the stream position only: a call starting at 700
    # ends its chunks on the same boundaries as one long call.
    assert sgais.chunk_ends(700, 900, config) == [300, 800, 900]
    assert sgais.chunk_ends(1000, 500, config) == [500]
    assert sgais.chunk_ends(0, 0, config) == []


def test_chunks_grow_with_the_data_on_a_grid_of_the_stream():
    config = sgais.SGAISConfig(chunk_growth=0.25)
    ends = sgais.chunk_ends(0, 10**5, config)
    starts = np.r_[0, ends[:-1]]
    sizes = np.diff(np.r_[0, ends])
    # batch_size until a quarter of the data before a chunk is longer, then
    # that quarter in whole batch_size units.
    expected = np.maximum(500, 500 * (starts // 4 // 500))
    np.testing.assert_array_equal(sizes[:-1], expected[:-1])
    assert sizes[-1] <= expected[-1] and ends[-1] == 10**5
    assert sizes[0] == 500 and sizes[-2] > 10_000 and len(ends) < 40
    # A call that starts on the grid, or inside a chunk, ends on the same points.
    assert [ends[9] + e for e in sgais.chunk_ends(ends[9], 10**5 - ends[9], config)] == ends[10:]
    inside = ends[9] + 700
    assert [inside + e for e in sgais.chunk_ends(inside, 10**5 - inside, config)] == ends[10:]


@pytest.mark.parametrize("growth, chunks", [(0.0, [200, 400, 600, 700]), (1.0, [200, 400, 700])])
def test_updates_split_on_a_chunk_boundary_equal_one_update(growth, chunks):
    model = LinearRegressionModel(5)
    X, y = (torch.as_tensor(a) for a in paper_linear_data(700, 3))
    config = sgais.SGAISConfig(n_particles=32, n_burnin=3, batch_size=200, chunk_growth=growth)
    full = sgais.update(model, sgais.init(model, config, torch.Generator().manual_seed(1)),
                        config, (X, y))
    split = sgais.init(model, config, torch.Generator().manual_seed(1))
    split = sgais.update(model, split, config, (X[:400], y[:400]))
    split = sgais.update(model, split, config, (X[400:], y[400:]))
    assert split.log_evidence == full.log_evidence and torch.equal(split.theta, full.theta)
    assert [info.n_seen for info in split.trace] == chunks


def _first_batch_steps(noise_std):
    X, y = make_linear_regression(500, noise_std=noise_std, random_state=1)
    # prior_std is in units of the noise: 1 / noise_std keeps the weights'
    # prior at N(0, 1) while the likelihood's precision grows.
    # (the annealing from the prior: no importance-sampling start)
    reg = EvidenceLinearRegression(noise_std=noise_std, prior_std=1.0 / noise_std, n_burnin=2,
                                   engine_options={"fold_importance": False},
                                   random_state=0).fit(X, y)
    return int(reg.evidence_trace_["n_annealing_steps"].sum())


def test_annealing_steps_grow_logarithmically_with_informativeness():
    # Each factor 1e4 in the likelihood's precision adds about 45 steps to
    # the first chunk (37, 82, 126 measured for noise_std 1, 1e-2, 1e-4 with
    # n_burnin=20; seeds move them by a few steps): growth like
    # log(precision), where a linear growth would give thousands.
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
    strict = sgais.SGAISConfig(n_particles=32, n_burnin=2, annealing_steps_warning=3,
                               fold_importance=False)  # the first chunk annealed
    state = sgais.init(model, strict, torch.Generator().manual_seed(0))
    with pytest.warns(sgais.AnnealingWarning, match="prior-data conflict"):
        state = sgais.update(model, state, strict, (X, y))
    assert state.n_seen == 300 and np.isfinite(state.log_evidence)
