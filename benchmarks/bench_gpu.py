"""``device="cuda"`` against the CPU: how fast, how accurate.

The paper's logistic regression and a ``separated`` 3-cluster mixture against the cached
references of ``bench_logistic_stream.py`` and ``bench_gmm_reference.py``.
"""

import json
import os
from functools import partial

import torch

from skevidence import EvidenceGMM, EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from _harness import REFERENCES, Timed, arguments
from bench_gmm_reference import make_clusters


def synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def stored(name, key, field):
    return json.loads((REFERENCES / name).read_text())[key][field]


def logistic_problem(n):
    key = f"data_seed=1 n={n} samples=4000 nu=8 is_seeds=[0, 1]"
    return (*make_logistic_regression(n, random_state=1),
            stored("logistic_stream.json", key, "log_z"), EvidenceLogisticRegression)


def gmm_problem(n):
    ref = stored("gmm_reference.json", f"separated n={n} data_seed=0 draws=20000", "log_evidence")
    return make_clusters(n, "separated", 0), None, ref, partial(EvidenceGMM, n_components=3)


def run_table(args):
    configs = [] if args.no_cpu else [("cpu", "float64", 128)]
    configs += [(args.device, dtype, m) for dtype in args.dtypes for m in args.particles]
    print(f"{'model':>9} {'N':>7} {'device':>6} {'dtype':>7} {'M':>5} {'wall s':>7} "
          f"{'log Z':>13} {'error':>7} {'std':>6}", flush=True)
    for model in args.models:
        for n in (args.logistic_n if model == "logistic" else args.gmm_n):
            X, y, ref, make = (logistic_problem if model == "logistic" else gmm_problem)(n)
            for device, dtype, m in configs:
                est = make(device=device, dtype=dtype, n_particles=m, random_state=args.seed)
                synchronize(device)
                try:
                    with Timed() as t:
                        est.fit(X) if y is None else est.fit(X, y)
                        synchronize(device)
                    z, std = est.log_evidence_, est.log_evidence_std_
                    print(f"{model:>9} {n:>7} {device:>6} {dtype:>7} {m:>5} {t.wall:>7.1f} "
                          f"{z:>13.2f} {z - ref:>+7.2f} {std:>6.2f}", flush=True)
                except Exception as exc:  # noqa: BLE001 -- a failed row, then the next
                    print(f"{model:>9} {n:>7} {device:>6} {dtype:>7} {m:>5} FAILED "
                          f"{type(exc).__name__}: {str(exc)[:200]}", flush=True)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--models", nargs="+", default=["logistic", "gmm"],
                        choices=["logistic", "gmm"])
    parser.add_argument("--logistic-n", type=int, nargs="+", default=[10000],
                        help="10000, 30000, 100000 or 1000000 (the cached references)")
    parser.add_argument("--gmm-n", type=int, nargs="+", default=[20000],
                        help="20000 or 100000 (the cached references)")
    parser.add_argument("--particles", type=int, nargs="+", default=[128, 1024, 4096, 8192])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cpu", action="store_true", help="no CPU row (the defaults)")
    args = parser.parse_args()
    if torch.device(args.device).type == "cuda":
        print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, "
              f"{os.cpu_count()} CPU cores, {torch.get_num_threads()} torch threads", flush=True)
    run_table(args)


if __name__ == "__main__":
    main()
