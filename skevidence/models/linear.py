"""Bayesian linear regression, known or unknown noise (paper, Appendix B.1)."""

import math

import numpy as np
import torch

from . import _linear_conjugate
from .base import LOG_2PI, Model
from .batches import PreparedBatch


# Default shape of the inverse-gamma prior of the noise variance. 1 keeps the prior
# compact in log sigma^2 (a right tail ~ 1 / sigma^2 in that coordinate, so
# prior draws stay within a few units of the scale) while its left tail
# covers noise variances down to about a tenth of noise_prior_scale^2.
NOISE_PRIOR_SHAPE = 1.0

__all__ = ["LinearRegressionModel", "NOISE_PRIOR_SHAPE"]


class LinearRegressionModel(Model):
    """``y = x @ w + b + eps``, ``eps ~ N(0, sigma^2)``, conjugate Gaussian prior.

    ``beta = [w (n_features), b]`` (``w`` alone without an intercept) has the
    prior ``N(mu, sigma^2 diag(g^2))``, ``mu = [prior_mean,
    intercept_prior_mean]``, ``g = [prior_std, intercept_prior_std]``. With
    ``noise_std`` a number, ``sigma`` is that known value and ``theta =
    beta``; with ``noise_std=None`` the noise variance is unknown,
    ``sigma^2 ~ InvGamma(a, a noise_prior_scale^2)`` with ``a =
    noise_prior_shape``, and ``theta = [beta, log sigma^2]`` (unconstrained;
    the log prior includes the Jacobian).

    ``noise_std=1, prior_std=1, intercept_prior_mean=0`` is the paper's model.

    The sampler works in units of the prior: ``theta`` holds ``(beta - mu) /
    s`` and ``log sigma^2 - 2 log s`` (``s`` the noise scale, ``noise_std``
    or ``noise_prior_scale``), so fitting ``a y + c`` with ``mu`` and ``s``
    set from the data moves exactly the same particles (an engine detail
    such as a jitter relative to the mean variance cannot mix coordinates
    of different units); :meth:`natural` maps them back to ``[beta, log
    sigma^2]`` (the paper's model is its own natural form).

    Parameters
    ----------
    n_features : int
        Number of input features.
    fit_intercept : bool, default=True
        Whether the model has a bias term ``b``.
    prior_std : float or array-like of shape (n_features,), default=1.0
        Prior standard deviation of the coefficients, in units of the noise
        standard deviation.
    noise_std : float or None, default=1.0
        Known standard deviation of the observation noise, or ``None`` for
        unknown noise.
    intercept_prior_mean : float, default=0.0
        Prior mean of the intercept.
    noise_prior_scale : float, default=1.0
        Scale ``s`` of the inverse-gamma prior ``InvGamma(a, a s^2)`` of the
        noise variance (``E[1 / sigma^2] = 1 / s^2``); unused with known noise.
    prior_mean : float or array-like of shape (n_features,), default=0.0
        Prior mean of the coefficients.
    intercept_prior_std : float or None, default=None
        Prior standard deviation of the intercept in units of the noise;
        ``None`` takes ``prior_std`` (a number then).
    noise_prior_shape : float, default=1.0
        Shape ``a`` of the noise variance's inverse-gamma prior.
    """

    # Gaussian given the noise, normal-inverse-gamma with it: one mode.
    unimodal = True

    def __init__(self, n_features, fit_intercept=True, prior_std=1.0, noise_std=1.0,
                 intercept_prior_mean=0.0, noise_prior_scale=1.0, prior_mean=0.0,
                 intercept_prior_std=None, noise_prior_shape=NOISE_PRIOR_SHAPE):
        self.n_features = int(n_features)
        self.fit_intercept = bool(fit_intercept)
        self.noise_std = None if noise_std is None else float(noise_std)
        self.intercept_prior_mean = float(intercept_prior_mean)
        self.noise_prior_scale = float(noise_prior_scale)
        self.noise_prior_shape = float(noise_prior_shape)
        self.n_coef = self.n_features + int(self.fit_intercept)
        self.n_params = self.n_coef + int(self.unknown_noise)
        self._unit_scale = self.noise_prior_scale if self.unknown_noise else self.noise_std
        p = self.n_features
        self.prior_mean = np.broadcast_to(np.asarray(prior_mean, dtype=np.float64), (p,)).copy()
        std = np.broadcast_to(np.asarray(prior_std, dtype=np.float64), (p,))
        if self.fit_intercept:
            if intercept_prior_std is None:
                if np.ndim(prior_std) != 0:
                    raise ValueError("intercept_prior_std must be given when prior_std has "
                                     "one value per feature")
                intercept_prior_std = prior_std
            std = np.append(std, float(intercept_prior_std))
        self.coef_prior_std = std.copy()  # one per coefficient, the intercept's last
        # One scale for every coefficient keeps the scalar arithmetic (and its
        # rounding) of the isotropic prior; per-coefficient scales broadcast.
        if std.size and np.all(std == std[0]):
            self.prior_std = float(std[0])
            self._g2 = self.prior_std**2
        else:
            self.prior_std = std.copy()
            self._g2 = None
        self._log_det_g2 = float(np.sum(np.log(std**2)))
        self._prior_cache = {}

    @property
    def unknown_noise(self):
        return self.noise_std is None

    # -- pieces ---------------------------------------------------------------

    def _design(self, X):
        if not self.fit_intercept:
            return X
        return torch.cat([X, X.new_ones(X.shape[0], 1)], dim=1)

    def _prior_mean(self, like):
        """``mu``, shape ``[n_coef]``, dtype and device of ``like``."""
        mu = like.new_zeros(self.n_coef)
        if np.any(self.prior_mean != 0.0):
            mu[: self.n_features] = torch.as_tensor(self.prior_mean, dtype=like.dtype,
                                                    device=like.device)
        if self.fit_intercept:
            mu[-1] = self.intercept_prior_mean
        return mu

    def _var(self, like):
        """``g^2``: a float when isotropic, else ``[n_coef]`` in ``like``'s dtype and device."""
        if self._g2 is not None:
            return self._g2
        key = (like.dtype, like.device)
        if key not in self._prior_cache:
            self._prior_cache[key] = torch.as_tensor(self.coef_prior_std**2, dtype=like.dtype,
                                                     device=like.device)
        return self._prior_cache[key]

    def _std(self, like):
        """``g``: a float when isotropic, else ``[n_coef]``."""
        g2 = self._var(like)
        return self.prior_std if self._g2 is not None else g2.sqrt()

    def _scaled_sq(self, z, like=None):
        """``sum_j z_j^2 / g_j^2`` over the last axis."""
        g2 = self._var(z if like is None else like)
        if self._g2 is not None:
            return z.square().sum(-1) / g2
        return (z.square() / g2).sum(-1)

    def _prior_norm(self):
        """``c log(2 pi) + sum_j log g_j^2``, the Gaussian prior's normaliser."""
        if self._g2 is not None:
            return self.n_coef * (LOG_2PI + math.log(self._g2))
        return self.n_coef * LOG_2PI + self._log_det_g2

    def _noise_prior_const(self):
        """``a log a - log Gamma(a)``: the log normaliser of ``InvGamma(a, a)``."""
        a = self.noise_prior_shape
        return a * math.log(a) - math.lgamma(a)

    def _split(self, theta):
        """Natural coefficients ``beta [M, n_coef]`` and ``log sigma^2 [M]`` of ``theta``."""
        s = self._unit_scale
        beta = s * theta[:, : self.n_coef] + self._prior_mean(theta)
        if self.unknown_noise:
            return beta, theta[:, self.n_coef] + 2.0 * math.log(s)
        log_var = theta.new_full((theta.shape[0],), 2.0 * math.log(self.noise_std))
        return beta, log_var

    def _chain(self, g_beta, g_log_var):
        """Gradient in ``theta`` from the natural gradients (d beta / d z = s)."""
        g_z = g_beta * self._unit_scale
        if not self.unknown_noise:
            return g_z
        return torch.cat([g_z, g_log_var[:, None]], dim=1)

    def natural(self, theta):
        """``[beta, log sigma^2]`` (``beta`` alone with known noise) of ``theta``, ``[M, d]``."""
        beta, log_var = self._split(theta)
        if not self.unknown_noise:
            return beta
        return torch.cat([beta, log_var[:, None]], dim=1)

    def noise_variance(self, theta):
        """Noise variance ``sigma^2`` of every particle, ``[M]``."""
        return self._split(theta)[1].exp()

    def mean(self, theta, X):
        """Predictive mean of every particle, ``[M, B]``."""
        return self._split(theta)[0] @ self._design(X).T

    # -- prior ----------------------------------------------------------------

    # In the sampler's units (z = (beta - mu) / s, t = log sigma^2 - 2 log s)
    # the prior no longer depends on mu and s: z | t ~ N(0, e^t diag(g^2))
    # and, with unknown noise, e^t ~ InvGamma(a, a); with known noise t = 0.

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        like = torch.empty(0, dtype=dtype, device=device)
        g = self._std(like)
        if not self.unknown_noise:
            eps = torch.randn(n, self.n_coef, generator=generator, dtype=dtype, device=device)
            return g * eps
        a = self.noise_prior_shape
        if a == 1.0:
            # e^t = 1 / E with E ~ Exp(1) = Gamma(1): InvGamma(1, 1).
            u = torch.rand(n, generator=generator, dtype=dtype, device=device)
            t = -torch.log(-torch.log1p(-u))
        else:
            # e^t = a / E with E ~ Gamma(a, 1): InvGamma(a, a).
            shape = torch.full((n,), a, dtype=dtype, device=device)
            t = math.log(a) - torch.log(torch._standard_gamma(shape, generator=generator))
        eps = torch.randn(n, self.n_coef, generator=generator, dtype=dtype, device=device)
        z = g * (0.5 * t).exp()[:, None] * eps
        return torch.cat([z, t[:, None]], dim=1)

    def log_prior(self, theta):
        z = theta[:, : self.n_coef]
        norm = self._prior_norm()
        if not self.unknown_noise:
            return -0.5 * (self._scaled_sq(z) + norm)
        t = theta[:, self.n_coef]
        inv = (-t).exp()
        a = self.noise_prior_shape
        # log N(z; 0, e^t diag(g^2)) + log InvGamma(e^t; a, a) + t (the Jacobian of log)
        return (-0.5 * (self._scaled_sq(z) * inv + norm + self.n_coef * t)
                + self._noise_prior_const() - a * t - a * inv)

    def grad_log_prior(self, theta):
        z = theta[:, : self.n_coef]
        g2 = self._var(theta)
        if not self.unknown_noise:
            return -z / g2
        t = theta[:, self.n_coef]
        inv = (-t).exp()
        a = self.noise_prior_shape
        g_z = -z * inv[:, None] / g2 if self._g2 is None else -z * (inv / g2)[:, None]
        g_t = (0.5 * self._scaled_sq(z) + a) * inv - 0.5 * self.n_coef - a
        return torch.cat([g_z, g_t[:, None]], dim=1)

    # -- likelihood -----------------------------------------------------------

    def log_likelihood(self, theta, batch):
        X, y = batch
        beta, log_var = self._split(theta)
        resid = y - beta @ self._design(X).T
        return -0.5 * (resid.square() * (-log_var).exp()[:, None]
                       + LOG_2PI + log_var[:, None])

    def grad_log_likelihood(self, theta, batch):
        return self.log_likelihood_and_grad(theta, batch)[1]

    def prepare_batch(self, batch):
        """The batch with its Gram matrix around the posterior mean given the batch alone
        (``_linear_conjugate.prepared_batch``): a likelihood call then costs
        ``O(M d^2)`` and a dozen small operations."""
        return PreparedBatch(batch, _linear_conjugate.prepared_batch(self, batch))

    def summarize(self, batch):
        """``Phi'Phi``, ``Phi'y'``, ``y''y'`` and the count, in the sampler's units (float64)."""
        return _linear_conjugate.summarize(self, batch)

    def prepare_summary(self, summary):
        """:meth:`prepare_batch`'s statistics from a sum of :meth:`summarize` results
        (``_linear_conjugate.prepared_summary``)."""
        return PreparedBatch((), _linear_conjugate.prepared_summary(self, summary))

    def _prior_precision_matrix(self, like):
        """``diag(1 / g^2)``, ``[n_coef, n_coef]`` in ``like``'s dtype and device."""
        eye = torch.eye(self.n_coef, dtype=like.dtype, device=like.device)
        if self._g2 is not None:
            return eye / self._g2
        return torch.diag(1.0 / self._var(like))

    def log_joint_and_grad(self, theta, batch, weight=1.0):
        """The log prior plus the log-likelihood, as one quadratic form in ``theta``
        on a prepared batch (``_linear_conjugate.prepared_log_joint_and_grad``): the
        exact moves of linear regression spend most of their time in these small
        operations."""
        if not (isinstance(batch, PreparedBatch) and weight == 1.0):
            return super().log_joint_and_grad(theta, batch, weight)
        return _linear_conjugate.prepared_log_joint_and_grad(self, theta, batch.stats)

    def log_likelihood_and_grad(self, theta, batch):
        """Both from the batch's Gram matrix: the prepared one
        (``_linear_conjugate.prepared_log_likelihood_and_grad``), else one around
        the particles' mean (``_linear_conjugate.centred_log_likelihood_and_grad``),
        in ``O(M d^2)`` for the particles instead of an ``[M, B]`` residual matrix."""
        if isinstance(batch, PreparedBatch):
            return _linear_conjugate.prepared_log_likelihood_and_grad(self, theta, batch.stats)
        return _linear_conjugate.centred_log_likelihood_and_grad(self, theta, batch)

    # -- curvature (the preconditioner when particles are few for d) ---------

    def fisher_information(self, theta, batch):
        """Summed Fisher information of ``batch`` at ``theta [d]``, ``[d, d]``."""
        return self.expected_fisher_information(theta[None], theta.new_ones(1), batch)

    def expected_fisher_information(self, theta, weights, batch):
        """``E_W[e^-t] Phi'Phi`` for the coefficients and ``n / 2`` for ``t``, ``[d, d]``.

        In the sampler's units the coefficients' information is ``Phi'Phi``
        over the noise variance ``e^t`` (1 with known noise), and that of
        ``t = log sigma^2`` is one half per observation; the two are
        orthogonal.
        """
        Phi = self._design(batch[0]).to(theta.dtype)
        info = theta.new_zeros(self.n_params, self.n_params)
        c = self.n_coef
        scale = weights @ (-theta[:, c]).exp() if self.unknown_noise else 1.0
        info[:c, :c] = scale * (Phi.T @ Phi)
        if self.unknown_noise:
            info[c, c] = 0.5 * Phi.shape[0]
        return info

    def prior_precision(self, theta):
        """The diagonal blocks of the prior's negative Hessian at ``theta [d]``.

        ``z | t ~ N(0, e^t diag(g^2))`` gives ``e^-t / g_j^2`` for the
        coefficients; the noise's block is ``(sum_j z_j^2 / (2 g_j^2) + a)
        e^-t``. The coupling between them is left out: it can make the
        matrix indefinite far from the mode, and a preconditioner only needs
        the scales.
        """
        c, g2 = self.n_coef, self._var(theta)
        inv = (-theta[c]).exp() if self.unknown_noise else theta.new_ones(())
        coef = (inv / g2).expand(c)
        if not self.unknown_noise:
            return torch.diag(coef)
        if self._g2 is not None and self.noise_prior_shape == 1.0:
            noise = 0.5 * theta[:c].square().sum() * inv / g2 + inv
        else:
            noise = (0.5 * self._scaled_sq(theta[:c]) + self.noise_prior_shape) * inv
        return torch.diag(torch.cat([coef, noise[None]]))

    # -- closed forms (models/_linear_conjugate.py) ------------------------------

    def posterior(self, batch, weights=None):
        """Gaussian posterior ``(mean, covariance)`` of ``theta`` given ``batch`` (known noise).

        ``theta = (beta - mu) / noise_std`` (``beta`` itself in the paper's
        model). ``weights`` (one per observation, default 1) tempers the
        likelihood terms, so ``posterior(C, weights=lam)`` is the annealed
        target.
        """
        return _linear_conjugate.posterior(self, batch, weights)

    def exact_log_evidence(self, batch):
        """Closed-form ``log p(y | X)`` in O(N d^2), float64
        (``_linear_conjugate.exact_log_evidence``)."""
        return _linear_conjugate.exact_log_evidence(self, batch)
