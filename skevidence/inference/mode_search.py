"""Has the cloud missed a better mode? A search from the data, and the mass it finds.

Sequential Monte Carlo over a growing data set keeps the configurations
that the particles hold and reweights them; one that no particle holds
when the data begin to favour it is never found later, because the
barrier between configurations grows with the data and the moves are
local. A mixture fitted to many rows can end up tens of nats low this
way, with a small error bar and every other check silent (the particles
sit well on the mode they hold; docs: benchmarks, Gaussian mixture).

:func:`missed_mode` asks the model for points near other modes
(``Model.mode_candidates``: for a mixture, EM from each component moved
to a data point), rates them on every stored observation, and, where the
best beats every particle, estimates the mass around it by importance
sampling from a t with the curvature there (``importance.importance_at``).
That mass is part of the evidence, so the estimate ``Z_hat`` has
``E[Z_hat] <= Z`` and, by Markov's inequality, exceeds ``Z`` by a factor
``e^t`` with probability at most ``e^-t``, whatever its effective sample
size: one far above the annealing's estimate says that the cloud missed
a mode. The engine then moves the cloud there (``sgais.move_to_missed_mode``);
the estimators' checks repeat the search and warn (``_trust.py``).
"""

from dataclasses import dataclass

import torch

from ..models.batches import batch_size_of, row_blocks
from .importance import ImportanceEstimate, importance_at, within_reach
from .posterior_gap import log_posterior

__all__ = ["MissedMode", "missed_mode", "search_points"]


@dataclass(frozen=True)
class MissedMode:
    """The importance draws around a point the search found, and the point."""

    estimate: ImportanceEstimate
    draws: torch.Tensor  # [n_draws, d]
    log_weights: torch.Tensor  # [n_draws]
    point: torch.Tensor  # [d]


def missed_mode(model, theta, W, store, n_draws, generator, live_log_p=None,
                leave_cloud_mode=False, weigh_all_rows=65536, candidates=None):
    """The most mass near a mode the search finds, a :class:`MissedMode`.

    ``theta [M, d]`` are the particles with normalised weights ``W [M]``;
    ``store`` every observation seen. Of the points the model's search
    returns, those that beat every particle's log posterior are weighed
    (:func:`importance.importance_at`, from ``point``; past
    ``weigh_all_rows`` stored rows the highest alone, as a weighing is a
    curvature, 2 d gradients, and the draws over the store, each a pass over
    every row). None where the
    model offers no search, where no point beats the particles (the cloud
    then holds at least as high a mode), or where no estimate is defined.
    ``live_log_p``, where already computed, is the log posterior of the
    particles of positive weight on ``store``. With ``leave_cloud_mode``,
    points on the mode that the cloud holds (:func:`importance.within_reach`)
    are not weighed: where the engine's folds weigh that mode. ``candidates``:
    the search's points where already drawn (:func:`search_points`).
    """
    if candidates is None:
        candidates = search_points(model, theta, W, store, generator)
    if candidates is None:
        return None
    if live_log_p is None:
        live_log_p = _log_posterior(model, theta[W > 0], store)
    log_p = torch.cat([live_log_p, _log_posterior(model, candidates.to(theta.dtype), store)])
    log_p = torch.where(torch.isfinite(log_p), log_p, torch.full_like(log_p, -torch.inf))
    n_live = live_log_p.shape[0]
    above = (log_p[n_live:] > log_p[:n_live].max()).nonzero()[:, 0]
    # The highest point need not have the most mass (a narrow peak): each
    # one above the cloud is weighed, the highest alone past weigh_all_rows rows.
    above = above[log_p[n_live + above].argsort(descending=True)]
    if leave_cloud_mode and above.numel():
        above = above[~within_reach(model, candidates[above], theta, W, store)]
    if batch_size_of(store) > weigh_all_rows:
        above = above[:1]
    found = [(importance_at(model, point, store, n_draws, generator), point)
             for point in candidates[above]]
    found = [MissedMode(f.estimate, f.draws, f.log_weights, point)
             for f, point in found if f is not None]
    return max(found, key=lambda f: f.estimate.log_evidence, default=None)


def search_points(model, theta, W, store, generator):
    """The model's search points (``Model.mode_candidates``) from the heaviest particle."""
    return model.mode_candidates(theta[int(W.argmax())], store, generator)


def _log_posterior(model, points, store):
    """Log posterior (up to the evidence) of ``points [P, d]`` on ``store``, ``[P]``."""
    return log_posterior(model, points, row_blocks(store, points.shape[0]))
