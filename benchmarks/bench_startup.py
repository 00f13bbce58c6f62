"""What the first fit of a process costs, against the fits that follow it.

Each run is a fresh Python process (as a user's script is): it times the
import of skevidence, then the same fit three times. A lazy initialisation
on the first fit shows as a first/later ratio above 1.

    python benchmarks/bench_startup.py                  # linear 1e4, 3 processes
    python benchmarks/bench_startup.py --model logistic --n 1000 --runs 5

Columns: process, import seconds, wall seconds of fits 1-3, and fit 1 over
the mean of fits 2-3.
"""

import argparse
import json
import subprocess
import sys

CHILD = r"""
import json, sys, time
t = time.perf_counter()
import skevidence
from skevidence import EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import make_linear_regression, make_logistic_regression
import_s = time.perf_counter() - t
model, n = sys.argv[1], int(sys.argv[2])
make = make_linear_regression if model == "linear" else make_logistic_regression
Est = EvidenceLinearRegression if model == "linear" else EvidenceLogisticRegression
X, y = make(n, random_state=1)
fits = []
for _ in range(3):
    t = time.perf_counter()
    Est(random_state=0).fit(X, y)
    fits.append(time.perf_counter() - t)
print(json.dumps({"import": import_s, "fits": fits}))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("linear", "logistic"), default="linear")
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh processes")
    args = parser.parse_args()
    print(f"# {args.model}, N = {args.n}, wall seconds, default threads")
    print(f"{'process':>8}{'import':>8}{'fit 1':>8}{'fit 2':>8}{'fit 3':>8}{'1st/later':>11}")
    for run in range(args.runs):
        out = subprocess.run([sys.executable, "-c", CHILD, args.model, str(args.n)],
                             capture_output=True, text=True, check=True).stdout
        res = json.loads(out.strip().splitlines()[-1])
        f1, f2, f3 = res["fits"]
        print(f"{run:>8}{res['import']:>8.2f}{f1:>8.2f}{f2:>8.2f}{f3:>8.2f}"
              f"{f1 / ((f2 + f3) / 2):>11.2f}", flush=True)


if __name__ == "__main__":
    main()
