"""Adaptive Resample-Move in the engine: ``max_particles`` grows hard chunks."""

import numpy as np
import pytest
import torch

from skevidence import EvidenceGMM, EvidenceLinearRegression
from skevidence.inference import sgais
from skevidence.models import LinearRegressionModel
from tests.conftest import CHEAP, gaussian_blobs, paper_linear_data

GROWING = dict(CHEAP, max_particles=64)


@pytest.fixture(scope="module")
def data():
    return paper_linear_data(300, 0)


def test_hard_first_chunk_grows_and_the_count_returns_to_n_particles(data):
    X, y = data
    reg = EvidenceLinearRegression(**GROWING).fit(X, y)
    counts = reg.evidence_trace_["n_particles"]
    # The first chunk starts from the prior (33-36 annealing steps here over
    # random_state 0-4, against 4-9 for the next ones): it grows, by
    # doublings, to 64 (to 16 or 32 in the later chunks).
    assert counts[0] > 16 and set(counts) <= {16, 32, 64}
    assert reg.evidence_trace_["n_annealing_steps"][0] > reg.evidence_trace_[
        "n_annealing_steps"][1:].max()
    # Between chunks, and in the fitted attributes, there are n_particles.
    assert reg.particles_.shape[0] == 16 and reg.particle_weights_.shape == (16,)
    assert reg.particle_weights_.sum() == pytest.approx(1.0)
    assert np.isfinite(reg.log_evidence_std_) and reg.log_evidence_std_ > 0
    # At these cheap settings (2 moves per step) the errors against the
    # closed form over random_state 0-4 were -2.2 to -3.9 nats with growth
    # and -1.4 to -3.7 without: the moves limit them, not the count.
    assert abs(reg.log_evidence_ - reg.exact_log_evidence(X, y)) < 5.0


def test_growth_never_falls_below_n_particles_or_passes_max_particles():
    X = gaussian_blobs(400, [[-3.0, 0.0], [3.0, 1.0]], [1.0, 0.8], [0.5, 0.5], 0)
    gmm = EvidenceGMM(n_init=1, n_components=2, n_particles=16, max_particles=40, n_burnin=2,
                      batch_size=100, random_state=0).fit(X)
    counts = gmm.evidence_trace_["n_particles"]
    assert counts.min() >= 16 and counts.max() <= 40 and counts[0] > 16
    assert gmm._state.cv.theta_ref.shape[0] == 16  # per-particle references follow


def test_same_random_state_same_growth(data):
    X, y = data
    a = EvidenceLinearRegression(**GROWING).fit(X, y)
    b = EvidenceLinearRegression(**GROWING).fit(X, y)
    assert a.log_evidence_ == b.log_evidence_ and a.log_evidence_std_ == b.log_evidence_std_
    for key, value in a.evidence_trace_.items():
        np.testing.assert_array_equal(b.evidence_trace_[key], value)
    # max_particles = n_particles grows nothing and gives the fixed-count numbers.
    fixed = EvidenceLinearRegression(**CHEAP).fit(X, y)
    same = EvidenceLinearRegression(**dict(CHEAP, max_particles=16)).fit(X, y)
    assert same.log_evidence_ == fixed.log_evidence_


def test_the_state_before_growth_stays_as_it_was_and_resumes_exactly():
    model = LinearRegressionModel(5)
    X, y = (torch.as_tensor(a) for a in paper_linear_data(600, 2))
    config = sgais.SGAISConfig(n_particles=16, max_particles=64, n_burnin=2, batch_size=200)
    state = sgais.init(model, config, torch.Generator().manual_seed(0))
    state = sgais.update(model, state, config, (X[:200], y[:200]))
    before = (state.theta.clone(), state.log_W.copy(), state.log_evidence,
              state.log_evidence_var, state.n_resamplings)
    sgais.update(model, state, config, (X[200:], y[200:]))
    assert torch.equal(state.theta, before[0]) and np.array_equal(state.log_W, before[1])
    assert (state.log_evidence, state.log_evidence_var, state.n_resamplings) == before[2:]
    assert len(state.trace) == 1 and state.trace[0].n_particles > 16
    state = sgais.update(model, state, config, (X[200:], y[200:]))
    straight = sgais.init(model, config, torch.Generator().manual_seed(0))
    straight = sgais.update(model, straight, config, (X, y))
    assert state.log_evidence == straight.log_evidence


@pytest.mark.parametrize("params, message", [
    (dict(n_particles=32, max_particles=16), "max_particles=16 must be at least n_particles=32"),
    (dict(max_particles=64, engine_options={"n_islands": 2}), "does not combine with n_islands"),
    (dict(max_particles=1.5), "max_particles"),
])
def test_bad_max_particles_raise_before_any_state_changes(data, params, message):
    X, y = data
    reg = EvidenceLinearRegression(**CHEAP).fit(X, y)
    before = reg.log_evidence_, len(reg.evidence_trace_["n_seen"])
    with pytest.raises(ValueError, match=message):
        reg.set_params(**params).partial_fit(X, y)
    assert (reg.log_evidence_, len(reg.evidence_trace_["n_seen"])) == before
