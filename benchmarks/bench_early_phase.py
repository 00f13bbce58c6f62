"""Where the early phase of a fit spends its time, per model (n <= 1e5).

Fits a model with the default settings (``random_state=0``) and wraps, from
outside the package, the parts of the SGAIS loop
(``skevidence.inference.sgais``) to count and time them per chunk:

* ``incr``     tempering-increment search (``next_increment``) + reweighting
* ``lik_w``    the chunk's likelihood for the weights (``_chunk_log_likelihood``)
* ``exact``    Metropolis-adjusted warm-up moves (``moves.exact_move``)
* ``prep``     the warm-up's per-move copies of chunk and store (``_cast_batch``,
  ``prepare_batch``, ``prepare_move_batch``)
* ``sghmc``    SGHMC moves (``sghmc_move`` outside its warm-up branch)
* ``cv``       control-variate refreshes and per-chunk gradient sums
* ``prec``     preconditioner (covariance / curvature Cholesky, ``posterior_scale``)
* ``resmp``    resampling, particle growth/shrink, divergence repair
* ``rest``     wall time of the chunk minus the parts above (Python overhead,
  the loop's bookkeeping, the data store)

Each part is timed exclusive of the parts nested in it (e.g. the
preconditioner inside a move counts once, under ``prec``). Model calls
(``log_likelihood``, ``log_likelihood_sum``, ``grad_log_likelihood``,
``log_likelihood_and_grad``, ``log_joint_and_grad``: the exact moves'
call, outermost call only) are counted with the
observation rows they evaluate (each call covers all particles), and
their time is shown as ``model``, which is already part of the section
that made the call; ``s/chk`` is wall seconds per chunk. Counts:
annealing ``steps``; moves ``exact`` (warm-up), ``sghmc`` and ``skip``
(chunks taken without a move); model ``evals`` and the observation
``rows`` they evaluated, in millions.
The wrappers change no numbers: a wrapped fit gives the log evidence of an
unwrapped one to the last digit (checked: linear and mixture, N = 1200).

Chunks are grouped into phases: the first chunk; the rest of the warm-up
(``warmup_size``: 1000, 2000 for the mixture); the warm-up's end to 1e4;
1e4 to 1e5. ``--csv`` writes one row per chunk.

    python benchmarks/bench_early_phase.py                       # three models, N = 1e4
    python benchmarks/bench_early_phase.py --models logistic --n 100000 --time-cap 170
    python benchmarks/bench_early_phase.py --models gmm --csv gmm_chunks.csv

Threads are torch's defaults, as a user runs. ``--time-cap`` stops a model
after the chunk that passes it (the table then ends there).

Results
-------
2026-11-25, commit 2b0bf26 (the engine is main's bb7ec3f), a 2-core AMD
EPYC shared with other jobs, one process per model, back to back. The
counts are deterministic (an earlier run gave the same); wall and CPU
seconds are not: an earlier, more contended run of the same commands gave
linear 5.6 s, mixture 75 s (warm-up 24 s, SGHMC 49 s) and logistic 153 s
wall / 114 s CPU (warm-up 11 s). The logistic model's first 1e4 rows are
in its 1e5 table.

    # python benchmarks/bench_early_phase.py --models linear --csv /tmp/r_linear.csv
    # 2026-11-25 10:59 UTC, commit 2b0bf26, AMD EPYC, 2 CPUs
    # torch 2.13.0+cpu (2 threads), numpy 2.4.6, skevidence 0.1.0, Python 3.11.7

    ## linear, N = 10000: fit 4.23 s wall, 2.59 s CPU

    linear: counts per phase
    phase              to n chunks  steps  exact  sghmc skip  evals  rows M steps/chunk
    first chunk         500      1     43     43      0    0   1807    0.90        43.0
    warm-up to 1000    1000      1      7      7      0    0    583    0.29         7.0
    1000 .. 1e4       10000     18     56      0     55    1   2398    1.83         3.1
    total             10000     20    106     50     55    1   4788    3.03         5.3

    linear: wall seconds per phase by part (legend in the docstring)
    phase              wall    cpu  incr lik_w exact  prep sghmc    cv  prec resmp  rest model s/chk
    first chunk        1.71   1.05  0.10  0.06  1.45  0.04  0.00  0.00  0.02  0.04  0.00  0.47  1.71
    warm-up to 1000    0.37   0.22  0.02  0.01  0.33  0.01  0.00  0.01  0.00  0.00  0.00  0.17  0.37
    1000 .. 1e4        2.04   1.24  0.09  0.06  0.00  0.00  1.78  0.04  0.02  0.04  0.01  1.14  0.11
    total              4.12   2.51  0.20  0.13  1.78  0.05  1.78  0.04  0.04  0.09  0.01  1.78  0.21
    wall share >= 1%: incr 5%, lik_w 3%, exact 43%, prep 1%, sghmc 43%, cv 1%, resmp 2%, model 43%
    model-call seconds by part: lik_w 0.11, exact 0.58, sghmc 1.06, cv 0.03

    # python benchmarks/bench_early_phase.py --models gmm --time-cap 170 --csv /tmp/r_gmm.csv
    # 2026-11-25 11:00 UTC, commit 2b0bf26, AMD EPYC, 2 CPUs
    # torch 2.13.0+cpu (2 threads), numpy 2.4.6, skevidence 0.1.0, Python 3.11.7

    ## gmm, N = 10000: fit 71.70 s wall, 63.34 s CPU

    gmm: counts per phase
    phase              to n chunks  steps  exact  sghmc skip  evals  rows M steps/chunk
    first chunk         500      1     47     47      0    0   1975    0.99        47.0
    warm-up to 2000    2000      3     32     32      0    0   2661    1.86        10.7
    2000 .. 1e4       10000     16     75      0     75    0   3244    2.42         4.7
    total             10000     20    154     79     75    0   7880    5.27         7.7

    gmm: wall seconds per phase by part (legend in the docstring)
    phase              wall    cpu  incr lik_w exact  prep sghmc    cv  prec resmp  rest model s/chk
    first chunk       12.18   9.45  0.11  0.20 11.80  0.01  0.00  0.00  0.02  0.03  0.00  9.16 12.18
    warm-up to 2000   19.66  16.07  0.06  0.11 19.37  0.01  0.00  0.07  0.03  0.02  0.00 17.46  6.55
    2000 .. 1e4       39.59  37.58  0.16  0.29  0.00  0.00 38.51  0.52  0.05  0.05  0.01 37.39  2.47
    total             71.42  63.10  0.33  0.60 31.17  0.02 38.51  0.59  0.10  0.10  0.02 64.00  3.57
    wall share >= 1%: exact 44%, sghmc 54%, model 90%
    model-call seconds by part: lik_w 0.56, exact 26.25, sghmc 36.60, cv 0.58

    # python benchmarks/bench_early_phase.py --models logistic --n 100000 --time-cap 170 \
    #     --csv /tmp/r_logistic.csv
    # 2026-11-25 11:01 UTC, commit 2b0bf26, AMD EPYC, 2 CPUs
    # torch 2.13.0+cpu (2 threads), numpy 2.4.6, skevidence 0.1.0, Python 3.11.7

    ## logistic, N = 100000: fit 107.49 s wall, 106.11 s CPU

    logistic: counts per phase
    phase              to n chunks  steps  exact  sghmc skip  evals  rows M steps/chunk
    first chunk         500      1     56     56      0    0   2353    1.18        56.0
    warm-up to 1000    1000      1     18     18      0    0   1496    0.75        18.0
    1000 .. 1e4       10000     18    118      0    118    0   5106    3.85         6.6
    1e4 .. 1e5       100000    180    425      0    423    2  18408   14.50         2.4
    total            100000    200    617     74    541    2  27363   20.28         3.1

    logistic: wall seconds per phase by part (legend in the docstring)
    phase              wall    cpu  incr lik_w exact  prep sghmc    cv  prec resmp  rest model s/chk
    first chunk        4.09   4.08  0.10  0.13  3.78  0.02  0.00  0.00  0.03  0.03  0.00  3.02  4.09
    warm-up to 1000    1.95   1.95  0.02  0.04  1.87  0.01  0.00  0.00  0.01  0.01  0.00  1.65  1.95
    1000 .. 1e4       23.61  23.29  0.33  0.32  0.00  0.00 22.72  0.03  0.10  0.08  0.02 20.22  1.31
    1e4 .. 1e5        76.11  75.08  0.52  1.01  0.00  0.00 73.68  0.30  0.28  0.22  0.10 65.80  0.42
    total            105.76 104.39  0.97  1.49  5.65  0.02 96.40  0.33  0.42  0.34  0.13 90.68  0.53
    wall share >= 1%: lik_w 1%, exact 5%, sghmc 91%, model 86%
    model-call seconds by part: lik_w 1.41, exact 4.51, sghmc 84.45, cv 0.31

Reading: after the warm-up each annealing step is one SGHMC move of
``n_burnin = 20`` leapfrog steps, each evaluating the chunk (500 rows at
128 particles) and a control-variate mini-batch (1000 rows at the 128
particles and at the reference(s): 1 shared, or 128 per-particle ones for
the mixture); a warm-up move is 40 Metropolis-adjusted steps over the
chunk and the whole store. Model calls are 86-90% of the logistic and
mixture fits (43% for the small linear model, whose warm-up kernel spends
2/3 of its time in small torch ops). The increment search and reweighting,
the weights' likelihood, the preconditioner, resampling, control-variate
refreshes, batch copies and the loop's overhead are 1-3% for the logistic
model and the mixture, 13% for linear regression.

* logistic, first 1e5: SGHMC moves 91% (96 of 106 s; 541 moves, of which
  423 between 1e4 and 1e5, where chunks still take 2.4 steps and only 2 of
  180 are skipped); the exact warm-up 5%.
* mixture, first 1e4: exact warm-up 44% (31 s; 12 s the first chunk's 47
  steps), SGHMC 54% (39 s; 75 moves); the warm-up runs to 2000.
* linear, first 1e4: warm-up 43%, SGHMC 43%, the rest 13%.
"""

import argparse
import ast
import csv
import datetime
import os
import platform
import subprocess
import sys
import time
from collections import defaultdict

import numpy as np
import torch

import skevidence
from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import (make_gaussian_mixture, make_linear_regression,
                                 make_logistic_regression)
from skevidence.inference import moves, preconditioning, sgais
from skevidence.inference.control_variates import ControlVariate
from skevidence.models.base import batch_size_of

SECTIONS = ("search", "lik(w)", "exact", "prep", "sghmc", "cv", "precond", "resample")
MODEL_CALLS = ("log_likelihood", "log_likelihood_sum", "grad_log_likelihood",
               "log_likelihood_and_grad", "log_joint_and_grad")


def make_fit(name, n):
    """Estimator and data of model ``name`` at ``n`` observations."""
    if name == "linear":
        X, y = make_linear_regression(n, random_state=1)
        return EvidenceLinearRegression(random_state=0), X, y
    if name == "logistic":
        X, y = make_logistic_regression(n, random_state=1)
        return EvidenceLogisticRegression(random_state=0), X, y
    X = make_gaussian_mixture(n, random_state=1)
    X = X[0] if isinstance(X, tuple) else X
    return EvidenceGMM(n_components=5, random_state=0), X, None


class Profile:
    """Exclusive wall time per section (a stack), counters, per-chunk records."""

    def __init__(self):
        self.stack, self.chunks = [], []
        self.reset_chunk()

    def reset_chunk(self):
        self.seconds = defaultdict(float)
        self.model_seconds = defaultdict(float)  # by the section that called
        self.counts = defaultdict(int)
        self.in_model = False

    def section(self, name, fn):
        """``fn`` timed under ``name``, its nested sections subtracted."""
        def timed(*args, **kwargs):
            start = time.perf_counter()
            self.stack.append([name, 0.0])  # time spent in nested sections
            try:
                return fn(*args, **kwargs)
            finally:
                nested = self.stack.pop()[1]
                total = time.perf_counter() - start
                self.seconds[name] += total - nested
                if self.stack:
                    self.stack[-1][1] += total
        return timed

    def model_call(self, fn):
        """A model method counted (outermost call only) with the rows it evaluates."""
        def counted(theta, batch, *args, **kwargs):
            if self.in_model:
                return fn(theta, batch, *args, **kwargs)
            self.in_model = True
            start = time.perf_counter()
            try:
                return fn(theta, batch, *args, **kwargs)
            finally:
                caller = self.stack[-1][0] if self.stack else "rest"
                self.model_seconds[caller] += time.perf_counter() - start
                self.counts["evals"] += 1
                self.counts["rows"] += _rows_of(batch)
                self.in_model = False
        return counted

    def counter(self, key, fn, when=lambda result: True):
        def counted(*args, **kwargs):
            result = fn(*args, **kwargs)
            self.counts[key] += bool(when(result))
            return result
        return counted


def _rows_of(batch):
    """Observations a model call evaluates (a summary's count: its rows are not stored)."""
    if len(batch) == 0:  # summary statistics (linear regression's exact moves)
        return int(batch.stats["n"])  # a tempered summary counts lam times the chunk
    return batch_size_of(batch)


def instrument(profile, est, time_cap):
    """Wrap the loop's parts (module globals) and the estimator's model; returns an undo."""
    saved = []

    def patch(owner, name, wrapper):
        saved.append((owner, name, getattr(owner, name)))
        setattr(owner, name, wrapper(getattr(owner, name)))

    sec = profile.section
    patch(sgais, "next_increment", lambda f: sec("search", f))
    patch(sgais, "_reweight", lambda f: sec("search", f))
    patch(sgais, "_chunk_log_likelihood", lambda f: sec("lik(w)", f))
    for name in ("_resample", "_islands_to_resample", "maybe_grow", "shrink_to_base",
                 "_discard_diverged"):
        patch(sgais, name, lambda f: sec("resample", f))
    patch(sgais, "refresh_reference", lambda f: sec("cv", f))
    patch(ControlVariate, "add_chunk", lambda f: sec("cv", f))
    patch(preconditioning, "preconditioner", lambda f: sec("precond", f))
    patch(moves, "cast_batch", lambda f: sec("prep", f))
    patch(moves, "exact_move", lambda f: profile.counter("exact", sec("exact", f)))
    patch(sgais, "sghmc_move", lambda f: profile.counter("moves", sec("sghmc", f)))
    patch(sgais, "_skips_move", lambda f: profile.counter("skipped", f, lambda r: r))
    patch(sgais, "_condition_on_chunk", lambda f: per_chunk(profile, f, time_cap))
    # On the class: a fit works on a copy of the estimator, which an
    # instance attribute bound to ``est`` would not follow.
    def counted_models(make_model):
        def make_counted_model(self, *args, **kwargs):
            model = make_model(self, *args, **kwargs)
            for name in MODEL_CALLS:
                if hasattr(model, name):  # log_likelihood_sum is newer than some commits
                    setattr(model, name, profile.model_call(getattr(model, name)))
            model.posterior_scale = sec("precond", model.posterior_scale)
            model.prepare_batch = sec("prep", model.prepare_batch)
            if hasattr(model, "prepare_move_batch"):
                model.prepare_move_batch = sec("prep", model.prepare_move_batch)
            return model
        return make_counted_model

    patch(type(est), "_make_model", counted_models)

    def undo():
        for owner, name, original in reversed(saved):
            setattr(owner, name, original)
    return undo


class TimeCap(Exception):
    """The model's ``--time-cap`` passed: stop after the current chunk."""


def per_chunk(profile, condition, time_cap):
    """``_condition_on_chunk`` that appends one record per chunk to ``profile.chunks``."""
    start_all = time.perf_counter()

    def conditioned(model, state, config, chunk, move, callback=None, **kwargs):
        profile.reset_chunk()
        n_before, wall, cpu = state.n_seen, time.perf_counter(), time.process_time()
        info = condition(model, state, config, chunk, move, callback, **kwargs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        c = profile.counts
        profile.chunks.append({
            "n_before": n_before, "size": batch_size_of(chunk),
            "steps": info.n_annealing_steps, "exact_moves": c["exact"],
            "sghmc_moves": c["moves"] - c["exact"], "skipped": c["skipped"],
            "evals": c["evals"], "rows": c["rows"], "wall": wall, "cpu": cpu,
            **{s: profile.seconds[s] for s in SECTIONS},
            "rest": wall - sum(profile.seconds[s] for s in SECTIONS),
            "model_s": sum(profile.model_seconds.values()),
            **{f"model_{s}": profile.model_seconds[s] for s in SECTIONS + ("rest",)},
            "warmup_size": config.warmup_size})
        if time_cap is not None and time.perf_counter() - start_all > time_cap:
            raise TimeCap
        return info
    return conditioned


def phases(chunks):
    """Group the chunk records: first chunk, warm-up, warm-up end .. 1e4, 1e4 .. 1e5, later."""
    warmup = chunks[0]["warmup_size"]
    bounds = [("first chunk", lambda c: c["n_before"] == 0),
              (f"warm-up to {warmup}", lambda c: c["n_before"] < warmup),
              (f"{warmup} .. 1e4", lambda c: c["n_before"] < 10_000),
              ("1e4 .. 1e5", lambda c: c["n_before"] < 100_000),
              ("after 1e5", lambda c: True)]
    groups = defaultdict(list)
    for c in chunks:
        label = next(label for label, test in bounds if test(c))
        groups[label].append(c)
    order = [label for label, _ in bounds if label in groups]
    rows = [(label, groups[label]) for label in order] + [("total", chunks)]
    return [(label, _summed(group)) for label, group in rows]


def _summed(group):
    keys = [k for k in group[0] if k not in ("n_before", "size", "warmup_size")]
    total = {k: sum(c[k] for c in group) for k in keys}
    total.update(chunks=len(group), n_to=group[-1]["n_before"] + group[-1]["size"])
    return total


HEADS = {"search": "incr", "lik(w)": "lik_w", "exact": "exact", "prep": "prep",
         "sghmc": "sghmc", "cv": "cv", "precond": "prec", "resample": "resmp", "rest": "rest"}


def _seconds(x, width=6):
    return f"{x:>{width}.2f}" if x < 10 ** (width - 4) else f"{x:>{width}.1f}"


def print_tables(name, chunks):
    rows = phases(chunks)
    print(f"\n{name}: counts per phase")
    print(f"{'phase':<16}{'to n':>7}{'chunks':>7}{'steps':>7}{'exact':>7}{'sghmc':>7}"
          f"{'skip':>5}{'evals':>7}{'rows M':>8}{'steps/chunk':>12}")
    for label, r in rows:
        print(f"{label:<16}{r['n_to']:>7}{r['chunks']:>7}{r['steps']:>7}{r['exact_moves']:>7}"
              f"{r['sghmc_moves']:>7}{r['skipped']:>5}{r['evals']:>7}{r['rows'] / 1e6:>8.2f}"
              f"{r['steps'] / r['chunks']:>12.1f}")
    print(f"\n{name}: wall seconds per phase by part (legend in the docstring)")
    cols = SECTIONS + ("rest",)
    print(f"{'phase':<16}{'wall':>7}{'cpu':>7}" + "".join(f"{HEADS[c]:>6}" for c in cols)
          + f"{'model':>6}{'s/chk':>6}")
    for label, r in rows:
        print(f"{label:<16}{r['wall']:>7.2f}{r['cpu']:>7.2f}"
              + "".join(_seconds(r[c]) for c in cols)
              + _seconds(r["model_s"]) + _seconds(r["wall"] / r["chunks"]))
    total = rows[-1][1]
    print("wall share >= 1%: " + ", ".join(
        f"{HEADS.get(c, 'model')} {100 * total[c] / total['wall']:.0f}%"
        for c in cols + ("model_s",) if total[c] >= 0.01 * total["wall"]))
    print("model-call seconds by part: " + ", ".join(
        f"{HEADS[c]} {total['model_' + c]:.2f}" for c in cols if total["model_" + c] > 0.005))


def run_model(name, n, time_cap, engine_options):
    est, X, y = make_fit(name, n)
    est.set_params(engine_options={**(est.engine_options or {}), **engine_options})
    profile = Profile()
    undo = instrument(profile, est, time_cap)
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        est.fit(X) if y is None else est.fit(X, y)
    except TimeCap:
        pass
    finally:
        undo()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    seen = profile.chunks[-1]["n_before"] + profile.chunks[-1]["size"]
    capped = "" if seen >= n else f" (stopped by --time-cap after {seen} observations)"
    print(f"\n## {name}, N = {n}: fit {wall:.2f} s wall, {cpu:.2f} s CPU{capped}")
    return profile.chunks


def header():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=os.path.dirname(os.path.abspath(__file__))).stdout
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if "model name" in line)
    except (OSError, StopIteration):
        pass
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"# {' '.join(['python'] + sys.argv)}")
    print(f"# {now}, commit {commit.strip()}, {cpu}, {os.cpu_count()} CPUs")
    print(f"# torch {torch.__version__} ({torch.get_num_threads()} threads), "
          f"numpy {np.__version__}, skevidence {skevidence.__version__}, "
          f"Python {platform.python_version()}")


def write_csv(path, records):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["model"] + list(records[0][1]))
        writer.writeheader()
        for name, chunk in records:
            writer.writerow({"model": name, **chunk})


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["linear", "logistic", "gmm"],
                        choices=["linear", "logistic", "gmm"])
    parser.add_argument("--n", type=float, default=1e4, help="observations (up to 1e5)")
    parser.add_argument("--time-cap", type=float, default=None, help="seconds per model")
    parser.add_argument("--csv", help="write one row per chunk here")
    parser.add_argument("--engine", default="{}",
                        help="engine settings for every model (a Python dict literal)")
    args = parser.parse_args()
    header()
    records = []
    for name in args.models:
        chunks = run_model(name, int(args.n), args.time_cap, ast.literal_eval(args.engine))
        print_tables(name, chunks)
        records += [(name, c) for c in chunks]
    if args.csv:
        write_csv(args.csv, records)


if __name__ == "__main__":
    main()
