"""Plots of a fitted evidence estimator and of a ranking of models.

matplotlib is imported only when a function is called, so the rest of the
package does not need it (``pip install matplotlib``).
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._meta import final_step

__all__ = ["plot_evidence_trace", "plot_model_posterior", "plot_shifts"]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("skevidence.plotting needs matplotlib: pip install matplotlib") from exc
    return plt


def _axes(ax, rows, columns, **subplots_kw):
    """``ax`` (or a new figure's) as a flat array of ``rows * columns`` Axes."""
    if ax is None:
        _, ax = _pyplot().subplots(rows, columns, **subplots_kw)
    axes = np.asarray(ax, dtype=object).ravel()
    if axes.size != rows * columns:
        raise ValueError(f"ax must hold {rows * columns} Axes, got {axes.size}")
    return axes


def plot_evidence_trace(estimator, ax=None):
    """Draw how the evidence was built up, chunk by chunk, from ``evidence_trace_``.

    Three panels against the observations seen ``n``: ``log p(D_n) / n``
    (with a band of one error bar), the annealing steps per chunk and the
    ESS after it over ``n_particles``; :ref:`trust` reads them.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        An estimator with ``evidence_trace_`` (e.g.
        :class:`~skevidence.EvidenceLinearRegression`), or a pipeline whose
        last step has one.
    ax : array-like of 3 matplotlib Axes, default=None
        Where to draw the three panels; by default a new figure with three
        stacked panels sharing the x axis.

    Returns
    -------
    axes : ndarray of 3 matplotlib Axes
        The log evidence per observation, annealing steps and ESS panels.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression
    >>> from skevidence.plotting import plot_evidence_trace
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1000, 2))
    >>> y = X @ [1.0, -0.5] + rng.normal(size=1000)
    >>> reg = EvidenceLinearRegression(n_particles=32, random_state=0).fit(X, y)
    >>> axes = plot_evidence_trace(reg)
    >>> len(axes)
    3
    """
    final = final_step(estimator)
    check_is_fitted(final, "evidence_trace_")
    trace = final.evidence_trace_
    n = np.asarray(trace["n_seen"], dtype=float)
    axes = _axes(ax, 3, 1, sharex=True, figsize=(6, 6.5))

    per_obs = np.asarray(trace["log_evidence"]) / n
    axes[0].plot(n, per_obs, "o-", markersize=3)
    if "log_evidence_std" in trace:
        band = np.asarray(trace["log_evidence_std"]) / n
        axes[0].fill_between(n, per_obs - band, per_obs + band, alpha=0.3, linewidth=0)
    axes[0].set_ylabel("log evidence / n")
    axes[1].step(n, trace["n_annealing_steps"], where="mid")
    axes[1].set_ylabel("annealing steps")
    n_particles = getattr(final, "n_particles", None)
    ess = np.asarray(trace["ess"], dtype=float)
    if n_particles:
        axes[2].plot(n, ess / n_particles, "o-", markersize=3)
        axes[2].set_ylabel("ESS / n_particles")
        axes[2].set_ylim(0, 1.05)
    else:
        axes[2].plot(n, ess, "o-", markersize=3)
        axes[2].set_ylabel("ESS")
    axes[2].set_xlabel("observations seen n")
    if n.size > 1 and n[-1] / n[0] > 50:
        axes[2].set_xscale("log")
    return axes


def _model_posterior_table(fitted):
    """Labels, log evidences, their error bars (or None) and posterior probabilities."""
    if hasattr(fitted, "results_"):  # EvidenceSearch
        results = fitted.results_
        labels = [", ".join(f"{k.split('__')[-1]}={v}" for k, v in p.items())
                  for p in results["params"]]
        stds = results.get("log_evidence_std")
        return labels, results["log_evidence"], stds, results["posterior_probability"]
    if hasattr(fitted, "log_evidences_"):  # BayesianModelAverager
        labels = list(fitted.named_estimators_)
        stds = getattr(fitted, "log_evidence_stds_", None)
        return labels, fitted.log_evidences_, stds, fitted.weights_
    raise TypeError("expected a fitted EvidenceSearch or BayesianModelAverager, got "
                    f"{type(fitted).__name__}")


def plot_model_posterior(search_or_averager, ax=None):
    """Draw the log Bayes factors and posterior probabilities of a set of models.

    Two panels, one bar per candidate (an
    :class:`~skevidence.EvidenceSearch`) or member (a
    :class:`~skevidence.BayesianModelAverager`): the log evidence relative
    to the best, ``log p(D | M) - max log p(D | M')``, with error bars
    where the fit reports them (``results_["log_evidence_std"]`` or
    ``log_evidence_stds_``), and the posterior probability ``p(M | D)``.

    Parameters
    ----------
    search_or_averager : fitted EvidenceSearch or BayesianModelAverager
        The models to compare.
    ax : array-like of 2 matplotlib Axes, default=None
        Where to draw the two panels; by default a new figure.

    Returns
    -------
    axes : ndarray of 2 matplotlib Axes
        The log Bayes factor and posterior probability panels.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression, EvidenceSearch
    >>> from skevidence.plotting import plot_model_posterior
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2))
    >>> y = X @ [1.0, -0.5] + rng.normal(size=300)
    >>> search = EvidenceSearch(EvidenceLinearRegression(n_particles=32, random_state=0),
    ...                         {"prior_std": [0.1, 1.0, 10.0]}).fit(X, y)
    >>> axes = plot_model_posterior(search)
    >>> len(axes)
    2
    """
    labels, log_evidence, stds, probability = _model_posterior_table(search_or_averager)
    log_evidence = np.asarray(log_evidence, dtype=float)
    axes = _axes(ax, 1, 2, figsize=(9, 3.5))
    positions = np.arange(len(labels))
    yerr = None if stds is None else np.asarray(stds, dtype=float)
    axes[0].bar(positions, log_evidence - log_evidence.max(), yerr=yerr, capsize=3)
    axes[0].set_ylabel("log Bayes factor vs best")
    axes[1].bar(positions, probability)
    axes[1].set_ylabel("posterior probability")
    axes[1].set_ylim(0, 1)
    for a in axes:
        a.set_xticks(positions)
        a.set_xticklabels(labels, rotation=45 if len(labels) > 4 else 0, ha="right"
                          if len(labels) > 4 else "center")
    return axes


def plot_shifts(estimator, ax=None, **kwargs):
    """Draw the surprise of every chunk of a stream and the shifts detected.

    The surprise of :func:`skevidence.shifts.shift_scores` against the
    observations seen before each chunk, the threshold and the shifts.

    Parameters
    ----------
    estimator : fitted estimator or Pipeline
        Anything with ``evidence_trace_``, fitted in stream order, or a
        pipeline whose last step has one.
    ax : matplotlib Axes, default=None
        Where to draw; by default a new figure.
    **kwargs
        ``threshold`` and ``window``, passed to
        :func:`~skevidence.shifts.shift_scores`.

    Returns
    -------
    ax : matplotlib Axes
        The panel drawn.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from skevidence import EvidenceLinearRegression
    >>> from skevidence.plotting import plot_shifts
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(1500, 1))
    >>> y = X[:, 0] + rng.normal(size=1500)
    >>> reg = EvidenceLinearRegression(n_particles=32, batch_size=250, random_state=0)
    >>> ax = plot_shifts(reg.fit(X, y))
    >>> ax.get_ylabel()
    'surprise (std)'
    """
    from .shifts import shift_scores

    scores = shift_scores(estimator, **kwargs)
    if ax is None:
        _, ax = _pyplot().subplots(figsize=(6, 3))
    # Each chunk's surprise at its start, where a shift in it is reported.
    ax.plot(scores["start"], scores["surprise"], "o-", markersize=3, label="surprise")
    ax.axhline(scores["threshold"], linestyle="--", color="gray", linewidth=1, label="threshold")
    for i, shift in enumerate(scores["shifts"]):
        ax.axvline(shift, color="C3", linewidth=1.5, label="shift detected" if i == 0 else None)
    ax.set_xlabel("observations seen n")
    ax.set_ylabel("surprise (std)")
    ax.legend(loc="best", fontsize="small")
    return ax
