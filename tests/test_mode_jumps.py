"""Component births of the mixture (skevidence/inference/mode_jumps.py)."""

import numpy as np
import torch

from skevidence.inference import sgais
from skevidence.inference.mode_jumps import ComponentBirths, _BirthProposal
from skevidence.models import GaussianMixtureModel


def test_birth_proposal_density_is_normalised_and_matches_its_draws():
    # One feature, two particles: the density over (mean, log variance) on a
    # grid must integrate to 1 (a wrong normalisation would bias every
    # acceptance ratio) and its mean must match the draws'.
    gen = torch.Generator().manual_seed(0)
    candidates = torch.tensor([[-2.0], [0.5], [3.0]], dtype=torch.float64)
    log_pick = torch.log_softmax(torch.tensor([[0.0, 1.0, -1.0], [2.0, 0.0, 0.0]],
                                              dtype=torch.float64), 1)
    proposal = _BirthProposal(log_pick, candidates, torch.tensor([0.3], dtype=torch.float64),
                              torch.tensor([-0.5], dtype=torch.float64), 0.8)
    m, v = torch.meshgrid(torch.linspace(-8, 9, 341, dtype=torch.float64),
                          torch.linspace(-6, 5, 221, dtype=torch.float64), indexing="ij")
    phi = (m.reshape(-1, 1), v.reshape(-1, 1))
    area = (17 / 340) * (11 / 220)
    for i in range(2):
        picked = _BirthProposal(log_pick[i : i + 1].expand(m.numel(), 3), candidates,
                                proposal.jitter_var, proposal.centre, proposal.sd)
        density = picked.log_density(phi).exp()
        # Riemann sum on a grid 0.05 wide: exact to about 1e-6 here.
        assert abs(float(density.sum()) * area - 1.0) < 1e-4
        grid_mean = float((density * phi[0][:, 0]).sum() * area)
        draws = torch.stack([proposal.sample(gen)[0][i, 0] for _ in range(4000)])
        # Standard error of the draws' mean: about 2.0 / sqrt(4000) = 0.03.
        assert abs(float(draws.mean()) - grid_mean) < 0.15


def _stuck_state(model, M=64):
    """A cloud whose two components both sit on the left cluster."""
    config = sgais.SGAISConfig(n_particles=M, control_variate="particle", precondition="model")
    state = sgais.init(model, config, torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(1)
    weights = torch.tensor([[0.8, 0.2]], dtype=torch.float64).expand(M, 2)
    means = torch.tensor([[[-5.0], [-5.5]]], dtype=torch.float64) \
        + 0.1 * torch.randn(M, 2, 1, generator=gen, dtype=torch.float64)
    state.theta = model.pack(weights, means, torch.ones(M, 2, 1, dtype=torch.float64))
    return state


def test_births_put_a_component_on_an_unexplained_cluster():
    rng = np.random.default_rng(0)
    X = torch.as_tensor(np.concatenate([rng.normal(-5, 1, (200, 1)), rng.normal(5, 1, (40, 1))]))
    model = GaussianMixtureModel(1, 2, mean_prior=0.0, variance_scale=1.0)
    state = _stuck_state(model)
    births = ComponentBirths(n_rounds=2)
    theta = births.births(model, state, (X,), state.theta)
    _, means, _ = model.unpack(theta)
    # A birth lands within the right cluster (sd 1) plus the proposal's
    # jitter (sd 0.55), so within 2.5 of its centre.
    found = (means[:, :, 0] - 5.0).abs().min(1).values < 2.5
    # The stuck cloud is ~1e3 nats below a cloud that covers both clusters,
    # so every birth proposed on the right cluster is accepted; candidates
    # are drawn with equal chances among the points explained worse than the
    # median by 2 nats: the 40 on the right and a few in the left tail
    # (births there cost little, so some are accepted too). At seed 0, 63
    # of 64 particles moved and 43 have a component on the right; without
    # births none would.
    assert float(found.double().mean()) > 0.5
    assert births.history[-1][1] > 0.8
    # The references of the control variates moved with the particles.
    assert torch.equal(state.cv.theta_ref[found], theta[found])


def test_births_leave_a_posterior_draw_in_place_in_distribution():
    # Invariance: on a well-determined 2-cluster posterior, particles drawn
    # near the mode mostly stay (proposals far from them are rejected) and
    # those that move land on the same mode up to relabelling.
    rng = np.random.default_rng(1)
    X = torch.as_tensor(np.concatenate([rng.normal(-3, 1, (150, 1)), rng.normal(3, 1, (150, 1))]))
    model = GaussianMixtureModel(1, 2, mean_prior=0.0, variance_scale=1.0)
    config = sgais.SGAISConfig(n_particles=64, control_variate=None, precondition="model")
    state = sgais.init(model, config, torch.Generator().manual_seed(0))
    gen = torch.Generator().manual_seed(2)
    means = torch.tensor([[[-3.0], [3.0]]], dtype=torch.float64) \
        + 0.08 * torch.randn(64, 2, 1, generator=gen, dtype=torch.float64)
    theta = model.pack(torch.full((64, 2), 0.5, dtype=torch.float64), means,
                       torch.ones(64, 2, 1, dtype=torch.float64))
    out = ComponentBirths(n_rounds=2).births(model, state, (X,), theta)
    sorted_means = model.unpack(out)[1][:, :, 0].sort(1).values
    assert torch.isfinite(out).all()
    # Posterior sd of each mean: 1 / sqrt(150) = 0.08; 0.5 is six of them.
    assert float((sorted_means - torch.tensor([-3.0, 3.0])).abs().max()) < 0.5
