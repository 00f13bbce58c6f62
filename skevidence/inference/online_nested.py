"""Bayesian updating with nested sampling (thesis section 4.3), a baseline for SGAIS.

Each chunk's predictive ``p(C_k | C_<k)`` is a run of nested sampling
(:func:`.nested.nested_sampling`) whose "prior" is the posterior so far
and whose likelihood is the chunk's. The live points start from the
particles, made distinct by Metropolis-adjusted moves
(:func:`.sgais.exact_move`); the run's posterior samples, resampled to
``n_particles``, are the next chunk's particles. The error bar sums the
runs' ``H / n_live``. The moves are exact (the thesis used SGHMC), so the
cost grows quadratically with the data (:ref:`methods`).
"""

from dataclasses import replace

from ..models.batches import batch_size_of
from . import nested, sgais
from .ais import init  # prior draws, as AIS: no control variate, the moves are exact
from .engine import Engine

__all__ = ["init", "update"]


def update(model, state, config, batch, move=None, callback=None):
    """One nested-sampling run per chunk of ``batch_size`` (chunk boundaries
    at multiples of it, so a stream's cut into calls does not matter).

    Returns the new state; ``state`` is left as it was.
    """
    state = sgais.successor(state)
    start = 0
    b = config.batch_size
    n_new = batch_size_of(batch)
    while start < n_new:
        end = min(((state.n_seen // b) + 1) * b - state.n_seen + start, n_new)
        chunk = tuple(t[start:end] for t in batch)
        start = end
        state = _condition_on_chunk(model, state, config, chunk)
        if callback is not None:
            callback(state, 1.0, 0)
    return state


def _condition_on_chunk(model, state, config, chunk):
    """The state conditioned on ``chunk`` by one nested-sampling run."""
    store = state.reservoir.data() if state.n_seen > 0 else None
    acceptance = None
    if store is not None:
        # Resampled particles hold copies; NS needs distinct live points.
        state, acceptance = sgais.take_move(
            state, sgais.exact_move(model, state, config, chunk, 0.0))

    def log_prior_and_grad(theta):
        log_p, g = model.log_prior(theta), model.grad_log_prior(theta)
        if store is not None:
            log_l, g_l = model.log_likelihood_and_grad(theta, store)
            log_p, g = log_p + log_l, g + g_l
        return log_p, g

    n_traj = nested.n_trajectories(config, state.theta.shape[1])
    result = nested.nested_sampling(model, chunk, state.theta, state.generator,
                                    n_trajectories=n_traj,
                                    log_prior_and_grad=log_prior_and_grad)
    state = nested.set_posterior_particles(state, result)
    state = replace(state, log_evidence=state.log_evidence + result.log_evidence,
                    log_evidence_var=state.log_evidence_var + result.log_evidence_std**2,
                    reservoir=state.reservoir.append(chunk, state.generator),
                    n_seen=state.n_seen + batch_size_of(chunk))
    return sgais.record_chunk(state, result.n_iterations, ess_value=float(state.theta.shape[0]),
                       acceptance=acceptance)


ENGINE = Engine("online-nested", init, update, keeps_every_observation=True)
