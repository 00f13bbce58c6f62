"""Library-wide settings: how many threads torch may use inside skevidence.

Every ``fit``, ``partial_fit`` and prediction runs with a scoped torch
thread count (one by default), restored when it returns (:ref:`settings`).
"""

import numbers
import os
import threading
from contextlib import contextmanager
from functools import wraps

import torch
from sklearn.utils._param_validation import validate_parameter_constraints

from .inference.config import Number

__all__ = ["config_context", "get_config", "set_config"]

_ENV_VAR = "SKEVIDENCE_NUM_THREADS"
_DEFAULT_N_THREADS = 1
_UNSET = object()

# Process-wide, like torch's own thread count, which it governs.
_config = {"n_threads": _UNSET}
_config_lock = threading.Lock()


# Validated as the estimators' parameters are (InvalidParameterError, a ValueError).
_CONSTRAINTS = {"n_threads": [Number(numbers.Integral, 1, None, closed="left"), None]}


def _check_n_threads(n_threads):
    validate_parameter_constraints(_CONSTRAINTS, {"n_threads": n_threads},
                                   caller_name="set_config")
    return n_threads


def _n_threads_from_env():
    value = os.environ.get(_ENV_VAR, "").strip()
    if not value:
        return _DEFAULT_N_THREADS
    if value.lower() == "none":
        return None
    try:
        return _check_n_threads(int(value))
    except ValueError as exc:
        raise ValueError(f"environment variable {_ENV_VAR}={value!r} must be a positive "
                         "integer or 'none'") from exc


def get_config():
    """The current skevidence settings.

    Returns
    -------
    config : dict
        ``{"n_threads": ...}``; see :func:`set_config`.

    Examples
    --------
    >>> import skevidence
    >>> sorted(skevidence.get_config())
    ['n_threads']
    """
    n_threads = _config["n_threads"]
    if n_threads is _UNSET:
        n_threads = _n_threads_from_env()
    return {"n_threads": n_threads}


def set_config(n_threads=_UNSET):
    """Set skevidence's settings for the whole process.

    Parameters
    ----------
    n_threads : int or None, default=1
        Torch intra-op threads inside every ``fit``, ``partial_fit`` and
        prediction of the skevidence estimators, set on entry and restored
        on return. The default 1 is the fastest for the engine's small
        tensors and does not collapse when other processes share the cores
        (:ref:`settings`); raise it for large problems on an idle machine.
        ``None`` leaves torch's own setting untouched. Without a call the
        value comes from ``SKEVIDENCE_NUM_THREADS`` (an integer or
        ``none``), else 1.

    Notes
    -----
    torch's thread count is global to the process, so while fits from
    several Python threads overlap, all of them run with the smallest count
    any of them asked for, and the count from before the first of them is
    restored when the last one returns.

    Examples
    --------
    >>> import skevidence
    >>> skevidence.set_config(n_threads=4)
    >>> skevidence.get_config()["n_threads"]
    4
    >>> skevidence.set_config(n_threads=1)
    """
    if n_threads is not _UNSET:
        with _config_lock:
            _config["n_threads"] = _check_n_threads(n_threads)


@contextmanager
def config_context(*, n_threads=_UNSET):
    """Context manager for :func:`set_config`: the settings hold inside the block.

    Parameters
    ----------
    n_threads : int or None
        As in :func:`set_config`; left as it is when not given.

    Examples
    --------
    >>> import skevidence
    >>> before = skevidence.get_config()["n_threads"]
    >>> with skevidence.config_context(n_threads=4):
    ...     skevidence.get_config()["n_threads"]  # fits in here use 4 threads
    4
    >>> skevidence.get_config()["n_threads"] == before
    True
    """
    if n_threads is not _UNSET:
        _check_n_threads(n_threads)
    with _config_lock:
        saved = dict(_config)
    set_config(n_threads=n_threads)
    try:
        yield
    finally:
        with _config_lock:
            _config.update(saved)


# -- scoping torch's thread count ------------------------------------------------

_scope_lock = threading.Lock()
_active = []  # thread counts asked for by the scopes open now, in any Python thread
_outer_count = None  # torch's count before the first of them


def _set_torch_threads(n):
    # torch's count is per OS thread under OpenMP (each thread copies the
    # global value on first use), so set it from the thread that runs.
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)


@contextmanager
def torch_threads():
    """Run the block with the configured torch thread count, then restore it."""
    n = get_config()["n_threads"]
    if n is None:
        yield
        return
    global _outer_count
    with _scope_lock:
        if not _active:
            _outer_count = torch.get_num_threads()
        _active.append(n)
        _set_torch_threads(min(_active))
    try:
        yield
    finally:
        with _scope_lock:
            _active.remove(n)
            _set_torch_threads(min(_active) if _active else _outer_count)


def with_torch_threads(method):
    """Decorator: run ``method`` inside :func:`torch_threads`."""

    @wraps(method)
    def scoped(*args, **kwargs):
        with torch_threads():
            return method(*args, **kwargs)

    return scoped
