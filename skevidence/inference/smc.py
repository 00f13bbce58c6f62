"""Sequential importance resampling over the data (IBIS), a baseline for SGAIS.

Thesis Algorithm 7 (Chopin 2002, "iterated batch importance sampling"):
the data are added in chunks of ``batch_size``; each chunk reweights the
particles by its likelihood, tempered within the chunk when the full
increment would drop the conditional ESS below ``target_ess * M`` (as in
SGAIS), the weights are resampled when their ESS falls below
``resample_threshold * M``, and the particles are moved by
Metropolis-adjusted generalised HMC on the exact posterior of every
observation seen (:func:`sgais.exact_move`). The estimate is unbiased in
``Z`` whatever the moves, as long as they leave the tempered posterior
invariant, which the adjustment guarantees.

It differs from SGAIS only in the moves: exact ones, whose cost per step
grows with the data seen (the whole run is quadratic in ``N``), where
SGAIS uses mini-batch gradients. Online: :func:`update` continues from the
current particles.
"""

from dataclasses import replace

import torch

from . import sgais
from .engine import Engine

__all__ = ["init", "update"]


def _exact_config(config):
    return replace(config, control_variate=None)


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights and an empty data store."""
    return sgais.init(model, _exact_config(config), generator, dtype=dtype, device=device)


def update(model, state, config, batch, move=None, callback=None):
    """Condition the particles on ``batch`` in chunks, with exact moves."""
    return sgais.update(model, state, _exact_config(config), batch,
                        move=sgais.exact_move if move is None else move, callback=callback)


ENGINE = Engine("smc", init, update, keeps_every_observation=True, anneals_online=True)
