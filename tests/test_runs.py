"""Independent runs merged (``n_init``): the arithmetic of the merge and its wiring."""

import copy
import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from skevidence import EvidenceGMM, EvidenceLinearRegression
from skevidence._runs import DISAGREEMENT_Z, merged_estimate
from skevidence.datasets import make_gaussian_mixture, make_linear_regression

# Fixed priors: the data-scaled ones come from the first batch, which a stream cuts.
CHEAP = dict(n_particles=32, n_burnin=5, random_state=0, mean_prior=0.0, variance_scale=1.0)


@pytest.fixture(scope="module")
def mixture_data():
    return make_gaussian_mixture(1500, random_state=3)


@pytest.fixture(scope="module")
def merged(mixture_data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return EvidenceGMM(n_components=2, n_init=3, **CHEAP).fit(mixture_data)


def test_runs_that_agree_merge_to_their_mean_with_the_std_of_a_mean():
    mean, std, ratio = merged_estimate([-10.0, -10.0, -10.0], [0.3, 0.3, 0.6])
    # sqrt(0.09 + 0.09 + 0.36) / 3 = sqrt(0.54) / 3.
    assert (mean, ratio) == (-10.0, 1.0) and std == pytest.approx(math.sqrt(0.54) / 3, rel=1e-12)


def test_a_run_that_understates_its_error_bar_does_not_outweigh_the_others():
    # Replicates of one estimator: each counts alike, whatever std it reports.
    mean, std, ratio = merged_estimate([-10.6, -10.0, -10.0], [0.05, 0.3, 0.3])
    assert mean == pytest.approx(-10.2, abs=1e-12)
    # chi2 = 0.4^2 / 0.0025 + 2 * 0.2^2 / 0.09 = 64.89 on 2 degrees of freedom.
    assert ratio == pytest.approx(math.sqrt((64 + 0.08 / 0.09) / 2), rel=1e-12)
    assert abs(-10.6 - mean) < std  # the error bar reaches the odd run


def test_runs_that_disagree_widen_the_error_bar_over_their_spread():
    # Two runs of std s, d apart: chi2 = d^2 / (2 s^2), the merged std
    # s / sqrt(2) times sqrt(chi2) = d / 2: the merged error bar reaches both.
    mean, std, ratio = merged_estimate([-14.0, -10.0], [0.5, 0.5])
    assert mean == pytest.approx(-12.0, abs=1e-12)
    assert ratio == pytest.approx(4.0 / math.sqrt(0.5), rel=1e-12)
    assert std == pytest.approx(2.0, rel=1e-12)


def test_runs_without_a_finite_std_merge_by_their_spread():
    mean, std, ratio = merged_estimate([1.0, 3.0], [math.nan, 0.1])
    assert mean == 2.0 and std == pytest.approx(1.0) and math.isnan(ratio)


def test_the_merged_fit_reports_its_runs_and_pools_their_particles(merged):
    d = merged.diagnostics_
    values, stds = d["init_log_evidence"], d["init_log_evidence_std"]
    assert d["n_init"] == 3 and len(d["init_diagnostics"]) == 3
    assert len(set(values)) == 3  # the runs have seeds of their own
    mean, std, ratio = merged_estimate(values, stds)
    assert (merged.log_evidence_, merged.log_evidence_std_, d["birge_ratio"]) == (mean, std, ratio)
    assert merged.particles_.shape[0] == 3 * 32
    # Each run's share of the pooled weight is its share of the evidence.
    shares = merged.particle_weights_.reshape(3, 32).sum(1)
    np.testing.assert_allclose(shares, np.exp(values - np.logaddexp.reduce(values)), rtol=1e-10)
    assert merged.weights_.sum() == pytest.approx(1.0)
    assert np.isfinite(merged.score(merged.means_))


def test_the_same_random_state_gives_the_same_merged_fit(mixture_data, merged):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        again = EvidenceGMM(n_components=2, n_init=3, **CHEAP).fit(mixture_data)
    assert again.log_evidence_ == merged.log_evidence_
    np.testing.assert_array_equal(again.particles_, merged.particles_)


def test_a_stream_cut_on_the_chunk_grid_runs_the_runs_of_one_fit(mixture_data, merged):
    # Each run anneals as in one fit; the checks combined with the annealing
    # run where the calls end, so only the annealing's estimates are compared.
    est = EvidenceGMM(n_components=2, n_init=3, **CHEAP)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.partial_fit(mixture_data[:1000]).partial_fit(mixture_data[1000:])
    annealed = [[d["annealing_log_evidence"] for d in e.diagnostics_["init_diagnostics"]]
                for e in (est, merged)]
    assert annealed[0] == annealed[1] and est.n_samples_seen_ == 1500


def test_a_failed_or_mismatched_partial_fit_keeps_the_merged_fit(mixture_data, merged):
    est = copy.deepcopy(merged)
    before = est.log_evidence_
    with pytest.raises(ValueError):
        est.partial_fit(np.full((10, 2), np.nan))
    est.set_params(n_init=2)
    with pytest.raises(ValueError, match="n_init=3 with n_init=2"):
        est.partial_fit(mixture_data[:10])
    assert est.log_evidence_ == before and len(est._runs) == 3


def test_runs_that_disagree_beyond_their_error_bars_warn(merged):
    # Shift one run's estimate by ten times the error bars' scale: the merge
    # must say so and widen its error bar to reach both.
    runs = [copy.copy(run) for run in merged._runs]
    runs[0].log_evidence_ += 10 * math.hypot(*[r.log_evidence_std_ for r in runs[:2]])
    est = copy.copy(merged)
    with pytest.warns(ConvergenceWarning, match="independent runs"):
        est._merge_runs(runs)
    assert est.diagnostics_["birge_ratio"] > DISAGREEMENT_Z
    values = est.diagnostics_["init_log_evidence"]
    assert 2 * est.log_evidence_std_ >= (values.max() - values.min()) / 3


def test_one_mode_posteriors_merge_to_their_exact_evidence():
    # Linear regression: three runs merged lie within 4 of their merged std
    # of the closed form (a 6e-5 chance for an error that follows its std).
    X, y = make_linear_regression(2000, random_state=0)
    est = EvidenceLinearRegression(n_init=3, random_state=0).fit(X, y)
    assert abs(est.log_evidence_ - est.exact_log_evidence(X, y)) < 4 * est.log_evidence_std_
