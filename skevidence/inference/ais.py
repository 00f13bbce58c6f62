"""Full-data annealed importance sampling (AIS), a baseline for SGAIS.

Thesis Algorithm 6 (Neal 1998): the annealing steps of :ref:`algorithm`
(adaptive increments, resampling below ``resample_threshold``; ``0`` gives
Algorithm 6 as written) from the prior on all the data at once, with
Metropolis-adjusted generalised HMC moves. It is SGAIS's exact warm-up
path (:func:`sgais.exact_move`) run on one chunk that holds every
observation, so the two share kernel, schedule, resampling and error bar.
Not online: every :func:`update` reruns on all the data seen (one trace
entry per call; :ref:`methods`).
"""

import math
from dataclasses import replace

import numpy as np
import torch

from ..models.batches import batch_size_of
from . import sgais
from .engine import Engine
from .reservoir import Reservoir

__all__ = ["init", "update", "full_data_config"]


def full_data_config(config, batch_size):
    """``config`` for exact moves on one chunk of ``batch_size`` observations.

    No control variate (the moves use every observation), no warning
    about long annealing (a run from the prior needs many steps by design)
    and no importance folds (a baseline: the annealing's estimate alone).
    """
    return replace(config, batch_size=max(int(batch_size), 1), control_variate=None,
                   annealing_steps_warning=None, fold_importance=False)


def init(model, config, generator, dtype=torch.float64, device="cpu"):
    """Particles from the prior with equal weights and an empty data store."""
    return sgais.init(model, replace(config, control_variate=None), generator,
                      dtype=dtype, device=device)


def update(model, state, config, batch, move=None, callback=None):
    """Rerun AIS from the prior on the data seen so far plus ``batch``.

    ``move`` defaults to :func:`sgais.exact_move` (adjusted moves on the
    exact tempered posterior). The new state keeps only the trace, the
    generator's stream and the adapted step size of ``state``.
    """
    data = _all_data(state, batch)
    n_total = batch_size_of(data)
    state = _restarted_from_prior(model, state)
    return sgais.update(model, state, full_data_config(config, n_total), data,
                        move=sgais.exact_move if move is None else move, callback=callback)


def _all_data(state, batch):
    if state.n_seen == 0:
        return batch
    return tuple(torch.cat([old, new]) for old, new in zip(state.reservoir.data(), batch))


def _restarted_from_prior(model, state):
    """New prior particles, uniform weights, no data seen: AIS starts over."""
    if state.n_seen == 0:
        return state
    state = sgais.successor(state)
    M, theta = state.theta.shape[0], state.theta
    return replace(state, theta=model.sample_prior(M, state.generator, dtype=theta.dtype,
                                                   device=theta.device),
                   log_W=np.full(M, -math.log(M)), n_seen=0, log_evidence=0.0,
                   log_evidence_var=0.0, reservoir=Reservoir(capacity=None), summary=None)


ENGINE = Engine("ais", init, update, keeps_every_observation=True, refits_from_prior=True)
