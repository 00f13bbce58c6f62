"""Every evidence estimator of ``method=`` against the closed form.

Linear regression with each method's defaults. The bar: ``|error| <= max(1, 3 std)``
(``"sequential"`` methods ``max(3, 3 std)``) and ``std < 5``.
"""

from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_linear_regression
from skevidence.inference import ENGINES
from _harness import LINEAR_PAPER, Timed, arguments

FLOOR = {"sequential": 3.0, "sequential-nested": 3.0}


def run(method, X, y, seed, model_kw):
    est = EvidenceLinearRegression(method=method, random_state=seed, **model_kw)
    try:
        with Timed() as t:
            est.fit(X, y)
    except FloatingPointError as exc:
        return None, t.wall, str(exc).split(":")[0]
    return est, t.wall, "; ".join(t.warnings)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--sizes", type=float, nargs="+", default=[2000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--methods", nargs="+", default=list(ENGINES), choices=list(ENGINES))
    parser.add_argument("--model", choices=["paper", "default"], default="paper")
    args = parser.parse_args()
    model_kw = LINEAR_PAPER if args.model == "paper" else {}
    print(f"linear regression, {args.model} model, data seed {args.data_seed}")
    header = (f"{'method':>18} {'N':>6} {'seed':>4} {'log Z':>11} {'std':>6} {'error':>7} "
              f"{'err/std':>7} {'bar':>4} {'seconds':>8} {'x sgais':>7}  notes")
    print(header + "\n" + "-" * len(header))
    for n in map(int, args.sizes):
        X, y = make_linear_regression(n, random_state=args.data_seed)
        exact = EvidenceLinearRegression(**model_kw).exact_log_evidence(X, y)
        for seed in args.seeds:
            base = None
            for method in args.methods:
                est, seconds, notes = run(method, X, y, seed, model_kw)
                base = seconds if method == "sgais" else base
                ratio = f"{seconds / base:7.2f}" if base else f"{'':>7}"
                if est is None:
                    print(f"{method:>18} {n:>6} {seed:>4} {'failed':>11} {'':>6} {'':>7} "
                          f"{'':>7} {'no':>4} {seconds:8.1f} {ratio}  {notes}", flush=True)
                    continue
                err, std = est.log_evidence_ - exact, est.log_evidence_std_
                ok = abs(err) <= max(FLOOR.get(method, 1.0), 3 * std) and std < 5
                print(f"{method:>18} {n:>6} {seed:>4} {est.log_evidence_:11.3f} {std:6.3f} "
                      f"{err:+7.3f} {err / std:+7.2f} {'yes' if ok else 'no':>4} "
                      f"{seconds:8.1f} {ratio}  {notes}", flush=True)
        print(f"{'exact':>18} {n:>6} {'':>4} {exact:11.3f}")


if __name__ == "__main__":
    main()
