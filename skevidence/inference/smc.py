"""Sequential importance resampling over the data (IBIS), a baseline for SGAIS.

Thesis Algorithm 7 (Chopin 2002, "iterated batch importance sampling"):
the chunk loop of :ref:`algorithm` with Metropolis-adjusted generalised HMC
moves on the exact posterior of every observation seen
(:func:`sgais.exact_move`) in place of mini-batch SGHMC, so the estimate is
unbiased in ``Z`` and the run quadratic in ``N`` (:ref:`methods`). Online:
:func:`update` continues from the current particles.
"""

from dataclasses import replace

import torch

from . import sgais
from .engine import Engine

__all__ = ["init", "update"]


def _exact_config(config):
    # A baseline of the thesis: the annealing's estimate alone, no importance folds.
    return replace(config, control_variate=None, fold_importance=False)


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights and an empty data store."""
    return sgais.init(model, _exact_config(config), generator, dtype=dtype, device=device)


def update(model, state, config, batch, move=None, callback=None):
    """Condition the particles on ``batch`` in chunks, with exact moves."""
    return sgais.update(model, state, _exact_config(config), batch,
                        move=sgais.exact_move if move is None else move, callback=callback)


ENGINE = Engine("smc", init, update, keeps_every_observation=True, anneals_online=True)
