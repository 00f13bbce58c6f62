"""Bayesian linear regression's conjugate algebra: its Gram statistics, posterior and evidence.

Functions of a :class:`~skevidence.models.LinearRegressionModel`, whose
prior they read (``g^2``, the per-coefficient scales, the noise prior); the
model's ``posterior`` and ``exact_log_evidence`` call them (in float64), and
its prepared batches hold the Gram statistics from which its log-likelihood
and log joint follow in ``O(M d^2)`` (in the batch's dtype).
"""

import dataclasses
import math
from typing import NamedTuple

import torch

from .base import LOG_2PI

__all__ = ["GramStats", "gram_stats", "prepared_batch", "summarize", "prepared_summary",
           "prepared_log_likelihood_and_grad", "prepared_log_joint_and_grad",
           "centred_log_likelihood_and_grad",
           "ConjugateUpdate", "conjugate_update", "posterior", "exact_log_evidence"]


class ConjugateUpdate(NamedTuple):
    """The design, the targets less the prior mean's fit, and the posterior precision solved."""

    Phi: torch.Tensor  # [n, d] design
    r: torch.Tensor  # [n] y - Phi mu
    L: torch.Tensor  # [d, d] Cholesky factor of the posterior precision A
    m: torch.Tensor  # [d] A^{-1} Phi^T r, A = L L^T


def conjugate_update(model, batch, weights=None):
    """The :class:`ConjugateUpdate` of ``batch`` (rows weighted by ``weights``), float64."""
    X, y = (t.to(torch.float64) for t in batch)
    Phi = model._design(X)
    r = y - Phi @ model._prior_mean(Phi)
    Phi_w = Phi if weights is None else Phi * torch.as_tensor(
        weights, dtype=torch.float64, device=Phi.device).reshape(-1, 1)
    L = torch.linalg.cholesky(model._prior_precision_matrix(Phi) + Phi_w.T @ Phi)
    m = torch.cholesky_solve((Phi_w.T @ r).reshape(-1, 1), L).reshape(-1)
    return ConjugateUpdate(Phi, r, L, m)


def posterior(model, batch, weights=None):
    """``LinearRegressionModel.posterior``: the known-noise model's Gaussian posterior."""
    if model.unknown_noise:
        raise NotImplementedError("posterior() is for the known-noise model")
    update = conjugate_update(model, batch, weights)
    L, m = update.L, update.m
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
        return float(-0.5 * (n * (LOG_2PI + math.log(s2)) + logdet + quad / s2))
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


def prepared_batch(model, batch):
    """The :class:`GramStats` of ``batch`` around the posterior mean given it alone.

    In the sampler's units, with ``y' = (y - Phi mu) / s``, ``z0`` the
    ridge solution of ``y' ~ Phi z`` (the coefficients' posterior mean
    under unit noise: well conditioned however collinear ``Phi``),
    ``r0 = y' - Phi z0``: ``G = Phi'Phi``, ``b = Phi'r0``, ``rr = r0'r0``
    (``rr`` from the residuals, so nothing cancels).
    """
    X, y = batch
    Phi = model._design(X)
    y_unit = (y - Phi @ model._prior_mean(Phi)) / model._unit_scale
    G = Phi.T @ Phi
    H = G + model._prior_precision_matrix(G)
    z0 = torch.linalg.solve(H, Phi.T @ y_unit)
    r0 = y_unit - Phi @ z0
    rr = r0 @ r0
    return gram_stats(model, G, Phi.T @ r0, rr, z0, X.shape[0], H)


def summarize(model, batch):
    """``Phi'Phi``, ``Phi'y'``, ``y''y'`` and the count, in the sampler's units (float64)."""
    X, y = (t.to(torch.float64) for t in batch)
    Phi = model._design(X)
    y_unit = (y - Phi @ model._prior_mean(Phi)) / model._unit_scale
    return {"G": Phi.T @ Phi, "u": Phi.T @ y_unit, "yy": y_unit @ y_unit,
            "n": y.new_tensor(float(y.shape[0]))}


def prepared_summary(model, summary):
    """:func:`prepared_batch`'s statistics from a sum of :func:`summarize` results.

    ``r0'r0 = y''y' - 2 z0'Phi'y' + z0'Phi'Phi z0`` loses the digits of
    the targets' variance that the fit explains; in float64 that leaves
    many more than the likelihood needs.
    """
    G, u = summary["G"], summary["u"]
    H = G + model._prior_precision_matrix(G)
    z0 = torch.linalg.solve(H, u)
    G_z0 = G @ z0
    rr = (summary["yy"] - 2.0 * (z0 @ u) + z0 @ G_z0).clamp_min(0.0)
    return gram_stats(model, G, u - G_z0, rr, z0, float(summary["n"]), H)


def prepared_log_likelihood_and_grad(model, theta, st):
    """``log_likelihood_and_grad`` from the :class:`GramStats` ``st`` of a prepared batch."""
    c, n = model.n_coef, st.n
    delta = theta[:, :c] - st.z0
    G_delta = delta @ st.G
    # |y' - Phi z|^2 = rr - 2 delta'b + delta'G delta (>= 0 up to rounding)
    sq = (delta * G_delta).sum(1).add_(delta @ st.b, alpha=-2.0).add_(st.rr)
    sq = sq.clamp_min_(0.0)
    g_z = st.b - G_delta
    const = n * (LOG_2PI + 2.0 * math.log(model._unit_scale))
    if not model.unknown_noise:
        return sq.mul_(-0.5).sub_(0.5 * const), g_z
    t = theta[:, c]
    inv = (-t).exp()
    sq_scaled = sq * inv
    log_lik = -0.5 * (sq_scaled + n * t + const)
    return log_lik, torch.cat([g_z * inv[:, None], (0.5 * (sq_scaled - n))[:, None]], dim=1)


def prepared_log_joint_and_grad(model, theta, st):
    """The log prior plus the log-likelihood of a prepared batch's :class:`GramStats`
    ``st``, as one quadratic form in ``theta``.

    In the sampler's units the prior of ``z`` is ``N(0, e^t g^2 I)``
    (``e^t = 1`` with known noise), conjugate to the likelihood: with
    ``H = G + I / g^2`` and ``z0 = H^{-1} Phi'y'`` (the ridge solution of
    :func:`prepared_batch`, which makes ``b = z0 / g^2``) the sum of the
    two squares is ``(z - z0)' H (z - z0) + rr + z0'z0 / g^2``. One
    product with ``H`` per call instead of the prior's and the
    likelihood's separate terms. (The identity ``b = z0 / g^2`` holds to
    the solve's rounding, which moves the target's centre by that much.)
    """
    c = model.n_coef
    n, z0 = st.n, st.z0
    delta = theta[:, :c] - z0
    H_delta = delta @ st.H
    quad = (delta * H_delta).sum(1).add_(st.joint_min)
    const = (n * (LOG_2PI + 2.0 * math.log(model._unit_scale))
             + model._prior_norm())
    if not model.unknown_noise:
        return quad.mul_(-0.5).sub_(0.5 * const), H_delta.neg_()
    t = theta[:, c]
    inv = (-t).exp()
    quad_scaled = quad * inv
    a = model.noise_prior_shape
    # -0.5 e^-t quad - (n + c) t / 2 (the likelihood's and the prior's normalisers)
    # + log InvGamma(e^t; a, a) + t (the Jacobian of log)
    shape = 0.5 * (n + c) + a
    log_p = (-0.5 * (quad_scaled + const) + model._noise_prior_const()) - shape * t - a * inv
    g_t = 0.5 * quad_scaled - shape + a * inv
    return log_p, torch.cat([H_delta * -inv[:, None], g_t[:, None]], dim=1)


def centred_log_likelihood_and_grad(model, theta, batch):
    """``log_likelihood_and_grad`` of a raw ``batch`` from its Gram matrix around the
    particles' mean.

    With ``r0 = y - Phi beta0`` at the mean ``beta0`` and ``delta = beta
    - beta0``, the squared residuals are ``r0'r0 - 2 delta' Phi' r0 +
    delta' Phi' Phi delta``: ``O(B d^2)`` once per batch and ``O(M d^2)``
    for the particles, instead of an ``[M, B]`` residual matrix, which
    costs far more when ``B`` exceeds ``d``. Centring at ``beta0``
    keeps ``r0'r0`` of the size of the residuals, so no cancellation
    occurs however large the targets' offset.
    """
    X, y = batch
    Phi = model._design(X)
    beta, log_var = model._split(theta)
    inv_var = (-log_var).exp()
    beta0 = beta.mean(0)
    delta = beta - beta0
    r0 = y - Phi @ beta0  # [B]
    A = torch.cat([Phi, r0[:, None]], dim=1)
    gram = A.T @ A  # [[Phi'Phi, Phi'r0], [r0'Phi, r0'r0]]
    G, b, rr = gram[:-1, :-1], gram[:-1, -1], gram[-1, -1]
    G_delta = delta @ G  # [M, c]
    sq = (rr - 2.0 * (delta @ b) + (delta * G_delta).sum(1)).clamp_min(0.0) * inv_var
    n = y.shape[0]
    log_lik = -0.5 * (sq + n * (LOG_2PI + log_var))
    g_beta = (b - G_delta) * inv_var[:, None]
    g_log_var = 0.5 * (sq - n) if model.unknown_noise else None
    return log_lik, model._chain(g_beta, g_log_var)
