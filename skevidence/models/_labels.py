"""Matching the components of a mixture's particles to those of one of them."""

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

__all__ = ["match_labels", "shared_by_component"]


def match_labels(means, log_var, unit):
    """``[M, K]``: particle m's component ``labels[m, k]`` is the first particle's ``k``.

    Each particle gets the relabelling of least total cost (the Hungarian
    algorithm, one small assignment per particle): squared distances of the
    ``means [M, K, D]`` in units of ``unit [D]`` (the prior's variance scale: the
    data's by default, so that, like every step of the sampler, the matching
    does not change when the data are rescaled; not the first particle's own
    variances, which early in the annealing are heavy-tailed prior draws) plus
    those of the ``log_var [M, K, D]``.
    """
    mean_gap = (means[:, None] - means[0, :, None]).square() / unit
    cost = (mean_gap + (log_var[:, None] - log_var[0, :, None]).square()).sum(-1)  # [M, k, j]
    # A cost that is not finite (a particle gone astray) matches last, not never.
    finite = np.nan_to_num(cost.cpu().numpy(), nan=1e300, posinf=1e300)
    labels = [linear_sum_assignment(c)[1] for c in finite]  # the j of each k
    return torch.as_tensor(np.stack(labels), device=means.device)


def shared_by_component(values, live, labels):
    """``values [M, K, ...]`` shared by the ``live`` particles, matched by ``labels``
    (:func:`match_labels` of the live ones): each component's geometric mean over
    them, given to every particle in its own labelling (to the dead in any)."""
    index = labels.reshape(labels.shape + (1,) * (values.dim() - 2)).expand_as(values[live])
    mean = torch.gather(values[live].clamp_min(1e-300).log(), 1, index).mean(0).exp()
    shared = mean.expand(values.shape).clone()
    shared[live] = mean[labels.argsort(dim=1)]
    return shared
