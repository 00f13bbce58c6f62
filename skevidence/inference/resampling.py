"""Resampling schemes: which particles survive, as indices."""

import numpy as np

__all__ = ["systematic_resample"]


def systematic_resample(log_W, u, n=None):
    """Systematic resampling of log-weights ``[M]`` -> ``[n]`` indices (``n = M`` by default).

    ``u`` is one uniform draw in [0, 1) (taken from the engine's generator,
    so that runs are reproducible). It places ``n`` evenly spaced points on
    the weights' CDF: lower variance than multinomial resampling at the
    same cost. The weights need not be normalised.
    """
    M = log_W.shape[0]
    n = M if n is None else n
    cdf = np.cumsum(np.exp(log_W - np.max(log_W)))
    cdf /= cdf[-1]
    points = (np.arange(n) + u) / n
    return np.minimum(np.searchsorted(cdf, points, side="right"), M - 1)
