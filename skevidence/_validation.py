"""Checks at the estimators' edge: dtypes, devices, input magnitudes, probabilities."""

import numbers

import numpy as np
import torch
from sklearn.utils._param_validation import Interval

__all__ = ["FINITE", "POSITIVE_FINITE", "check_device", "check_magnitude", "max_abs_input",
           "normalize_proba", "resolve_dtype"]

# A positive finite real, and a finite real (NaN and infinities rejected).
POSITIVE_FINITE = Interval(numbers.Real, 0, np.inf, closed="neither")
FINITE = Interval(numbers.Real, -np.inf, np.inf, closed="neither")

_DTYPES = {"float32": torch.float32, "float64": torch.float64}

CUDA_INSTALL_HINT = ("install a CUDA build of torch, e.g. `python -m pip install torch "
                     "--index-url https://download.pytorch.org/whl/cu128` (see the README)")


def resolve_dtype(dtype):
    """torch dtype of a ``dtype`` parameter: a name, a numpy or a torch float type."""
    if isinstance(dtype, torch.dtype):
        name = str(dtype).removeprefix("torch.")
    elif dtype is None:
        name = None
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            name = None
    if name not in _DTYPES:
        raise ValueError(f"dtype must be float32 or float64 (a name, numpy or torch dtype), "
                         f"got {dtype!r}")
    return _DTYPES[name]


def check_device(device):
    """``ValueError`` unless ``device`` names a torch device this build can use."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device {device!r} is not a torch device") from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        why = ("this torch build has no CUDA support" if torch.version.cuda is None
               else "torch sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)")
        raise ValueError(f"device={device!r} is not available: {why}; {CUDA_INSTALL_HINT}, "
                         "or use device='cpu'")
    try:
        torch.empty(0, device=dev)
    except (RuntimeError, AssertionError) as exc:
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(f"device={device!r} is not available in this torch build "
                         f"({first_line})") from exc


def max_abs_input(dtype):
    """Largest input magnitude the engine accepts: ``finfo(dtype).max ** 0.25``.

    About 1e77 in float64 and 4e9 in float32. The engine forms squares of
    products of inputs and parameters (gradients' second moments, the
    Fisher information), which overflow beyond it.
    """
    return float(torch.finfo(dtype).max) ** 0.25


def check_magnitude(a, name, dtype):
    """``ValueError`` when ``a`` holds entries too large for the computation."""
    if a is None or not np.issubdtype(np.asarray(a).dtype, np.floating) or a.size == 0:
        return
    bound = max_abs_input(dtype)
    largest = float(np.max(np.abs(a)))
    if largest > bound:
        wider = " (or pass dtype='float64')" if dtype != torch.float64 else ""
        raise ValueError(
            f"{name} has entries as large as {largest:.3g}, beyond the {bound:.3g} that "
            f"{str(dtype).removeprefix('torch.')} computations support (products of the data "
            "and the parameters would overflow). Rescale the data, e.g. with "
            f"sklearn.preprocessing.StandardScaler in a pipeline{wider}."
        )


def normalize_proba(proba):
    """Rows of probabilities in [0, 1] that sum to one to machine precision.

    Exponentiated log probabilities and weighted averages of probabilities
    can exceed 1 by a rounding error (1.0000000000000004), which
    ``sklearn.metrics.log_loss`` rejects.
    """
    proba = np.clip(np.asarray(proba, dtype=np.float64), 0.0, None)
    proba /= proba.sum(axis=1, keepdims=True)
    return np.clip(proba, 0.0, 1.0, out=proba)
