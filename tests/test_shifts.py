"""detect_shifts / shift_scores on evidence traces, and plot_shifts."""

import warnings

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceGMM
from skevidence.datasets import make_shifting_clusters
from skevidence.shifts import detect_shifts, shift_scores


class TraceOnly(BaseEstimator):
    """A fitted estimator reduced to its evidence trace."""

    def __init__(self, log_predictive=None, sizes=None):
        self.log_predictive = log_predictive
        self.sizes = sizes

    def fit(self, X=None, y=None):
        v = np.asarray(self.log_predictive, dtype=float)
        size = np.full(v.shape[0], 500) if self.sizes is None else np.asarray(self.sizes)
        self.evidence_trace_ = {"n_seen": np.cumsum(size), "log_evidence": np.cumsum(v * size),
                                "n_annealing_steps": np.full(v.shape[0], 5)}
        return self


def chunks(levels, seed, sizes=None, spread=1.1):
    """Per-chunk mean log predictives: a prior chunk, then noisy levels.

    ``spread`` is the standard deviation of one observation's log
    predictive (1.1 on the paper's shifting-clusters stream), so a chunk
    of ``size`` has noise ``spread / sqrt(size)``.
    """
    rng = np.random.default_rng(seed)
    levels = np.asarray(levels, dtype=float)
    size = np.full(levels.shape[0], 500) if sizes is None else np.asarray(sizes[1:])
    return np.r_[-8.0, levels + spread / np.sqrt(size) * rng.standard_normal(levels.shape[0])]


def test_one_drop_is_found_at_its_chunk_and_the_new_level_is_not_a_shift():
    values = chunks([-4.0] * 10 + [-4.3] * 10, seed=0)
    est = TraceOnly(values).fit()
    np.testing.assert_array_equal(detect_shifts(est), [5500])
    scores = shift_scores(est)
    assert np.isnan(scores["surprise"][:2]).all()  # the prior's chunk and the first reference
    np.testing.assert_allclose(scores["spread"], 1.1, rtol=0.5)


def test_a_nested_pipeline_is_read_at_its_innermost_last_step():
    values = chunks([-4.0] * 10 + [-4.3] * 10, seed=0)
    X = np.arange(20.0)[:, None]
    nested = make_pipeline(StandardScaler(), make_pipeline(StandardScaler(), TraceOnly(values)))
    np.testing.assert_array_equal(detect_shifts(nested.fit(X)), [5500])


def test_noise_and_a_rising_predictive_are_no_shift():
    # The predictive improves as the posterior narrows; noise of the usual size.
    for seed in range(20):
        values = chunks(-4.0 - 2.0 / np.arange(1, 31), seed=seed)
        assert detect_shifts(TraceOnly(values).fit()).size == 0


def test_uneven_chunks_compare_by_their_sizes():
    # Small chunks are noisier; scaled by their sizes they are no surprise.
    sizes = [500, 500, 500, 20, 500, 500, 10, 500, 500, 30, 500, 500, 500]
    for seed in range(20):
        values = chunks([-4.0] * 12, seed=seed, sizes=sizes)
        assert detect_shifts(TraceOnly(values, sizes).fit()).size == 0
    # The drop starts in the 30-observation chunk at 3530 (noise 1.1 / sqrt(30)
    # = 0.2 against a 0.5-nat drop): found there or in the next chunk, once.
    values = chunks([-4.0] * 8 + [-4.5] * 4, seed=0, sizes=sizes)
    shifts = detect_shifts(TraceOnly(values, sizes).fit())
    assert shifts.shape == (1,) and shifts[0] in (3530, 3560)


@pytest.mark.parametrize("kwargs, message", [
    ({"threshold": 0}, "'threshold' parameter of detect_shifts must be a float in the range"),
    ({"threshold": np.nan}, "'threshold' parameter of detect_shifts must be a float in the range"),
    ({"threshold": np.inf}, "'threshold' parameter of detect_shifts must be a float in the range"),
    ({"window": 0}, "'window' parameter of detect_shifts must be an int in the range"),
])
def test_bad_settings_are_rejected(kwargs, message):
    with pytest.raises(ValueError, match=message):
        detect_shifts(TraceOnly(chunks([-4.0] * 5, 0)).fit(), **kwargs)


def test_short_trace_scores_nothing():
    scores = shift_scores(TraceOnly(chunks([-4.0] * 3, 0)).fit())
    assert np.isnan(scores["surprise"]).all() and scores["shifts"].size == 0


# -- the bar: EvidenceGMM(n_components=6) fed in batches of 1000 ----------------------

# Cheap sampler settings: the shifts are large against the chunk noise. Over
# seeds 0-4 (batch_size 250, 5000 observations) the change scored 7.2-16.1
# (threshold 5) and the shuffled streams at most 3.4 (seed 0: 8.5 and 1.8).
GMM = dict(n_components=6, n_particles=16, n_burnin=3)


def moving_clusters(n, change, seed):
    """Three unit clusters; at ``change`` two of them move."""
    rng = np.random.default_rng(seed)
    before = np.array([[-4.0, 0.0], [0.0, 3.0], [4.0, 0.0]])
    after = np.array([[-4.0, 0.0], [0.0, -3.0], [2.0, 4.0]])
    label = rng.integers(0, 3, n)
    centre = np.where(np.arange(n)[:, None] < change, before[label], after[label])
    return centre + rng.normal(size=(n, 2))


def stream_in_batches(X, batch_size=250, seed=0):
    gmm = EvidenceGMM(batch_size=batch_size, random_state=seed, **GMM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # cheap settings lag the posterior
        for start in range(0, len(X), 1000):
            gmm.partial_fit(X[start : start + 1000])
    return gmm


def test_one_geometry_change_is_found_within_a_batch_and_a_stationary_stream_shows_none():
    X = moving_clusters(5000, change=2700, seed=0)
    shifts = detect_shifts(stream_in_batches(X))
    assert shifts.shape == (1,) and abs(shifts[0] - 2700) <= 1000
    shuffled = np.random.default_rng(0).permutation(X)
    assert detect_shifts(stream_in_batches(shuffled)).size == 0


def test_the_papers_three_five_seven_stream_shows_both_changes():
    # Changes at 1000 and 10_000; 11_500 observations keep three chunks after
    # the second. This seed scores 15.8 and 6.9 there and at most 1.0 elsewhere
    # (seed 1 on 12_000 observations: 14.2 and 14.3; threshold 5).
    X, _ = make_shifting_clusters(11_500, random_state=0)
    np.testing.assert_array_equal(detect_shifts(stream_in_batches(X, batch_size=500)),
                                  [1000, 10_000])


def test_plot_shifts_draws_the_surprise_threshold_and_shifts():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from skevidence.plotting import plot_shifts

    est = TraceOnly(chunks([-4.0] * 10 + [-4.3] * 10, seed=0)).fit()
    ax = plot_shifts(est, threshold=4.0)
    surprise_line, threshold_line, shift_line = ax.get_lines()
    np.testing.assert_array_equal(surprise_line.get_xdata(), shift_scores(est)["start"])
    assert threshold_line.get_ydata()[0] == 4.0
    assert shift_line.get_xdata()[0] == 5500
    matplotlib.pyplot.close(ax.figure)
    nested = make_pipeline(StandardScaler(), make_pipeline(TraceOnly(est.log_predictive)))
    ax = plot_shifts(nested.fit(np.zeros((3, 1))), threshold=4.0)
    assert ax.get_lines()[2].get_xdata()[0] == 5500
    matplotlib.pyplot.close(ax.figure)


def test_the_old_module_name_still_works_and_warns():
    import importlib
    import sys
    sys.modules.pop("skevidence.diagnostics", None)
    with pytest.warns(FutureWarning, match="skevidence.shifts"):
        old = importlib.import_module("skevidence.diagnostics")
    assert old.detect_shifts is detect_shifts
