"""Has the cloud missed a better mode? A search from the data, and the mass it finds.

Sequential Monte Carlo over a growing data set keeps the configurations
that the particles hold and reweights them; one that no particle holds
when the data begin to favour it is never found later, because the
barrier between configurations grows with the data and the moves are
local. A mixture fitted to the paper's data at 1e5 rows can end up 40
nats low this way, with an error bar of one nat and every other check
silent (the particles sit well on the mode they hold).

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

import torch

from ..models.base import row_blocks
from .importance import importance_at
from .posterior_gap import log_posterior_and_grad

__all__ = ["missed_mode"]


def missed_mode(model, theta, W, store, n_draws, generator):
    """The most mass near a mode the search finds, or None: ``(estimate, draws, log_weights)``.

    ``theta [M, d]`` are the particles with normalised weights ``W [M]``;
    ``store`` every observation seen. Of the points the model's search
    returns, those that beat every particle's log posterior are weighed
    (:func:`importance.importance_at`). None where the model offers no
    search, where no point beats the particles (the cloud then holds at
    least as high a mode), or where no estimate is defined.
    """
    heaviest = theta[int(W.argmax())]
    candidates = model.mode_candidates(heaviest, store, generator)
    if candidates is None:
        return None
    dtype = heaviest.dtype
    points = torch.cat([theta[W > 0], candidates.to(dtype)])
    with torch.no_grad():
        log_p, _ = log_posterior_and_grad(model, points, row_blocks(store, points.shape[0]), 1.0)
    log_p = torch.where(torch.isfinite(log_p), log_p, torch.full_like(log_p, -torch.inf))
    n_live = points.shape[0] - candidates.shape[0]
    above = log_p[n_live:] > log_p[:n_live].max()
    # The highest point need not have the most mass: each one above the cloud is weighed.
    found = [importance_at(model, point, store, n_draws, generator)
             for point in candidates[above]]
    found = [f for f in found if f is not None]
    return max(found, key=lambda f: f[0].log_evidence, default=None)
