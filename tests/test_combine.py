"""log_evidence_ as the annealing's estimate combined with the importance-sampling check."""

import math
import warnings

import numpy as np
import pytest
import torch

from skevidence import EvidenceGMM, EvidenceLinearRegression
from skevidence._trust import (IMPORTANCE_DRAWS, IMPORTANCE_MAX_DRAWS, IMPORTANCE_MIN_EFFECTIVE,
                               ImportanceCheck, TrustDiagnosticsMixin, combined_estimate)
from skevidence.inference import importance, importance_steps
from tests.conftest import CHEAP, paper_linear_data


def outlier_data(n_samples=5000, n_features=10, seed=1):
    """Standardised linear-regression data with gross outliers (Student-t noise with
    1.5 degrees of freedom) and three rare binary columns, like one-hot levels:
    the annealing's estimate can err beyond its error bar there (ggplot2's
    diamonds show the same)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features))
    X[:, -3:] = rng.random((n_samples, 3)) < 0.01
    X = (X - X.mean(0)) / X.std(0)
    y = X @ rng.normal(size=n_features) + rng.standard_t(1.5, size=n_samples)
    return X, (y - y.mean()) / y.std()


def _fit(est, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args)


# -- the arithmetic ------------------------------------------------------------------


def test_inverse_variance_mean_and_the_birge_ratio():
    # Consistent estimates: 10 +- 3 and 14 +- 4 give (10/9 + 14/16) / (1/9 + 1/16)
    # = 11.44 with variance 9 * 16 / 25 = 5.76; they differ by 4 < 5 = hypot(3, 4),
    # so the Birge ratio is 1.
    mean, std, ratio = combined_estimate(10.0, 3.0, 14.0, 4.0)
    assert mean == pytest.approx(11.44, rel=1e-15) and std == pytest.approx(2.4, rel=1e-15)
    assert ratio == 1.0
    # Inconsistent ones: 0 +- 0.3 and 2 +- 0.4 differ by 4 of hypot(0.3, 0.4) = 0.5:
    # mean 2 * 0.09 / 0.25 = 0.72, std sqrt(0.09 * 0.16 / 0.25) = 0.24, times 4.
    mean, std, ratio = combined_estimate(0.0, 0.3, 2.0, 0.4)
    assert mean == pytest.approx(0.72, rel=1e-14) and ratio == pytest.approx(4.0, rel=1e-14)
    assert std == pytest.approx(0.96, rel=1e-14)
    # The engine's folds use the same arithmetic.
    assert importance_steps.inverse_variance_mean(10.0, 9.0, 14.0, 16.0) == (
        (10.0 * 16.0 + 14.0 * 9.0) / 25.0, 9.0 * 16.0 / 25.0)
    # A check whose draws weigh alike reports std 0: the estimates still combine.
    mean, std, ratio = combined_estimate(1.0, 0.5, 1.0, 0.0)
    assert mean == pytest.approx(1.0) and 0.0 < std < 1e-5 and ratio == 1.0


def test_the_check_draws_more_from_the_same_t_until_its_ess_is_enough():
    X, y = paper_linear_data(2000, 0)
    reg = _fit(EvidenceLinearRegression(random_state=0), X, y)
    state, store = reg._state, (torch.as_tensor(X), torch.as_tensor(y))
    W = torch.as_tensor(state.weights)

    def draws(**growth):
        return importance.importance_draws(reg._model, state.theta, W, store,
                                           IMPORTANCE_DRAWS, state.side_generator(0), **growth)

    plain = draws()
    effective = plain.estimate.ess * IMPORTANCE_DRAWS
    # Asking for more effective draws than 64 give doubles the pool: its
    # first draws are the plain check's, the rest continue the same stream.
    grown = draws(min_effective=1.5 * effective, max_draws=IMPORTANCE_MAX_DRAWS)
    assert grown.estimate.n_draws in (2 * IMPORTANCE_DRAWS, 4 * IMPORTANCE_DRAWS)
    assert grown.estimate.ess * grown.estimate.n_draws >= 1.5 * effective
    torch.testing.assert_close(grown.log_weights[:IMPORTANCE_DRAWS], plain.log_weights,
                               rtol=0, atol=0)
    # The cap bounds the cost whatever is asked.
    capped = draws(min_effective=1e9, max_draws=IMPORTANCE_MAX_DRAWS)
    assert capped.estimate.n_draws == IMPORTANCE_MAX_DRAWS
    # Enough already: the plain check, bit for bit.
    same = draws(min_effective=IMPORTANCE_MIN_EFFECTIVE, max_draws=IMPORTANCE_MAX_DRAWS)
    assert same.estimate.n_draws == IMPORTANCE_DRAWS
    assert same.estimate.log_evidence == plain.estimate.log_evidence


# -- the combination on a fit ------------------------------------------------------


def test_gross_outliers_the_combination_lands_within_its_error_bar():
    X, y = outlier_data()
    exact = EvidenceLinearRegression().exact_log_evidence(X, y)
    # Gross outliers make the annealing's error vary over sampler seeds by about
    # its own std, and by more on some seeds and CPUs (where its rounding takes
    # another path); the importance check at the end does not depend on the
    # path. The combination comes within one of its std on every seed tried,
    # asserted within two, and is never less certain than the annealing alone
    # unless the two disagree (the Birge ratio widens it).
    for seed in (0, 1, 2):
        reg = _fit(EvidenceLinearRegression(random_state=seed), X, y)
        d = reg.diagnostics_
        assert abs(reg.log_evidence_ - exact) < 2.0 * reg.log_evidence_std_, seed
        # What was combined, and how.
        mean, std, ratio = combined_estimate(d["annealing_log_evidence"],
                                             d["annealing_log_evidence_std"],
                                             d["importance_log_evidence"],
                                             d["importance_log_evidence_std"])
        assert (reg.log_evidence_, reg.log_evidence_std_, d["birge_ratio"]) == (mean, std, ratio)
        assert d["log_evidence_std"] == reg.log_evidence_std_
        assert std < d["annealing_log_evidence_std"] * max(1.0, ratio)
        assert reg.evidence_trace_["log_evidence"][-1] == d["annealing_log_evidence"]


def test_a_lower_bound_combines_only_with_an_annealing_below_it(monkeypatch):
    # Two well separated clusters: whatever the check finds, a stand-in
    # estimate marked a lower bound (the particles spread over more than the
    # t at its mode holds) is placed 5 nats above and below the annealing's.
    X = np.random.default_rng(0).normal([[-3.0, 0.0]] * 300 + [[3.0, 0.0]] * 300, 0.5)
    gmm = _fit(EvidenceGMM(n_init=1, n_components=2, n_particles=32, random_state=0), X)
    annealed = gmm.diagnostics_["annealing_log_evidence"]

    def refit_with_bound(offset):
        bound = importance.ImportanceEstimate(annealed + offset, 0.1, 0.5, n_draws=256,
                                              lower_bound=True)

        def check(self, W):
            state = self._state
            return ImportanceCheck(bound, float(state.debiased_log_evidence),
                                   float(state.log_evidence_std), state.fold_var)

        monkeypatch.setattr(TrustDiagnosticsMixin, "_importance_check", check)
        d = _fit(gmm, X).diagnostics_
        assert d["annealing_log_evidence"] == annealed and d["importance_lower_bound"]
        return d

    # Above the bound: the annealing may hold mass the bound's t misses; it
    # stands, and the check's z (about +40) is no warning.
    d = refit_with_bound(-5.0)
    assert gmm.log_evidence_ == annealed and math.isnan(d["birge_ratio"])
    assert d["importance_z"] > 4 and not d["warnings"]
    # Below it within their error bars (two combined std): the estimate
    # moves up towards the bound, its error bar no smaller than the
    # annealing's (the bound's std is of the mass it bounds).
    std = d["annealing_log_evidence_std"]
    d = refit_with_bound(2.0 * math.hypot(std, 0.1))
    mean, _, ratio = combined_estimate(annealed, std, annealed + 2.0 * math.hypot(std, 0.1), 0.1)
    assert (gmm.log_evidence_, gmm.log_evidence_std_, d["birge_ratio"]) == (mean, std, ratio)
    assert gmm.log_evidence_ > annealed and not d["warnings"]
    # Far below it: the annealing lost mass; the two combine, the error bar
    # widened over their disagreement beyond the annealing's own.
    d = refit_with_bound(+5.0)
    mean, combined, ratio = combined_estimate(annealed, std, annealed + 5.0, 0.1)
    assert (gmm.log_evidence_, gmm.log_evidence_std_, d["birge_ratio"]) == (mean, combined, ratio)
    assert annealed < gmm.log_evidence_ < annealed + 5.0 and ratio > 4 and combined > std


def _stream(X, y, cuts):
    """A stream fed in pieces ending at ``cuts``; the estimator after each."""
    streamed, fits = EvidenceLinearRegression(random_state=1), []
    for start, stop in zip((0,) + cuts, cuts):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            streamed.partial_fit(X[start:stop], y[start:stop])
        d = streamed.diagnostics_
        assert math.isfinite(streamed.log_evidence_) and streamed.log_evidence_std_ > 0
        assert d["annealing_log_evidence"] == streamed.evidence_trace_["log_evidence"][-1]
        fits.append((streamed.log_evidence_, streamed.log_evidence_std_, dict(d)))
    return streamed, fits


def test_a_stream_in_pieces_carries_the_combination_forward():
    X, y = outlier_data()
    one = _fit(EvidenceLinearRegression(random_state=1), X, y)
    # Pieces whose last check falls at the end (1000, 2000, 5000: each time the
    # data doubled) check where one call does, on the same engine state with
    # the same draws: one call's numbers.
    streamed, _ = _stream(X, y, (1000, 2000, 5000))
    assert (streamed.log_evidence_, streamed.log_evidence_std_) \
        == (one.log_evidence_, one.log_evidence_std_)
    # Pieces of 1000 check at 1000, 2000 and 4000; at 5000 they report the
    # combination of 4000 plus the annealing's increment since, its variance
    # added. The engine's numbers are one call's, bit for bit.
    streamed, fits = _stream(X, y, (1000, 2000, 3000, 4000, 5000))
    for key, value in one.evidence_trace_.items():
        np.testing.assert_array_equal(streamed.evidence_trace_[key], value)
    (at_check, std_at_check, d_check), (now, std_now, d) = fits[-2], fits[-1]
    assert d["posterior_gap_n_seen"] == d_check["posterior_gap_n_seen"] == 4000
    assert now == at_check + (d["annealing_log_evidence"] - d_check["annealing_log_evidence"])
    assert std_now == pytest.approx(math.sqrt(
        std_at_check ** 2 + d["annealing_log_evidence_std"] ** 2
        - d_check["annealing_log_evidence_std"] ** 2), rel=1e-12)
    # An increment's error after the check stays in the carried estimate: here
    # the annealing errs by -1.30 nats between 4000 and 5000 (std 0.64), which one
    # call's check at 5000 corrects (-0.07 +- 0.14). The two are estimates of
    # one evidence, within two of their combined std (asserted within three).
    assert abs(streamed.log_evidence_ - one.log_evidence_) \
        < 3.0 * math.hypot(streamed.log_evidence_std_, one.log_evidence_std_)


@pytest.mark.parametrize("setting", [dict(reservoir_size=1000), dict(method="ais")])
def test_without_a_check_to_combine_the_annealing_stands(setting):
    # A bounded store has no check; the baselines report their own estimate.
    X, y = paper_linear_data(2000, 0)
    reg = _fit(EvidenceLinearRegression(**CHEAP, **setting), X, y)
    d = reg.diagnostics_
    assert math.isnan(d["birge_ratio"])
    assert reg.log_evidence_ == d["annealing_log_evidence"]
    assert reg.log_evidence_std_ == d["annealing_log_evidence_std"] == d["log_evidence_std"]
