"""``python -m skevidence``: a demo, or ``compare`` to rank models on a CSV file.

Alone, it runs the demo: simulated data from a linear model that uses 2 of
5 features; four candidate models are fitted online by SGAIS and ranked by
log evidence (checked against the exact value, which this model has in
closed form). ``python -m skevidence compare --help`` describes the command
line (:mod:`skevidence._cli`).
"""

import sys
import time

import numpy as np

from skevidence import EvidenceLinearRegression, format_log_evidence
from skevidence._cli import main as cli_main


def _simulate(n_samples=20_000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n_samples, 5))
    y = 1.5 * X[:, 0] - 0.8 * X[:, 1] + 0.3 + rng.standard_normal(n_samples)
    return X, y


def demo():
    X, y = _simulate()
    candidates = {
        "2 features (true)": (EvidenceLinearRegression(random_state=0), [0, 1]),
        "5 features": (EvidenceLinearRegression(random_state=0), [0, 1, 2, 3, 4]),
        "2 features, noise_std=2": (
            EvidenceLinearRegression(noise_std=2.0, random_state=0), [0, 1]),
        "1 feature": (EvidenceLinearRegression(random_state=0), [0]),
    }
    print(f"Linear regression, {X.shape[0]} observations, 5 features of which 2 matter\n")
    print(f"{'model':<26} {'log evidence':>20} {'exact':>12} {'seconds':>8}")
    results = {}
    for name, (est, cols) in candidates.items():
        start = time.perf_counter()
        est.fit(X[:, cols], y)
        elapsed = time.perf_counter() - start
        results[name] = est.log_evidence_
        exact = est.exact_log_evidence(X[:, cols], y)
        estimate = format_log_evidence(est.log_evidence_, est.log_evidence_std_)
        print(f"{name:<26} {estimate:>20} {exact:>12.2f} {elapsed:>8.2f}")
    ranked = sorted(results, key=results.get, reverse=True)
    best, second = ranked[0], ranked[1]
    print(f"\nBest model: {best} "
          f"(log Bayes factor {results[best] - results[second]:.1f} over {second})")


def main(argv=None):
    """The demo without arguments, else the command line; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        demo()
        return 0
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
