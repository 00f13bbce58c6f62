"""Is ``log_evidence_std_`` calibrated? Coverage of the error bar against references.

Settings (``--models``): ``linear`` (paper's linear regression, N = 2e4,
closed form), ``logistic`` (3 features, 3 classes, N = 2000, importance
sampling from a Laplace-fitted t), ``gmm1`` (one component, closed form),
``gmm3`` (three clusters, no reference: the spread over sampler seeds),
``gmm3ref`` (the geometries of ``bench_gmm_reference.py`` at N = 4000,
against its reference). Columns: coverage of 1 and 2 std, mean std over the
RMS error, the RMS and the mean error.
"""

import os
import sys
import time

import numpy as np
from sklearn.datasets import make_blobs

from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from _harness import arguments, error_summary

# The linear rows' data are the tests' (conftest.paper_linear_data).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

# Engine settings of every fit (--islands sets n_islands).
ENGINE_OPTIONS = {}


def linear(seed, n=20_000):
    from conftest import paper_linear_data
    X, y = paper_linear_data(n, seed)
    est = EvidenceLinearRegression(random_state=seed, engine_options=ENGINE_OPTIONS).fit(X, y)
    return est, est.exact_log_evidence(X, y), 0.0


def logistic(seed, n=2000):
    from bench_logistic_stream import importance_sampling
    X, y = make_logistic_regression(n, n_features=3, n_classes=3, random_state=seed)
    est = EvidenceLogisticRegression(random_state=seed, engine_options=ENGINE_OPTIONS).fit(X, y)
    ref, ref_se, _, _ = importance_sampling(X, y, 3, n_samples=20_000, seed=seed)
    return est, ref, ref_se


def gmm1(seed, n=2000):
    X = np.random.default_rng(seed).normal(loc=[1.0, -2.0], scale=[0.5, 2.0], size=(n, 2))
    est = EvidenceGMM(n_components=1, random_state=seed, engine_options=ENGINE_OPTIONS).fit(X)
    return est, est.exact_log_evidence(X), 0.0


def gmm3(seed, n=2000):
    X, _ = make_blobs(n_samples=n, centers=3, cluster_std=1.0, random_state=0)
    est = EvidenceGMM(n_components=3, random_state=seed, engine_options=ENGINE_OPTIONS).fit(X)
    return est, np.nan, 0.0


def gmm3ref(seed, n=4000):
    from bench_gmm_reference import GEOMETRIES, make_clusters, reference_log_evidence
    X = make_clusters(n, sorted(GEOMETRIES)[seed % len(GEOMETRIES)], seed)
    est = EvidenceGMM(n_components=3, random_state=seed).fit(X)
    ref = reference_log_evidence(X, est._model, n_draws=20_000)
    return est, ref["log_evidence"], ref["std_error"]


SETTINGS = {"linear": (linear, 20_000), "logistic": (logistic, 2000), "gmm1": (gmm1, 2000),
            "gmm3": (gmm3, 2000), "gmm3ref": (gmm3ref, 4000)}
DEFAULT_RUNS = {"linear": 20, "logistic": 6, "gmm1": 10, "gmm3": 6, "gmm3ref": 9}


def calibrate(name, runs, islands):
    fit, n = SETTINGS[name]
    estimates, errors, stds, ref_ses = [], [], [], []
    start = time.perf_counter()
    for seed in range(runs):
        est, ref, ref_se = fit(seed)
        estimates.append(est.log_evidence_)
        errors.append(est.log_evidence_ - ref)
        stds.append(est.log_evidence_std_)
        ref_ses.append(ref_se)
    errors, stds, estimates = np.array(errors), np.array(stds), np.array(estimates)
    row = dict(model=name, N=n, runs=runs, islands=islands, seconds=time.perf_counter() - start,
               mean_std=stds.mean(), max_ref_se=max(ref_ses))
    if np.all(np.isnan(errors)):
        spread = estimates.std(ddof=1)
        row.update(spread=spread, ratio=stds.mean() / spread)
    else:
        row.update(error_summary(errors, stds))
    return row


def main():
    parser = arguments(__doc__)
    parser.add_argument("--models", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--runs", type=int, default=None, help="runs per model (default per model)")
    parser.add_argument("--islands", type=int, default=1,
                        help="particle islands (engine n_islands); 1 = the default estimator")
    args = parser.parse_args()
    ENGINE_OPTIONS["n_islands"] = args.islands
    print(f"{'model':>9} {'N':>6} {'runs':>4} {'isl':>3} {'cov1':>5} {'cov2':>5} {'std/rms':>7} "
          f"{'std/spread':>10} {'mean std':>8} {'rms err':>7} {'bias':>6} {'ref se':>6} {'s':>5}")
    for name in args.models:
        r = calibrate(name, args.runs or DEFAULT_RUNS[name], args.islands)
        fmt = lambda key, spec: format(r[key], spec) if key in r else "-"  # noqa: E731
        ratio_rms = fmt("ratio", ".2f") if "rms" in r else "-"
        ratio_spread = fmt("ratio", ".2f") if "spread" in r else "-"
        print(f"{r['model']:>9} {r['N']:>6} {r['runs']:>4} {r['islands']:>3} "
              f"{fmt('cov1', '.2f'):>5} {fmt('cov2', '.2f'):>5} {ratio_rms:>7} {ratio_spread:>10} {r['mean_std']:>8.3f} "
              f"{fmt('rms', '.3f') if 'rms' in r else fmt('spread', '.3f'):>7} "
              f"{fmt('bias', '.3f'):>6} {r['max_ref_se']:>6.3f} {r['seconds']:>5.0f}", flush=True)


if __name__ == "__main__":
    main()
