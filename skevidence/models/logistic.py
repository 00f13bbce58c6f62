"""Multinomial (softmax) logistic regression (paper, Appendix B.2)."""

import functools

import numpy as np
import torch

from ._bits import (LN_2, LOG2_E, log_normalizer_bits_, softmax_bits_,
                    summed_log_normalizer_bits_)
from .base import GaussianPriorModel
from .batches import PreparedBatch, stacked_terms

__all__ = ["LogisticRegressionModel"]


class LogisticRegressionModel(GaussianPriorModel):
    """``p(y = k | x) = softmax_k(W x + b)`` with independent Gaussian priors on ``W, b``.

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
    prior_std : float or array-like of shape (n_classes, n_features), default=1.0
        Standard deviation of the Gaussian prior on the weights: one for
        all, or one per weight.
    prior_mean : float or array-like of shape (n_classes, n_features), default=0.0
        Mean of the Gaussian prior on the weights.
    intercept_prior_mean : float or array-like of shape (n_classes,), default=0.0
        Mean of the Gaussian prior on the biases.
    intercept_prior_std : float, array-like of shape (n_classes,) or None, default=None
        Standard deviation of the Gaussian prior on the biases; ``None``
        takes ``prior_std`` (a number then).
    """

    # A log-concave likelihood times a Gaussian prior: one mode.
    unimodal = True

    def __init__(self, n_features, n_classes, fit_intercept=True, prior_std=1.0, prior_mean=0.0,
                 intercept_prior_mean=0.0, intercept_prior_std=None):
        self.n_features = int(n_features)
        self.n_classes = int(n_classes)
        self.fit_intercept = bool(fit_intercept)
        self.n_params = self.n_classes * (self.n_features + int(self.fit_intercept))
        K, p = self.n_classes, self.n_features
        if intercept_prior_std is None and self.fit_intercept:
            if np.ndim(prior_std) != 0:
                raise ValueError("intercept_prior_std must be given when prior_std is an array")
            intercept_prior_std = prior_std
        means = [np.broadcast_to(np.asarray(prior_mean, dtype=np.float64), (K, p)).ravel()]
        stds = [np.broadcast_to(np.asarray(prior_std, dtype=np.float64), (K, p)).ravel()]
        if self.fit_intercept:
            means.append(np.broadcast_to(np.asarray(intercept_prior_mean, np.float64), (K,)))
            stds.append(np.broadcast_to(np.asarray(intercept_prior_std, np.float64), (K,)))
        mean, std = np.concatenate(means), np.concatenate(stds)
        # The i.i.d. N(0, s^2) prior keeps GaussianPriorModel's scalar arithmetic.
        if not np.any(mean) and std.size and np.all(std == std[0]):
            self.prior_std, self.prior_mean = float(std[0]), None
        else:
            self.prior_std, self.prior_mean = std, mean

    def unpack(self, theta):
        """Weights ``[M, K, p]`` and biases ``[M, K]`` (zeros without intercept)."""
        M, K, p = theta.shape[0], self.n_classes, self.n_features
        W = theta[:, : K * p].reshape(M, K, p)
        if self.fit_intercept:
            b = theta[:, K * p :]
        else:
            b = theta.new_zeros(M, K)
        return W, b

    def _scores(self, theta, X, scale=1.0):
        """Class scores ``scale (W x + b)`` in the layout ``[M, K, B]``.

        The data index is last because torch reduces slowly over a short
        last dimension. ``scale=LOG2_E`` gives them in bits (``_bits``).
        """
        W, b = self.unpack(theta)
        flat = W.reshape(-1, self.n_features)
        if self.fit_intercept:
            scores = torch.addmm(b.reshape(-1, 1), flat, X.T, beta=scale, alpha=scale)  # [M K, B]
        else:
            scores = (flat * scale) @ X.T
        return scores.reshape(theta.shape[0], self.n_classes, X.shape[0])

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
        bits = self._scores(theta, X, LOG2_E)  # [M, K, B]
        picked = _picked(bits, y).mul_(LN_2)  # [M, B] in nats (a copy: bits get overwritten)
        return picked - log_normalizer_bits_(bits)[0]

    def log_likelihood_sum(self, theta, batch):
        """``theta . s - sum_n log sum_k exp(score_k(x_n))``, ``s`` the label statistics."""
        X = batch[0]
        return theta @ self._labels_of(batch, theta.dtype) - summed_log_normalizer_bits_(
            self._scores(theta, X, LOG2_E))[0]

    def grad_log_likelihood(self, theta, batch):
        """``sum_n (onehot(y_n) - p_n) [x_n, 1]^T`` per particle, ``[M, d]``."""
        X, y = batch
        return self._grad_from_probabilities(softmax_bits_(self._scores(theta, X, LOG2_E)), X, y)

    def log_likelihood_and_grad(self, theta, batch):
        """Both from one product ``W X^T`` and one exponential of the scores.

        The labels enter linearly: ``sum_n score_{y_n}(x_n) = theta . s`` with
        ``s = sum_n onehot(y_n) [x_n, 1]`` (the gradient's data term), so no
        per-observation gather is needed; the softmax is formed in place.
        """
        X = batch[0]
        s = self._labels_of(batch, theta.dtype)  # [d]
        log_norm, proba = summed_log_normalizer_bits_(self._scores(theta, X, LOG2_E),
                                                      with_proba=True)
        return theta @ s - log_norm, s - self._expected_statistics(proba, X)

    def prepare_batch(self, batch):
        """The batch with its label statistics ``sum_n onehot(y_n) [x_n, 1]``."""
        X, y = batch
        return PreparedBatch(batch, self._label_statistics(X, y, X.dtype))

    def fisher_information(self, theta, batch):
        """``sum_n kron(diag(p_n) - p_n p_n^T, z_n z_n^T)``, ``z_n = [x_n, 1]``, at ``theta [d]``.

        The negative Hessian of the batch's log-likelihood (it does not
        depend on the labels), in the layout of ``theta``; cost
        ``O(B d^2)`` for a batch of ``B``.
        """
        return self._fisher_from_curvatures(self._curvatures(theta, batch[0]), batch[0])

    def weighted_grad_log_likelihood(self, theta, terms):
        """All the terms' rows in one pass, each row's ``onehot(y_n) - p_n`` weighted."""
        (X, y), row_weights = stacked_terms(terms)
        proba = softmax_bits_(self._scores(theta, X, LOG2_E)).mul_(row_weights)
        return (self._label_statistics(X, y, proba.dtype, row_weights)
                - self._expected_statistics(proba, X))

    def weighted_fisher_information(self, theta, terms):
        """All the terms' rows in one pass, each row's class curvature weighted."""
        (X, _), row_weights = stacked_terms(terms)
        A = self._curvatures(theta, X).mul_(row_weights[:, None, None].to(theta.dtype))
        return self._fisher_from_curvatures(A, X)

    def _curvatures(self, theta, X):
        """Each row's class curvature ``diag(p_n) - p_n p_n^T`` at ``theta [d]``, ``[B, K, K]``."""
        p = torch.softmax(self._scores(theta[None], X)[0], dim=0).T  # [B, K]
        return torch.diag_embed(p) - p[:, :, None] * p[:, None, :]

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
        # [K K q, B] x [B, q] (q: Z's columns): every class pair's weighted Gram matrix at once.
        AZ = (A.reshape(-1, K * K, 1) * Z[:, None, :]).reshape(X.shape[0], -1)
        flat = (AZ.T @ Z).reshape(-1)  # (class k, class l, z_i, z_j), row-major
        return flat[_theta_layout(K, self.n_features, self.fit_intercept, str(X.device))]

    def _grad_from_probabilities(self, proba, X, y):
        """``sum_n (onehot(y_n) - p_n) [x_n, 1]`` from the probabilities ``[M, K, B]``."""
        return self._label_statistics(X, y, proba.dtype) - self._expected_statistics(proba, X)

    def _labels_of(self, batch, dtype):
        """The label statistics of a batch, prepared (:meth:`prepare_batch`) or not."""
        if isinstance(batch, PreparedBatch):
            return batch.stats
        return self._label_statistics(*batch, dtype)

    def _label_statistics(self, X, y, dtype, row_weights=None):
        """``sum_n onehot(y_n) [x_n, 1]`` in the layout of ``theta``, ``[d]`` (each row
        weighted by ``row_weights [B]``)."""
        onehot = torch.nn.functional.one_hot(y, self.n_classes).T.to(dtype)  # [K, B]
        if row_weights is not None:
            onehot = onehot * row_weights.to(dtype)
        s = (onehot @ X.to(dtype)).reshape(-1)
        return torch.cat([s, onehot.sum(1)]) if self.fit_intercept else s

    def _expected_statistics(self, proba, X):
        """``sum_n p_n [x_n, 1]`` per particle, ``[M, d]``, from ``proba [M, K, B]``."""
        M, K, B = proba.shape
        expected = (proba.reshape(M * K, B) @ X).reshape(M, -1)
        if not self.fit_intercept:
            return expected
        return torch.cat([expected, proba.sum(2)], dim=1)


def _picked(scores, y):
    """Score of each observation's own class, ``[M, B]``."""
    M, B = scores.shape[0], scores.shape[2]
    return scores.gather(1, y.reshape(1, 1, B).expand(M, 1, B)).squeeze(1)


@functools.lru_cache(maxsize=16)
def _theta_layout(n_classes, n_features, fit_intercept, device):
    """Indices ``[d, d]`` into the flattened ``(k, l, i, j)`` Fisher blocks, in ``theta``'s layout.

    ``theta`` holds the weights class by class, then the biases; entry
    ``(a, b)`` is block ``(k_a, l_b)``'s ``(i_a, j_b)``, so one gather
    replaces a permutation and two row/column selections (per call on a
    mini-batch, those small copies cost more than the product).
    """
    K, p = n_classes, n_features
    q = p + int(fit_intercept)
    k = torch.arange(K)
    order = (k[:, None] * q + torch.arange(p)).reshape(-1)
    if fit_intercept:
        order = torch.cat([order, k * q + p])
    cls, feature = order // q, order % q
    rows = cls * (K * q * q) + feature * q
    cols = cls * (q * q) + feature
    return (rows[:, None] + cols[None, :]).to(device)
