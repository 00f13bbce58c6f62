"""Batches of observations: their rows, the blocks a pass takes them in, prepared batches.

A batch is a tuple of tensors with one row per observation (``(X,)`` or
``(X, y)``); every function here works on any model's batches.
"""

import torch

__all__ = ["BLOCK_ELEMENTS", "DEVICE_BLOCK_ELEMENTS", "SUM_ROWS", "PreparedBatch", "batch_size_of",
           "block_elements", "cast_batch", "row_blocks", "stacked_terms", "take"]

# Particles times rows per block where a pass evaluates many rows at many
# particles: the models' [M, K, rows] intermediates stay in the cache; a few
# times larger, they spill to memory and each row costs more.
BLOCK_ELEMENTS = 1 << 19
# The same on a GPU, where a block bounds memory alone (the [M, K, rows]
# intermediates: at most a few hundred MB) and each block costs kernel
# launches: with thousands of particles, blocks of 2^19 are a few dozen
# rows, and a long stream would spend much of its time launching them
# (docs: benchmarks, On a GPU).
DEVICE_BLOCK_ELEMENTS = 1 << 25
# Most rows per block where a pass sums over rows at few points, or in single
# precision (each block's sum errs by about 1e-4 relative there); the
# importance draws' sums and the curvature's differenced gradients.
SUM_ROWS = 4096


def batch_size_of(batch):
    """Number of observations in a batch (a tuple of tensors)."""
    return batch[0].shape[0]


def cast_batch(batch, dtype):
    """The floating tensors of ``batch`` in ``dtype`` (labels stay integers)."""
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)


def take(batch, index):
    """Rows ``index`` of every tensor of a batch."""
    return tuple(t[index] for t in batch)


def stacked_terms(terms):
    """The batches of ``terms = [(weight, batch)]`` stacked into one, and each row's weight."""
    batch = tuple(torch.cat(parts) for parts in zip(*(batch for _, batch in terms)))
    row_weights = torch.cat([batch[0].new_full((batch_size_of(rows),), float(weight))
                             for weight, rows in terms])
    return batch, row_weights


def block_elements(device):
    """Particles times rows per block of a pass on ``device``."""
    return BLOCK_ELEMENTS if torch.device(device).type == "cpu" else DEVICE_BLOCK_ELEMENTS


def row_blocks(batch, n_particles, max_rows=None):
    """The batch in consecutive blocks of :func:`block_elements` over ``n_particles`` rows
    (or ``max_rows``)."""
    rows = max(1, block_elements(batch[0].device) // max(n_particles, 1))
    if max_rows is not None:
        rows = min(rows, max_rows)
    return [tuple(t[start : start + rows] for t in batch)
            for start in range(0, batch_size_of(batch), rows)]


class PreparedBatch(tuple):
    """A batch (tuple of tensors) carrying ``stats``, quantities of it that do not depend on ``theta``.

    Made by :meth:`Model.prepare_batch` for data evaluated at many particle
    positions in a row; it is still the plain batch to every other method.
    ``stats`` is the model's own typed record (a dataclass or a tensor), read
    by that model alone.
    """

    def __new__(cls, batch, stats):
        prepared = super().__new__(cls, batch)
        prepared.stats = stats
        return prepared
