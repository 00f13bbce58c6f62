"""Relabelling particles of a model whose posterior has relabelled copies of each mode.

A mixture's likelihood and prior do not change when its components are
relabelled; ``Model.relabelling_maps`` gives each relabelling as a linear
map ``theta -> theta @ maps[p]``. Steps that compare particles (their mean,
a shared curvature) first bring each to one labelling.
"""

import torch

__all__ = ["relabelled", "nearest_relabelling", "aligned"]


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
