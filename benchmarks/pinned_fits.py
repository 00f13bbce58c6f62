"""A fixed set of seeded fits whose numbers pin the engine's behaviour.

Run it before and after a change of the engine: where the random stream is
unchanged the log evidence and its error bar must be bit-identical, and the
CPU time no larger (within the noise of the machine).

    python benchmarks/pinned_fits.py --out before.json
    python benchmarks/pinned_fits.py --out after.json --compare before.json
    python benchmarks/pinned_fits.py --only linear-1e4 method-ais

Columns: fit, the engine's log evidence and std (the annealing's estimate,
``diagnostics_["annealing_log_evidence"]`` where ``log_evidence_`` combines it
with the importance-sampling check), CPU seconds of the process
(``time.process_time``), and with ``--compare`` the differences against the
earlier run.
"""

import json
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

SEED = 0        # sampler seed of every fit
DATA_SEED = 1   # the data of the paper's reference runs
# The paper's linear model (known unit noise), as in bench_methods.py.
METHODS = ("sgais", "ais", "smc", "nested", "sequential", "sequential-nested",
           "online-nested")


def _digits_012():
    X, y = load_digits(return_X_y=True)
    keep = y < 3
    return StandardScaler().fit_transform(X[keep]), y[keep]


def fits():
    """Name -> (estimator factory, data factory)."""
    cases = {
        "linear-1e4": (lambda: EvidenceLinearRegression(random_state=SEED),
                       lambda: make_linear_regression(10_000, random_state=DATA_SEED)),
        "linear-1e5": (lambda: EvidenceLinearRegression(random_state=SEED),
                       lambda: make_linear_regression(100_000, random_state=DATA_SEED)),
        "logistic-1e3": (lambda: EvidenceLogisticRegression(random_state=SEED),
                         lambda: make_logistic_regression(1000, random_state=DATA_SEED)),
        "logistic-1e4": (lambda: EvidenceLogisticRegression(random_state=SEED),
                         lambda: make_logistic_regression(10_000, random_state=DATA_SEED)),
        "mixture-4e3": (lambda: EvidenceGMM(n_components=5, random_state=SEED),
                        lambda: (make_gaussian_mixture(4000, random_state=DATA_SEED), None)),
        "digits-012": (lambda: EvidenceLogisticRegression(random_state=SEED), _digits_012),
    }
    for method in METHODS:
        cases[f"method-{method}"] = (
            lambda method=method: EvidenceLinearRegression(method=method, random_state=SEED,
                                                           **LINEAR_PAPER),
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
    # The engine's numbers: the annealing's estimate, which log_evidence_ combines
    # with the importance-sampling check where that applies.
    diag = getattr(est, "diagnostics_", {})
    annealed = diag.get("annealing_log_evidence", float("nan"))
    engine = (annealed, diag["annealing_log_evidence_std"]) if np.isfinite(annealed) else (
        est.log_evidence_, est.log_evidence_std_)
    return {"log_evidence": float(engine[0]), "log_evidence_std": float(engine[1]),
            "reported": float(est.log_evidence_), "reported_std": float(est.log_evidence_std_),
            "cpu_s": round(t.cpu, 2), "warnings": t.warnings}


def _same(a, b):
    return a == b or (np.isnan(a) and np.isnan(b))


def _commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = arguments(__doc__)
    parser.add_argument("--only", nargs="+", metavar="FIT", help="run only these fits")
    parser.add_argument("--out", help="write the results as JSON")
    parser.add_argument("--compare", help="an earlier --out file to compare against")
    args = parser.parse_args()

    cases = fits()
    names = args.only or list(cases)
    unknown = sorted(set(names) - set(cases))
    if unknown:
        parser.error(f"unknown fits {unknown}; known: {sorted(cases)}")
    before = {}
    if args.compare:
        with open(args.compare) as fh:
            before = json.load(fh)["fits"]

    header = {"command": "python benchmarks/pinned_fits.py", "date": date.today().isoformat(),
              "commit": _commit(), "version": skevidence.__version__,
              "cpu": platform.processor() or platform.machine()}
    print(f"# {header}")
    print(f"{'fit':<26}{'log Z':>14}{'std':>8}{'CPU s':>8}" +
          (f"{'d log Z':>12}{'d std':>10}{'CPU ratio':>10}" if before else ""))
    results = {}
    for name in names:
        res = results[name] = run_one(*cases[name])
        line = f"{name:<26}{res['log_evidence']:>14.4f}{res['log_evidence_std']:>8.3f}" \
               f"{res['cpu_s']:>8.1f}"
        if name in before:
            old = before[name]
            line += (f"{res['log_evidence'] - old['log_evidence']:>12.2e}"
                     f"{res['log_evidence_std'] - old['log_evidence_std']:>10.2e}"
                     f"{res['cpu_s'] / max(old['cpu_s'], 1e-9):>10.2f}")
        if res["warnings"]:
            line += "  " + ",".join(res["warnings"])
        print(line, flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"header": header, "fits": results}, fh, indent=1)
    if before:
        same = [n for n in results if n in before
                and _same(results[n]["log_evidence"], before[n]["log_evidence"])
                and _same(results[n]["log_evidence_std"], before[n]["log_evidence_std"])]
        print(f"# bit-identical: {len(same)} of {len([n for n in results if n in before])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
