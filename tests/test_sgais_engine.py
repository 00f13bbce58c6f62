"""The engine on its own: divergence handling and the Model contract."""

import numpy as np
import pytest
import torch

from skevidence.inference import sgais
from skevidence.models import LinearRegressionModel
from tests.conftest import paper_linear_data


class _NaNOutside(LinearRegressionModel):
    """Linear model whose likelihood is NaN where |theta_0| > bound."""

    def __init__(self, bound):
        super().__init__(5)
        self.bound = bound

    def log_likelihood(self, theta, batch):
        ll = super().log_likelihood(theta, batch)
        bad = theta[:, :1].abs() > self.bound
        return torch.where(bad, torch.full_like(ll, float("nan")), ll)


def _run(model, n=1000, seed=0):
    X, y = paper_linear_data(n, 0)
    config = sgais.SGAISConfig(n_particles=64, n_burnin=5)
    state = sgais.init(model, config, torch.Generator().manual_seed(seed))
    return sgais.update(model, state, config, (torch.as_tensor(X), torch.as_tensor(y)))


def test_particles_with_nan_likelihood_get_zero_weight_and_evidence_stays_finite():
    # About 1 in 20 prior draws has |theta_0| > 2 and a NaN likelihood.
    state = _run(_NaNOutside(bound=2.0))
    assert np.isfinite(state.log_evidence)
    assert np.all(np.isfinite(state.theta.numpy()))
    assert np.isfinite(state.log_W).all()


def test_all_particles_failing_raises_a_clear_error():
    with pytest.raises(FloatingPointError, match="every particle has zero likelihood"):
        _run(_NaNOutside(bound=-1.0))


def test_diverged_particles_are_replaced():
    model = LinearRegressionModel(5)
    X, y = paper_linear_data(500, 1)
    config = sgais.SGAISConfig(n_particles=32, n_burnin=2)
    state = sgais.init(model, config, torch.Generator().manual_seed(0))

    def move_that_breaks_two(model, state, config, chunk, lam):
        theta = sgais.sghmc_move(model, state, config, chunk, lam).theta.clone()
        theta[:2] = float("inf")
        return theta

    sgais.update(model, state, config, (torch.as_tensor(X), torch.as_tensor(y)),
                 move=move_that_breaks_two)
    assert torch.isfinite(state.theta).all()
    assert state.n_diverged >= 2 and np.isfinite(state.log_evidence)


def test_checkpoint_and_rollback_restore_the_state_exactly():
    model = LinearRegressionModel(5)
    X, y = (torch.as_tensor(a) for a in paper_linear_data(2000, 2))
    config = sgais.SGAISConfig(n_particles=16, n_burnin=3, reservoir_size=1200)
    state = sgais.init(model, config, torch.Generator().manual_seed(0))
    sgais.update(model, state, config, (X[:1000], y[:1000]))
    ckpt = sgais.checkpoint(state)
    before = (state.theta.clone(), state.log_W.copy(), state.log_evidence,
              state.reservoir.data()[0].clone(), state.cv.grad_sum.clone())
    sgais.update(model, state, config, (X[1000:], y[1000:]))
    sgais.rollback(state, ckpt)
    assert torch.equal(state.theta, before[0]) and np.array_equal(state.log_W, before[1])
    assert state.log_evidence == before[2] and state.n_seen == 1000
    assert torch.equal(state.reservoir.data()[0], before[3])
    assert torch.equal(state.cv.grad_sum, before[4]) and len(state.trace) == 2


@pytest.mark.parametrize("setting", [dict(precondition="covarience"), dict(integrator="BAOAB"),
                                     dict(control_variate="particles"),
                                     dict(precondition_shrinkage="ledoit")])
def test_config_rejects_unknown_string_settings(setting):
    with pytest.raises(ValueError, match="must be"):
        sgais.SGAISConfig(**setting)
