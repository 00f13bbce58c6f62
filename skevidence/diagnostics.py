"""Deprecated alias of :mod:`skevidence.shifts` (renamed in 0.2, removed in 0.3)."""

import warnings

from .shifts import detect_shifts, shift_scores

__all__ = ["detect_shifts", "shift_scores"]

warnings.warn("skevidence.diagnostics is renamed skevidence.shifts (a distinct name from the "
              "estimators' diagnostics_); the old name goes in 0.3", FutureWarning, stacklevel=2)
