"""The posterior's curvature near its mode: the Cholesky factor of its precision.

It shapes the importance-sampling proposal and the Newton steps of the
climb to the mode (``importance``). The curvature is the model's
``fisher_information`` where it has one (the exact negative Hessian of the
logistic model and of the mixture, the expected one of linear regression),
otherwise central differences of its gradient. Its likelihood part comes
from a strided subsample of the stored rows, scaled up to all of them, or
from every row where the subsample's is not positive definite.
"""

import torch

from ..models.base import has_fisher_information
from ..models.batches import SUM_ROWS, batch_size_of, cast_batch, row_blocks, take
from .control_variates import blockwise_sum, posterior_precision
from .posterior_gap import log_posterior_and_grad

__all__ = ["curvature_near_mode", "whole_store_curvature", "curvature_factor",
           "differenced_precision"]

# Relative step of the central differences that give the curvature of models
# without a Fisher information (in double precision: errors of about 1e-7).
DIFFERENCE_STEP = 1e-5


def curvature_near_mode(model, theta, store, dtype, n_rows=16384):
    """:func:`curvature_factor` at ``theta [d]`` from a strided subsample of about
    ``n_rows`` rows of the store, scaled up (d^2 per row; relative errors of about
    ``sqrt(d / n_rows)`` cost a few percent of the ESS), or from the whole store
    where the subsample's is not positive definite: a mixture's small component (a
    few hundred of 1e5 rows) has a curvature that a subsample's noise can turn
    negative."""
    rows = _strided_rows(store, n_rows)
    chol = curvature_factor(model, theta, rows, batch_size_of(store), dtype)
    if chol is None and rows is not store:
        chol = whole_store_curvature(model, theta, store, dtype)
    return chol


def whole_store_curvature(model, theta, store, dtype):
    """:func:`curvature_factor` on every stored row: in single precision first, in
    ``dtype`` where that is not positive definite. The curvature only shapes the
    proposal and the climb's steps; in single precision the exponentials that
    dominate its cost are cheaper, and it differs by about 1e-5 of itself.
    (Central differences need double precision.)"""
    if dtype == torch.float64 and has_fisher_information(model):
        chol = curvature_factor(model, theta, cast_batch(store, torch.float32),
                                batch_size_of(store), torch.float32)
        if chol is not None:
            return chol
    return curvature_factor(model, theta, store, batch_size_of(store), dtype)


def _strided_rows(store, n_rows):
    """At most about ``n_rows`` rows of ``store``, evenly spaced (all of a smaller store)."""
    n = batch_size_of(store)
    if n <= n_rows:
        return store
    return take(store, torch.arange(0, n, n // n_rows, device=store[0].device))


def curvature_factor(model, theta, rows, n_seen, dtype):
    """Cholesky factor of the posterior precision at ``theta``, the likelihood's part from
    ``rows`` scaled to ``n_seen`` observations (None: not positive definite)."""
    scale = n_seen / batch_size_of(rows)
    if has_fisher_information(model):
        point = theta.to(dtype)
        F = blockwise_sum(model.fisher_information, point, rows)
        precision = posterior_precision(model, point, scale * F)
    else:
        precision = differenced_precision(model, theta, rows, scale)
    chol, info = torch.linalg.cholesky_ex(precision.to(torch.float64))
    return chol if int(info) == 0 and bool(torch.isfinite(chol).all()) else None


def differenced_precision(model, theta, rows, scale):
    """Negative Hessian of the log posterior at ``theta [d]`` by central differences of
    its gradient (the likelihood's from ``rows`` times ``scale``), in double precision:
    the 2 d displaced points go through the model as one batch of particles."""
    d = theta.shape[0]
    steps = DIFFERENCE_STEP * theta.abs().clamp_min(1.0)
    points = torch.cat([theta + torch.diag(steps), theta - torch.diag(steps)])
    rows = cast_batch(rows, torch.float64)
    _, grad = log_posterior_and_grad(model, points, row_blocks(rows, 2 * d, SUM_ROWS),
                                     scale)
    hessian = (grad[:d] - grad[d:]) / (2.0 * steps[:, None])
    return -0.5 * (hessian + hessian.T)
