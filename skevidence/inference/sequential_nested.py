"""The sequential SG-MCMC estimator with the thesis's nested-sampling hybrid (section 4.1).

The first observations, where :mod:`.sequential` is weakest (particles
that fall behind a fast-changing posterior are never reweighted away),
get nested sampling (:func:`.nested.nested_sampling`) on the first
``batch_size`` observations; the particles start from its posterior
samples and continue with sequential predictive estimates. The error bar
adds the NS error ``sqrt(H / n_live)``. Until ``batch_size`` observations
have been seen, a ``partial_fit`` reruns the NS part on all of them.
"""

from dataclasses import replace

import torch

from ..models.batches import batch_size_of
from . import nested, sequential, sgais
from .engine import Engine

__all__ = ["init", "update"]

init = sgais.init


def update(model, state, config, batch, move=None, callback=None):
    """NS on the data up to ``batch_size`` observations, sequential estimates after.

    Returns the new state; ``state`` is left as it was.
    """
    state = sgais.successor(state)
    n_head = min(config.batch_size - state.n_seen, batch_size_of(batch))
    if n_head > 0:
        state = _nested_head(model, state, config, tuple(t[:n_head] for t in batch))
        if callback is not None:
            callback(state, 1.0, 0)
        batch = tuple(t[n_head:] for t in batch)
    if batch_size_of(batch) > 0:
        state = sequential.update(model, state, config, batch, move=move, callback=callback)
    return state


def _nested_head(model, state, config, head):
    """The state with the evidence and posterior particles of the stored data plus
    ``head`` by NS."""
    data = head
    if state.n_seen > 0:
        data = tuple(torch.cat([old, new]) for old, new in zip(state.reservoir.data(), head))
    M = state.theta.shape[0]
    live = model.sample_prior(M, state.generator, dtype=state.theta.dtype,
                              device=state.theta.device)
    n_traj = nested.n_trajectories(config, state.theta.shape[1])
    result = nested.nested_sampling(model, data, live, state.generator, n_trajectories=n_traj)
    state = nested.set_posterior_particles(state, result)
    state = replace(state, log_evidence=result.log_evidence,
                    log_evidence_var=result.log_evidence_std**2,
                    reservoir=state.reservoir.append(head, state.generator),
                    cv=None if state.cv is None else state.cv.add_chunk(model, head),
                    n_seen=batch_size_of(data))
    return sgais.record_chunk(state, result.n_iterations, ess_value=float(M))


ENGINE = Engine("sequential-nested", init, update,
                keeps_every_observation=True, trace_ess_is_predictive=True)
