"""The prior an estimator used, resolved: ``prior_``, and the checks of stated prior arrays."""

from collections.abc import Mapping

import numpy as np

__all__ = ["PriorRecord", "prior_array"]


class PriorRecord(Mapping):
    """The prior a fitted estimator used, every hyperparameter resolved.

    A read-only mapping from hyperparameter names to their values (floats,
    or read-only arrays where they vary per feature or class), with the
    prior's density in ``density``; the entries are attributes too
    (``est.prior_.prior_std``). Data-scaled defaults appear as the values
    they took on the first chunk.
    """

    def __init__(self, density, **values):
        frozen = {}
        for name, value in values.items():
            if isinstance(value, np.ndarray):
                value = value.copy()
                value.flags.writeable = False
            frozen[name] = value
        object.__setattr__(self, "density", str(density))
        object.__setattr__(self, "_values", frozen)

    def __getitem__(self, name):
        return self._values[name]

    def __iter__(self):
        return iter(self._values)

    def __len__(self):
        return len(self._values)

    def __getattr__(self, name):
        try:
            return self.__dict__["_values"][name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        raise AttributeError("a PriorRecord is read-only")

    def __eq__(self, other):
        if not isinstance(other, PriorRecord) or self.density != other.density \
                or list(self) != list(other):
            return False
        return all(np.array_equal(self[k], other[k]) if isinstance(self[k], np.ndarray)
                   or isinstance(other[k], np.ndarray) else self[k] == other[k] for k in self)

    __hash__ = None

    def __repr__(self):
        width = max((len(name) for name in self), default=0)
        lines = [f"    {name:<{width}} = {_short(value)}" for name, value in self.items()]
        return "PriorRecord(\n    " + self.density + "\n" + "\n".join(lines) + "\n)"


def _short(value):
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, separator=", ", threshold=12)
    if isinstance(value, float):
        return np.format_float_positional(value, precision=6, unique=True, trim="0") \
            if 1e-4 <= abs(value) < 1e6 or value == 0 else f"{value:.6g}"
    return repr(value)


def prior_array(value, name, shape, positive=False):
    """``value`` broadcast to ``shape`` as float64, or a ``ValueError`` naming ``name``.

    A number broadcasts; an array must have the shape (or one that
    broadcasts to it where ``shape`` allows a row per class), be finite, and
    be positive where ``positive``.
    """
    array = np.asarray(value, dtype=np.float64)
    shape = tuple(shape)
    accepted = {shape[-k:] for k in range(1, len(shape) + 1)}
    if len(shape) > 1:
        accepted.add((1,) + shape[1:])  # one row shared by every class
    if array.ndim and array.shape not in accepted:
        shown = " or ".join(str(s) for s in sorted(accepted, key=len))
        raise ValueError(f"{name} must be a number or an array of shape {shown}, "
                         f"got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if positive and not np.all(array > 0):
        raise ValueError(f"{name} must be positive, got {value!r}")
    return np.broadcast_to(array, shape).copy()
