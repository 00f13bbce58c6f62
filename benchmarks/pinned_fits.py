"""A fixed set of seeded fits whose numbers pin the engine's behaviour.

Run it before and after a change of the engine: where the random stream is unchanged
the engine's log evidence and std (``diagnostics_["annealing_log_evidence"]`` where
there is one) must be bit-identical, and the CPU time no larger::

    python benchmarks/pinned_fits.py --out before.json
    python benchmarks/pinned_fits.py --out after.json --compare before.json
    python benchmarks/pinned_fits.py --only linear-1e4 method-ais
"""

import json
import pathlib
import platform
import subprocess
from datetime import date

import numpy as np
from sklearn.datasets import load_digits
from sklearn.preprocessing import StandardScaler

import skevidence
from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import (make_gaussian_mixture, make_linear_regression,
                                 make_logistic_regression)
from _harness import LINEAR_PAPER, Timed, arguments

SEED, DATA_SEED = 0, 1  # sampler seed of every fit, the data of the paper's reference runs
METHODS = ("sgais", "ais", "smc", "nested", "sequential", "sequential-nested", "online-nested")


def _digits_012():
    X, y = load_digits(return_X_y=True)
    keep = y < 3
    return StandardScaler().fit_transform(X[keep]), y[keep]


def fits():
    """Name -> (estimator factory, data factory)."""
    def case(cls, make, n):
        return lambda: cls(random_state=SEED), lambda: make(n, random_state=DATA_SEED)

    linear, logistic = EvidenceLinearRegression, EvidenceLogisticRegression
    cases = {"linear-1e4": case(linear, make_linear_regression, 10_000),
             "linear-1e5": case(linear, make_linear_regression, 100_000),
             "logistic-1e3": case(logistic, make_logistic_regression, 1000),
             "logistic-1e4": case(logistic, make_logistic_regression, 10_000)}
    cases["mixture-4e3"] = (lambda: EvidenceGMM(n_components=5, random_state=SEED),
                            lambda: (make_gaussian_mixture(4000, random_state=DATA_SEED), None))
    cases["digits-012"] = (lambda: logistic(random_state=SEED), _digits_012)
    for method in METHODS:  # the paper's linear model (known unit noise)
        cases[f"method-{method}"] = (
            lambda method=method: linear(method=method, random_state=SEED, **LINEAR_PAPER),
            lambda: make_linear_regression(2000, random_state=DATA_SEED))
    return cases


def run_one(make_estimator, make_data):
    X, y = make_data()
    est = make_estimator()
    try:
        with Timed() as t:
            est.fit(X, y) if y is not None else est.fit(X)
    except (FloatingPointError, ValueError) as exc:  # a pinned failure is a result too
        return {"log_evidence": float("nan"), "log_evidence_std": float("nan"),
                "cpu_s": round(t.cpu, 2), "warnings": [f"{type(exc).__name__}: {exc}"[:80]]}
    # The engine's numbers: the annealing's estimate, where log_evidence_ combines it.
    diag = getattr(est, "diagnostics_", {})
    annealed = diag.get("annealing_log_evidence", float("nan"))
    engine = (annealed, diag["annealing_log_evidence_std"]) if np.isfinite(annealed) else (
        est.log_evidence_, est.log_evidence_std_)
    return {"log_evidence": float(engine[0]), "log_evidence_std": float(engine[1]),
            "reported": float(est.log_evidence_), "reported_std": float(est.log_evidence_std_),
            "cpu_s": round(t.cpu, 2), "warnings": t.warnings}


def main():
    parser = arguments(__doc__)
    parser.add_argument("--only", nargs="+", metavar="FIT", help="run only these fits")
    parser.add_argument("--out", help="write the results as JSON")
    parser.add_argument("--compare", help="an earlier --out file to compare against")
    args, cases = parser.parse_args(), fits()
    names = args.only or list(cases)
    if set(names) - set(cases):
        parser.error(f"unknown fits {sorted(set(names) - set(cases))}; known: {sorted(cases)}")
    before = json.loads(pathlib.Path(args.compare).read_text())["fits"] if args.compare else {}
    header = {"command": "python benchmarks/pinned_fits.py", "date": date.today().isoformat(),
              "commit": subprocess.run(
                  ["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                  text=True).stdout.strip() or "unknown", "version": skevidence.__version__,
              "cpu": platform.processor() or platform.machine()}
    print(f"# {header}")
    print(f"{'fit':<26}{'log Z':>14}{'std':>8}{'CPU s':>8}" +
          (f"{'d log Z':>12}{'d std':>10}{'CPU ratio':>10}" if before else ""))
    results = {}
    for name in names:
        res = results[name] = run_one(*cases[name])
        line = (f"{name:<26}{res['log_evidence']:>14.4f}{res['log_evidence_std']:>8.3f}"
                f"{res['cpu_s']:>8.1f}")
        if (old := before.get(name)) is not None:
            line += (f"{res['log_evidence'] - old['log_evidence']:>12.2e}"
                     f"{res['log_evidence_std'] - old['log_evidence_std']:>10.2e}"
                     f"{res['cpu_s'] / max(old['cpu_s'], 1e-9):>10.2f}")
        if res["warnings"]:
            line += "  " + ",".join(res["warnings"])
        print(line, flush=True)
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({"header": header, "fits": results}, indent=1))
    if before:
        same = [n for n in results if n in before and all(  # NaN pins NaN
            a == b or np.isnan(a) and np.isnan(b) for a, b in
            ((results[n][k], before[n][k]) for k in ("log_evidence", "log_evidence_std")))]
        print(f"# bit-identical: {len(same)} of {len([n for n in results if n in before])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
