"""The data store of past observations: unbounded, or a uniform reservoir sample."""

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from skevidence.inference.reservoir import WITHOUT_REPLACEMENT, Reservoir


def _column(values):
    return (torch.as_tensor(values, dtype=torch.float64)[:, None],)


def test_unbounded_store_keeps_everything_in_order_with_amortised_growth():
    store, g = Reservoir(), torch.Generator().manual_seed(0)
    sizes = [1, 7, 499, 501, 5000, 3, 1024]
    grown, start = 0, 0
    for n in sizes:
        before = store.buffers[0] if store.buffers else None
        store = store.append(_column(np.arange(start, start + n)), g)
        grown += before is not None and store.buffers[0] is not before
        start += n
    data = store.data()[0][:, 0].numpy()
    np.testing.assert_array_equal(data, np.arange(start))
    # Capacity doubles, so the buffer is re-allocated O(log n) times, not per chunk.
    assert grown <= int(np.ceil(np.log2(start))) and store.buffers[0].shape[0] < 2 * start


@pytest.mark.parametrize("capacity", [None, 30])
def test_append_returns_a_new_store_and_leaves_the_old_one_as_it_was(capacity):
    g = torch.Generator().manual_seed(0)
    old = Reservoir(capacity=capacity).append(_column(np.arange(20)), g)
    kept = old.data()[0].clone()
    one = old.append(_column(np.arange(100, 140)), g)
    other = old.append(_column(np.arange(200, 240)), g)  # a second branch from the same store
    assert (old.size, old.n_seen) == (20, 20) and torch.equal(old.data()[0], kept)
    assert one.n_seen == other.n_seen == 60
    if capacity is None:
        np.testing.assert_array_equal(one.data()[0][20:, 0], np.arange(100, 140))
        np.testing.assert_array_equal(other.data()[0][20:, 0], np.arange(200, 240))
    else:
        assert set(one.data()[0][:, 0].tolist()) <= set(range(20)) | set(range(100, 140))
        assert set(other.data()[0][:, 0].tolist()) <= set(range(20)) | set(range(200, 240))


def test_bounded_reservoir_is_a_uniform_sample_of_the_stream():
    # Each of the n stream items must be in the size-k reservoir with
    # probability k / n, whatever the chunking. Over R = 2000 independent
    # streams the inclusion counts are multinomial-like; a chi-square test at
    # a fixed seed checks uniformity (p > 0.001; a slot-selection bias of a
    # few percent gives p < 1e-6 at this R).
    n, k, R = 200, 20, 2000
    g = torch.Generator().manual_seed(123)
    counts = np.zeros(n)
    for _ in range(R):
        store = Reservoir(capacity=k)
        for lo, hi in [(0, 5), (5, 50), (50, 51), (51, 130), (130, 200)]:
            store = store.append(_column(np.arange(lo, hi)), g)
        kept = store.data()[0][:, 0].numpy().astype(int)
        assert len(kept) == k and len(set(kept)) == k
        counts[kept] += 1
    assert chisquare(counts).pvalue > 1e-3
    assert counts.sum() == R * k


def test_mini_batches_are_the_whole_store_or_a_sample_without_replacement_from_a_small_one():
    g = torch.Generator().manual_seed(0)
    store = Reservoir().append(_column(np.arange(100)), g)
    assert torch.equal(store.sample_indices(100, g), torch.arange(100))
    assert torch.equal(store.sample_indices(500, g), torch.arange(100))  # never more rows than stored
    idx = store.sample_indices(60, g)
    assert idx.shape == (60,) and torch.unique(idx).shape == (60,)
    # A store of more than WITHOUT_REPLACEMENT mini-batches is sampled with
    # replacement: 5 of 100 rows repeat one with probability 0.097, so 200
    # draws without a repeat have probability 1e-9.
    n = 100 // WITHOUT_REPLACEMENT - 1
    assert n == 5
    assert any(torch.unique(store.sample_indices(n, g)).shape[0] < n for _ in range(200))
