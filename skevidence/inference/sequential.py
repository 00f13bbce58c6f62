"""The sequential SG-MCMC evidence estimator (thesis section 4.1), a baseline for SGAIS.

``log Z = sum_k log p(C_k | C_<k)``, each predictive estimated once by the
mean likelihood of the chunk over equally weighted particles (thesis
eq. 4.4), which SGHMC (Metropolis-adjusted during the warm-up) then moves
to the posterior that includes the chunk. No reweighting and no
annealing: less variance than a degenerate importance weight, but biased
by design (Cameron, Eggers & Kroon, MaxEnt 2019; :ref:`methods`).

Chunks grow geometrically from one observation (by ``chunk_ends``' ``growth``) up to
``batch_size``, so that each predictive keeps a good part of ``M`` as its
ESS. The error bar sums the chunks' ``1 / ESS_k - 1 / M``; it does not
include the bias.
"""

import math
from dataclasses import replace

import numpy as np
import torch

from ..models.batches import batch_size_of
from . import sgais
from .engine import Engine
from .records import close_weight_segment

__all__ = ["init", "update", "chunk_ends"]

init = sgais.init


def chunk_ends(n_seen, n_new, batch_size, growth=1.05):
    """Ends (offsets into the new data) of the chunks.

    The boundaries grow geometrically from one observation (``n -> max(n +
    1, floor(growth * n))``; 1.05: the largest factor whose bias, particles
    lagging the posterior, stays within the error bar; docs: benchmarks, The
    error bar) until a chunk would hold ``batch_size``
    observations (``n = batch_size / (growth - 1)``), then they are the
    multiples of ``batch_size``: a function of the stream position only,
    so how a stream is cut into calls does not matter. (Ending the ramp at
    ``n = batch_size`` instead would make the next chunk as large as the
    data seen, whose predictive rests on a collapsed ESS.)
    """
    ramp, n = [], 0
    while max(n + 1, int(growth * n)) - n < batch_size:
        n = max(n + 1, int(growth * n))
        ramp.append(n)
    ends, n = [], n_seen
    while n < n_seen + n_new:
        later = [r for r in ramp if r > n]
        boundary = later[0] if later else (n // batch_size + 1) * batch_size
        n = min(boundary, n_seen + n_new)
        ends.append(n - n_seen)
    return ends


def update(model, state, config, batch, move=None, callback=None):
    """The state after estimating each chunk's predictive from the particles and moving them.

    ``state`` is left as it was. ``move`` defaults to :func:`sgais.sghmc_move`;
    ``callback(state, 1, 0)`` runs after each chunk.
    """
    state = sgais.successor(state)
    move = sgais.sghmc_move if move is None else move
    start = 0
    for end in chunk_ends(state.n_seen, batch_size_of(batch), config.batch_size):
        chunk = tuple(t[start:end] for t in batch)
        start = end
        state, predictive_ess = _add_predictive(model, state, chunk)
        state = sgais.refresh_reference(model, state, config)
        state, acceptance = sgais.take_move(state, move(model, state, config, chunk, 1.0))
        state, n_lost = _replace_diverged(state)
        state = replace(state, reservoir=state.reservoir.append(chunk, state.generator),
                        cv=None if state.cv is None else state.cv.add_chunk(model, chunk),
                        n_seen=state.n_seen + batch_size_of(chunk))
        # The trace's ESS is that of the chunk's predictive estimate: the
        # particles carry no weights, and a small one flags a chunk the
        # particles could not predict (a shift in the stream, lagging moves).
        state = sgais.record_chunk(state, 1, ess_value=predictive_ess, acceptance=acceptance,
                           n_diverged=n_lost, max_diverged_fraction=n_lost / state.theta.shape[0])
        if callback is not None:
            callback(state, 1.0, 0)
    return state


def _add_predictive(model, state, chunk):
    """The state with ``log mean_i p(C | theta_i)`` added to the evidence and its
    delta-method variance, and the ESS of the particles' likelihoods."""
    loglik = model.log_likelihood_sum(state.theta, chunk).to(torch.float64).cpu().numpy()
    loglik = np.where(np.isfinite(loglik), loglik, -np.inf)
    log_sum = float(np.logaddexp.reduce(loglik))
    if not np.isfinite(log_sum):
        raise FloatingPointError(
            f"every particle has zero likelihood for the chunk after {state.n_seen} "
            "observations: standardise the data (e.g. StandardScaler) or widen the prior")
    M = loglik.shape[0]
    state = replace(state, log_evidence=state.log_evidence + (log_sum - math.log(M)))
    # 1 / ESS - 1 / M of the chunk's normalised likelihoods (records.segment_variance).
    state = close_weight_segment(state, loglik - log_sum)
    return state, float(np.exp(-np.logaddexp.reduce(2.0 * (loglik - log_sum))))


def _replace_diverged(state):
    """The state whose particles that left the finite numbers are copies of random
    finite ones, and how many they were."""
    ok = torch.isfinite(state.theta).all(1)
    if bool(ok.all()):
        return state, 0
    good = torch.nonzero(ok).reshape(-1)
    if good.numel() == 0:
        raise FloatingPointError(
            f"all particles diverged after {state.n_seen} observations. The sequential "
            "estimator never reweights, so particles that lag the posterior stay and "
            "widen the moves' preconditioner; try method='sequential-nested' or "
            "'sgais', or a smaller learning_rate")
    bad = torch.nonzero(~ok).reshape(-1)
    lost = int(bad.numel())
    pick = torch.randint(good.numel(), (lost,), generator=state.generator,
                         device=state.theta.device)
    theta = state.theta.clone()
    theta[bad] = theta[good[pick]]
    return replace(state, theta=theta), lost


ENGINE = Engine("sequential", init, update, trace_ess_is_predictive=True)
