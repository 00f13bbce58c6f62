"""Is ``log_evidence_std_`` calibrated? Coverage of the error bar against references.

``--models``: ``linear``, ``logistic``, ``gmm1`` (closed form), ``gmm3ref``
(``bench_gmm_reference.py``'s geometries).
"""

import os
import sys
import time

import numpy as np

from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from _harness import arguments, error_summary

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))


def linear(seed, n=20_000):
    from conftest import paper_linear_data  # the tests' data
    X, y = paper_linear_data(n, seed)
    est = EvidenceLinearRegression(random_state=seed).fit(X, y)
    return est, est.exact_log_evidence(X, y), 0.0


def logistic(seed, n=2000):
    from bench_logistic_stream import importance_sampling
    X, y = make_logistic_regression(n, n_features=3, n_classes=3, random_state=seed)
    est = EvidenceLogisticRegression(random_state=seed).fit(X, y)
    ref, ref_se, _, _ = importance_sampling(X, y, 3, n_samples=20_000, seed=seed)
    return est, ref, ref_se


def gmm1(seed, n=2000):
    X = np.random.default_rng(seed).normal(loc=[1.0, -2.0], scale=[0.5, 2.0], size=(n, 2))
    est = EvidenceGMM(n_components=1, random_state=seed).fit(X)
    return est, est.exact_log_evidence(X), 0.0


def gmm3ref(seed, n=4000):
    from bench_gmm_reference import GEOMETRIES, make_clusters, reference_log_evidence
    X = make_clusters(n, sorted(GEOMETRIES)[seed % len(GEOMETRIES)], seed)
    est = EvidenceGMM(n_components=3, random_state=seed).fit(X)
    ref = reference_log_evidence(X, est._model, n_draws=20_000)
    return est, ref["log_evidence"], ref["std_error"]


# name -> (fit(seed): (estimator, reference, its standard error), N, default runs)
SETTINGS = {"linear": (linear, 20_000, 20), "logistic": (logistic, 2000, 6),
            "gmm1": (gmm1, 2000, 10), "gmm3ref": (gmm3ref, 4000, 9)}


def calibrate(name, runs):
    fit, n, default = SETTINGS[name]
    start, fits = time.perf_counter(), [fit(seed) for seed in range(runs or default)]
    errors = [est.log_evidence_ - ref for est, ref, _ in fits]
    stds = [est.log_evidence_std_ for est, _, _ in fits]
    return dict(model=name, N=n, runs=len(fits), seconds=time.perf_counter() - start,
                mean_std=np.mean(stds), max_ref_se=max(f[2] for f in fits),
                **error_summary(errors, stds))


def main():
    parser = arguments(__doc__)
    parser.add_argument("--models", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--runs", type=int, default=None, help="runs per model (default per model)")
    args = parser.parse_args()
    print(f"{'model':>9} {'N':>6} {'runs':>4} {'cov1':>5} {'cov2':>5} {'std/rms':>7} "
          f"{'mean std':>8} {'rms err':>7} {'bias':>6} {'ref se':>6} {'s':>5}")
    for name in args.models:
        r = calibrate(name, args.runs)
        print(f"{r['model']:>9} {r['N']:>6} {r['runs']:>4} {r['cov1']:>5.2f} {r['cov2']:>5.2f} "
              f"{r['ratio']:>7.2f} {r['mean_std']:>8.3f} {r['rms']:>7.3f} {r['bias']:>6.3f} "
              f"{r['max_ref_se']:>6.3f} {r['seconds']:>5.0f}", flush=True)


if __name__ == "__main__":
    main()
