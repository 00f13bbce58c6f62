"""Read-outs of a fitted evidence trace: where a stream changed.

During online estimation, a change in the data-generating distribution
shows in the evidence: the chunks after it are predicted worse by the
posterior of the data before it (Cameron, Eggers & Kroon, 2019, sections
6.2 and 7.2). :func:`shift_scores` turns ``evidence_trace_`` into a standardised
surprise per chunk and :func:`detect_shifts` reports where it is large.
(The engine's own checks of a run live in ``skevidence.inference``.)
"""

import math
import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import check_is_fitted

from ._meta import final_step

__all__ = ["detect_shifts", "shift_scores"]

# Scale of the median absolute deviation that makes it a standard deviation
# for normal data.
_MAD_TO_STD = 1.4826

# Chunks after a shift left out of the spread estimate, while the posterior settles.
_SETTLE = 3

# Fewest differences the second pass's spread may rest on (fewer: the first pass's stands).
_MIN_QUIET_DIFFERENCES = 8


# The settings of shift_scores and detect_shifts, validated as the
# estimators' parameters are.
_SETTINGS_CONSTRAINTS = {
    "estimator": "no_validation",
    "threshold": [Interval(numbers.Real, 0, None, closed="neither")],
    "window": [Interval(numbers.Integral, 1, None, closed="left")],
}


def _chunk_log_predictive(trace):
    """Start, size and mean log predictive per observation of every chunk."""
    n_seen = np.asarray(trace["n_seen"], dtype=np.int64)
    log_evidence = np.asarray(trace["log_evidence"], dtype=np.float64)
    start = np.r_[0, n_seen[:-1]]
    size = n_seen - start
    increment = np.diff(np.r_[0.0, log_evidence])
    return start, size, increment / size


def _per_observation_spread(value, size, quiet, min_differences=3):
    """Robust standard deviation ``s`` of one observation's log predictive."""
    if value.shape[0] < 4:
        return math.nan
    n = size.astype(np.float64)
    pair = quiet[1:] & quiet[:-1]
    pair[0] = False  # the prior's chunk
    scaled = (np.diff(value) / np.sqrt(1.0 / n[1:] + 1.0 / n[:-1]))[pair]
    if scaled.shape[0] < min_differences:
        return math.nan
    return _MAD_TO_STD * float(np.median(np.abs(scaled - np.median(scaled))))


def _surprises(value, size, spread, threshold, window):
    """Surprise of every chunk against the chunks since the last shift, and the shifts."""
    surprise = np.full(value.shape, np.nan)
    shifts = []
    first = 1  # first reference chunk of the current regime (chunk 0 is the prior's)
    for k in range(2, value.shape[0] if math.isfinite(spread) else 0):
        reference = slice(max(first, k - window), k)
        m = size[reference].sum()
        if m == 0:
            continue
        centre = float(np.dot(value[reference], size[reference]) / m)
        scale = spread * math.sqrt(1.0 / size[k] + 1.0 / m)
        surprise[k] = (centre - value[k]) / scale if scale > 0 else (
            np.inf if value[k] < centre else 0.0)
        if surprise[k] > threshold:
            shifts.append(k)
            first = k + 1
    return surprise, shifts


@validate_params(_SETTINGS_CONSTRAINTS, prefer_skip_nested_validation=True)
def shift_scores(estimator, *, threshold=5.0, window=10):
    """Standardised surprise of every chunk of a stream, and the shifts it shows.

    The surprise of chunk ``k`` is ``z_k = (c_k - v_k) / (s * sqrt(1 / n_k +
    1 / m_k))``: its mean log predictive per observation ``v_k`` below the
    pooled ``c_k`` of the (at most ``window``) chunks since the last shift,
    ``m_k`` observations, in units of a robust spread ``s`` of one
    observation's log predictive. A chunk with ``z_k > threshold`` is a
    shift, and the reference restarts after it (:ref:`streaming`).

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        Anything with ``evidence_trace_`` (every skevidence estimator,
        including :class:`~skevidence.EvidenceModel`), or a pipeline whose
        last step has one, fitted in stream order.
    threshold : float, default=5.0
        Surprise, in standard deviations, above which a chunk is a shift.
    window : int, default=10
        Largest number of preceding chunks in the reference.

    Returns
    -------
    scores : dict
        One array entry per chunk: ``start`` (observations seen before it),
        ``n_seen`` (after it), ``log_predictive`` (mean per observation),
        ``surprise`` (NaN without a reference chunk) and
        ``n_annealing_steps``; ``spread``, the estimate ``s``;
        ``threshold``; and ``shifts``, the ``start`` of the chunks flagged.

    Examples
    --------
    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression
    >>> from skevidence.shifts import shift_scores
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 1))
    >>> y = X[:, 0] + rng.normal(size=2000)
    >>> reg = EvidenceLinearRegression(n_particles=32, batch_size=250, random_state=0)
    >>> scores = shift_scores(reg.fit(X, y))
    >>> scores["surprise"].shape, scores["shifts"]
    ((8,), array([], dtype=int64))
    """
    final = final_step(estimator)
    check_is_fitted(final, "evidence_trace_")
    trace = final.evidence_trace_
    start, size, value = _chunk_log_predictive(trace)
    # Two passes: the chunks at and just after a shift (the jump, then the
    # posterior settling into the new regime) would inflate the spread.
    quiet = np.ones(value.shape, dtype=bool)
    spread = _per_observation_spread(value, size, quiet)
    surprise, shifts = _surprises(value, size, spread, threshold, window)
    if shifts:
        for k in shifts:
            quiet[k : k + _SETTLE + 1] = False
        settled = _per_observation_spread(value, size, quiet, _MIN_QUIET_DIFFERENCES)
        if math.isfinite(settled):
            spread = settled
            surprise, shifts = _surprises(value, size, spread, threshold, window)
    return {
        "start": start,
        "n_seen": np.asarray(trace["n_seen"], dtype=np.int64),
        "log_predictive": value,
        "surprise": surprise,
        "n_annealing_steps": np.asarray(trace["n_annealing_steps"], dtype=np.int64),
        "spread": spread,
        "threshold": float(threshold),
        "shifts": start[np.asarray(shifts, dtype=np.int64)],
    }


@validate_params(_SETTINGS_CONSTRAINTS, prefer_skip_nested_validation=True)
def detect_shifts(estimator, *, threshold=5.0, window=10):
    """Where a stream's data-generating distribution changed, from its evidence trace.

    A chunk predicted much worse than those before it is a shift (see
    :func:`shift_scores`); the resolution is one chunk (:ref:`streaming`).

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        Anything with ``evidence_trace_``, or a pipeline whose last step
        has one.
    threshold : float, default=5.0
        Surprise, in standard deviations, above which a chunk is a shift.
    window : int, default=10
        Largest number of preceding chunks in the reference.

    Returns
    -------
    shifts : ndarray of int
        The values of ``n_samples_seen_`` at which the stream changed: the
        observations seen before each surprising chunk.

    See Also
    --------
    shift_scores : the surprise of every chunk.
    skevidence.plotting.plot_shifts : draws it.

    References
    ----------
    Cameron, S. A., Eggers, H. C. & Kroon, S. (2019). Stochastic gradient
    annealed importance sampling for efficient online marginal likelihood
    estimation. Entropy 21(11), 1109 (sections 6.2 and 7.2).

    Examples
    --------
    The slope of a regression flips after 1500 observations:

    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression
    >>> from skevidence.shifts import detect_shifts
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 1))
    >>> slope = np.where(np.arange(2000) < 1500, 1.0, -1.0)
    >>> y = slope * X[:, 0] + rng.normal(size=2000)
    >>> reg = EvidenceLinearRegression(n_particles=32, batch_size=250, random_state=0)
    >>> for start in range(0, 2000, 250):
    ...     reg = reg.partial_fit(X[start : start + 250], y[start : start + 250])
    >>> detect_shifts(reg)
    array([1500])
    """
    return shift_scores(estimator, threshold=threshold, window=window)["shifts"]
