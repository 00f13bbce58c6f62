"""Bayesian linear regression's conjugate algebra: its Gram statistics, posterior and evidence.

Functions of a :class:`~skevidence.models.LinearRegressionModel`, whose
prior they read (``g^2``, the per-coefficient scales, the noise prior), in
float64; the model's ``posterior`` and ``exact_log_evidence`` call them.
"""

import dataclasses
import math

import torch

__all__ = ["GramStats", "gram_stats", "conjugate_update", "posterior", "exact_log_evidence"]

_LOG_2PI = math.log(2.0 * math.pi)



def conjugate_update(model, batch, weights=None):
    """Design, centred targets and the Cholesky factor of the posterior precision."""
    X, y = (t.to(torch.float64) for t in batch)
    Phi = model._design(X)
    r = y - Phi @ model._prior_mean(Phi)
    Phi_w = Phi if weights is None else Phi * torch.as_tensor(
        weights, dtype=torch.float64, device=Phi.device).reshape(-1, 1)
    L = torch.linalg.cholesky(model._prior_precision_matrix(Phi) + Phi_w.T @ Phi)
    m = torch.cholesky_solve((Phi_w.T @ r).reshape(-1, 1), L).reshape(-1)
    return Phi, r, L, m


def posterior(model, batch, weights=None):
    """``LinearRegressionModel.posterior``: the known-noise model's Gaussian posterior."""
    if model.unknown_noise:
        raise NotImplementedError("posterior() is for the known-noise model")
    _, _, L, m = conjugate_update(model, batch, weights)
    return m / model.noise_std, torch.cholesky_inverse(L)


def exact_log_evidence(model, batch):
    """Closed-form ``log p(y | X)`` in O(N d^2), float64.

    With ``r = y - Phi mu``, ``D = diag(g^2)`` and ``A = D^{-1} + Phi^T
    Phi``, the matrix determinant lemma gives ``log det(I + Phi D
    Phi^T) = log det D + log det A`` and Woodbury's identity ``r^T (I +
    Phi D Phi^T)^{-1} r = |r - Phi m|^2 + m^T D^{-1} m`` with ``m =
    A^{-1} Phi^T r`` (the residual form avoids the cancellation of ``r^T
    r - r^T Phi m``). Known noise: ``y ~ N(Phi mu, sigma^2 (I + Phi D
    Phi^T))``; unknown noise integrates ``sigma^2 ~ InvGamma(a, a s^2)``
    out, a multivariate t with ``2 a`` degrees of freedom. No ``N x N``
    matrix is formed.
    """
    Phi, r, L, m = conjugate_update(model, batch)
    n, d = Phi.shape
    if model._g2 is not None:
        logdet = d * math.log(model._g2) + 2.0 * torch.log(torch.diagonal(L)).sum()
        quad = (r - Phi @ m).square().sum() + m.square().sum() / model._g2
    else:
        logdet = model._log_det_g2 + 2.0 * torch.log(torch.diagonal(L)).sum()
        quad = (r - Phi @ m).square().sum() + model._scaled_sq(m)
    if not model.unknown_noise:
        s2 = model.noise_std**2
        return float(-0.5 * (n * (_LOG_2PI + math.log(s2)) + logdet + quad / s2))
    a = model.noise_prior_shape
    b0 = a * model.noise_prior_scale**2
    a_n, b_n = a + 0.5 * n, b0 + 0.5 * quad
    return float(-0.5 * n * math.log(2.0 * math.pi) - 0.5 * logdet
                 + a * math.log(b0) - a_n * torch.log(b_n)
                 + math.lgamma(a_n) - math.lgamma(a))


@dataclasses.dataclass
class GramStats:
    """A prepared batch's statistics in the sampler's units (``prepare_batch``)."""

    G: torch.Tensor
    b: torch.Tensor
    rr: torch.Tensor
    z0: torch.Tensor
    n: float
    H: torch.Tensor
    joint_min: torch.Tensor

    def to(self, dtype):
        """The statistics with every tensor in ``dtype``."""
        return GramStats(*(v.to(dtype) if torch.is_tensor(v) else v for v in vars(self).values()))


def gram_stats(model, G, b, rr, z0, n, H):
    """The :class:`GramStats`, with the sum of squares at the joint's minimum,
    ``rr + z0' diag(1 / g^2) z0``."""
    prior_sq = (z0 @ z0) / model._g2 if model._g2 is not None else model._scaled_sq(z0)
    return GramStats(G, b, rr, z0, n, H, rr + prior_sq)
