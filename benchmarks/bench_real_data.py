"""The estimators with their defaults on public real data, as a user fits them.

``diabetes``, ``diamonds`` and ``nass`` (the Rdatasets CSVs, downloaded to ``--data-dir``
when missing) against the closed form or importance sampling at the mode.
"""

import os
import urllib.request

import numpy as np
import pandas as pd
from sklearn.compose import make_column_transformer
from sklearn.datasets import load_diabetes
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from skevidence import EvidenceLinearRegression, EvidenceLogisticRegression
from _harness import Timed, arguments
from bench_logistic_stream import importance_sampling

RDATASETS = "https://vincentarelbundock.github.io/Rdatasets/csv"


def _csv(args, package, name):
    path = os.path.join(args.data_dir, f"{name}.csv")
    if not os.path.exists(path):
        os.makedirs(args.data_dir, exist_ok=True)
        urllib.request.urlretrieve(f"{RDATASETS}/{package}/{name}.csv", path)
    return pd.read_csv(path)


def _encoded(frame, categorical):
    """One-hot ``categorical`` (first level dropped), then every column standardised."""
    return make_pipeline(
        make_column_transformer((OneHotEncoder(drop="first", sparse_output=False), categorical),
                                remainder="passthrough"),
        StandardScaler())


def diabetes(args, scale):
    X, y = load_diabetes(return_X_y=True)
    return "linear", StandardScaler(), X, scale * y


def diamonds(args, log_price):
    frame = _csv(args, "ggplot2", "diamonds").drop(columns="rownames")
    y = frame.pop("price").to_numpy(float)
    return "linear", _encoded(frame, ["cut", "color", "clarity"]), frame, \
        np.log(y) if log_price else y


def nass(args):
    frame = _csv(args, "DAAG", "nassCDS").dropna(subset=["yearVeh"])
    y = (frame["dead"] == "dead").to_numpy(int)
    columns = ["dvcat", "airbag", "seatbelt", "frontal", "sex", "ageOFocc", "yearVeh", "occRole",
               "deploy"]
    return "logistic", _encoded(frame, ["dvcat", "airbag", "seatbelt", "sex", "occRole"]), \
        frame[columns], y


DATA = {"diabetes": lambda a: diabetes(a, 1.0), "diabetes-x1000": lambda a: diabetes(a, 1000.0),
        "diamonds": lambda a: diamonds(a, False), "diamonds-log": lambda a: diamonds(a, True),
        "nass": nass}
ESTIMATORS = {"linear": EvidenceLinearRegression, "logistic": EvidenceLogisticRegression}


def reference(kind, Z, y):
    """The exact or importance-sampling log evidence of the default prior on ``Z``."""
    if kind == "linear":
        return EvidenceLinearRegression().exact_log_evidence(Z, y), "exact"
    (a, se_a, ess_a, _), (b, se_b, ess_b, _) = (
        importance_sampling(Z, y, len(np.unique(y)), n_samples=20_000, seed=s) for s in (0, 1))
    return 0.5 * (a + b), f"IS {a:.2f}+-{se_a:.2f}, {b:.2f}+-{se_b:.2f}, ESS {ess_a:.0%}"


def main():
    parser = arguments(__doc__)
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--seeds", type=int, default=3, help="sampler seeds 0..seeds-1")
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "data"))
    args = parser.parse_args()
    print(f"{'data':<15} {'rows':>6} {'seed':>4} {'log Z':>12} {'error':>7} {'std':>5} "
          f"{'alone':>7} {'std':>5} {'CPU s':>6}  warnings")
    for name in args.data:
        kind, prep, X, y = DATA[name](args)
        Z = prep.fit_transform(X)
        ref, how = reference(kind, Z, y)
        print(f"{name:<15} {len(y):>6} {'ref':>4} {ref:>12.2f}  ({how}; {Z.shape[1]} columns)",
              flush=True)
        errors, stds = [], []
        for seed in range(args.seeds):
            pipe = make_pipeline(prep, ESTIMATORS[kind](random_state=seed))
            try:
                with Timed() as t:
                    pipe.fit(X, y)
            except FloatingPointError as error:
                print(f"{name:<15} {len(y):>6} {seed:>4}  failed: {str(error)[:70]}")
                continue
            est = pipe[-1]
            errors.append(est.log_evidence_ - ref)
            stds.append(est.log_evidence_std_)
            alone = est.diagnostics_["annealing_log_evidence"] - ref
            print(f"{name:<15} {len(y):>6} {seed:>4} {est.log_evidence_:>12.2f} "
                  f"{errors[-1]:>+7.2f} {stds[-1]:>5.2f} {alone:>+7.2f} "
                  f"{est.diagnostics_['annealing_log_evidence_std']:>5.2f} "
                  f"{t.cpu:>6.1f}  {' '.join(t.warnings) or '-'}", flush=True)
        if len(errors) > 1:
            errors = np.array(errors)
            print(f"{name:<15} RMS error {np.sqrt(np.mean(errors**2)):.2f}, SD over seeds "
                  f"{errors.std(ddof=1):.2f}, mean std {np.mean(stds):.2f}", flush=True)


if __name__ == "__main__":
    main()
