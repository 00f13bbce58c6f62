"""Shared pieces of the paper's experiments: its three models, the methods, the table writers."""

import csv
import math
import os
import sys
import time
from pathlib import Path

import matplotlib
import torch

matplotlib.use("Agg")  # the figures are files

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# The benchmark scripts one level up hold the paper settings and references.
sys.path.insert(0, str(HERE.parent))

from skevidence import (EvidenceGMM, EvidenceLinearRegression,  # noqa: E402
                        EvidenceLogisticRegression)
from skevidence.datasets import (make_gaussian_mixture, make_linear_regression,  # noqa: E402
                                 make_logistic_regression)
from _harness import GMM_PAPER, LINEAR_PAPER, caught_warnings  # noqa: E402

# Where the committed figures and tables go (the docs page includes them).
OUTDIR = ROOT / "docs" / "paper"

# Methods in the order of the tables; SGAIS first (the estimators' default).
METHODS = ("sgais", "ais", "nested", "smc", "sequential", "sequential-nested", "online-nested")
# Methods whose estimate for the first n observations is a by-product of a run over more:
# one run streams the largest N (as the paper did for SGAIS); AIS and NS refit at every N.
ONLINE_METHODS = ("sgais", "smc", "sequential", "sequential-nested", "online-nested")

MODELS = {
    "linear": (EvidenceLinearRegression, LINEAR_PAPER,
               lambda n: make_linear_regression(n, random_state=1)),
    "logistic": (EvidenceLogisticRegression, {},
                 lambda n: make_logistic_regression(n, random_state=1)),
    "gmm": (EvidenceGMM, GMM_PAPER,
            lambda n: (make_gaussian_mixture(n, n_components=5, random_state=1), None)),
}


def single_thread():
    """One torch thread: the timings are the paper's single-threaded ones."""
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)


def method_status(cls, method):
    """``"available"``, or why ``cls`` does not accept ``method`` (its parameter check)."""
    try:
        cls(method=method)._validate_params()
    except (ValueError, TypeError):
        return f"not available ({cls.__name__} does not accept method={method!r})"
    return "available"


def make_estimator(cls, method, params, random_state=0, **overrides):
    return cls(**dict(params, random_state=random_state, method=method, **overrides))


def fit_timed(est, X, y, clock=time.process_time, how="fit", **kwargs):
    """``est.fit`` (or ``how``): CPU seconds (single-threaded runs), the warnings' texts."""
    with caught_warnings() as caught:
        t = clock()
        getattr(est, how)(*((X,) if y is None else (X, y)), **kwargs)
        seconds = clock() - t
    return seconds, [str(w.message)[:120] for w in caught]


def std_of(est):
    return float(getattr(est, "log_evidence_std_", math.nan))


def fmt(value, spec):
    """``format(value, spec)``, or an empty cell for None / NaN."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return value if isinstance(value, str) else format(value, spec)


def write_table(rows, columns, stem, formats):
    """Write ``rows`` (dicts) as ``OUTDIR/stem.csv`` and ``.md`` with the ``formats``
    (column -> spec; the CSV keeps the printed rounding); print the markdown."""
    OUTDIR.mkdir(parents=True, exist_ok=True)
    cells = [[fmt(row.get(c), formats.get(c, "")) for c in columns] for row in rows]
    with open(OUTDIR / f"{stem}.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([columns] + cells)
    widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(columns, widths)) + " |",
             "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    lines += ["| " + " | ".join(v.ljust(w) for v, w in zip(r, widths)) + " |" for r in cells]
    text = "\n".join(lines)
    (OUTDIR / f"{stem}.md").write_text(text + "\n")
    print(text, flush=True)


def save_figure(fig, stem):
    OUTDIR.mkdir(parents=True, exist_ok=True)
    path = OUTDIR / f"{stem}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight", metadata={"Software": None})
    print(f"wrote {path.relative_to(ROOT)}", flush=True)


def command_line():
    """The command that produced the outputs, for the tables' footers."""
    script = Path(sys.argv[0]).resolve().relative_to(ROOT)
    return f"OMP_NUM_THREADS=1 python {script} {' '.join(sys.argv[1:])}".strip()
