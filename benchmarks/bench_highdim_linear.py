"""Linear regression with more parameters than half the particles, against the closed form.

On ``diabetes2`` (diabetes with its pairwise products, 65 features) and
``synthP`` (``P`` normal features, ``N`` rows from ``--sizes``), with the
defaults (unknown noise, ``d = P + 2``, the Laplace metric that the design
notes chose over the particles' covariance). Columns: error of
``log_evidence_`` against ``exact_log_evidence``, the reported std, CPU
seconds; then per data set the mean error and the spread over seeds.
"""

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import EvidenceLinearRegression
from _harness import Timed, arguments


def load(name, n):
    if name == "diabetes2":
        X, y = load_diabetes(return_X_y=True)
        poly = PolynomialFeatures(2, include_bias=False).fit_transform(X)
        return StandardScaler().fit_transform(poly), y
    p = int(name.removeprefix("synth"))
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, p))
    return X, X @ (0.3 * rng.standard_normal(p)) + rng.standard_normal(n)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--data", nargs="+", default=["diabetes2", "synth80"])
    parser.add_argument("--sizes", nargs="+", type=float, default=[5000, 20000],
                        help="N of the synthetic data sets (diabetes2 has 442 rows)")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    print(f"{'data':<10} {'N':>6} {'d':>4} {'seed':>4} {'error':>7} {'std':>5} {'CPU s':>6}")
    for name in args.data:
        for n in ([442] if name == "diabetes2" else [int(s) for s in args.sizes]):
            X, y = load(name, n)
            errors = []
            for seed in range(args.seeds):
                with Timed() as t:
                    est = EvidenceLinearRegression(random_state=seed).fit(X, y)
                errors.append(est.log_evidence_ - est.exact_log_evidence(X, y))
                print(f"{name:<10} {len(y):>6} {X.shape[1] + 2:>4} {seed:>4} {errors[-1]:>+7.2f} "
                      f"{est.log_evidence_std_:>5.2f} {t.cpu:>6.1f}", flush=True)
            print(f"{'':<10} {'':>6} {'':>4} {'mean':>4} {np.mean(errors):>+7.2f} "
                  f"sd {np.std(errors, ddof=1):.2f}", flush=True)


if __name__ == "__main__":
    main()
