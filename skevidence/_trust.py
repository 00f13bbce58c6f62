"""How far to trust a fit: the ``diagnostics_`` of the estimators and their warning.

After every ``fit`` / ``partial_fit`` the estimator reads the engine's
state (divergences, ESS, resamplings), runs the posterior-gap check and
the spread check (``inference/posterior_gap.py``) and issues one ``ConvergenceWarning``
listing the reasons not to trust the evidence.

Where the importance-sampling check at the posterior mode has an error bar
to rely on, the reported evidence is the two estimates combined
(:func:`combined_estimate`): the check's error does not accrue with the
data as the annealing's does, and where the annealing errs beyond its
error bar (data with gross outliers) the check's weight pulls the estimate
back and the Birge ratio widens the error bar over their disagreement.
"""

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning

from .inference import importance, importance_steps, mode_search, posterior_gap, sgais
from .inference.importance import ImportanceEstimate
from .models.base import has_mode_search

__all__ = ["TrustDiagnosticsMixin", "combined_estimate"]

# Final ESS below this fraction of the particles: the islands' weights (or
# one island's) have degenerated.
ESS_COLLAPSE = 0.05
# A spread ratio (inference/posterior_gap.spread_ratio) this far below 1,
# beyond SPREAD_SE of its standard errors, says the cloud is narrower than
# the posterior. The margin is wide because resampled particles are
# correlated and the mixtures' terms heavy-tailed, so the standard error
# understates the noise; clouds that are too wide are the gap's to catch.
SPREAD_MARGIN = 0.2
SPREAD_SE = 4.0
# The importance-sampling check (inference/importance.py) has a std to rely
# on where its ESS is at least this fraction of IMPORTANCE_DRAWS
# (IMPORTANCE_MIN_EFFECTIVE effective draws; fewer, and the std from their
# weights says little of the error). It is then combined with the annealing's
# estimate in log_evidence_, and warns where the two differ
# by more than IMPORTANCE_Z combined standard deviations: the annealing's
# errors follow its reported std (docs: benchmarks, The error bar), so a
# healthy run crosses 4 about once in 16000.
IMPORTANCE_MIN_ESS = 0.2
IMPORTANCE_Z = 4.0
# Its draws: enough that the std the draws give of their own estimate can be
# relied on once it is combined with the annealing's (from a few dozen
# effective draws that std understates the error, and the combined error bar
# with it: docs: benchmarks, The error bar), at the cost of a pass over the
# store for two default clouds of particles. Where their ESS falls short of
# IMPORTANCE_MIN_ESS of them (heavy-tailed residuals make the t at the mode
# a looser fit), the check draws again from the same t, doubling its draws
# until their ESS reaches that many, at most IMPORTANCE_MAX_DRAWS in all.
IMPORTANCE_DRAWS = 256
IMPORTANCE_MAX_DRAWS = 4 * IMPORTANCE_DRAWS
IMPORTANCE_MIN_EFFECTIVE = IMPORTANCE_MIN_ESS * IMPORTANCE_DRAWS
# The least variance either estimate is given in their combination (that of
# the engine's folds): a check whose draws carry equal weights reports 0.
MIN_VARIANCE = 1e-12
# An importance estimate of the evidence (the mass of a mode that the search
# finds and the particles missed, inference/mode_search.py; the check's at
# the mode) is in expectation at most the evidence, so it exceeds it by
# MISSED_MODE_NATS with probability at most 10% whatever its ESS (Markov's
# inequality; an importance estimate's log errs low far more often than
# high); the warnings count the excess above the annealing's estimate plus
# twice its std, as the engine does before it moves the cloud to a mode.
MISSED_MODE_NATS = importance_steps.MISSED_MODE_NATS
# Weight on parameters that no observation pins down (``Model.spare_weight``:
# a mixture component that explains less than a tenth of an observation)
# above which the error bar is not to be relied on: with more components
# than the data support most of the weight lies there and the evidence
# spreads over sampler seeds well beyond its reported std, while where every
# component explains some of the data the weight stays near 0 and the error
# bar covers the spread (docs: benchmarks, Gaussian mixture).
SPARE_WEIGHT = 0.1


@dataclass(frozen=True)
class ImportanceCheck:
    """An importance estimate of the evidence (the check's at the mode, or a missed mode's
    mass) and the annealing's estimate and ``fold_var`` it faces."""

    estimate: ImportanceEstimate | None
    annealed: float  # the annealing's debiased log evidence
    std: float  # its std
    fold_var: float  # the engine's fold_var: a fold since replaces the estimate checked

    def excess(self):
        """The log of the weights' mean (Markov bounds its expectation) less the annealing's
        estimate plus twice its std."""
        return (self.estimate.log_evidence - 0.5 * self.estimate.std ** 2
                - self.annealed - 2.0 * self.std)


@dataclass(frozen=True)
class GapChecks:
    """The checks made at ``n_seen`` observations, reused until the data seen double."""

    n_seen: int
    gap: posterior_gap.PosteriorGap
    spread: tuple  # (spread ratio, its standard error): posterior_gap.spread_ratio
    importance: ImportanceCheck | None
    missed_mode: ImportanceCheck | None
    spare_weight: float | None  # Model.spare_weight; None where the store is a sample


def combined_estimate(a, std_a, b, std_b):
    """Two estimates of one log evidence, combined.

    Parameters
    ----------
    a, b : float
        The estimates (the annealing's, the importance-sampling check's).
    std_a, std_b : float
        Their standard deviations.

    Returns
    -------
    mean : float
        The inverse-variance weighted mean.
    std : float
        Its standard deviation ``1 / sqrt(1 / std_a^2 + 1 / std_b^2)`` times the
        Birge ratio.
    birge_ratio : float
        ``max(1, |a - b| / sqrt(std_a^2 + std_b^2))``: where the estimates
        disagree beyond their error bars, one of these understates its
        error, and the combination's error bar is widened to cover the
        disagreement (the Particle Data Group's rule for inconsistent
        measurements).
    """
    var_a, var_b = max(std_a ** 2, MIN_VARIANCE), max(std_b ** 2, MIN_VARIANCE)
    mean, var = importance_steps.inverse_variance_mean(a, var_a, b, var_b)
    ratio = max(1.0, abs(a - b) / math.sqrt(var_a + var_b))
    return mean, math.sqrt(var) * ratio, ratio


def _trustworthy(estimate):
    """Whether an importance estimate's std is to be relied on: its ESS is at least
    IMPORTANCE_MIN_EFFECTIVE draws (an estimate without its draws' count, the
    IMPORTANCE_MIN_ESS share of them)."""
    if estimate.n_draws is None:
        return estimate.ess >= IMPORTANCE_MIN_ESS
    return estimate.ess * estimate.n_draws >= IMPORTANCE_MIN_EFFECTIVE


class TrustDiagnosticsMixin:
    """``diagnostics_`` and the untrustworthy-run warning, for BaseEvidenceEstimator."""

    def _posterior_gap(self):
        """The posterior-gap check (inference/posterior_gap.py) and the others made with
        it, a :class:`GapChecks`, rerun only when the data seen have doubled since the
        last: a stream fed in many small ``partial_fit`` calls pays for it about twice."""
        state = self._state
        last = getattr(self, "_gap_checked", None)
        if last is not None and state.n_seen < 2 * last.n_seen:
            return last
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype, device=state.theta.device)
        store = state.reservoir.data()
        cloud = self._searched_cloud(W) or posterior_gap.cloud_on_posterior(
            self._model, state.theta, W, store, state.n_seen)
        gap = posterior_gap.posterior_gap(self._model, state.theta, W, store, state.n_seen,
                                          cloud=cloud)
        spread = posterior_gap.spread_ratio(self._model, state.theta, W, store, state.n_seen,
                                            cloud=cloud)
        spare = None
        if state.reservoir.size == state.n_seen:  # counts on a sample would miss rare parts
            with torch.no_grad():
                spare = self._model.spare_weight(state.theta, W, store)
        self._gap_checked = GapChecks(state.n_seen, gap, spread, self._importance_check(W),
                                      self._missed_mode_check(W, cloud.log_p), spare)
        return self._gap_checked

    def _searched_cloud(self, W):
        """The engine's pass over the store for its search at the end of this update
        (``importance_steps.move_to_missed_mode``), where the particles and weights are still
        those; else None."""
        state = self._state
        searched = state.search_cloud
        if searched is None or searched.n_seen != state.n_seen \
                or searched.theta is not state.theta or not torch.equal(searched.cloud.W, W[W > 0]):
            return None
        return searched.cloud

    def _importance_check(self, W):
        """The :class:`ImportanceCheck` at this ``n_seen``: IMPORTANCE_DRAWS draws, more
        where their ESS is short of IMPORTANCE_MIN_EFFECTIVE (None where
        :func:`importance.applies` fails or the store is bounded)."""
        state, model = self._state, self._model
        if not (importance.applies(model) and state.reservoir.size == state.n_seen > 0):
            return None
        store = state.reservoir.data()
        with torch.no_grad():
            starts, searched = None, state.search_found
            if searched is not None and searched.n_seen == state.n_seen:
                starts = searched.candidates  # the engine's search at the end of this update
            elif has_mode_search(model):  # modes that no particle holds join the proposal
                starts = mode_search.search_points(model, state.theta, W, store,
                                                   state.side_generator(3))
            estimate = importance.importance_log_evidence(
                model, state.theta, W, store, IMPORTANCE_DRAWS,
                state.side_generator(0), start=state.fold_mode,
                min_effective=IMPORTANCE_MIN_EFFECTIVE, max_draws=IMPORTANCE_MAX_DRAWS,
                bound_where_spread=True, starts=starts)
        return ImportanceCheck(estimate, float(state.debiased_log_evidence),
                               float(state.log_evidence_std), state.fold_var)

    def _missed_mode_check(self, W, live_log_p):
        """The :class:`ImportanceCheck` of a missed mode, its estimate from
        :func:`mode_search.missed_mode` (None where the model offers no search,
        the store is bounded, or the search found nothing above the particles)."""
        state = self._state
        if not state.reservoir.size == state.n_seen > 0:
            return None
        engine_search = state.search_found
        if engine_search is not None and engine_search.n_seen == state.n_seen:
            estimate = engine_search.estimate  # the engine searched here (and moved if it won)
        else:
            with torch.no_grad():
                found = mode_search.missed_mode(self._model, state.theta, W,
                                                state.reservoir.data(), IMPORTANCE_DRAWS,
                                                state.side_generator(1), live_log_p)
            estimate = None if found is None else found.estimate
        if estimate is None:
            return None
        return ImportanceCheck(estimate, float(state.debiased_log_evidence),
                               float(state.log_evidence_std), state.fold_var)

    def _diagnostics(self):
        state = self._state
        d = state.theta.shape[1]
        steps = self.evidence_trace_["n_annealing_steps"]
        checks = self._posterior_gap()
        spread, spread_se = checks.spread
        return {
            "n_diverged": int(state.n_diverged),
            "max_diverged_fraction": float(state.max_diverged_fraction),
            "n_resamplings": int(state.n_resamplings),
            "n_annealing_steps": steps.copy(),
            "adjusted_acceptance": (state.acceptance_sum / state.n_adjusted_moves
                                    if state.n_adjusted_moves else math.nan),
            "ess": float(sgais.ess(state.log_W)),
            "n_islands": int(state.island_starts.shape[0]),
            "log_evidence_std": self.log_evidence_std_,
            "posterior_gap": float(checks.gap.gap),
            "posterior_gap_n_seen": int(checks.n_seen),
            "posterior_gap_threshold": float(posterior_gap.gap_threshold(
                d, state.n_seen / max(state.reservoir.size, 1))),
            "log_posterior_optimum": float(checks.gap.optimum),
            "mean_log_posterior": float(checks.gap.mean_log_p),
            "spread_ratio": float(spread),
            "spread_ratio_se": float(spread_se),
            **self._importance_entries(),
            **self._missed_mode_entries(),
            "spare_weight": math.nan if checks.spare_weight is None else checks.spare_weight,
        }

    def _importance_entries(self):
        """The importance-sampling check's ``diagnostics_`` entries (NaN where it did not run)."""
        check = self._gap_checked.importance
        estimate = None if check is None else check.estimate
        if estimate is None:
            return {**dict.fromkeys(["importance_log_evidence", "importance_log_evidence_std",
                                     "importance_ess", "importance_z", "importance_excess"],
                                    math.nan), "importance_draws": 0,
                    "importance_lower_bound": False}
        return {"importance_log_evidence": estimate.log_evidence,
                "importance_log_evidence_std": estimate.std, "importance_ess": estimate.ess,
                "importance_draws": int(estimate.n_draws or IMPORTANCE_DRAWS),
                "importance_z": (check.annealed - estimate.log_evidence)
                / math.hypot(check.std, estimate.std),
                "importance_excess": check.excess(),
                "importance_lower_bound": estimate.lower_bound}

    def _combine_with_check(self, diag):
        """Set ``log_evidence_`` and ``log_evidence_std_`` to the annealing's estimate
        combined with a trustworthy importance-sampling check, and record in
        ``diag`` what was combined.

        At the check's ``n_seen`` the two combine by :func:`combined_estimate`.
        A check made at fewer data (one per doubling of a stream fed in
        pieces) is carried forward: the combination then plus the annealing's
        increment since, whose variance (its variance now less its variance
        then, as its segments' variances add) adds to the combination's. Where
        the engine has since folded an importance estimate of its own into the
        annealing's (``importance_steps.fold_in_importance``) or moved the
        cloud to a missed mode, the estimate the check was combined with is
        gone, the increment's error no longer independent of the
        combination's: the annealing's estimate stands until the next check.
        Only the ``sgais`` method combines: the other methods are baselines
        whose own estimates the benchmarks compare. Elsewhere (no check,
        one whose ESS is short, a value that is not finite) the annealing's
        estimate stands, and so it does above a check that is a lower bound
        (particles spread over more than one mode): the annealing may hold
        mass the check's t misses. Below a lower bound the annealing has
        lost mass (a cloud that lags the posterior errs low, not either
        way), and the two combine as elsewhere, with an error bar no smaller
        than the annealing's: the bound's small std is of the mass it
        bounds, not of the evidence. Where the check's proposal covers
        modes that are not relabellings of one another, and those beyond the
        heaviest hold more of it than the annealing's std, the check's
        estimate stands alone: the annealing weighs such modes by chance.
        """
        annealed_now, std_now = self.log_evidence_, self.log_evidence_std_
        diag.update(annealing_log_evidence=annealed_now, annealing_log_evidence_std=std_now,
                    birge_ratio=math.nan)
        check = self._gap_checked.importance
        if (self.method != "sgais" or check is None or check.estimate is None
                or not _trustworthy(check.estimate) or check.fold_var != self._state.fold_var):
            return
        estimate, annealed, std = check.estimate, check.annealed, check.std
        if not all(map(math.isfinite, (annealed, std, estimate.log_evidence, estimate.std,
                                       annealed_now, std_now))):
            return
        if estimate.lower_bound and annealed >= estimate.log_evidence:
            return
        # On a posterior with modes that are not relabellings of one another, the
        # annealing weighs them by where its particles happened to be when the
        # data parted them (its moves do not cross between them), an error its
        # std does not hold; the check weighs every mode it found, and stands
        # where the minor modes' share is more than that std.
        several_modes = -math.log1p(-min(estimate.minor_share, 0.5)) > std
        if several_modes and not estimate.lower_bound:
            mean, combined_std, ratio = estimate.log_evidence, estimate.std, math.nan
        else:
            mean, combined_std, ratio = combined_estimate(annealed, std, estimate.log_evidence,
                                                          estimate.std)
        if estimate.lower_bound:
            # A bound moves the estimate up to where the run's mass is known to
            # be, but makes the run no surer of the mass the bound's t misses.
            combined_std = max(combined_std, std)
        increment_var = max(std_now ** 2 - std ** 2, 0.0)
        self.log_evidence_ = mean + (annealed_now - annealed)
        self.log_evidence_std_ = math.sqrt(combined_std ** 2 + increment_var)
        diag.update(log_evidence_std=self.log_evidence_std_, birge_ratio=ratio)

    def _missed_mode_entries(self):
        """``missed_mode_log_evidence`` (the mass of a mode the search found above every
        particle, NaN where none) and its excess over the log evidence plus twice its std."""
        check = self._gap_checked.missed_mode
        if check is None:
            return {"missed_mode_log_evidence": math.nan, "missed_mode_excess": math.nan}
        return {"missed_mode_log_evidence": check.estimate.log_evidence,
                "missed_mode_excess": check.excess()}

    def _untrustworthy_reasons(self, diag):
        M = self._state.theta.shape[0]
        reasons = []
        if diag["max_diverged_fraction"] > 0.5:
            reasons.append(f"{diag['max_diverged_fraction']:.0%} of the particles diverged in one "
                           "move (reduce learning_rate)")
        if diag["ess"] < max(2.0, ESS_COLLAPSE * M):
            reasons.append(f"the effective sample size collapsed to {diag['ess']:.1f} of {M} "
                           "particles (increase n_particles)")
        if self._engine.trace_ess_is_predictive:
            # Below two, one particle carried the chunk: its delta-method
            # variance no longer bounds the error, which can then be far
            # larger than the reported std (e.g. after a shift in the stream).
            worst = float(self.evidence_trace_["ess"].min())
            if worst < 2.0:
                reasons.append(f"a chunk's predictive estimate rested on an ESS of {worst:.1f} "
                               f"of {M} particles (a shift in the data, or particles that "
                               "lag the posterior; try method='sgais')")
        gap = diag["posterior_gap"]
        if not math.isfinite(gap) or gap > diag["posterior_gap_threshold"]:
            reasons.append(
                f"the particles' mean log posterior is {gap:.4g} nats below what a short "
                f"optimisation from the best particle reaches (expected about "
                f"{self._state.theta.shape[1] / 2:.4g}): the particles have not reached the "
                "posterior (try a smaller learning_rate, more n_burnin or n_particles)")
        spread, spread_se = diag["spread_ratio"], diag["spread_ratio_se"]
        if spread < 1 - SPREAD_MARGIN - SPREAD_SE * spread_se:
            # A collapsed cloud sits near the mode, where the gap stays small.
            reasons.append(
                f"the particles' spread, measured by the posterior's curvature, is {spread:.2f} "
                "of a posterior sample's (about 1): the cloud has collapsed and the evidence "
                "can be many nats off (try more n_burnin or n_particles)")
        z = diag["importance_z"]
        # Combined, the Birge ratio has widened the error bar over their difference.
        # Above a lower bound the annealing may hold mass the bound's t misses.
        effective = diag["importance_ess"] * diag["importance_draws"]
        far = (effective >= IMPORTANCE_MIN_EFFECTIVE and abs(z) > IMPORTANCE_Z
               and not (diag["importance_lower_bound"] and z > 0))
        lost = diag["importance_excess"] > MISSED_MODE_NATS  # whatever its ESS (Markov)
        if (far or lost) and not math.isfinite(diag["birge_ratio"]):
            reasons.append(
                f"after {diag['posterior_gap_n_seen']} observations the annealing's log "
                f"evidence is {z:+.1f} combined standard deviations from an importance-"
                f"sampling estimate at the posterior mode ({diag['importance_log_evidence']:.6g}"
                f" +- {diag['importance_log_evidence_std']:.2g}), not combined with it ("
                + ("a method other than 'sgais', or one whose engine has folded an estimate "
                   "of its own into the annealing's since" if far else
                   f"{effective:.0f} effective draws, but {diag['importance_excess']:.3g} nats "
                   "above the annealing's estimate plus twice its std, which chance gives "
                   "less than once in ten") + "): the particles lag or miss the posterior "
                "(try more n_burnin or n_particles, or a smaller learning_rate)")
        if diag["missed_mode_excess"] > MISSED_MODE_NATS:
            reasons.append(
                f"after {diag['posterior_gap_n_seen']} observations a search for other "
                "posterior modes found one that no particle reached, whose mass alone gives "
                f"a log evidence of about {diag['missed_mode_log_evidence']:.6g}, "
                f"{diag['missed_mode_excess']:.3g} nats above the estimate plus twice its "
                "std: the particles are trapped in a lesser mode and the evidence is too "
                "low (try more n_particles, or compare random_state values)")
        if diag["spare_weight"] > SPARE_WEIGHT:
            reasons.append(
                f"{diag['spare_weight']:.0%} of the particles' weight lies where a part of the "
                "model explains none of the data (a mixture component that no datum belongs "
                "to: more components than the data support): the evidence sums over many "
                "arrangements of such parts, and its error bar understates the spread over "
                "random_state, about twice on standardised iris (compare a few random_state "
                "values, or use fewer components)")
        return reasons

    def _long_chunk_record(self):
        """The engine's AnnealingWarning for the longest chunk so far, as a list of 0 or 1."""
        threshold = self._config.annealing_steps_warning
        if not self._engine.anneals_online or threshold is None:
            return []
        steps = self.evidence_trace_["n_annealing_steps"]
        n_seen = self.evidence_trace_["n_seen"]
        k = steps.shape[0] - 1 - int(np.argmax(steps[::-1]))  # the last, as the engine picks
        if steps[k] <= threshold:
            return []
        n_before = int(n_seen[k - 1]) if k else 0
        return [sgais.long_chunk_message(int(steps[k]), n_before, int(n_seen[k]) - n_before,
                                         threshold)]

    def _warn_if_untrustworthy(self):
        """``diagnostics_``, and a ConvergenceWarning if the run is not trustworthy."""
        diag = self._diagnostics()
        self._combine_with_check(diag)
        reasons = self._untrustworthy_reasons(diag)
        diag["warnings"] = reasons + self._long_chunk_record()
        self.diagnostics_ = diag
        self._untrustworthy = reasons
        if vars(self).get("_reports_untrustworthy", True):  # a merged fit reports its runs'
            self._emit_untrustworthy(reasons, stacklevel=7)

    def _emit_untrustworthy(self, reasons, stacklevel):
        """One ConvergenceWarning listing ``reasons`` (none if there are none), at the
        caller of ``fit`` / ``partial_fit`` ``stacklevel`` frames up."""
        if reasons:
            warnings.warn(
                f"{type(self).__name__}: the evidence estimate is not trustworthy: "
                + "; ".join(reasons) + ". See diagnostics_.",
                ConvergenceWarning, stacklevel=stacklevel)
