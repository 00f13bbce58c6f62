"""The engine's per-particle preconditioner, ``precondition="model"``."""

import numpy as np
import torch

from skevidence.inference import sgais
from skevidence.models import LinearRegressionModel


def _run(precondition, batch):
    model = LinearRegressionModel(3)
    config = sgais.SGAISConfig(n_particles=16, n_burnin=5, precondition=precondition)
    state = sgais.init(model, config, torch.Generator().manual_seed(0))
    state = sgais.update(model, state, config, batch)
    return state


def test_default_posterior_scale_reproduces_the_isotropic_preconditioner():
    # Model.posterior_scale defaults to 1/sqrt(n_eff): running the kernel in
    # theta / s with the identity must equal the isotropic preconditioner
    # up to rounding, which checks the change of coordinates.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 3))
    y = X @ [1.0, -0.5, 0.2] + 0.3 + rng.standard_normal(600)
    batch = (torch.as_tensor(X), torch.as_tensor(y))
    a, b = _run(None, batch), _run("model", batch)
    torch.testing.assert_close(a.theta, b.theta, rtol=1e-8, atol=1e-10)
    assert abs(a.log_evidence - b.log_evidence) < 1e-8
