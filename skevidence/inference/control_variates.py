"""Control-variate gradients for the past-data term of the potential
(:ref:`algorithm`, "Control variates").

The mini-batch estimate is written around a reference ``theta_ref`` whose
exact past-data gradient ``G_ref`` is kept up to date chunk by chunk::

    G_ref + (n / |b|) sum_{y in b} [grad log p(y|theta) - grad log p(y|theta_ref)]

References are one shared point (``[1, d]``, the weighted particle mean)
or one per particle (``[M, d]``, for multimodal posteriors), moved to the
particles when ``n`` has grown by a constant factor (O(1) amortised).
Per-particle references follow their particles through resampling, so
between two moves most are copies of a few: each distinct one's
gradient is computed once.

With a model's Fisher information (the negative Hessian of a row's
log-likelihood) the control variate is of second order: the difference
also subtracts its linear part ``-F_y (theta - theta_ref)`` (``F_y`` at
one anchor near the references), with the summed ``F = sum_past F_y``
added back exactly, so what is left to the mini-batch is the likelihood's
departure from a quadratic. Where the likelihood is close to a quadratic
over the particles' spread this cuts the gradient noise by orders of
magnitude, and with it the low bias that the first-order noise leaves on
long streams (docs: benchmarks, Logistic regression). With one reference
per particle in a mixture, each particle's linear term is the anchor's in
that particle's labelling of the components (``Model.relabelling_maps``).

Each time the anchor moves, the noise of both orders is measured at a few
particles over groups of stored rows: the linear term is kept where it
cuts the noise NOISE_CUT-fold, and the measurement says how many rows a
mini-batch needs to keep the noise at NOISE_TARGET of the posterior's own
score (``ControlVariate.minibatch_size``).
"""

import functools
import math
from dataclasses import dataclass, field, replace

import torch

from ..models.batches import batch_size_of, cast_batch, row_blocks, take
from .relabelling import aligned, nearest_relabelling

__all__ = ["ControlVariate", "refresh_reference", "reference_at_particles", "full_gradient_sum",
           "blockwise_sum", "posterior_precision", "rounded_gradient", "past_term_gradient"]

# Growth of the data between two moves of the second-order term's anchor.
ANCHOR_REFRESH_FACTOR = 2.0
# The linear term is kept where it cuts the mini-batch gradient's variance
# at the particles this many times: its mini-batches of a quarter of the
# first order's (moves.MINIBATCH_SIZE) are then at least as precise as the
# first order's of four times its size, the size that removed the first
# order's drift on long streams (docs: benchmarks, Logistic regression).
NOISE_CUT = 16
# Variance of the mini-batch gradient's noise, per coordinate in the
# posterior's metric, as a share of the posterior score's: what
# ``minibatch_size="auto"`` aims at (at least 250 or 1000 rows, the whole
# store where it needs that).
NOISE_TARGET = 0.005


def full_gradient_sum(model, theta, batch):
    """``sum_{y in batch} grad log p(y | theta)`` by blocks, ``[R, d]``."""
    return blockwise_sum(model.grad_log_likelihood, theta, batch)


def rounded_gradient(model, theta, batch):
    """``sum_{y in batch} grad log p(y | theta)`` computed in single precision, in
    ``theta``'s dtype.

    For stochastic gradients whose noise dwarfs the rounding: a first-order
    control variate's mini-batch estimate (or a plain one). The rounding
    is a small part of the estimate's noise (its SD over mini-batches), a
    ratio that grows like ``sqrt(n)``; which terms take it:
    :func:`past_term_gradient`. The exponentials dominate the mixture's
    gradient, and single precision costs less for them.
    """
    if theta.dtype != torch.float64:
        return model.grad_log_likelihood(theta, batch)
    return model.grad_log_likelihood(theta.float(), cast_batch(batch, torch.float32)).to(
        theta.dtype)


def past_term_gradient(model, cv):
    """``(theta, batch) -> sum_{y in batch} grad log p(y | theta)`` in the precision of
    the past data's term under control variate ``cv`` (None: plain mini-batches).

    Rounded (:func:`rounded_gradient`) for a plain or first-order term, whose
    noise dwarfs the rounding: its mini-batch estimates, the exact sums at the
    references (each block's sum added in double: there the rounding is a
    fixed offset, a small fraction of the posterior score's standard
    deviation, and the pass over the store costs less) and
    the chunk's exact
    term beside them. The model's own, in double, for the second order.
    """
    if cv is not None and cv.curvature is not None:
        return model.grad_log_likelihood
    return lambda theta, batch: rounded_gradient(model, theta, batch)


def blockwise_sum(summed_over_batch, theta, batch, max_rows=1 << 15):
    """``summed_over_batch(theta, block)`` added over blocks of the batch (None if any is None):
    at one or two references blocks of at most ``max_rows`` rows (more references:
    models.batches.row_blocks)."""
    n_points = theta.shape[0] if theta.dim() > 1 else 1  # (an anchor is one point, [d])
    blocks = [summed_over_batch(theta, block)
              for block in row_blocks(batch, n_points, max_rows)]
    return None if any(b is None for b in blocks) else sum(blocks)


@dataclass(frozen=True)
class ChunkTerm:
    """A chunk's control variate (:meth:`ControlVariate.of_chunk`) and what it was made for."""

    chunk: tuple
    theta_ref: torch.Tensor
    anchor: torch.Tensor | None
    cv: "ControlVariate | None"


@dataclass(frozen=True)
class ControlVariate:
    """Reference points and the exact past-data gradient sums there (a value: its
    methods return new records)."""

    theta_ref: torch.Tensor  # [R, d]
    grad_sum: torch.Tensor  # [R, d], over all data seen so far
    n_at_refresh: int = 0
    second_order: bool = False  # the model has a Fisher information
    # ``sum_past F_y(anchor)``, [d, d], while the linear term helps (None: first order).
    # Any fixed anchor keeps the estimate unbiased, so it moves less often
    # than the reference (a pass costs d^2 per row).
    curvature: torch.Tensor | None = None
    anchor: torch.Tensor | None = None  # [d]
    n_at_anchor: int = 0
    # [R, d, d] (per-particle references of a model with relabellings): the map
    # ``theta @ relabel[r]`` that brings reference r to the anchor's labelling.
    relabel: torch.Tensor | None = None
    # Rows per mini-batch that meet NOISE_TARGET, measured at the anchor (None: unmeasured).
    minibatch_size: int | None = None
    # (first [U], inverse [R]) where resampling copied references: a row of each
    # distinct one and each row's (:func:`_distinct_rows`; None: all distinct).
    distinct: tuple | None = field(default=None, repr=False, compare=False)
    # The current chunk's control variate (:meth:`with_chunk_term`): every move
    # of a chunk asks for it.
    chunk_term: ChunkTerm | None = field(default=None, repr=False, compare=False)

    def add_chunk(self, model, chunk):
        """The sums with a newly observed chunk included (new tensors: states share the old)."""
        grad_sum = self.grad_sum + self._at_references(past_term_gradient(model, self), chunk)
        curvature = self.curvature
        if curvature is not None:
            F = model.fisher_information(self.anchor, chunk)
            curvature = None if F is None else curvature + F
        return replace(self, grad_sum=grad_sum, curvature=curvature, chunk_term=None)

    def refresh(self, model, new_ref, store, n_seen, probes, anchor=None, maps=None,
                move_anchor=False):
        """The control variate with its references moved to ``new_ref``.

        The sums at ``new_ref`` over the stored data ``S``: when the store
        holds every observation, exactly; when it is a bounded reservoir,
        ``G_new = G_old + (n / |S|) sum_{y in S} [g(y, new) - g(y, old)]``,
        a low-variance estimate (the difference of gradients is small). With
        ``second_order``, once the data have doubled (or with
        ``move_anchor``) the anchor moves to ``anchor [d]`` (default: the
        shared reference) too, and
        ``probes [P, d]`` (particles in the anchor's labelling) decide
        whether the linear term is kept (where it cuts their noise
        NOISE_CUT-fold) and how many rows a mini-batch needs (NOISE_TARGET).
        ``maps`` (``Model.relabelling_maps``) carry the term into the
        labelling of each per-particle reference.
        """
        R = new_ref.shape[0]
        moves_anchor = self.second_order and (
            move_anchor or n_seen >= ANCHOR_REFRESH_FACTOR * max(self.n_at_anchor, 1))
        scale = n_seen / batch_size_of(store)
        gradient = past_term_gradient(model, self)
        if batch_size_of(store) == n_seen:  # no pass at the old references
            grad_sum = blockwise_sum(gradient, new_ref, store)
        else:  # one pass over the sample for the new and old references
            old_ref, expand = self._distinct_references()
            sums = blockwise_sum(gradient, torch.cat([new_ref, old_ref]), store)
            grad_sum = self.grad_sum + (sums[:R] - expand(sums[R:])) * scale
        cv = replace(self, theta_ref=new_ref, grad_sum=grad_sum, distinct=None,
                     n_at_refresh=n_seen, chunk_term=None)
        if moves_anchor:
            cv = cv._with_anchor(model, store, scale, n_seen, probes, anchor)
        return replace(cv, relabel=cv._relabelling_to_anchor(maps))

    def _relabelling_to_anchor(self, maps):
        """Each per-particle reference's map to the anchor's labelling (None: not needed)."""
        if maps is None or self.curvature is None or self.theta_ref.shape[0] == 1:
            return None
        return maps[nearest_relabelling(self.theta_ref, self.anchor, maps)]

    def _with_anchor(self, model, store, scale, n_seen, probes, anchor):
        """The linear term anchored at ``anchor``, kept or dropped by the noise of both
        orders, which also sizes the mini-batches."""
        anchor = self.theta_ref[0] if anchor is None else anchor
        F = blockwise_sum(model.fisher_information, anchor, store)
        cv = replace(self, anchor=anchor, n_at_anchor=n_seen, second_order=F is not None,
                     curvature=None, minibatch_size=None)
        if F is None:
            return cv
        noise = _row_noise(model, probes, anchor[None], store)
        if noise is None:
            return cv
        keep = noise.spread(second=True) * NOISE_CUT <= noise.spread(second=False)
        cv = replace(cv, curvature=scale * F if keep else None)
        if cv.theta_ref.shape[0] > 1:
            # Per-particle references (a mixture) keep the order's default size.
            # The target is strict for them: a mixture's would ask for more rows
            # than the cap allows, while the default size, with the noise cut
            # NOISE_CUT-fold or more, already carries a fraction of the noise of
            # the first order's default (docs: benchmarks, Gaussian mixture).
            return cv
        return replace(cv, minibatch_size=noise.minibatch_size(
            keep, posterior_precision(model, anchor, scale * F), n_seen))

    def of_chunk(self, model, chunk):
        """The second-order control variate of the chunk's own gradient sum (None: first order).

        Same references, anchor and relabellings; its exact terms are the
        chunk's gradient at the references and Fisher information at the
        anchor, so that a subsample of the chunk's rows carries only the
        likelihood's departure from a quadratic (see
        :func:`moves.chunk_gradient`). The record :meth:`with_chunk_term`
        carries, where it was made for this chunk and these references.
        """
        if self._carries_term_of(chunk):
            return self.chunk_term.cv
        F = None if self.curvature is None else model.fisher_information(self.anchor, chunk)
        return None if F is None else ControlVariate(
            theta_ref=self.theta_ref,
            grad_sum=self._at_references(functools.partial(full_gradient_sum, model), chunk),
            second_order=True, curvature=F, anchor=self.anchor, relabel=self.relabel,
            distinct=self.distinct)

    def with_chunk_term(self, model, chunk):
        """The control variate carrying the chunk's (:meth:`of_chunk`), so that every
        move of the chunk takes the same record (computed again only after a
        resampling moves per-particle references)."""
        if self._carries_term_of(chunk):
            return self
        return replace(self, chunk_term=ChunkTerm(chunk, self.theta_ref, self.anchor,
                                                  self.of_chunk(model, chunk)))

    def _carries_term_of(self, chunk):
        term = self.chunk_term
        return (term is not None and term.chunk is chunk and term.theta_ref is self.theta_ref
                and term.anchor is self.anchor)

    def select(self, index):
        """The control variate following the particles through resampling (per-particle
        references)."""
        if self.theta_ref.shape[0] == 1:
            return self
        labels = index if self.distinct is None else self.distinct[1][index]
        return replace(self, theta_ref=self.theta_ref[index], grad_sum=self.grad_sum[index],
                       relabel=None if self.relabel is None else self.relabel[index],
                       distinct=_distinct_rows(labels))

    def _distinct_references(self):
        """The distinct references ``[U, d]``, and the map of a ``[U, ...]`` result to all ``R``."""
        if self.distinct is None:
            return self.theta_ref, lambda rows: rows
        first, inverse = self.distinct
        return self.theta_ref[first], lambda rows: rows[inverse]

    def _at_references(self, summed_over_batch, batch):
        """``summed_over_batch(theta_ref, batch)`` ``[R, d]``, once per distinct reference."""
        refs, expand = self._distinct_references()
        return expand(summed_over_batch(refs, batch))

    def minibatch_gradient(self, model, theta, minibatch, n_past, chunk=None):
        """Unbiased estimate of ``sum_past grad log p(y | theta)``, ``[M, d]``.

        The first order's gradients in single precision (:func:`past_term_gradient`).
        ``chunk = (weight, chunk_cv, rows, size)`` adds ``weight`` times
        ``chunk_cv``'s estimate of the chunk's sum from ``rows`` of its ``size``
        (:meth:`of_chunk`: the same references and anchor, so both estimates
        come from one call per model method on the rows of both,
        :meth:`Model.weighted_grad_log_likelihood`, which costs less than two
        calls where the rows are few).
        """
        refs, expand = self._distinct_references()
        M = theta.shape[0]
        scale = n_past / batch_size_of(minibatch)
        if chunk is None:
            both = past_term_gradient(model, self)(torch.cat([theta, refs]), minibatch)
            estimate = self.grad_sum + scale * (both[:M] - expand(both[M:]))
            if self.curvature is None:
                return estimate
            return estimate + self._linear_term(
                theta, scale * model.fisher_information(self.anchor, minibatch) - self.curvature)
        weight, chunk_cv, rows, size = chunk
        terms = [(scale, minibatch), (weight * size / batch_size_of(rows), rows)]
        both = model.weighted_grad_log_likelihood(torch.cat([theta, refs]), terms)
        estimate = self.grad_sum + weight * chunk_cv.grad_sum + (both[:M] - expand(both[M:]))
        curvature = self.curvature + weight * chunk_cv.curvature
        return estimate + self._linear_term(
            theta, model.weighted_fisher_information(self.anchor, terms) - curvature)

    def _linear_term(self, theta, difference):
        """``(theta - theta_ref) difference`` in the anchor's labelling of each reference,
        ``[M, d]`` (``difference [d, d]``: a mini-batch's scaled information less the exact)."""
        offset = theta - self.theta_ref
        if self.relabel is None:
            return offset @ difference
        # In the anchor's labelling and back: (offset A) (scale F_b - F) A^T.
        linear = torch.einsum("md,mde->me", offset, self.relabel) @ difference
        return torch.einsum("me,mde->md", linear, self.relabel)


def _distinct_rows(labels):
    """``(first [U], inverse [R])`` of the rows' ``labels``: a row of each distinct
    label and each row's label number (None: all distinct)."""
    ids, inverse = torch.unique(labels, return_inverse=True)
    if ids.shape[0] == labels.shape[0]:
        return None
    rows = torch.arange(labels.shape[0], device=labels.device)
    # (rows of one label are copies of one reference: whichever lands is right)
    return torch.empty_like(ids).scatter_(0, inverse, rows), inverse


@dataclass
class _RowNoise:
    """Sums over groups of stored rows of each order's per-row terms at the probes."""

    first: torch.Tensor  # [G, P, d]
    second: torch.Tensor  # [G, P, d]
    rows: int  # per group

    def spread(self, second, metric=None):
        """Summed variance of the group sums across groups (whitened by ``metric``, a Cholesky factor)."""
        sums = self.second if second else self.first
        centred = (sums - sums.mean(0)).reshape(-1, sums.shape[-1])
        if metric is not None:
            centred = torch.linalg.solve_triangular(metric, centred.T, upper=False).T
        return float((centred**2).sum()) / (sums.shape[0] - 1)

    def minibatch_size(self, second, precision, n):
        """Rows per mini-batch whose noise is NOISE_TARGET of the posterior score's, per coordinate.

        In the metric of the posterior ``precision`` the score of a posterior
        draw has unit variance in every direction; a mini-batch of ``m``
        rows (scaled by ``n / m``) adds ``n^2 tr(precision^-1 C) / m`` in
        all, ``C`` the covariance of one row's term. None where the
        precision is not positive definite.
        """
        L, info = torch.linalg.cholesky_ex(precision)
        if int(info) != 0:
            return None
        P, d = self.first.shape[1:]
        per_row = self.spread(second, L) / (P * self.rows)
        return max(1, math.ceil(n**2 * per_row / (d * NOISE_TARGET)))


def _row_noise(model, probes, ref, store):
    """The per-row terms of both orders, ``g_y(probe) - g_y(ref)`` and that plus
    ``F_y(ref) (probe - ref)``, summed over interleaved groups of the store
    (None: too few rows, or no Fisher information).

    Where the likelihood saturates across the cloud (a nearly separable
    classifier, or particles far from the reference) a row's gradient
    changes much less than its linear term says; the term then adds noise
    that grows with the distance to the reference, and the moves can diverge.
    """
    groups = _interleaved_groups(batch_size_of(store), store[0].device)
    if groups is None:
        return None
    thetas, offset = torch.cat([probes, ref]), probes - ref
    first, second = [], []
    for rows in groups:
        group = take(store, rows)
        grads = model.grad_log_likelihood(thetas, group)
        change = grads[:-1] - grads[-1:]
        F = model.fisher_information(ref[0], group)
        if F is None:
            return None
        first.append(change)
        second.append(change + offset @ F)
    return _RowNoise(torch.stack(first), torch.stack(second), groups.shape[1])


def posterior_precision(model, theta, past_fisher):
    """``prior precision + past_fisher`` at ``theta [d]`` (the prior's part where the model has one)."""
    prior = model.prior_precision(theta)
    return past_fisher if prior is None else past_fisher + prior


def _interleaved_groups(n, device, n_groups=16, rows=64):
    """Row indices ``[n_groups, r]``, each group spread over the store (None: too few rows).

    Spread rather than contiguous: a store sorted by label or time would
    otherwise put the differences between its parts into the variance.
    """
    per = min(rows, n // n_groups)
    if per < 2:
        return None
    stride = n // (n_groups * per)
    rows = torch.arange(n_groups * per, device=device) * stride
    return rows.reshape(per, n_groups).T


def refresh_reference(model, state, config):
    """The state whose control variate's reference moved to the particles once the data
    seen have grown by the refresh factor since the last move (a pass over the store)."""
    cv = state.cv
    if cv is None or state.n_seen == 0:
        return state
    if state.n_seen < _refresh_factor(cv, config) * max(cv.n_at_refresh, 1):
        return state
    return reference_at_particles(model, state)


def reference_at_particles(model, state, move_anchor=False, n_probes=4):
    """The state whose control variate's reference(s) moved to the particles (their mean,
    for a shared one).

    The second-order term's anchor is the particles' mean, each relabelled
    to the labelling nearest the heaviest particle's (a mixture's), as are
    the probes that measure its noise; ``move_anchor`` moves it now (the
    particles moved to another mode), not only once the data have doubled.
    ``n_probes`` particles check the second-order term's linear term.
    """
    cv = state.cv
    W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
    maps = model.relabelling_maps(state.theta.dtype, state.theta.device)
    theta = aligned(state.theta, state.theta[int(W.argmax())], maps)
    anchor = W @ theta
    new_ref = anchor[None, :] if cv.theta_ref.shape[0] == 1 else state.theta.clone()
    probes = theta[:: max(theta.shape[0] // n_probes, 1)][:n_probes]
    return replace(state, cv=cv.refresh(model, new_ref, state.reservoir.data(), state.n_seen,
                                         probes, anchor, maps, move_anchor=move_anchor))


def _refresh_factor(cv, config):
    """Growth of the data between two refreshes of the control variate's reference."""
    if config.cv_refresh_factor is not None:
        return config.cv_refresh_factor
    return 1.1 if cv.theta_ref.shape[0] == 1 else 2.0
