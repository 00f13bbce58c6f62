"""Streams of a million observations: total time and cost per chunk along the stream.

Each model is fed its paper data set in ``--blocks`` equal ``partial_fit``
calls: linear regression (known noise, exact evidence), the paper's logistic
model (error against the Laplace approximation at the mode) and the paper's
mixture (paper priors, no reference). Columns: wall and CPU seconds, CPU
seconds per 1e5 observations and annealing steps per chunk over the first
and last tenth of the stream, log Z and its error. ``--parts`` adds the CPU
seconds of each decade by part (warm-up, SGHMC, control-variate refreshes,
folds, mode searches, checks, other), each exclusive of the parts nested in
it; ``--options`` passes estimator parameters as a dict literal.
"""

import ast
import contextlib
import functools
import math
import os
import time

import numpy as np
import torch

from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence import _trust
from skevidence.datasets import (
    make_gaussian_mixture,
    make_linear_regression,
    make_logistic_regression,
)
from skevidence.inference import moves, sgais
from _harness import GMM_PAPER, LINEAR_PAPER, arguments
from bench_logistic_stream import LogisticPosterior


def logistic_laplace(X, y, n_classes):
    """Laplace approximation of the paper's logistic evidence (Newton to the mode)."""
    post = LogisticPosterior(X, y, n_classes)
    return post.laplace(post.mode(n_newton=30))


def setup(name, n, options=None):
    """(estimator, data tuple, partial_fit kwargs, reference or None)."""
    options = {"random_state": 0, **(options or {})}
    if name == "linear":
        X, y = make_linear_regression(n, random_state=0)
        est = EvidenceLinearRegression(**{**LINEAR_PAPER, **options})
        return est, (X, y), {}, lambda: est.exact_log_evidence(X, y)
    if name == "logistic":
        X, y = make_logistic_regression(n, random_state=1)
        classes = np.unique(y)
        est = EvidenceLogisticRegression(**options)
        return est, (X, y), {"classes": classes}, lambda: logistic_laplace(X, y, len(classes))
    X = make_gaussian_mixture(n, random_state=1)
    return EvidenceGMM(**{**GMM_PAPER, **options}), (X,), {}, None


# --parts: (label, owners, name) of the functions timed; sgais calls the moves
# by the names it imported, so both modules' names are replaced.
PARTS = [("warm-up", (moves, sgais), "exact_move"), ("sghmc", (moves, sgais), "sghmc_move"),
         ("cv refresh", (sgais,), "refresh_reference"), ("folds", (sgais,), "fold_in_importance"),
         ("search", (sgais,), "move_to_missed_mode"),
         ("checks", (_trust.TrustDiagnosticsMixin,), "_posterior_gap")]


@contextlib.contextmanager
def timed_parts(seconds):
    """Add each part's CPU seconds, exclusive of the parts nested in it, to ``seconds[label]``."""
    nested = [0.0]  # seconds of the timed calls inside the current one

    def timed(label, f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            outer, nested[0] = nested[0], 0.0
            start = time.process_time()
            try:
                return f(*args, **kwargs)
            finally:
                spent = time.process_time() - start
                seconds[label] = seconds.get(label, 0.0) + spent - nested[0]
                nested[0] = outer + spent
        return wrapper

    saved = [(owner, name, getattr(owner, name)) for _, owners, name in PARTS for owner in owners]
    wrapped = {name: timed(label, getattr(owners[0], name)) for label, owners, name in PARTS}
    for owner, name, _ in saved:
        setattr(owner, name, wrapped[name])
    try:
        yield
    finally:
        for owner, name, f in saved:
            setattr(owner, name, f)


def stream(est, data, kwargs, n_blocks, parts=None):
    """CPU and wall seconds of each block fed to ``partial_fit``, and the block ends;
    ``parts``, a list, gets each block's seconds per part (:func:`timed_parts`)."""
    n = len(data[0])
    block = max(est.batch_size, n // n_blocks // est.batch_size * est.batch_size)
    cpu, wall, ends = [], [], []
    for start in range(0, n, block):
        part = tuple(a[start : start + block] for a in data)
        c, w = time.process_time(), time.perf_counter()
        seconds = {}
        with timed_parts(seconds) if parts is not None else contextlib.nullcontext():
            est.partial_fit(*part, **kwargs)
        cpu.append(time.process_time() - c)
        wall.append(time.perf_counter() - w)
        ends.append(min(start + block, n))
        if parts is not None:
            parts.append(seconds)
    return np.array(cpu), np.array(wall), np.array(ends)


def print_parts(cpu, ends, parts):
    """CPU seconds per decade of the stream, in all and per part."""
    labels = [label for label, _, _ in PARTS] + ["other"]
    print(f"{'rows to':>9} {'CPU s':>7} " + " ".join(f"{label:>10}" for label in labels))
    lo = 0
    for hi in sorted({10 ** math.ceil(math.log10(e)) for e in ends}):
        mask = (ends > lo) & (ends <= hi)
        total = cpu[mask].sum()
        sums = [sum(p.get(label, 0.0) for p, m in zip(parts, mask) if m) for label in labels[:-1]]
        row = sums + [total - sum(sums)]
        print(f"{min(hi, ends[-1]):>9d} {total:>7.1f} " + " ".join(f"{x:>10.1f}" for x in row))
        lo = hi


def per_1e5(cpu, ends, lo, hi):
    """CPU seconds per 1e5 observations over the blocks ending in ``(lo, hi]``."""
    starts = np.concatenate([[0], ends[:-1]])
    mask = (ends > lo) & (ends <= hi)
    return cpu[mask].sum() / max((ends[mask] - starts[mask]).sum(), 1) * 1e5


def main():
    parser = arguments(__doc__)
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--models", nargs="+", default=["linear", "logistic", "gmm"],
                        choices=["linear", "logistic", "gmm"])
    parser.add_argument("--blocks", type=int, default=100, help="partial_fit calls per stream")
    parser.add_argument("--parts", action="store_true",
                        help="print the CPU seconds of each decade of the stream, by part")
    parser.add_argument("--options", default="{}",
                        help="estimator parameters for every model (a Python dict literal)")
    args = parser.parse_args()
    options = ast.literal_eval(args.options)
    n = int(args.n)
    print(f"load average at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs), "
          f"torch threads {torch.get_num_threads()}", flush=True)
    print(f"{'model':>9} {'N':>8} {'wall s':>7} {'CPU s':>7} {'CPU s/1e5 first':>15} "
          f"{'last':>6} {'steps first':>11} {'last':>5} {'log Z':>13} {'error':>9} "
          f"{'rel. error':>10}", flush=True)
    for name in args.models:
        est, data, kwargs, reference = setup(name, n, options)
        parts = [] if args.parts else None
        cpu, wall, ends = stream(est, data, kwargs, args.blocks, parts)
        first, last = per_1e5(cpu, ends, 0, n / 10), per_1e5(cpu, ends, 0.9 * n, n)
        trace = est.evidence_trace_
        steps_first = trace["n_annealing_steps"][trace["n_seen"] <= n / 10].mean()
        steps_last = trace["n_annealing_steps"][trace["n_seen"] > 0.9 * n].mean()
        line = (f"{name:>9} {n:>8d} {wall.sum():>7.1f} {cpu.sum():>7.1f} {first:>15.2f} "
                f"{last:>6.2f} {steps_first:>11.2f} {steps_last:>5.2f} "
                f"{est.log_evidence_:>13.3f}")
        if reference is not None:
            ref = reference()
            err = est.log_evidence_ - ref
            line += f" {err:>+9.3f} {abs(err / ref):>10.1e}"
        print(line, flush=True)
        if parts is not None:
            print_parts(cpu, ends, parts)
    print(f"load average at end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
