"""The estimators with their defaults on public real data, as a user fits them.

``diabetes``, ``diamonds``, ``nass`` (Rdatasets), ``housing`` (the California census
blocks with their ocean-proximity category) and ``adult`` (UCI census incomes), the
CSVs downloaded to ``--data-dir`` when missing, against the closed form or importance
sampling at the mode.
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
from bench_highdim import annealed_reference, posterior, posterior_moments
from bench_logistic_stream import importance_sampling

RDATASETS = "https://vincentarelbundock.github.io/Rdatasets/csv"
HOUSING = "https://raw.githubusercontent.com/ageron/handson-ml2/master/datasets/housing/housing.csv"
ADULT = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/adult.data"
ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital",
                 "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
                 "hours_per_week", "country", "income"]


def _csv(args, url, **read):
    path = os.path.join(args.data_dir, os.path.basename(url))
    if not os.path.exists(path):
        os.makedirs(args.data_dir, exist_ok=True)
        urllib.request.urlretrieve(url, path)
    return pd.read_csv(path, **read)


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
    frame = _csv(args, f"{RDATASETS}/ggplot2/diamonds.csv").drop(columns="rownames")
    y = frame.pop("price").to_numpy(float)
    return "linear", _encoded(frame, ["cut", "color", "clarity"]), frame, \
        np.log(y) if log_price else y


def nass(args):
    frame = _csv(args, f"{RDATASETS}/DAAG/nassCDS.csv").dropna(subset=["yearVeh"])
    y = (frame["dead"] == "dead").to_numpy(int)
    columns = ["dvcat", "airbag", "seatbelt", "frontal", "sex", "ageOFocc", "yearVeh", "occRole",
               "deploy"]
    return "logistic", _encoded(frame, ["dvcat", "airbag", "seatbelt", "sex", "occRole"]), \
        frame[columns], y


def housing(args):
    """Median house values of 20,433 blocks; one of the five proximities has 5 rows."""
    frame = _csv(args, HOUSING).dropna()
    y = frame.pop("median_house_value").to_numpy(float)
    return "linear", _encoded(frame, ["ocean_proximity"]), frame, np.log(y)


def adult(args):
    """Income over 50K for 30,162 complete records; 41 countries, one with a single row,
    and ``education_num`` a function of ``education`` (exactly collinear)."""
    frame = _csv(args, ADULT, names=ADULT_COLUMNS, skipinitialspace=True,
                 na_values="?").dropna()
    y = (frame.pop("income") == ">50K").to_numpy(int)
    return "logistic", _encoded(frame, ["workclass", "education", "marital", "occupation",
                                        "relationship", "race", "sex", "country"]), frame, y


DATA = {"diabetes": lambda a: diabetes(a, 1.0), "diabetes-x1000": lambda a: diabetes(a, 1000.0),
        "diamonds": lambda a: diamonds(a, False), "diamonds-log": lambda a: diamonds(a, True),
        "nass": nass, "housing": housing, "adult": adult}
ESTIMATORS = {"linear": EvidenceLinearRegression, "logistic": EvidenceLogisticRegression}


def reference(kind, Z, y, n_draws=20_000, healthy=100):
    """The exact log evidence of the default prior on ``Z``; importance sampling from a t
    at the mode, or AIS from the posterior's moments where that has fewer than
    ``healthy`` effective draws (rare categories: coefficients that a few rows shape)."""
    if kind == "linear":
        return EvidenceLinearRegression().exact_log_evidence(Z, y), "exact"
    (a, se_a, ess_a, _), (b, se_b, ess_b, _) = (
        importance_sampling(Z, y, len(np.unique(y)), n_samples=n_draws, seed=s) for s in (0, 1))
    if min(ess_a, ess_b) * n_draws >= healthy:
        return 0.5 * (a + b), f"IS {a:.2f}+-{se_a:.2f}, {b:.2f}+-{se_b:.2f}, ESS {ess_a:.0%}"
    Xs, yt, post = posterior(Z, y)
    mode = post.mode()
    mean, cov = posterior_moments(post.model, Xs, yt, mode, post.precision(mode))
    log_z, se, ess, _ = annealed_reference(post.model, Xs, yt, mean, cov)
    return log_z, f"AIS +-{se:.2f}, ESS {ess:.0%} (IS: {a:.2f}, {b:.2f}, ESS {ess_a:.1%})"


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
