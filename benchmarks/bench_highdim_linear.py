"""Linear regression with more parameters than half the particles, against the closed form.

Diabetes with its pairwise products (65 features, ``d = 67``), standardised,
with the defaults (unknown noise, the Laplace metric that the design notes
chose over the particles' covariance). Columns: error of ``log_evidence_``
against ``exact_log_evidence``, the reported std, CPU seconds; then the mean
error and the spread over seeds.
"""

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import PolynomialFeatures, StandardScaler

from skevidence import EvidenceLinearRegression
from _harness import Timed, arguments


def main():
    parser = arguments(__doc__)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    X, y = load_diabetes(return_X_y=True)
    X = StandardScaler().fit_transform(PolynomialFeatures(2, include_bias=False).fit_transform(X))
    print(f"{'d':>4} {'seed':>4} {'error':>7} {'std':>5} {'CPU s':>6}")
    errors = []
    for seed in range(args.seeds):
        with Timed() as t:
            est = EvidenceLinearRegression(random_state=seed).fit(X, y)
        errors.append(est.log_evidence_ - est.exact_log_evidence(X, y))
        print(f"{X.shape[1] + 2:>4} {seed:>4} {errors[-1]:>+7.2f} {est.log_evidence_std_:>5.2f} "
              f"{t.cpu:>6.1f}", flush=True)
    print(f"mean error {np.mean(errors):+.2f}, sd {np.std(errors, ddof=1):.2f}", flush=True)


if __name__ == "__main__":
    main()
