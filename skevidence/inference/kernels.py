"""SGHMC transition kernel and its preconditioners, vectorised over particles.

The kernel integrates the Langevin dynamics of paper eq. (3) with a
preconditioner ``P = L L^T``::

    v <- (1 - momentum_decay) v + eta * P grad log pi(theta)
         + sqrt(2 momentum_decay eta) L eps
    theta <- theta + v

which is plain SGHMC in the coordinates ``L^{-1} theta``. With ``P`` an
estimate of the posterior covariance the step size ``eta`` is
dimensionless: it is the squared step per unit of posterior standard
deviation, whatever the amount of data.
"""

import math

import torch

__all__ = ["sghmc", "covariance_preconditioner", "isotropic_preconditioner"]


def sghmc(theta, grad_log_density, n_steps, step_size, momentum_decay, chol, generator):
    """``n_steps`` SGHMC steps from ``theta [M, d]``; returns the new particles.

    ``grad_log_density(theta)`` returns a (stochastic) gradient of the
    target's log density, ``[M, d]``. The momentum is drawn afresh from its
    stationary law ``N(0, eta P)``, a Gibbs step that keeps the target
    invariant and forgets momenta of particles that resampling duplicated.
    """
    M, d = theta.shape
    P = chol @ chol.T
    noise_scale = math.sqrt(2.0 * momentum_decay * step_size)
    v = math.sqrt(step_size) * _gaussian(M, d, generator, theta) @ chol.T
    for _ in range(n_steps):
        g = grad_log_density(theta)
        noise = _gaussian(M, d, generator, theta) @ chol.T
        v = (1.0 - momentum_decay) * v + step_size * (g @ P) + noise_scale * noise
        theta = theta + v
    return theta


def _gaussian(M, d, generator, like):
    return torch.randn(M, d, generator=generator, dtype=like.dtype, device=like.device)


def covariance_preconditioner(theta, W, shrinkage=0.1):
    """Cholesky factor of the weighted particle covariance, ``[d, d]``.

    ``W`` are normalised weights ``[M]``. The covariance is shrunk toward
    its diagonal so that it stays well conditioned when ``M`` is not much
    larger than ``d`` or after resampling has duplicated particles.
    """
    mean = W @ theta
    centred = theta - mean
    cov = (centred * W[:, None]).T @ centred
    diag = torch.diagonal(cov)
    floor = 1e-12 * diag.mean().clamp_min(1e-300)
    cov = (1.0 - shrinkage) * cov + torch.diag(shrinkage * diag + floor)
    return torch.linalg.cholesky(cov)


def isotropic_preconditioner(d, n_eff, like):
    """``I / n_eff``: the posterior scale of a model with unit Fisher information."""
    eye = torch.eye(d, dtype=like.dtype, device=like.device)
    return eye / math.sqrt(max(n_eff, 1.0))


def baoab(theta, grad_log_density, n_steps, step_size, momentum_decay, chol, generator):
    """``n_steps`` of the BAOAB splitting of the same Langevin dynamics.

    Half kick (B), half drift (A), exact Ornstein-Uhlenbeck momentum update
    (O), half drift, half kick. For a Gaussian target its stationary law of
    ``theta`` is exact at any stable step size (Leimkuhler & Matthews 2013),
    whereas the first-order scheme of :func:`sghmc` inflates the variance by
    O(step_size); late in a stream the posterior is close to Gaussian, so
    this removes most of the sampler's bias at the same cost (one gradient
    per step: the closing kick's gradient opens the next step).
    """
    M, d = theta.shape
    P = chol @ chol.T
    keep = 1.0 - momentum_decay
    noise_scale = math.sqrt((1.0 - keep**2) * step_size)
    half = 0.5 * step_size
    v = math.sqrt(step_size) * _gaussian(M, d, generator, theta) @ chol.T
    g = grad_log_density(theta)
    for _ in range(n_steps):
        v = v + half * (g @ P)
        theta = theta + 0.5 * v
        v = keep * v + noise_scale * (_gaussian(M, d, generator, theta) @ chol.T)
        theta = theta + 0.5 * v
        g = grad_log_density(theta)
        v = v + half * (g @ P)
    return theta
