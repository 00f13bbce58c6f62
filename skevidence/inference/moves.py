"""The moves of SGAIS: SGHMC on mini-batches, Metropolis-adjusted moves in the warm-up.

A move ``move(model, state, config, chunk, lam)`` returns a
:class:`~skevidence.inference.records.MoveResult` and leaves ``state`` as it was.
"""

import math
from dataclasses import replace

import torch

from ..models.batches import PreparedBatch, batch_size_of, cast_batch, take
from .control_variates import past_term_gradient
from .kernels import baoab, ghmc, sghmc
from .preconditioning import in_preconditioned_coordinates, uses_curvature
from .records import MoveResult

__all__ = ["EXACT_ACCEPTANCE", "moves_per_step", "sghmc_steps", "sghmc_move",
           "exact_move", "moves_exactly", "minibatch_size_for", "chunk_gradient",
           "sampled_chunk", "with_chunk_term", "chunk_minibatch_size"]


# Target acceptance rate of the warm-up's generalised HMC: a rejection
# reverses the momentum, so a high rate keeps the trajectories going.
EXACT_ACCEPTANCE = 0.8


# Mini-batch sizes of ``minibatch_size="auto"`` (rows of past data): with a
# first-order control variate, and with the second order, whose noise is
# at least 16 times smaller (control_variates.NOISE_CUT), so that a quarter
# of the rows gives the same accuracy at less cost (docs: benchmarks,
# Logistic regression).
MINIBATCH_SIZE = 1000
SECOND_ORDER_MINIBATCH_SIZE = 250
# Most rows per mini-batch that a noise measurement can ask for (a noisy
# first-order control variate can ask for far more): a step's cost must stay
# bounded.
MAX_MINIBATCH_SIZE = 16_000


def moves_per_step(state, config):
    """More moves while the posterior is still broad and changes fast."""
    if state.n_seen < config.warmup_size:
        return config.n_burnin * config.warmup_factor
    return config.n_burnin


def sghmc_steps(state, config):
    """Steps of an SGHMC move: :func:`moves_per_step`, scaled by ``late_burnin_factor``
    (at least one) in the late phase (``config.late_start``)."""
    if state.n_seen < config.late_start:
        return moves_per_step(state, config)
    return max(1, round(config.late_burnin_factor * config.n_burnin))


def sghmc_move(model, state, config, chunk, lam):
    """SGHMC on the tempered posterior ``p(C|theta)^lam p(past|theta) p(theta)``.

    Where ``moves_exactly`` holds (the warm-up, and models with
    summary statistics after it) the move is :func:`exact_move` instead.
    """
    if moves_exactly(state, config):
        return exact_move(model, state, config, chunk, lam)
    n_past = state.n_seen
    minibatch_size = minibatch_size_for(state, config)
    generator = state.generator
    store = state.reservoir.data() if n_past > 0 else None

    sampled = sampled_chunk(model, state, chunk, minibatch_size)
    chunk_term = _whole_chunk_gradient(model, state, chunk) if sampled is None else None
    past_gradient = past_term_gradient(model, state.cv)

    def grad_log_density(theta):
        g = model.grad_log_prior(theta)
        if sampled is not None:  # both terms estimated around the same references
            chunk_cv, draw = sampled
            rows = draw(theta.device)
            minibatch = take(store, state.reservoir.sample_indices(minibatch_size, generator))
            return g + state.cv.minibatch_gradient(
                model, theta, minibatch, n_past, chunk=(lam, chunk_cv, rows, batch_size_of(chunk)))
        g = g + lam * chunk_term(theta)
        if n_past == 0:
            return g
        idx = state.reservoir.sample_indices(minibatch_size, generator)
        minibatch = take(store, idx)
        if state.cv is not None:
            return g + state.cv.minibatch_gradient(model, theta, minibatch, n_past)
        return g + (n_past / idx.shape[0]) * past_gradient(theta, minibatch)

    kernel = baoab if config.integrator == "baoab" else sghmc

    def run(theta, grad, chol):
        return kernel(theta, grad, sghmc_steps(state, config),
                      sghmc_step_size(model, state, config),
                      config.momentum_decay, chol, generator)

    return MoveResult(in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                                     grad_log_density))


def chunk_gradient(model, state, chunk, minibatch_size):
    """``theta -> sum_{y in chunk} grad log p(y | theta)``: exact, or estimated from a subsample.

    With a second-order control variate the chunk's term is estimated as
    the past data's is (:meth:`ControlVariate.of_chunk`), from
    :func:`chunk_minibatch_size` of its rows (:func:`sampled_chunk`);
    otherwise, or where that would be half the chunk, every row is evaluated.
    """
    sampled = sampled_chunk(model, state, chunk, minibatch_size)
    if sampled is None:
        return _whole_chunk_gradient(model, state, chunk)
    chunk_cv, draw = sampled
    size = batch_size_of(chunk)
    return lambda theta: chunk_cv.minibatch_gradient(model, theta, draw(theta.device), size)


def _whole_chunk_gradient(model, state, chunk):
    """``theta -> sum_{y in chunk} grad log p(y | theta)`` over every row of the chunk,
    in the precision of the past data's term."""
    gradient = past_term_gradient(model, state.cv)
    return lambda theta: gradient(theta, chunk)


def sampled_chunk(model, state, chunk, minibatch_size):
    """``(chunk_cv, draw)`` where the chunk's term is estimated from a subsample, else None.

    ``chunk_cv`` is the chunk's second-order control variate and
    ``draw(device)`` a new subsample of :func:`chunk_minibatch_size` rows
    of the chunk (without replacement).
    """
    cv = state.cv
    size = batch_size_of(chunk)
    rows = chunk_minibatch_size(size, state.n_seen, minibatch_size)
    chunk_cv = None if cv is None or rows >= size // 2 else cv.of_chunk(model, chunk)
    if chunk_cv is None:
        return None
    generator = state.generator

    def draw(device):
        return take(chunk, torch.randperm(size, generator=generator, device=device)[:rows])

    return chunk_cv, draw


def with_chunk_term(model, state, config, chunk):
    """``state`` whose control variate carries the chunk's where :func:`sghmc_move`
    estimates the chunk's term from a subsample (:meth:`ControlVariate.with_chunk_term`):
    the chunk's moves then share one record."""
    cv, size = state.cv, batch_size_of(chunk)
    if cv is None or cv.curvature is None or moves_exactly(state, config):
        return state
    if chunk_minibatch_size(size, state.n_seen, minibatch_size_for(state, config)) >= size // 2:
        return state
    return replace(state, cv=cv.with_chunk_term(model, chunk))


def chunk_minibatch_size(chunk_size, n_past, minibatch_size, noise_share=1 / 100, min_rows=32):
    """Rows of the chunk per step that add at most ``noise_share`` of the past term's noise.

    The chunk's term, where the control variate is of second order, is
    estimated from this subsample, of at least ``min_rows`` rows: with 250-row
    mini-batches the whole chunk to 5000 observations, 32 rows past 14000. A
    larger share costs less but lets the chunk's noise widen the spread of the
    evidence on long streams (docs: benchmarks, Logistic regression).

    Both terms' noise comes from rows of one stream: a sum of ``N`` rows
    estimated from ``m`` has variance ``N^2 / m`` per row's, so the chunk's
    share is ``(B / n)^2 m_past / m_chunk``.
    """
    rows = (chunk_size / max(n_past, 1)) ** 2 * minibatch_size / noise_share
    return max(min_rows, math.ceil(rows))


def minibatch_size_for(state, config):
    """Rows per mini-batch of the past data: ``config.minibatch_size``, resolving ``"auto"``.

    ``"auto"``: the rows the control variate's last noise measurement asks
    for (``ControlVariate.minibatch_size``), at least the order's default
    and at most MAX_MINIBATCH_SIZE (a store no larger gives exact gradients).
    """
    if config.minibatch_size != "auto":
        return config.minibatch_size or config.batch_size
    cv = state.cv
    second_order = cv is not None and cv.curvature is not None
    size = SECOND_ORDER_MINIBATCH_SIZE if second_order else MINIBATCH_SIZE
    if cv is not None and cv.minibatch_size is not None:
        size = min(max(size, cv.minibatch_size), MAX_MINIBATCH_SIZE)
    return size


def sghmc_step_size(model, state, config):
    """``learning_rate``; with the curvature preconditioner, at most the warm-up's adapted step.

    The Metropolis-adjusted warm-up adapts its step to keep most proposals
    (EXACT_ACCEPTANCE). With hundreds of parameters that step falls below
    ``learning_rate``, and unadjusted moves with the larger step leave the
    cloud below the posterior, biasing the evidence low (docs:
    benchmarks, Many parameters). With the particles' covariance (enough
    particles) the cap is not applied.
    """
    # (The curvature test first: n_adjusted_moves sums over the whole trace.)
    if not uses_curvature(model, state, config) or state.n_adjusted_moves == 0:
        return config.learning_rate
    return min(config.learning_rate, state.exact_step_size)


def moves_exactly(state, config):
    """Whether the moves are Metropolis-adjusted on the exact posterior.

    In the warm-up while the store holds every observation; past it, for
    models whose likelihood has summary statistics (:meth:`Model.summarize`).
    """
    if not config.exact_warmup:
        return False
    if state.n_seen < config.warmup_size:
        return state.reservoir.size == state.n_seen
    return state.summary is not None


def _tempered_terms(model, state, chunk, lam, dtype):
    """The tempered log-likelihood ``lam * chunk + past`` as ``(weight, data)`` pairs
    that :meth:`Model.log_likelihood_and_grad` takes, and whether they are rows.

    A model with summary statistics gives one pair: its log-likelihood is
    linear in them, so ``past + lam * chunk`` is one summary and a step
    costs one model call, whatever the data. Otherwise the chunk and the
    stored observations (every one of them: the warm-up), as rows.
    """
    chunk_summary, past = model.summarize(chunk), state.summary
    # Only SGAIS keeps the summary of the data seen; the other methods' states have rows.
    if chunk_summary is not None and (past is not None or state.n_seen == 0):
        summary = {key: lam * value if past is None else past[key] + lam * value
                   for key, value in chunk_summary.items()}
        return [(1.0, _prepared_summary(model, summary, dtype))], False
    terms = [(lam, model.prepare_move_batch(cast_batch(chunk, dtype)))]
    if state.n_seen > 0:
        terms.append((1.0, model.prepare_move_batch(cast_batch(state.reservoir.data(), dtype))))
    return terms, True


def _prepared_summary(model, summary, dtype):
    prepared = model.prepare_summary(summary)
    return PreparedBatch(prepared, prepared.stats.to(dtype))


def exact_move(model, state, config, chunk, lam):
    """Metropolis-adjusted moves (:func:`ghmc`) on the exact tempered posterior.

    The log density sums the likelihood of every stored observation (in
    the warm-up) or takes it from the model's summary statistics of the
    data seen (where the model has them). Its step size adapts from
    move to move toward an acceptance rate of EXACT_ACCEPTANCE: the result
    carries the acceptance and the next move's step size. A move over rows
    stops early where the particles have settled (kernels.ghmc's ``settle``);
    one over summary statistics (linear regression's) takes every step: its
    steps cost little, and stopping them early biases its evidence upwards.
    """
    work = _warmup_dtype(state, config)
    terms, by_rows = _tempered_terms(model, state, chunk, lam, work)

    (first_weight, first), *others = terms

    def log_density_and_grad(theta):
        log_p, g = model.log_joint_and_grad(theta, first, first_weight)
        for weight, data in others:
            log_lik, g_lik = model.log_likelihood_and_grad(theta, data)
            log_p, g = log_p.add(log_lik, alpha=weight), g.add(g_lik, alpha=weight)
        return log_p, g

    measured = {}

    def run(theta, log_density_and_grad, chol):
        theta, measured["acceptance"] = ghmc(
            theta, log_density_and_grad, moves_per_step(state, config), state.exact_step_size,
            config.momentum_decay, chol, state.generator,
            settle=by_rows)
        return theta

    theta = in_preconditioned_coordinates(model, state, config, chunk, lam, run,
                                           log_density_and_grad, with_log_density=True,
                                           dtype=work)
    acceptance = measured["acceptance"]
    step = state.exact_step_size * math.exp(2.0 * (acceptance - EXACT_ACCEPTANCE))
    return MoveResult(theta, acceptance, min(max(step, 1e-4), 4.0))


def _warmup_dtype(state, config):
    """The dtype of the exact warm-up's moves: ``config.warmup_dtype`` if lower."""
    if config.warmup_dtype == "float32" and state.theta.dtype == torch.float64:
        return torch.float32
    return state.theta.dtype
