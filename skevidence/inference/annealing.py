"""Effective sample size and the adaptive choice of the next temperature.

All computations are in log space on float64 numpy arrays: ``M`` is small
and the bisection needs a few dozen cheap evaluations, which is faster
outside torch than as many tiny tensor ops (and avoids device syncs).
"""

import numpy as np
from scipy.optimize import brentq

__all__ = ["logsumexp", "log_normalize", "ess", "conditional_ess", "next_increment"]


def logsumexp(a):
    """``log(sum(exp(a)))`` along the first axis, safe for ``-inf`` entries.

    The package's one numpy log-sum-exp: the engine's weights and the
    meta-estimators' posteriors and mixed predictions all go through it.

    Parameters
    ----------
    a : array-like of float
        Log values; reduced over axis 0.

    Returns
    -------
    float or ndarray
        ``a.shape[1:]``; ``-inf`` where every entry is ``-inf``.
    """
    a = np.asarray(a, dtype=np.float64)
    top = np.max(a, axis=0)
    # A non-finite maximum would turn ``a - top`` into NaN; 0 keeps -inf exact.
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return top + np.log(np.sum(np.exp(a - top), axis=0))


def log_normalize(log_w):
    """Log-weights shifted so that ``logsumexp == 0``."""
    return log_w - logsumexp(log_w)


def ess(log_w):
    """Effective sample size ``(sum w)^2 / sum w^2`` of (unnormalised) log-weights."""
    return float(np.exp(2.0 * logsumexp(log_w) - logsumexp(2.0 * log_w)))


def conditional_ess(log_W, loglik, delta):
    """ESS of the incremental weights ``exp(delta * loglik)`` under ``W``.

    ``log_W`` are normalised log-weights. This is the conditional ESS of
    Zhou, Johansen & Aston (2016), ``M (sum W w)^2 / sum W w^2``; with
    uniform ``W`` it is the paper's ``(sum w)^2 / sum w^2``, and unlike that
    one it stays meaningful when the particles already carry weights.
    """
    return float(np.exp(_log_ess_ratio(log_W, loglik)(delta)))


def next_increment(log_W, loglik, remaining, target, tol=1e-6):
    """Largest ``delta`` in ``(0, remaining]`` whose conditional ESS >= ``target``.

    Returns ``remaining`` when the whole step already meets the target;
    otherwise finds where ``log ESS(delta) = log target`` in ``log delta``
    over ``[log(remaining) - 50, log(remaining)]`` (the admissible
    increments span many orders of magnitude early in a stream) by Brent's
    method, to within ``tol``, and returns a ``delta`` that meets the
    target. The curve is smooth, so that takes fewer evaluations than a
    bisection, each of them a few numpy calls on the live particles (whose
    overhead, not their arithmetic, sets the cost of annealing small
    models).
    """
    if not np.isfinite(np.max(log_W + loglik)):
        return remaining  # nothing to anneal: the caller reports the failure
    log_ratio = _log_ess_ratio(log_W, loglik, target)

    def excess(log_delta):  # Brent's method needs finite values: a zero or NaN ESS -> -1e300
        value = log_ratio(np.exp(log_delta))
        return value if value > -1e300 else -1e300

    if excess(np.log(remaining)) >= 0:
        return remaining
    lo, hi = np.log(remaining) - 50.0, np.log(remaining)
    if not excess(lo) >= 0:
        return float(np.exp(lo))
    root = brentq(excess, lo, hi, xtol=tol)
    # Brent's answer lies within tol of the crossing, on either side: step to the met side.
    for log_delta in (root, root - tol, root - 2 * tol):
        if excess(log_delta) >= 0:
            return float(np.exp(log_delta))
    return float(np.exp(lo))


def _log_ess_ratio(log_W, loglik, target=1.0):
    """``delta -> log(`` :func:`conditional_ess` ``/ target)``, ``-inf`` where no particle counts.

    Only particles with weight and likelihood count; with ``a = log W +
    delta * loglik`` and its maximum ``c``, ``sum W w = e^c sum e^(a - c)``
    and ``sum W w^2 = e^(2c) sum e^(2(a - c) - log W)``: a few numpy calls
    on the live particles per evaluation.
    """
    live = np.isfinite(log_W) & np.isfinite(loglik)
    lw, ll = log_W[live], loglik[live]
    log_scale = np.log(log_W.shape[0]) - np.log(target)

    def log_ratio(delta):
        if lw.size == 0:
            return -np.inf
        a = lw + delta * ll
        shifted = a - a.max()
        with np.errstate(over="ignore"):
            return log_scale + 2.0 * np.log(np.exp(shifted).sum()) - np.log(
                np.exp(2.0 * shifted - lw).sum())
    return log_ratio
