"""The importance-sampling check's proposal: a mixture of multivariate t's at posterior modes.

Each t has the posterior's curvature at its mode as the inverse of its
scale matrix and ``NU`` degrees of freedom; for a model whose posterior has
relabelled copies of each mode (``Model.relabelling_maps``) each t is
averaged over its copies, so that the proposal covers them all alike.
"""

import math
from dataclasses import dataclass

import torch

from ..models.batches import SUM_ROWS, cast_batch, row_blocks
from . import relabelling

__all__ = ["NU", "Proposal", "weighted_draws", "log_t_density"]

# Degrees of freedom of the proposal: tails heavier than a near-Gaussian
# posterior's, so the weights stay bounded, yet few draws wasted in them.
NU = 8


@dataclass(frozen=True)
class Proposal:
    """A mixture of t's: one at each of ``modes [J, d]`` with the Cholesky factor
    ``chols [J, d, d]`` of the posterior precision there as the inverse of its scale
    matrix, weighted by ``exp(log_pi) [J]``; each t copied over the model's relabellings."""

    modes: torch.Tensor
    chols: torch.Tensor
    log_pi: torch.Tensor

    @classmethod
    def at(cls, mode, chol):
        """The t at one mode."""
        return cls(mode[None], chol[None], mode.new_zeros(1))


def weighted_draws(model, proposal, maps, store, n_draws, generator):
    """Draws from the :class:`Proposal`'s t's, and their log weights.

    Each t has scale matrix ``(L L^T)^-1`` at its mode. With relabellings the
    proposal density is the mean of the t's copies under all of them; the
    draws come from the first copy alone, which gives the same expectation
    since the weights' ratio of two relabelling-invariant densities is
    invariant too.
    """
    modes, chols = proposal.modes, proposal.chols
    J, d = modes.shape
    kw = dict(generator=generator, dtype=modes.dtype, device=modes.device)
    z = torch.randn(n_draws, d, **kw)
    chi2 = torch.randn(n_draws, NU, **kw).square().sum(1)  # integer nu: a sum of squares
    t = z * (NU / chi2).sqrt()[:, None]
    which = torch.zeros(n_draws, dtype=torch.long, device=modes.device) if J == 1 else \
        torch.multinomial(proposal.log_pi.exp(), n_draws, replacement=True, generator=generator)
    theta = torch.empty_like(t)
    for j in range(J):  # a loop over modes, each a batch of draws
        drawn = which == j
        # theta = mode + L^-T t has covariance (L L^T)^-1 times that of t.
        theta[drawn] = modes[j] + torch.linalg.solve_triangular(chols[j].T, t[drawn].T,
                                                                upper=True).T
    log_q = log_t_density(theta, proposal, maps)
    # In double precision whatever the store's: in single, each draw's log
    # likelihood of a million rows errs by a good part of a nat (the rows'
    # terms summed block by block), and the estimate by a sizeable part of that.
    log_p = model.log_prior(theta)
    for block in row_blocks(store, n_draws, SUM_ROWS):
        block = cast_batch(block, torch.float64)
        log_p = log_p + model.log_likelihood_sum(theta, block)
    return theta, log_p - log_q


def log_t_density(theta, proposal, maps):
    """Log density ``[n]`` of the :class:`Proposal`: its t's, each averaged over its
    relabelled copies, mixed by their weights.

    A copy is a t pushed through ``theta -> theta @ maps[p]``: its density at
    ``theta`` is the t's at ``theta @ maps[p]^-1`` over ``|det maps[p]|``.
    """
    d = theta.shape[1]
    log_gamma = (math.lgamma((NU + d) / 2) - math.lgamma(NU / 2)
                 - 0.5 * d * math.log(NU * math.pi))
    if maps is None:
        inverse, log_dets = None, theta.new_zeros(1)
    else:
        inverse, log_dets = relabelling.inverted(maps)
    per_mode = []
    for mode, chol, log_pi in zip(proposal.modes, proposal.chols, proposal.log_pi):
        # ||L^T (theta maps[p]^-1 - mode)||^2, the t's squared radius, with the
        # map and L^T as one matrix per copy.
        whitened = (theta @ chol)[:, None] if inverse is None else \
            torch.einsum("nd,pde->npe", theta, inverse @ chol)
        radius = (whitened - mode @ chol).square().sum(-1)
        log_t = (log_gamma + torch.log(torch.diagonal(chol)).sum() - log_dets
                 - 0.5 * (NU + d) * torch.log1p(radius / NU))
        per_mode.append(log_pi + torch.logsumexp(log_t, 1) - math.log(log_t.shape[1]))
    return torch.logsumexp(torch.stack(per_mode, 1), 1)
