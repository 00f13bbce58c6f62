"""Resampling schemes: which particles survive, as indices."""

import numpy as np

__all__ = ["systematic_resample"]


def systematic_resample(log_W, u, n=None):
    """Systematic resampling of normalised log-weights ``[M]`` -> ``[n]`` indices.

    ``u`` is one uniform draw in [0, 1) (taken from the engine's generator,
    so that runs are reproducible). It places ``n`` (default ``M``) evenly
    spaced points on the weights' CDF: lower variance than multinomial
    resampling at the same cost. The indices come out sorted.
    """
    M = log_W.shape[0]
    n = M if n is None else int(n)
    cdf = np.cumsum(np.exp(log_W - np.max(log_W)))
    cdf /= cdf[-1]
    points = (np.arange(n) + u) / n
    return np.minimum(np.searchsorted(cdf, points, side="right"), M - 1)
