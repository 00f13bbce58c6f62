"""Error of the evidence against the closed form as ``n_particles`` shrinks.

Linear regression on the paper's data (5 features, noise std 1), N = 2000,
for a range of particle counts and data/sampler seeds. It measures the floor
below which ``_check_params`` warns (``_MIN_RELIABLE_PARTICLES`` in
``skevidence/_base.py``).

    OMP_NUM_THREADS=1 python benchmarks/bench_n_particles.py
    OMP_NUM_THREADS=1 python benchmarks/bench_n_particles.py --sizes 2000 --seeds 0 1 2

Columns: n_particles, the error (estimate - exact, nats) for every seed,
the median absolute error and the mean wall time of a fit.
"""

import argparse
import time
import warnings

import numpy as np

from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_linear_regression


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--particles", type=int, nargs="+",
                        default=[1, 2, 4, 8, 16, 32, 64, 128])
    args = parser.parse_args()
    data = [make_linear_regression(args.n, random_state=s) for s in args.seeds]
    print(f"linear regression, N = {args.n}, seeds {args.seeds} (error = estimate - exact, nats)")
    print(f"{'n_particles':>11} | " + " ".join(f"{'seed ' + str(s):>10}" for s in args.seeds)
          + f" | {'median |err|':>12} | {'time (s)':>8}")
    for m in args.particles:
        errors, seconds = [], []
        for seed, (X, y) in zip(args.seeds, data):
            reg = EvidenceLinearRegression(n_particles=m, random_state=seed)
            exact = reg.exact_log_evidence(X, y)
            t = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    reg.fit(X, y)
                    errors.append(reg.log_evidence_ - exact)
                except (FloatingPointError, ValueError) as exc:
                    print(f"  n_particles={m} seed={seed}: {type(exc).__name__}: {exc}")
                    errors.append(np.nan)
            seconds.append(time.perf_counter() - t)
        errs = " ".join(f"{e:>10.2f}" for e in errors)
        print(f"{m:>11} | {errs} | {np.nanmedian(np.abs(errors)):>12.2f} | "
              f"{np.mean(seconds):>8.2f}", flush=True)


if __name__ == "__main__":
    main()
