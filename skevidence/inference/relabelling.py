"""Relabelling particles of a model whose posterior has relabelled copies of each mode.

A mixture's likelihood and prior do not change when its components are
relabelled; ``Model.relabelling_maps`` gives each relabelling as a linear
map ``theta -> theta @ maps[p]``. Steps that compare particles (their mean,
a shared curvature) first bring each to one labelling.
"""

import numpy as np
import torch

__all__ = ["relabelled", "nearest_relabelling", "aligned", "inverted"]


def relabelled(particles, maps):
    """``[M, P, d]``: every particle under every relabelling (``[M, 1, d]`` without maps)."""
    if maps is None:
        return particles[:, None]
    return torch.einsum("md,pde->mpe", particles, maps)


def nearest_relabelling(particles, reference, maps):
    """``[M]``: the index of the map that brings each particle nearest ``reference`` (Euclidean)."""
    return (relabelled(particles, maps) - reference).square().sum(-1).argmin(1)


def aligned(particles, reference, maps):
    """Each particle relabelled to the labelling nearest ``reference``."""
    if maps is None:
        return particles
    nearest = nearest_relabelling(particles, reference, maps)
    return torch.einsum("md,mde->me", particles, maps[nearest])


def inverted(maps):
    """``(inverse [P, d, d], log |det| [P])`` of the relabelling ``maps [P, d, d]``.

    In numpy, in double precision: torch's batched LU of these maps has
    stopped on an MKL error (DLASWP) in long processes.
    """
    host = maps.detach().cpu().double().numpy()
    inverse = torch.as_tensor(np.linalg.inv(host), dtype=maps.dtype, device=maps.device)
    log_dets = torch.as_tensor(np.linalg.slogdet(host)[1], dtype=maps.dtype, device=maps.device)
    return inverse, log_dets
