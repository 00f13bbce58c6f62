"""Independent runs of one fit, merged: an error bar that sees what the seeds see.

With ``n_init > 1`` an estimator fits ``n_init`` independent runs, each an
estimator of its own with its own seed: no particle, search, control
variate, preconditioner or importance check is shared. Where the
posterior has modes that the annealing weighs by chance (a mixture with
overlapping, unequal or unneeded components), runs end in different
configurations and their evidences disagree by more than the error bar
each reports of itself; one run cannot see that, several can.

The evidence is the runs' mean, its standard deviation widened by the
Birge ratio over their disagreement (:func:`merged_estimate`); a ratio
beyond ``DISAGREEMENT_Z`` is warned. The runs are replicates of one
estimator, so each has the same error in expectation: weighting them by
their own error bars would favour the runs that understate theirs, such as
a run whose cloud sits in one narrow configuration of a multimodal
posterior. The posterior is the runs' particles pooled, each run's
weights scaled by its evidence: the weighting under which independent
importance samplers of one target form one.
"""

import copy
import math
import warnings

import numpy as np
import torch
from sklearn.utils import check_random_state

from ._trust import IMPORTANCE_Z, MIN_VARIANCE

__all__ = ["IndependentRunsMixin", "run_seeds", "merged_estimate", "pooled_particles",
           "disagreement_reason"]

# Runs whose Birge ratio exceeds this disagree beyond their error bars: the
# same line as between a fit's annealing and its importance check (runs
# whose errors follow their reported stds cross 4 about once in 16000).
DISAGREEMENT_Z = IMPORTANCE_Z


def run_seeds(random_state, n_init):
    """One integer seed per run, drawn from ``random_state``."""
    return check_random_state(random_state).randint(np.iinfo(np.int32).max, size=n_init)


def merged_estimate(values, stds):
    """Estimates of one log evidence by independent runs of one estimator, merged.

    Returns ``(mean, std, birge_ratio)``: the runs' mean; the std of that
    mean, ``sqrt(sum std_r^2) / R``, times the Birge ratio ``max(1,
    sqrt(chi2 / (R - 1)))`` with ``chi2 = sum (value_r - mean)^2 /
    std_r^2``. Where the runs disagree beyond their error bars, their stds
    understate their errors by about that ratio, and the merged error bar
    is widened to cover the disagreement (the Particle Data Group's rule
    for inconsistent measurements). Runs without a finite std are merged
    by the std of their mean over the runs.
    """
    values, stds = np.asarray(values, dtype=float), np.asarray(stds, dtype=float)
    R, mean = values.shape[0], float(values.mean())
    if not np.all(np.isfinite(stds)):
        return mean, float(values.std(ddof=1) / math.sqrt(R)), math.nan
    variances = np.maximum(stds ** 2, MIN_VARIANCE)
    ratio = max(1.0, math.sqrt(float(((values - mean) ** 2 / variances).sum()) / (R - 1)))
    return mean, ratio * math.sqrt(float(variances.sum())) / R, ratio


def pooled_particles(runs):
    """``(theta [sum M_r, d], weights)`` of fitted runs pooled (the engine's
    parameterisation, float64), run ``r``'s weights scaled by its ``exp(log_evidence_)``."""
    log_z = np.array([run.log_evidence_ for run in runs])
    scale = np.exp(log_z - log_z.max())
    weights = np.concatenate([run.particle_weights_ * s for run, s in zip(runs, scale)])
    theta = torch.cat([run._particles_tensor() for run in runs])
    return theta, weights / weights.sum()


def disagreement_reason(values, stds, ratio):
    """The warning's sentence for runs that disagree beyond their error bars (None if not)."""
    if not ratio > DISAGREEMENT_Z:
        return None
    runs = ", ".join(f"{v:.6g} +- {s:.2g}" for v, s in zip(values, stds))
    return (f"the {len(values)} independent runs (n_init) disagree beyond their error bars "
            f"({runs}; Birge ratio {ratio:.1f}): the posterior has modes that the runs weigh "
            "differently, and log_evidence_std_ is widened to cover their spread (more n_init "
            "narrows it; compare random_state values)")


class IndependentRunsMixin:
    """``n_init`` independent runs of a BaseEvidenceEstimator, merged. The runs are
    estimators of one run each (``_runs``); the merged estimator keeps no engine state
    of its own."""

    def _check_continued_runs(self):
        """``ValueError`` when ``partial_fit`` would continue a fit of another ``n_init``."""
        fitted = len(vars(self).get("_runs", ())) or 1
        if fitted != self.n_init:
            raise ValueError(f"partial_fit cannot continue a fit of n_init={fitted} with "
                             f"n_init={self.n_init}; call fit to start over")

    def _fit_runs(self, X, y, reset, **kwargs):
        """``n_init`` independent runs, each an estimator of one run with its own seed,
        merged (``_runs``); the estimator changes only if every run succeeds."""
        new = copy.copy(self)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            new._check_params()
            if reset:
                runs = [self._one_run(seed)
                        for seed in run_seeds(self.random_state, self.n_init)]
            else:
                runs = [copy.copy(run) for run in self._runs]
            for run in runs:
                run._fit_one(X, y, reset, **kwargs)
        seen = set()
        for w in caught:  # each warning once, whichever runs gave it
            if (w.category, str(w.message)) not in seen:
                seen.add((w.category, str(w.message)))
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        new._merge_runs(runs)
        vars(self).clear()
        vars(self).update(vars(new))
        return self

    def _one_run(self, seed):
        """An unfitted estimator of one run, seeded with ``seed``, whose untrustworthy
        verdict the merged fit reports."""
        run = copy.copy(self)
        for name in [k for k in vars(run) if k.endswith("_") or k.startswith("_")]:
            delattr(run, name)
        run.n_init, run.random_state = 1, int(seed)
        run._reports_untrustworthy = False
        return run

    def _merge_runs(self, runs):
        """The fitted attributes of the runs merged (:mod:`skevidence._runs`)."""
        first = runs[0]
        vars(self).update({k: v for k, v in vars(first).items()
                           if k.endswith("_") and not k.startswith("_")})
        self._runs, self._model, self._config = tuple(runs), first._model, first._config
        self._method_fitted = first._method_fitted
        values = np.array([run.log_evidence_ for run in runs])
        stds = np.array([run.log_evidence_std_ for run in runs])
        self.log_evidence_, self.log_evidence_std_, ratio = merged_estimate(values, stds)
        self._pooled_theta, self.particle_weights_ = pooled_particles(runs)
        self.particles_ = self._pooled_theta.cpu().numpy().copy()
        self._set_model_attributes()
        reasons = [f"run {i} of {len(runs)}: {reason}" for i, run in enumerate(runs)
                   for reason in run._untrustworthy]
        disagreement = disagreement_reason(values, stds, ratio)
        reasons += [disagreement] if disagreement else []
        self._untrustworthy = reasons
        self.diagnostics_ = {
            "n_init": len(runs), "init_log_evidence": values, "init_log_evidence_std": stds,
            "birge_ratio": ratio, "log_evidence_std": self.log_evidence_std_,
            "init_diagnostics": [run.diagnostics_ for run in runs],
            "warnings": reasons + [w for run in runs for w in run.diagnostics_["warnings"]
                                   if w not in run._untrustworthy]}
        self._emit_untrustworthy(reasons, stacklevel=6)
