"""Model choice by evidence: does EvidenceGMM rank the true number of components first?

Data: N draws of a 3-component 2-D Gaussian mixture (one data set per
seed); candidates: EvidenceGMM with 1..6 components (sampler seed = data
seed). The issue's bar: 3 components ranked first for at least 4 of 5 seeds.

    python benchmarks/bench_gmm_model_choice.py --seeds 0 1 2 3 4
"""

import argparse
import time

import numpy as np
import torch

from skevidence import EvidenceGMM

CENTERS = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]])
SCALES = np.array([[1.0, 1.0], [0.7, 0.7], [1.3, 1.3]])
WEIGHTS = np.array([0.3, 0.3, 0.4])


def make_three_clusters(n, seed):
    rng = np.random.default_rng(seed)
    z = rng.choice(3, size=n, p=WEIGHTS)
    return CENTERS[z] + SCALES[z] * rng.standard_normal((n, 2))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--max-components", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ks = list(range(1, args.max_components + 1))
    columns = " ".join(f"{'K=' + str(k):>11}" for k in ks)
    print(f"{'seed':>4} {columns} {'best':>5} {'time s':>7}")
    hits = 0
    for seed in args.seeds:
        X = make_three_clusters(args.n, seed)
        start = time.perf_counter()
        logz = [EvidenceGMM(n_components=k, random_state=seed).fit(X).log_evidence_ for k in ks]
        best = ks[int(np.argmax(logz))]
        hits += best == 3
        print(f"{seed:>4} " + " ".join(f"{z:>11.2f}" for z in logz)
              + f" {best:>5} {time.perf_counter() - start:>7.1f}", flush=True)
    print(f"3 components ranked first for {hits} of {len(args.seeds)} seeds")


if __name__ == "__main__":
    main()
