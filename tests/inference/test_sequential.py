"""The chunk schedule of the sequential estimator (thesis section 4.1)."""

import inspect

import numpy as np

from skevidence.inference.sequential import chunk_ends

GROWTH = inspect.signature(chunk_ends).parameters["growth"].default


def _sizes(ends, n_seen=0):
    bounds = np.concatenate([[n_seen], n_seen + np.asarray(ends)])
    return bounds[:-1], np.diff(bounds)


def test_no_chunk_is_large_against_the_data_seen():
    # A chunk as large as the data seen (500 after 500, as the first
    # schedule had) left the predictive of the paper's logistic model an
    # ESS of 1 of 128 and the evidence 6 nats low. Every chunk holds at
    # most GROWTH - 1 of the data seen (plus one observation), or batch_size.
    starts, sizes = _sizes(chunk_ends(0, 30_000, 500))
    assert sizes.max() == 500
    ramp = sizes < 500
    assert np.all(sizes[ramp] <= np.maximum(1, (GROWTH - 1) * starts[ramp]) + 1)
    # After the ramp the boundaries are the multiples of batch_size.
    first_full = np.argmax(sizes == 500)
    assert starts[first_full] >= 500 / (GROWTH - 1) * 0.9
    assert np.all((starts[first_full + 1:] % 500) == 0)


def test_boundaries_do_not_depend_on_how_the_stream_is_cut():
    whole = chunk_ends(0, 12_345, 500)
    cut = [e for e in chunk_ends(0, 4000, 500)] + [4000 + e for e in chunk_ends(4000, 8345, 500)]
    assert set(whole) <= set(cut)  # the cut adds its own boundary, nothing else
    assert set(cut) - set(whole) <= {4000}
