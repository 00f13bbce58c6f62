"""Accuracy and speed of EvidenceLinearRegression against the exact evidence.

The paper's setting, streamed to ``partial_fit`` in blocks of ten chunks; ``--dynesty``
adds static nested sampling on the same data.
"""

import time

import numpy as np

from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_linear_regression
from _harness import LINEAR_PAPER, arguments
from bench_peers import Linear, nested_sampling


def stream(reg, X, y, block):
    """Feed ``(X, y)`` in blocks; return the seconds each block took."""
    seconds = []
    for start in range(0, X.shape[0], block):
        t = time.perf_counter()
        reg.partial_fit(X[start : start + block], y[start : start + block])
        seconds.append(time.perf_counter() - t)
    return np.array(seconds)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--sizes", nargs="+", type=float, default=[1e4, 1e5, 1e6])
    parser.add_argument("--seeds", type=int, default=1, help="data seeds 0..seeds-1")
    parser.add_argument("--dynesty", action="store_true", help="add a dynesty column")
    args = parser.parse_args()
    header = (f"{'N':>8} {'seed':>4} {'time s':>7} {'log Z':>13} {'exact':>13} {'error':>7} "
              f"{'ms/chunk@1e4':>12} {'ms/chunk@N':>10} {'ratio':>5}")
    if args.dynesty:
        header += f" {'dynesty':>13} {'+-':>5} {'dyn s':>7} {'speedup':>7}"
    print(header)
    errors = {}
    for N in map(int, args.sizes):
        for seed in range(args.seeds):
            X, y = make_linear_regression(N, random_state=seed)
            reg = EvidenceLinearRegression(random_state=seed, **LINEAR_PAPER)
            block = 10 * reg.batch_size
            seconds, exact = stream(reg, X, y, block), reg.exact_log_evidence(X, y)
            errors.setdefault(N, []).append((err := reg.log_evidence_ - exact, exact))
            early = seconds[min(len(seconds) - 1, 10_000 // block)] / 10 * 1e3
            late = seconds[-1] / 10 * 1e3 if N % block == 0 else np.nan
            line = (f"{N:>8d} {seed:>4d} {seconds.sum():>7.2f} {reg.log_evidence_:>13.3f} "
                    f"{exact:>13.3f} {err:>+7.3f} {early:>12.2f} {late:>10.2f} "
                    f"{late / early:>5.2f}")
            if args.dynesty:
                logz, logzerr, _, dyn_s = nested_sampling(Linear(N, data=(X, y)), seed)
                line += (f" {logz:>13.3f} {logzerr:>5.2f} {dyn_s:>7.1f} "
                         f"{dyn_s / seconds.sum():>7.1f}")
            print(line, flush=True)
    print()
    for N, errs in errors.items():
        errs, exact = np.array(errs).T
        print(f"N={N:>8d}: median |error| {np.median(np.abs(errs)):.3f} nats, "
              f"worst {errs[np.argmax(np.abs(errs))]:+.3f} nats, "
              f"worst relative {np.max(np.abs(errs / exact)):.1e}")


if __name__ == "__main__":
    main()
