"""Matching the components of particles of a mixture to those of a reference particle."""

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

__all__ = ["match_labels", "take_components"]


def match_labels(cost):
    """``[M, K]``: particle m's component ``labels[m, k]`` is the reference's ``k``.

    ``cost [M, j, k]`` is the cost of matching particle m's component ``j`` to
    the reference's ``k``; each particle gets the relabelling of least total
    cost (the Hungarian algorithm, one small assignment per particle).
    """
    # A cost that is not finite (a particle gone astray) matches last, not never.
    finite = np.nan_to_num(cost.transpose(1, 2).cpu().numpy(), nan=1e300, posinf=1e300)
    labels = [linear_sum_assignment(c)[1] for c in finite]  # the j of each k
    return torch.as_tensor(np.stack(labels), device=cost.device)


def take_components(values, labels):
    """``values [M, K, ...]`` with each particle's components reordered by ``labels [M, K]``."""
    index = labels.reshape(labels.shape + (1,) * (values.dim() - 2)).expand_as(values)
    return torch.gather(values, 1, index)
