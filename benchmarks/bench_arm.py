"""Adaptive Resample-Move (``max_particles``): variance of the evidence per CPU second.

Repeated fits over sampler seeds on the same data with a fixed particle
count, with growth up to ``--growth`` times ``n_particles``, and with the
count doubled; the figure of merit is the variance of ``log_evidence_``
over seeds times the mean CPU seconds of a fit, and its ratio to the fixed
count. Models: the paper's logistic regression and a three-component 2-D
mixture (``EvidenceGMM(n_components=3)``).
"""

import time
import warnings

import numpy as np
import torch

from skevidence import EvidenceGMM, EvidenceLogisticRegression
from skevidence.datasets import make_gaussian_mixture, make_logistic_regression
from _harness import arguments


def logistic(n):
    X, y = make_logistic_regression(n, random_state=1)
    return (X, y), lambda **kw: EvidenceLogisticRegression(**kw)


def mixture(n):
    X = make_gaussian_mixture(n, n_components=3, random_state=0)
    return (X,), lambda **kw: EvidenceGMM(n_components=3, **kw)


MODELS = {"logistic": logistic, "mixture": mixture}


def settings(n_particles, growth):
    return [
        ("fixed", dict(n_particles=n_particles)),
        (f"grow to x{growth}", dict(n_particles=n_particles, max_particles=growth * n_particles)),
        ("fixed x2", dict(n_particles=2 * n_particles)),
    ]


def run(make, data, params, seeds):
    values, seconds, peaks = [], [], []
    for seed in seeds:
        start = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = make(random_state=seed, **params).fit(*data)
        seconds.append(time.process_time() - start)
        values.append(est.log_evidence_)
        peaks.append(int(est.evidence_trace_["n_particles"].max()))
    return np.array(values), np.array(seconds), max(peaks)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--n-particles", type=int, default=128)
    parser.add_argument("--growth", type=int, default=4, help="max_particles / n_particles")
    args = parser.parse_args()
    torch.set_num_threads(1)
    seeds = range(args.seeds)
    header = (f"{'model':>9} {'setting':>11} {'runs':>4} {'peak M':>6} {'mean':>10} {'std':>6} "
              f"{'CPU s':>7} {'std^2 x s':>9} {'ratio':>6}")
    print(header)
    print("-" * len(header), flush=True)
    for name in args.models:
        data, make = MODELS[name](args.n)
        baseline = None
        for label, params in settings(args.n_particles, args.growth):
            values, seconds, peak = run(make, data, params, seeds)
            merit = values.std(ddof=1) ** 2 * seconds.mean()
            baseline = merit if baseline is None else baseline
            print(f"{name:>9} {label:>11} {len(values):>4} {peak:>6} {values.mean():>10.2f} "
                  f"{values.std(ddof=1):>6.3f} {seconds.mean():>7.1f} {merit:>9.3f} "
                  f"{merit / baseline:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
