"""Transition kernels (SGHMC, BAOAB, generalised HMC) and preconditioners, batched over particles.

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

__all__ = [
    "sghmc", "baoab", "ghmc", "covariance_preconditioner", "isotropic_preconditioner",
    "precision_preconditioner",
]


def sghmc(theta, grad_log_density, n_steps, step_size, momentum_decay, chol, generator):
    """``n_steps`` SGHMC steps from ``theta [M, d]``; returns the new particles.

    ``grad_log_density(theta)`` returns a (stochastic) gradient of the
    target's log density, ``[M, d]``. The momentum is drawn afresh from its
    stationary law ``N(0, eta P)``, a Gibbs step that keeps the target
    invariant and forgets momenta of particles that resampling duplicated.
    """
    M, d = theta.shape
    P = _preconditioner_from_factor(chol)
    noise_scale = math.sqrt(2.0 * momentum_decay * step_size)
    v = math.sqrt(step_size) * _times_factor_t(_gaussian(M, d, generator, theta), chol)
    for _ in range(n_steps):
        g = grad_log_density(theta)
        noise = _times_factor_t(_gaussian(M, d, generator, theta), chol)
        v = (1.0 - momentum_decay) * v + step_size * _times_factor(g, P) + noise_scale * noise
        theta = theta + v
    return theta


def _times_factor_t(x, chol):
    """``x @ chol.T``; a 1-d ``chol`` is the diagonal of a diagonal factor."""
    return x * chol if chol.dim() == 1 else x @ chol.T


def _times_factor(x, chol):
    """``x @ chol``; a 1-d ``chol`` is the diagonal of a diagonal factor."""
    return x * chol if chol.dim() == 1 else x @ chol


def _preconditioner_from_factor(chol):
    return chol**2 if chol.dim() == 1 else chol @ chol.T


def _gaussian(M, d, generator, like):
    return torch.randn(M, d, generator=generator, dtype=like.dtype, device=like.device)


def covariance_preconditioner(theta, W):
    """Cholesky factor of the weighted particle covariance, ``[d, d]``.

    ``W`` are normalised weights ``[M]``. A jitter on the diagonal, grown
    until the factorisation succeeds, keeps it defined for a degenerate cloud.
    """
    mean = W @ theta
    centred = theta - mean
    cov = (centred * W[:, None]).T @ centred
    diag = torch.diagonal(cov)
    eye = torch.eye(cov.shape[0], dtype=cov.dtype, device=cov.device)
    scale = diag.mean().clamp_min(1e-300)
    for jitter in (1e-12, 1e-9, 1e-6, 1e-3):
        chol, info = torch.linalg.cholesky_ex(cov + jitter * scale * eye)
        if int(info) == 0 and torch.isfinite(chol).all():
            return chol
    raise FloatingPointError(
        "the particles' covariance is not positive definite (the particles "
        "have collapsed or diverged). Likely causes: data far from unit scale "
        "(standardise them, e.g. StandardScaler), a posterior far steeper on one "
        "side than its spread (a one-hot column for a rare category: try "
        "engine_options={'precondition': 'model'}), a learning_rate too large "
        "(try a tenth of it), or fewer particles than parameters (increase n_particles)"
    )


def precision_preconditioner(precision):
    """A square root ``L`` (``L L^T = precision^{-1}``) of the inverse of ``precision [d, d]``.

    ``L = C^{-T}`` for the Cholesky factor ``C`` of the precision (upper
    triangular; the kernels need only ``L L^T``). A jitter grown until the
    factorisation succeeds keeps it defined for a nearly singular precision.
    """
    d = precision.shape[0]
    eye = torch.eye(d, dtype=precision.dtype, device=precision.device)
    scale = torch.diagonal(precision).mean().clamp_min(1e-300)
    for jitter in (0.0, 1e-12, 1e-9, 1e-6, 1e-3):
        chol, info = torch.linalg.cholesky_ex(precision + jitter * scale * eye)
        if int(info) == 0 and torch.isfinite(chol).all():
            return torch.linalg.solve_triangular(chol, eye, upper=False).T
    raise FloatingPointError(
        "the model's curvature at the particles' mean is not positive definite "
        "or not finite; the particles may have diverged (reduce learning_rate)"
    )


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
    P = _preconditioner_from_factor(chol)
    keep = 1.0 - momentum_decay
    noise_scale = math.sqrt((1.0 - keep**2) * step_size)
    half = 0.5 * step_size
    v = math.sqrt(step_size) * _times_factor_t(_gaussian(M, d, generator, theta), chol)
    Pg = _times_factor(grad_log_density(theta), P)  # kept for the next step's opening kick
    for _ in range(n_steps):
        v = v + half * Pg
        theta = theta + 0.5 * v
        v = keep * v + noise_scale * _times_factor_t(_gaussian(M, d, generator, theta), chol)
        theta = theta + 0.5 * v
        Pg = _times_factor(grad_log_density(theta), P)
        v = v + half * Pg
    return theta


def ghmc(theta, log_density_and_grad, n_steps, step_size, momentum_decay, chol, generator,
         settle=False):
    """At most ``n_steps`` of generalised HMC (Horowitz 1991): the dynamics of
    :func:`baoab`, made exact.

    ``log_density_and_grad(theta)`` returns the target's log density ``[M]``
    and its gradient ``[M, d]``, both exact. Every step refreshes a part
    ``momentum_decay`` of the momentum, takes one leapfrog step of length
    ``sqrt(step_size)`` in the coordinates ``L^{-1} theta`` and accepts it
    with the Metropolis-Hastings probability; a rejection keeps the position
    and reverses the momentum. The target is invariant at any step size, a
    step that would diverge is rejected, and the persistent momentum moves
    the particles much further per gradient than Langevin proposals do.

    ``settle`` stops the move once the particles' dependence on where they
    started no longer falls (:class:`_Settling`): every few steps the
    correlation of each coordinate with its starting value, across the
    particles, is compared with the last block's, and the move stops where
    it changed little in most of the coordinates. The correlation is
    scale-free and settles where the particles have mixed as far as the
    steps can take them (above zero for a cloud spread over modes that the
    steps do not cross). Returns the new particles and the mean acceptance
    rate.
    """
    M, d = theta.shape
    eps = math.sqrt(step_size)
    keep = 1.0 - momentum_decay
    refresh = math.sqrt(1.0 - keep**2)
    log_p, g = log_density_and_grad(theta)
    g = _times_factor(g, chol)  # the gradient in the coordinates L^{-1} theta
    p = _gaussian(M, d, generator, theta)
    accepted = []
    settling = _Settling(theta) if settle else None
    # Few torch calls per step, since on small tensors each costs more than its arithmetic;
    # a NaN log ratio rejects by itself (NaN < x is False).
    for step in range(1, n_steps + 1):
        p = torch.add(p.mul_(keep), _gaussian(M, d, generator, theta), alpha=refresh)
        p_half = torch.add(p, g, alpha=0.5 * eps)
        proposal = torch.add(theta, _times_factor_t(p_half, chol), alpha=eps)
        log_p_new, g_new = log_density_and_grad(proposal)
        g_new = _times_factor(g_new, chol)
        p_new = torch.add(p_half, g_new, alpha=0.5 * eps)
        kinetic = ((p - p_new) * (p + p_new)).sum(1)
        log_ratio = torch.add(log_p_new - log_p, kinetic, alpha=0.5)
        exponential = torch.empty(M, dtype=theta.dtype, device=theta.device).exponential_(
            generator=generator)
        accept = log_ratio > exponential.neg_()  # log U = -Exp(1)
        column = accept[:, None]
        theta = torch.where(column, proposal, theta)
        log_p = torch.where(accept, log_p_new, log_p)
        g = torch.where(column, g_new, g)
        p = torch.where(column, p_new, p.neg_())
        accepted.append(accept)
        if (settling is not None and step % settling.block == 0 and step < n_steps
                and settling.settled(theta)):
            break
    if not accepted:
        return theta, 0.0
    return theta, float(torch.stack(accepted).sum()) / (len(accepted) * M)


class _Settling:
    """The settling test of :func:`ghmc`: the correlation of each coordinate of the
    particles with its starting value, every ``block`` steps from the second block
    on; settled where it changed by less than ``change`` since the last block in at
    least ``share`` of the coordinates. More than a tenth of the coordinates still
    losing more than 0.05 of their correlation a block keep the move going; a
    direction slower than that counts as settled. A mixture's moves often settle
    early and save steps at the same accuracy, while on logistic models the
    correlation is still falling and nearly every move takes all its steps."""

    def __init__(self, start, change=0.05, block=5, share=0.9):
        self.start = start - start.mean(0)
        # M times the starting standard deviation (population): times the
        # current one, the denominator of the correlation
        self.start_scale = self.start.norm(dim=0) * math.sqrt(start.shape[0])
        self.change, self.block = change, block
        self.needed = math.ceil(share * start.shape[1] - 1e-9)  # 0.9 * 10 is 9.000...02
        self.last = None

    def settled(self, theta):
        """Whether the correlation changed by less than ``change`` since the last
        block in at least ``share`` of the coordinates (records it)."""
        # (the start is centred, so the current values need not be)
        spread = theta.var(0, correction=0).sqrt_().mul_(self.start_scale)
        correlation = (self.start * theta).sum(0) / spread.clamp_min_(
            torch.finfo(theta.dtype).tiny)
        last, self.last = self.last, correlation
        if last is None:
            return False
        return int(((correlation - last).abs_() < self.change).sum()) >= self.needed
