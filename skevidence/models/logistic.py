"""Multinomial (softmax) logistic regression (paper, Appendix B.2)."""

import torch

from .base import GaussianPriorModel

__all__ = ["LogisticRegressionModel"]


class LogisticRegressionModel(GaussianPriorModel):
    """``p(y = k | x) = softmax_k(W x + b)`` with ``W, b ~ N(0, prior_std^2)`` iid.

    Every class ``k`` has its own weight vector ``W[k]`` and bias ``b[k]``,
    as in the paper: the parameterisation is redundant (adding one vector to
    every row leaves the likelihood unchanged) but the prior makes it proper,
    and the evidence is that of this model, so two classes have
    ``2 (n_features + 1)`` parameters, not ``n_features + 1``.

    ``theta = [W.ravel() (row-major, n_classes x n_features), b (n_classes)]``;
    without an intercept ``theta = W.ravel()``. Labels ``y`` are long tensors
    of class indices in ``[0, n_classes)``.

    Parameters
    ----------
    n_features : int
        Number of input features.
    n_classes : int
        Number of classes ``K``.
    fit_intercept : bool, default=True
        Whether every class has a bias ``b[k]``.
    prior_std : float, default=1.0
        Standard deviation of the Gaussian prior on every weight and bias.
    """

    def __init__(self, n_features, n_classes, fit_intercept=True, prior_std=1.0):
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)
        self.fit_intercept = bool(fit_intercept)
        self.prior_std = float(prior_std)
        self.n_params = self.n_classes * (self.n_features + int(self.fit_intercept))

    def unpack(self, theta):
        """Weights ``[M, K, p]`` and biases ``[M, K]`` (zeros without intercept)."""
        M, K, p = theta.shape[0], self.n_classes, self.n_features
        W = theta[:, : K * p].reshape(M, K, p)
        if self.fit_intercept:
            b = theta[:, K * p :]
        else:
            b = theta.new_zeros(M, K)
        return W, b

    def _scores(self, theta, X):
        """Class scores ``W x + b`` in the layout ``[M, K, B]``.

        One ``[M K, p] x [p, B]`` product for all particles, and the data
        index last so that the reductions over the (few) classes run over
        contiguous rows of ``B``: a softmax over a last dimension of size
        ``K = 4`` was ten times slower in torch (6 ms against 0.6 ms for
        ``M = 129, B = 500`` on one core).
        """
        W, b = self.unpack(theta)
        scores = W.reshape(-1, self.n_features) @ X.T  # [M K, B]
        return scores.reshape(theta.shape[0], self.n_classes, X.shape[0]) + b[:, :, None]

    def logits(self, theta, X):
        """Class scores ``W x + b`` of every particle, ``[M, B, K]``."""
        return self._scores(theta, X).transpose(1, 2)

    def predict_proba(self, theta, X):
        """Class probabilities of every particle, ``[M, B, K]``."""
        return torch.softmax(self._scores(theta, X), dim=1).transpose(1, 2)

    def predict_log_proba(self, theta, X):
        """Log class probabilities of every particle, ``[M, B, K]``."""
        return torch.log_softmax(self._scores(theta, X), dim=1).transpose(1, 2)

    def log_likelihood(self, theta, batch):
        X, y = batch
        scores = self._scores(theta, X)  # [M, K, B]
        M, B = scores.shape[0], scores.shape[2]
        picked = scores.gather(1, y.reshape(1, 1, B).expand(M, 1, B)).squeeze(1)  # [M, B]
        return picked - _logsumexp_classes(scores)

    def grad_log_likelihood(self, theta, batch):
        """``sum_n (onehot(y_n) - p_n) [x_n, 1]^T`` per particle, ``[M, d]``."""
        X, y = batch
        resid = -torch.softmax(self._scores(theta, X), dim=1)  # [M, K, B]
        return self._grad_from_residuals(resid, X, y)

    def log_likelihood_and_grad(self, theta, batch):
        """Both from one product ``W X^T``: the scores are the costly part."""
        X, y = batch
        scores = self._scores(theta, X)  # [M, K, B]
        M, B = scores.shape[0], scores.shape[2]
        picked = scores.gather(1, y.reshape(1, 1, B).expand(M, 1, B)).squeeze(1)
        # One exponential pass gives both the log normaliser and the
        # probabilities (the elementwise passes cost as much as the product).
        top = scores.amax(dim=1, keepdim=True)
        exp = (scores - top).exp_()
        total = exp.sum(1, keepdim=True)
        log_likelihood = (picked - (total.log() + top).squeeze(1)).sum(1)
        return log_likelihood, self._grad_from_residuals(exp.div_(total).neg_(), X, y)

    def fisher_information(self, theta, batch):
        """``sum_n kron(diag(p_n) - p_n p_n^T, z_n z_n^T)``, ``z_n = [x_n, 1]``, at ``theta [d]``.

        The negative Hessian of the batch's log-likelihood (it does not
        depend on the labels), in the layout of ``theta``; cost
        ``O(B d^2)`` for a batch of ``B``.
        """
        p = torch.softmax(self._scores(theta[None], batch[0])[0], dim=0).T  # [B, K]
        return self._fisher_from_curvatures(torch.diag_embed(p) - p[:, :, None] * p[:, None, :],
                                            batch[0])

    def expected_fisher_information(self, theta, weights, batch):
        """The weighted mean of :meth:`fisher_information` over ``theta [M, d]``, ``[d, d]``.

        The Fisher information is linear in the per-datum class curvatures
        ``diag(p_n) - p_n p_n^T``, so their average over the particles
        (``O(M B K^2)``) gives the mean at the cost of one evaluation.
        """
        X = batch[0]
        p = torch.softmax(self._scores(theta, X), dim=1)  # [M, K, B]
        wp = p * weights[:, None, None]
        A = torch.diag_embed(wp.sum(0).T) - torch.einsum("mkb,mlb->bkl", wp, p)  # [B, K, K]
        return self._fisher_from_curvatures(A, X)

    def _fisher_from_curvatures(self, A, X):
        """``sum_n kron(A_n, z_n z_n^T)`` in the layout of ``theta``, for ``A [B, K, K]``."""
        K = self.n_classes
        Z = torch.cat([X, X.new_ones(X.shape[0], 1)], 1) if self.fit_intercept else X
        q = Z.shape[1]
        # [K K q, B] x [B, q]: every class pair's weighted Gram matrix at once.
        AZ = (A.reshape(-1, K * K, 1) * Z[:, None, :]).reshape(X.shape[0], -1)
        F = (AZ.T @ Z).reshape(K, K, q, q).permute(0, 2, 1, 3).reshape(K * q, K * q)
        order = self._theta_order(q, X.device)
        return F[order][:, order]

    def _theta_order(self, q, device):
        """Rows of the ``(class, [x, 1])`` layout in the order of ``theta``."""
        K, p = self.n_classes, self.n_features
        k = torch.arange(K, device=device)
        weights = (k[:, None] * q + torch.arange(p, device=device)).reshape(-1)
        if not self.fit_intercept:
            return weights
        return torch.cat([weights, k * q + p])

    def _grad_from_residuals(self, resid, X, y):
        """Add the one-hot labels to ``-p`` (in place) and contract with ``[x, 1]``."""
        M, B = resid.shape[0], resid.shape[2]
        resid.scatter_add_(1, y.reshape(1, 1, B).expand(M, 1, B),
                           resid.new_ones(M, 1, B))
        # [M K, B] x [B, p]: the weight gradients of all particles in one product.
        grad_W = (resid.reshape(M * self.n_classes, B) @ X).reshape(M, -1)
        if not self.fit_intercept:
            return grad_W
        return torch.cat([grad_W, resid.sum(2)], dim=1)


def _logsumexp_classes(scores):
    """``logsumexp`` over dim 1 of ``[M, K, B]``, shifted by the max for stability.

    Written out because ``torch.logsumexp`` over a small middle dimension
    was twice as slow as these four vectorised operations.
    """
    top = scores.amax(dim=1, keepdim=True)
    return (scores - top).exp().sum(1).log() + top.squeeze(1)
