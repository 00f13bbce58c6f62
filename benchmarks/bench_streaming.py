"""Cost per chunk along a stream, for every estimator: is it flat in n?

Each estimator is fed its paper data set with ``partial_fit`` in blocks of
10 chunks (5000 observations); the table gives the time per chunk of the
block around n = 1e4 and of the last block, and their ratio (the bar is
1.5). The reference-point refreshes of the control variates (a pass over
the stored data whenever n has doubled) are amortised over the blocks, so
single blocks can be slower than their neighbours.

    python benchmarks/bench_streaming.py                  # N = 1e5
    python benchmarks/bench_streaming.py --n 1000000 --estimators linear
"""

import argparse
import time

import numpy as np
import torch

from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import (
    make_gaussian_mixture,
    make_linear_regression,
    make_logistic_regression,
)

SETUPS = {
    "linear": (EvidenceLinearRegression, lambda n: make_linear_regression(n, random_state=0)),
    "logistic": (EvidenceLogisticRegression,
                 lambda n: make_logistic_regression(n, random_state=1)),
    "gmm": (EvidenceGMM, lambda n: (make_gaussian_mixture(n, random_state=1),)),
}


def block_seconds(estimator, data, block):
    n = len(data[0])
    is_classifier = isinstance(estimator, EvidenceLogisticRegression)
    classes = {"classes": np.unique(data[1])} if is_classifier else {}
    seconds = []
    for start in range(0, n, block):
        part = tuple(a[start:start + block] for a in data)
        t = time.perf_counter()
        estimator.partial_fit(*part, **classes)
        seconds.append(time.perf_counter() - t)
    return np.array(seconds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--estimators", nargs="+", default=list(SETUPS))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{'estimator':>10} {'N':>8} {'total s':>8} {'ms/chunk@1e4':>12} "
          f"{'ms/chunk@N':>10} {'ratio':>6} {'log Z':>13}")
    for name in args.estimators:
        cls, make = SETUPS[name]
        data = make(args.n)
        est = cls(random_state=0)
        block = 10 * est.batch_size
        seconds = block_seconds(est, data, block)
        early = seconds[min(len(seconds) - 1, 10_000 // block)] / 10 * 1e3
        late = seconds[-1] / 10 * 1e3
        print(f"{name:>10} {args.n:>8d} {seconds.sum():>8.1f} {early:>12.1f} {late:>10.1f} "
              f"{late / early:>6.2f} {est.log_evidence_:>13.2f}", flush=True)


if __name__ == "__main__":
    main()
