"""EvidenceLinearRegression with its defaults on real data whose y has units.

``load_diabetes`` as a new user would fit it: ``make_pipeline(StandardScaler(),
EvidenceLinearRegression())`` on a 70% split, raw ``y`` and ``y x 1000``
(``--paper`` adds the paper's unit-scale model). First table, per sampler
seed and scale: wall and CPU seconds, log Z, the exact value, the
difference, the coverage of the 95% predictive intervals on the held-out
rows, test R^2 against ``BayesianRidge``, annealing steps, and
``log Z + n log c`` (the Jacobian of the units removed). Second table: a
few feature subsets' evidence at both scales and their ranks.
"""

import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import BayesianRidge
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLinearRegression
from _harness import LINEAR_PAPER, arguments

SCALES = [1.0, 1000.0]
SUBSETS = {
    "all 10": None,
    "bmi bp s5": ["bmi", "bp", "s5"],
    "bmi bp s1 s5": ["bmi", "bp", "s1", "s5"],
    "bmi s5": ["bmi", "s5"],
    "bmi": ["bmi"],
    "age sex": ["age", "sex"],
}


def fit_and_score(X_tr, y_tr, X_te, y_te, seed, **params):
    pipe = make_pipeline(StandardScaler(), EvidenceLinearRegression(random_state=seed, **params))
    start, cpu_start = time.perf_counter(), time.process_time()
    pipe.fit(X_tr, y_tr)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    reg = pipe[-1]
    mean, std = pipe.predict(X_te, return_std=True)
    exact = reg.exact_log_evidence(pipe[0].transform(X_tr), y_tr)
    return {
        "seconds": seconds,
        "cpu": cpu,
        "log_z": reg.log_evidence_,
        "exact": exact,
        "coverage": float(np.mean(np.abs(y_te - mean) <= 1.96 * std)),
        "r2": pipe.score(X_te, y_te),
        "steps": int(reg.evidence_trace_["n_annealing_steps"].sum()),
    }


def main():
    parser = arguments(__doc__)
    parser.add_argument("--seeds", type=int, default=3, help="sampler seeds 0..seeds-1")
    parser.add_argument("--paper", action="store_true",
                        help="also fit the paper's unit-scale model (about a minute)")
    args = parser.parse_args()

    data = load_diabetes(as_frame=True)
    X, y = data.data, data.target.to_numpy()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    n = len(y_tr)

    print(f"diabetes: n_train {n}, n_test {len(y_te)}, sd(y) {y.std():.1f}")
    print(f"{'model':>8} {'y x':>6} {'seed':>4} {'fit s':>6} {'cpu s':>6} {'log Z':>11} "
          f"{'exact':>11} {'error':>7} {'logZ+nlogc':>10} {'cover95':>7} {'R2':>6} "
          f"{'R2 BR':>6} {'steps':>5}")
    seconds = {c: [] for c in SCALES}
    cpu_seconds = {c: [] for c in SCALES}
    rows = [("default", c, {}) for c in SCALES]
    if args.paper:
        rows.append(("paper", 1.0, LINEAR_PAPER))
    for seed in range(args.seeds):
        for name, c, params in rows:
            r = fit_and_score(X_tr, c * y_tr, X_te, c * y_te, seed, **params)
            bayes_ridge = make_pipeline(StandardScaler(), BayesianRidge()).fit(X_tr, c * y_tr)
            r2_br = bayes_ridge.score(X_te, c * y_te)
            if name == "default":
                seconds[c].append(r["seconds"])
                cpu_seconds[c].append(r["cpu"])
            print(f"{name:>8} {c:>6g} {seed:>4d} {r['seconds']:>6.2f} {r['cpu']:>6.2f} "
                  f"{r['log_z']:>11.3f} {r['exact']:>11.3f} {r['log_z'] - r['exact']:>+7.3f} "
                  f"{r['log_z'] + n * np.log(c):>10.3f} {r['coverage']:>7.3f} "
                  f"{r['r2']:>6.3f} {r2_br:>6.3f} {r['steps']:>5d}", flush=True)
    ratio = np.median(seconds[SCALES[-1]]) / np.median(seconds[SCALES[0]])
    cpu_ratio = np.median(cpu_seconds[SCALES[-1]]) / np.median(cpu_seconds[SCALES[0]])
    print(f"median fit time, y x {SCALES[-1]:g} / y x {SCALES[0]:g}: {ratio:.2f} wall, "
          f"{cpu_ratio:.2f} CPU")

    print()
    print("feature subsets (seed 0; log Z + n log c, estimate / exact):")
    header = f"{'subset':>14}" + "".join(f" {'est y x ' + format(c, 'g'):>13} "
                                          f"{'exact':>10}" for c in SCALES)
    print(header)
    table = {}
    for label, cols in SUBSETS.items():
        Xs = X_tr if cols is None else X_tr[cols]
        Xs = StandardScaler().fit_transform(Xs)
        line = f"{label:>14}"
        for c in SCALES:
            reg = EvidenceLinearRegression(random_state=0).fit(Xs, c * y_tr)
            est = reg.log_evidence_ + n * np.log(c)
            exact = reg.exact_log_evidence(Xs, c * y_tr) + n * np.log(c)
            table[label, c] = (est, exact)
            line += f" {est:>13.3f} {exact:>10.3f}"
        print(line, flush=True)
    for c in SCALES:
        order = sorted(SUBSETS, key=lambda k: -table[k, c][0])
        print(f"ranking by estimate, y x {c:g}: " + " > ".join(order))
    exact_order = sorted(SUBSETS, key=lambda k: -table[k, SCALES[0]][1])
    print("ranking by exact evidence:   " + " > ".join(exact_order))


if __name__ == "__main__":
    main()
