"""Cost of the first chunk: one chunk of ``batch_size`` against doubling first chunks.

The first ``batch_size`` observations, from the prior, need the most
annealing steps of a fit. ``SGAISConfig.first_chunk_size=16`` (opt-in;
the default ``None`` is one chunk) adds them in chunks that double
(boundaries 31, 62, 125, 250, 500), where the warm-up's exact moves make
each step cost in proportion to the data seen. This script fits the paper's logistic model at N = 1e3 and
linear regression at N = 1e4 both ways, back to back in one process, and
prints the time of the first 500 observations and of the whole fit (wall
and process CPU time: on a machine shared with other jobs the CPU time of
a single-threaded run is the steadier of the two), the error against the
reference (importance sampling for the logistic model, the closed form
for linear regression) and the annealing steps, then the ratios
one-chunk / doubling.

    OMP_NUM_THREADS=1 python benchmarks/bench_first_chunk.py
    OMP_NUM_THREADS=1 python benchmarks/bench_first_chunk.py --seeds 4 --models logistic
"""

import argparse
import time

import numpy as np

from skevidence import EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import make_linear_regression, make_logistic_regression

# Importance-sampling reference of make_logistic_regression(1000,
# random_state=1) (benchmarks/bench_logistic.py, README table).
LOGISTIC_1E3_REFERENCE = -629.39




def timed_fit(est, X, y, first_kwargs):
    """Fit the first 500 rows, then the rest; wall and CPU seconds of both."""
    wall, cpu = time.perf_counter(), time.process_time()
    est.partial_fit(X[:500], y[:500], **first_kwargs)
    first = (time.perf_counter() - wall, time.process_time() - cpu)
    est.partial_fit(X[500:], y[500:])
    return first, (time.perf_counter() - wall, time.process_time() - cpu)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=2, help="sampler seeds 0..seeds-1")
    parser.add_argument("--models", nargs="+", default=["logistic", "linear"])
    args = parser.parse_args()
    print(f"{'model':>8} {'N':>6} {'seed':>4} {'chunks':>8} {'first s':>8} {'cpu':>6} "
          f"{'total s':>8} {'cpu':>6} {'error':>7} {'steps':>5}", flush=True)
    for name in args.models:
        if name == "logistic":
            X, y = make_logistic_regression(1000, random_state=1)
            cls, first_kwargs = EvidenceLogisticRegression, {"classes": np.unique(y)}
            reference = LOGISTIC_1E3_REFERENCE
        else:
            X, y = make_linear_regression(10_000, random_state=1)
            cls, first_kwargs = EvidenceLinearRegression, {}
            reference = None
        ratios = {"first wall": [], "first cpu": [], "total wall": [], "total cpu": []}
        for seed in range(args.seeds):
            times = {}
            for label, size in [("one", None), ("doubling", 16)]:
                est = cls(random_state=seed, engine_options={"first_chunk_size": size})
                first, total = timed_fit(est, X, y, first_kwargs)
                times[label] = first + total
                if reference is None:
                    reference = est.exact_log_evidence(X, y)
                steps = int(est.evidence_trace_["n_annealing_steps"].sum())
                print(f"{name:>8} {X.shape[0]:>6} {seed:>4} {label:>8} {first[0]:>8.2f} "
                      f"{first[1]:>6.2f} {total[0]:>8.2f} {total[1]:>6.2f} "
                      f"{est.log_evidence_ - reference:>+7.2f} {steps:>5}", flush=True)
            for key, a, b in zip(ratios, times["one"], times["doubling"]):
                ratios[key].append(a / b)
        print(f"{name}: one chunk / doubling chunks, mean over seeds: "
              + ", ".join(f"{k} {np.mean(v):.2f}x" for k, v in ratios.items()), flush=True)


if __name__ == "__main__":
    main()
