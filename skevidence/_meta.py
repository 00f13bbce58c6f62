"""What the meta-estimators share: fitting members, reading their evidences.

:class:`~skevidence.ensemble.BayesianModelAverager` and
:class:`~skevidence.model_selection.EvidenceSearch` both fit clones of
evidence estimators in parallel, read ``log_evidence_`` and
``log_evidence_std_`` from each (or from a Pipeline's last step), turn them
and a prior into posterior probabilities and warn on a tie. Not public.
"""

import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from sklearn.pipeline import Pipeline
from sklearn.utils import get_tags

from ._streaming import partial_fit_member
from .inference.annealing import logsumexp

# Estimator types whose predictive distributions can be averaged.
_KINDS = ("regressor", "classifier", "density_estimator")


def log_softmax(a):
    """``a`` shifted along the first axis so that its exponentials sum to one."""
    a = np.asarray(a, dtype=np.float64)
    return a - logsumexp(a)


def final_step(estimator):
    """The estimator that carries the evidence: the last step of a Pipeline."""
    while isinstance(estimator, Pipeline):
        estimator = estimator[-1]
    return estimator


def _estimator_kind(estimator):
    return get_tags(estimator).estimator_type


def members_kind(estimators):
    """The common estimator type of ``estimators``; ValueError if there is none."""
    kinds = {_estimator_kind(est) for est in estimators}
    if len(kinds) > 1:
        raise ValueError(
            "all estimators must be of the same kind (regressor, classifier or "
            f"density estimator) to average their predictions, got {sorted(map(str, kinds))}"
        )
    (kind,) = kinds
    if kind not in _KINDS:
        raise ValueError(
            f"estimators must be regressors, classifiers or density estimators, got {kind!r}"
        )
    return kind


def fitted_log_evidence(estimator, name):
    """``log_evidence_`` of a fitted member, checked to be a finite number."""
    value = getattr(final_step(estimator), "log_evidence_", None)
    if value is None:
        raise ValueError(
            f"estimator {name!r} ({type(estimator).__name__}) has no log_evidence_ after "
            "fitting; only estimators that compute their evidence can be averaged"
        )
    if not (isinstance(value, numbers.Real) and np.isfinite(value)):
        raise ValueError(f"estimator {name!r} has a non-finite log_evidence_ {value!r}")
    return float(value)


class EvidenceTieWarning(UserWarning):
    """The two most probable models are closer than their evidences' error bars.

    Issued by :class:`~skevidence.BayesianModelAverager` and
    :class:`~skevidence.model_selection.EvidenceSearch` when the two
    largest ``log_evidence + log_prior`` differ by less than
    ``2 sqrt(s1^2 + s2^2)``, with ``s1``, ``s2`` their ``log_evidence_std_``:
    their ranking is within the Monte Carlo noise. Refit with more
    ``n_particles`` to separate them, or treat them as equally supported.

    Public name: :class:`skevidence.exceptions.EvidenceTieWarning`.
    """


def fitted_log_evidence_std(estimator):
    """``log_evidence_std_`` of a fitted member; ``nan`` (unknown) when it has none."""
    value = getattr(final_step(estimator), "log_evidence_std_", None)
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and np.isfinite(value):
        return float(value)
    return float("nan")


def warn_if_tied(log_posterior, stds, names, stacklevel=3):
    """EvidenceTieWarning when the best two are within ``2 sqrt(s1^2 + s2^2)``.

    An unknown std (``nan``: a member without ``log_evidence_std_``) counts
    as 0, so members that report no error bar never trigger the warning
    by themselves.
    """
    if len(log_posterior) < 2:
        return
    first, second = np.argsort(-np.asarray(log_posterior), kind="stable")[:2]
    s = np.nan_to_num(np.asarray(stds, dtype=np.float64)[[first, second]], nan=0.0)
    bar = 2.0 * float(np.sqrt(np.sum(s**2)))
    diff = float(log_posterior[first] - log_posterior[second])
    if diff < bar:
        warnings.warn(
            f"the two most probable models {names[first]!r} and {names[second]!r} differ by "
            f"{diff:.3g} nats in log posterior, less than twice their combined Monte Carlo "
            f"error ({bar:.3g} nats): their ranking is not resolved; refit with more "
            "n_particles to separate them",
            EvidenceTieWarning, stacklevel=stacklevel)


def check_same_data(estimators, names):
    """Raise unless every member that counts its data has seen as many samples."""
    seen = {name: getattr(final_step(est), "n_samples_seen_", None)
            for name, est in zip(names, estimators)}
    counts = {n for n in seen.values() if n is not None}
    if len(counts) > 1:
        raise ValueError(
            "the estimators must be fitted on the same data for their evidences to be "
            f"comparable, but they have seen different numbers of samples: {seen}"
        )


def check_prior(prior, names):
    """Validated log prior probabilities, one per name, in the order of ``names``."""
    n = len(names)
    if prior is None:
        return np.full(n, -np.log(n))
    if isinstance(prior, dict):
        unknown = sorted(set(prior) - set(names))
        missing = [name for name in names if name not in prior]
        if unknown or missing:
            raise ValueError(
                "prior must give a probability for every estimator name and no other; "
                f"unknown names {unknown}, missing names {missing}"
            )
        prior = [prior[name] for name in names]
    try:
        p = np.asarray(prior, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"prior must be array-like of probabilities, got {prior!r}") from exc
    if p.shape != (n,):
        raise ValueError(f"prior must have one entry per estimator ({n}), got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError(f"prior probabilities must be finite and non-negative, got {p}")
    if abs(p.sum() - 1.0) > 1e-8:
        raise ValueError(f"prior probabilities must sum to 1, got sum {p.sum()!r}")
    with np.errstate(divide="ignore"):
        return np.log(p)


def _timed_call(estimator, method, X, y, **params):
    start = time.perf_counter()
    getattr(estimator, method)(X, y, **params)
    return estimator, time.perf_counter() - start


def _timed_partial_fit(estimator, X, y, first, **params):
    start = time.perf_counter()
    partial_fit_member(estimator, X, y, first, **params)
    return estimator, time.perf_counter() - start


def fit_members(estimators, X, y, n_jobs, method="fit", **params):
    """Call ``method`` (``fit`` or ``partial_fit``) of every estimator in parallel.

    Returns the list of estimators (fitted in place, or returned by the
    workers) and an array of their times in seconds.
    """
    out = Parallel(n_jobs=n_jobs)(
        delayed(_timed_call)(est, method, X, y, **params) for est in estimators
    )
    fitted, times = zip(*out)
    return list(fitted), np.array(times)


def partial_fit_members(estimators, X, y, n_jobs, first, **params):
    """``partial_fit`` every member (or Pipeline ending in one) on one batch, in parallel.

    ``first`` says whether this is the stream's first batch, on which the
    pipelines' transformers are fitted and then frozen
    (:func:`~skevidence._streaming.partial_fit_member`). Returns the
    estimators and their times, as :func:`fit_members`; callers undo a
    failure with :func:`~skevidence._streaming.restored_on_error`.
    """
    out = Parallel(n_jobs=n_jobs)(
        delayed(_timed_partial_fit)(est, X, y, first, **params) for est in estimators
    )
    fitted, times = zip(*out)
    return list(fitted), np.array(times)


def partial_fit_params(kind, classes):
    """The keyword arguments of the members' ``partial_fit``: ``classes`` for classifiers."""
    if kind == "classifier":
        return {"classes": classes}
    if classes is not None:
        raise ValueError("classes is only used when the estimators are classifiers")
    return {}


@dataclass(frozen=True)
class MemberEvidences:
    """The members' log evidences, their stds, and ``log_evidences + log_prior`` unnormalised."""

    log_evidences: np.ndarray  # [n_members]
    stds: np.ndarray  # [n_members]
    log_posterior: np.ndarray  # [n_members]


def read_evidences(fitted, names, log_prior):
    """The :class:`MemberEvidences` of members fitted on the same data."""
    log_evidences = np.array([fitted_log_evidence(est, name)
                              for name, est in zip(names, fitted)])
    check_same_data(fitted, names)
    stds = np.array([fitted_log_evidence_std(est) for est in fitted])
    return MemberEvidences(log_evidences, stds, log_evidences + log_prior)
