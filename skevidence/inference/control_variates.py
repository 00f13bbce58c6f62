"""Control-variate gradients for the past-data term of the potential
(:ref:`algorithm`, "Control variates").

The mini-batch estimate is written around a reference ``theta_ref`` whose
exact past-data gradient ``G_ref`` is kept up to date chunk by chunk::

    G_ref + (n / |b|) sum_{y in b} [grad log p(y|theta) - grad log p(y|theta_ref)]

References are one shared point (``[1, d]``, the weighted particle mean)
or one per particle (``[M, d]``, for multimodal posteriors), moved to the
particles when ``n`` has grown by a constant factor (O(1) amortised).
"""

from dataclasses import dataclass

import torch

from ..models.base import batch_size_of

__all__ = ["ControlVariate", "full_gradient_sum"]

# Rows of past data per block when summing gradients over the whole store:
# bounds the [R, block] intermediates a model may form.
_BLOCK = 1 << 15


def full_gradient_sum(model, theta, batch):
    """``sum_{y in batch} grad log p(y | theta)`` by blocks, ``[R, d]``."""
    total = torch.zeros_like(theta)
    n = batch_size_of(batch)
    for start in range(0, n, _BLOCK):
        block = tuple(t[start : start + _BLOCK] for t in batch)
        total += model.grad_log_likelihood(theta, block)
    return total


@dataclass
class ControlVariate:
    """Reference points and the exact past-data gradient sums there."""

    theta_ref: torch.Tensor  # [R, d]
    grad_sum: torch.Tensor  # [R, d], over all data seen so far
    n_at_refresh: int = 0

    def add_chunk(self, model, chunk):
        """Include a newly observed chunk in ``grad_sum`` (a new tensor: states share the old)."""
        self.grad_sum = self.grad_sum + model.grad_log_likelihood(self.theta_ref, chunk)

    def refresh(self, model, new_ref, store, n_seen):
        """Move the references to ``new_ref``.

        ``G_new = G_old + (n / |S|) sum_{y in S} [g(y, new) - g(y, old)]``
        over the stored data ``S``: exact when the store holds every
        observation, and a low-variance estimate when it is a bounded
        reservoir (the difference of gradients is small).
        """
        R = new_ref.shape[0]
        both = full_gradient_sum(model, torch.cat([new_ref, self.theta_ref]), store)
        diff = both[:R] - both[R:]
        self.grad_sum = self.grad_sum + diff * (n_seen / batch_size_of(store))
        self.theta_ref = new_ref
        self.n_at_refresh = n_seen

    def select(self, index):
        """Follow the particles through resampling (per-particle references)."""
        if self.theta_ref.shape[0] > 1:
            self.theta_ref = self.theta_ref[index]
            self.grad_sum = self.grad_sum[index]

    def minibatch_gradient(self, model, theta, minibatch, n_past):
        """Unbiased estimate of ``sum_past grad log p(y | theta)``, ``[M, d]``."""
        both = model.grad_log_likelihood(torch.cat([theta, self.theta_ref]), minibatch)
        g_theta, g_ref = both[: theta.shape[0]], both[theta.shape[0] :]
        scale = n_past / batch_size_of(minibatch)
        return self.grad_sum + scale * (g_theta - g_ref)
