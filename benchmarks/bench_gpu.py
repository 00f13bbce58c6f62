"""``device="cuda"`` against the CPU: what runs, how fast, how accurate.

``--smoke``: every estimator and ``method`` on small data on the device
(float32; SGAIS also float64): ``fit``, ``partial_fit``, ``predict`` /
``score``, pickling and the fitted attributes' types, one line each, OK or
the traceback (``--only`` picks cases). Otherwise the table: the paper's
logistic regression and a ``separated`` 3-cluster mixture against the
cached references of ``bench_logistic_stream.py`` and
``bench_gmm_reference.py``, per device, dtype and particle count: wall
seconds (the device synchronised), log Z minus the reference, the std.
"""

import io
import json
import os
import pathlib
import pickle
import sys
import traceback

import numpy as np
import torch
from sklearn.datasets import load_iris
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import (BayesianModelAverager, EvidenceGMM, EvidenceLinearRegression,
                        EvidenceLogisticRegression, EvidenceSearch, log_evidence)
from skevidence.datasets import make_linear_regression, make_logistic_regression
from skevidence.models import LinearRegressionModel
from _harness import Timed, arguments
from bench_gmm_reference import make_clusters

REFERENCES = pathlib.Path(__file__).parent / "references"
METHODS = ["sgais", "ais", "smc", "nested", "sequential", "sequential-nested", "online-nested"]


def synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


def smoke_cases(device, dtype):
    """(name, callable) pairs; each callable raises if something is wrong."""
    Xr, yr = make_linear_regression(400, random_state=0)
    Xc, yc = load_iris(return_X_y=True)
    Xm = make_clusters(200, "separated", 0)
    common = {"device": device, "dtype": dtype, "random_state": 0}

    def check_fitted(est):
        z, s = est.log_evidence_, est.log_evidence_std_
        assert isinstance(z, float) and np.isfinite(z), f"log_evidence_ = {z!r}"
        assert isinstance(s, float) and np.isfinite(s), f"log_evidence_std_ = {s!r}"
        clone = pickle.loads(pickle.dumps(est))
        assert clone.log_evidence_ == z
        return est

    def linear(method):
        est = EvidenceLinearRegression(method=method, n_particles=64, **common).fit(Xr, yr)
        check_fitted(est)
        pred = est.predict(Xr[:5])
        assert isinstance(pred, np.ndarray) and pred.shape == (5,), type(pred)
        est.score(Xr, yr)
        if method in ("sgais", "sequential"):
            est.partial_fit(Xr[:50], yr[:50])
            check_fitted(est)

    def logistic(method):
        pipe = make_pipeline(StandardScaler(), EvidenceLogisticRegression(
            method=method, n_particles=64, **common)).fit(Xc, yc)
        check_fitted(pipe[-1])
        proba = pipe.predict_proba(Xc[:5])
        assert isinstance(proba, np.ndarray) and np.allclose(proba.sum(1), 1.0)
        pipe.score(Xc, yc)

    def gmm(method):
        est = EvidenceGMM(n_components=3, method=method, n_particles=32, **common).fit(Xm)
        check_fitted(est)
        labels = est.predict(Xm[:5])
        assert isinstance(labels, np.ndarray) and labels.shape == (5,)
        est.score_samples(Xm[:5])

    cases = []
    for method in METHODS if dtype == "float32" else METHODS[:1]:
        cases.append((f"linear {method}", lambda m=method: linear(m)))
        cases.append((f"logistic iris {method}", lambda m=method: logistic(m)))
        cases.append((f"gmm {method}", lambda m=method: gmm(m)))

    def growth():
        est = EvidenceLogisticRegression(n_particles=32, max_particles=128, **common)
        check_fitted(est.fit(*make_logistic_regression(3000, random_state=0)))

    def past_warmup():  # the stochastic-gradient phase of each model
        # (8000 rows: past 5000 the logistic chunk's term is subsampled)
        check_fitted(EvidenceLogisticRegression(**common).fit(
            *make_logistic_regression(8000, random_state=0)))
        check_fitted(EvidenceGMM(n_components=3, **common).fit(make_clusters(5000, "separated",
                                                                             0)))
        check_fitted(EvidenceLinearRegression(**common).fit(
            *make_linear_regression(5000, random_state=0)))

    def averager_and_search():
        bma = BayesianModelAverager([
            ("weak", EvidenceLinearRegression(n_particles=32, **common)),
            ("strong", EvidenceLinearRegression(n_particles=32, prior_std=0.1, **common))])
        bma.fit(Xr, yr).predict(Xr[:5])
        EvidenceSearch(EvidenceGMM(n_particles=32, **common),
                       {"n_components": [1, 2, 3]}).fit(Xm)

    def user_model():
        result = log_evidence(LinearRegressionModel(n_features=Xr.shape[1]), Xr, yr,
                              n_particles=64, **common)
        assert np.isfinite(result.log_evidence) and isinstance(result.particles, np.ndarray)

    def reproducible():
        X, y = make_logistic_regression(2000, random_state=0)
        a = EvidenceLogisticRegression(**common).fit(X, y).log_evidence_
        b = EvidenceLogisticRegression(**common).fit(X, y).log_evidence_
        assert a == b, (a, b)

    cases += [("logistic growth", growth), ("past the warm-up, three models", past_warmup),
              ("averager and search", averager_and_search), ("user model", user_model),
              ("same seed, same numbers", reproducible)]
    return cases


def run_smoke(device, dtypes, only=None):
    failures = 0
    for dtype in dtypes:
        for name, case in smoke_cases(device, dtype):
            if only and not any(word in name for word in only):
                continue
            try:
                with Timed() as t:
                    case()
                    synchronize(device)
                messages = sorted({str(w.message)[:80] for w in t.caught})
                note = f"{len(t.caught)} warnings: " + "; ".join(messages)[:200] if t.caught else ""
                print(f"OK   {dtype:>7} {name:<32} {t.wall:6.1f} s {note}", flush=True)
            except Exception as exc:  # noqa: BLE001 -- list every failure, then go on
                failures += 1
                print(f"FAIL {dtype:>7} {name:<32} {type(exc).__name__}: {exc}", flush=True)
                buffer = io.StringIO()
                traceback.print_exc(file=buffer)
                print("     " + buffer.getvalue()[-1500:].replace("\n", "\n     "), flush=True)
    print(f"{failures} failures")
    return failures


def logistic_problem(n):
    X, y = make_logistic_regression(n, random_state=1)
    key = f"data_seed=1 n={n} samples=4000 nu=8 is_seeds=[0, 1]"
    ref = json.loads((REFERENCES / "logistic_stream.json").read_text())[key]["log_z"]
    return X, y, ref, lambda **kw: EvidenceLogisticRegression(**kw)


def gmm_problem(n):
    X = make_clusters(n, "separated", 0)
    key = f"separated n={n} data_seed=0 draws=20000"
    ref = json.loads((REFERENCES / "gmm_reference.json").read_text())[key]["log_evidence"]
    return X, None, ref, lambda **kw: EvidenceGMM(n_components=3, **kw)


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
    parser.add_argument("--smoke", action="store_true", help="the smoke cases, not the table")
    parser.add_argument("--only", nargs="+", help="the smoke cases whose names hold one of these")
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
    if args.smoke:
        sys.exit(1 if run_smoke(args.device, args.dtypes, args.only) else 0)
    run_table(args)


if __name__ == "__main__":
    main()
