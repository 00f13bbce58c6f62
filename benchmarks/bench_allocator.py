"""Does glibc's allocator churn on the engine's working memory?

With glibc's default thresholds, freed memory at the top of the heap goes
back to the operating system and is faulted in again at the next step; a
hot path that allocates many large temporaries then spends its time in
page faults. skevidence leaves the allocator alone; this benchmark runs
each fit in a fresh process twice, with glibc's defaults and with the
thresholds raised through glibc's own environment variables (which is how
a user opts in), and prints the CPU seconds and minor page faults of each.

    python benchmarks/bench_allocator.py
    python benchmarks/bench_allocator.py --cases logistic:3000 mixture:4000 --repeats 2

Columns: case, allocator, CPU seconds of the fit, minor page faults of the
fit, and the CPU ratio of defaults over raised thresholds (near 1: no
churn worth tuning for).
"""

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time, warnings
warnings.simplefilter("ignore")
from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import (make_gaussian_mixture, make_linear_regression,
                                 make_logistic_regression)
model, n = sys.argv[1], int(float(sys.argv[2]))
if model == "logistic":
    X, y = make_logistic_regression(n, random_state=1)
    est = EvidenceLogisticRegression(random_state=0)
elif model == "mixture":
    X, y = make_gaussian_mixture(n, random_state=1), None
    est = EvidenceGMM(n_components=5, random_state=0)
else:
    X, y = make_linear_regression(n, random_state=1)
    est = EvidenceLinearRegression(random_state=0)
before, t = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time()
est.fit(X, y)
print(json.dumps({"cpu": time.process_time() - t, "log_z": est.log_evidence_,
                  "faults": resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before}))
"""

RAISED = {"MALLOC_TRIM_THRESHOLD_": str(64 << 20), "MALLOC_MMAP_THRESHOLD_": str(16 << 20)}


def run(model, n, raised):
    env = {k: v for k, v in os.environ.items() if k not in RAISED}
    if raised:
        env.update(RAISED)
    out = subprocess.run([sys.executable, "-c", CHILD, model, str(n)], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+",
                        default=["logistic:3000", "logistic:20000", "mixture:4000",
                                 "linear:100000"])
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(f"{'case':<16} {'allocator':<18} {'CPU s':>7} {'faults':>10}  defaults/raised")
    for case in args.cases:
        model, n = case.split(":")
        cpu = {False: 0.0, True: 0.0}
        for _ in range(args.repeats):
            for raised in (False, True):  # alternate, so load drifts hit both
                r = run(model, n, raised)
                cpu[raised] += r["cpu"]
                label = "raised thresholds" if raised else "glibc defaults"
                print(f"{case:<16} {label:<18} {r['cpu']:7.1f} {r['faults']:10d}", flush=True)
        print(f"{case:<16} {'':<18} {'':>7} {'':>10}  {cpu[False] / cpu[True]:.2f}")


if __name__ == "__main__":
    main()
