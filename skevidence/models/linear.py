"""Bayesian linear regression with known noise (paper, Appendix B.1)."""

import math

import torch

from .base import GaussianPriorModel

_LOG_2PI = math.log(2.0 * math.pi)

__all__ = ["LinearRegressionModel"]


class LinearRegressionModel(GaussianPriorModel):
    """``y = x @ w + b + eps``, ``eps ~ N(0, noise_std^2)``, ``w, b ~ N(0, prior_std^2)``.

    ``theta = [w (n_features), b]``; without an intercept ``theta = w``.

    Parameters
    ----------
    n_features : int
        Number of input features.
    fit_intercept : bool, default=True
        Whether the model has a bias term ``b``.
    prior_std : float, default=1.0
        Standard deviation of the Gaussian prior on every coefficient.
    noise_std : float, default=1.0
        Known standard deviation of the observation noise.
    """

    def __init__(self, n_features, fit_intercept=True, prior_std=1.0, noise_std=1.0):
        self.n_features = int(n_features)
        self.fit_intercept = bool(fit_intercept)
        self.prior_std = float(prior_std)
        self.noise_std = float(noise_std)
        self.n_params = self.n_features + int(self.fit_intercept)

    def _design(self, X):
        if not self.fit_intercept:
            return X
        return torch.cat([X, X.new_ones(X.shape[0], 1)], dim=1)

    def mean(self, theta, X):
        """Predictive mean of every particle, ``[M, B]``."""
        return theta @ self._design(X).T

    def log_likelihood(self, theta, batch):
        X, y = batch
        resid = y - self.mean(theta, X)
        var = self.noise_std**2
        return -0.5 * (resid.square() / var + _LOG_2PI + math.log(var))

    def grad_log_likelihood(self, theta, batch):
        X, y = batch
        Phi = self._design(X)
        resid = y - theta @ Phi.T
        return resid @ Phi / self.noise_std**2

    def posterior(self, batch, weights=None):
        """Gaussian posterior ``(mean, covariance)`` given ``batch``, in float64.

        ``weights`` (one per observation, default 1) tempers the likelihood
        terms, so ``posterior(C, weights=lam)`` is the annealed target.
        """
        X, y = (t.to(torch.float64) for t in batch)
        Phi = self._design(X)
        if weights is not None:
            w = torch.as_tensor(weights, dtype=torch.float64, device=Phi.device)
            Phi_w = Phi * w.reshape(-1, 1)
        else:
            Phi_w = Phi
        eye = torch.eye(self.n_params, dtype=torch.float64, device=Phi.device)
        precision = eye / self.prior_std**2 + Phi_w.T @ Phi / self.noise_std**2
        cov = torch.cholesky_inverse(torch.linalg.cholesky(precision))
        mean = cov @ (Phi_w.T @ y) / self.noise_std**2
        return mean, cov

    def exact_log_evidence(self, batch):
        """Closed-form ``log p(y | X)`` in O(N d^2), float64.

        ``y ~ N(0, s^2 I + t^2 Phi Phi^T)``; the matrix determinant lemma
        and Woodbury's identity reduce both the log-determinant and the
        quadratic form to the ``d x d`` matrix
        ``A = I / t^2 + Phi^T Phi / s^2``, so no ``N x N`` matrix is formed.
        """
        X, y = (t.to(torch.float64) for t in batch)
        Phi = self._design(X)
        n, d = Phi.shape
        s2, t2 = self.noise_std**2, self.prior_std**2
        A = torch.eye(d, dtype=torch.float64, device=Phi.device) / t2 + Phi.T @ Phi / s2
        L = torch.linalg.cholesky(A)
        b = Phi.T @ y / s2
        z = torch.linalg.solve_triangular(L, b.reshape(-1, 1), upper=False).reshape(-1)
        logdet = n * math.log(s2) + d * math.log(t2) + 2.0 * torch.log(torch.diagonal(L)).sum()
        quad = y @ y / s2 - z @ z
        return float(-0.5 * (n * _LOG_2PI + logdet + quad))
