"""EvidenceGMM on the paper's mixture setting against dynesty reference evidences.

The data are the reference files of ``shared/reference`` (2-D, 5 components,
data seed 1; the N = 1e3 file is the first rows of the N = 1e4 one). Larger
N come from the same prefix-consistent recipe (``make_gmm``). The table has
one row per (N, sampler seed): wall time, skevidence's log evidence, the
dynesty reference, and their difference.

    python benchmarks/bench_gmm.py --n 1000 10000 --seeds 0 1 2
    python benchmarks/bench_gmm.py --n 100000 --seeds 0 1 2 3 4
    python benchmarks/bench_gmm.py --n 1000 --dynesty     # also run dynesty

Options of the estimator can be overridden, e.g. ``--param n_particles=256``,
and engine settings with ``--engine precondition=covariance``.
"""

import argparse
import ast
import os
import time

import numpy as np
import torch

from skevidence import EvidenceGMM

# The shared folder beside the repository (see REFERENCE.md there).
REFERENCE_DIR = os.environ.get(
    "SKEVIDENCE_REFERENCE",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "reference"))
# dynesty, static nested sampling, 500 live points (REFERENCE.md).
REFERENCE = {1000: (-4494.94, 0.89), 10000: (-44096.59, 0.30)}


def make_gmm(n, seed=1, k=5, d=2):
    """The reference data recipe (REFERENCE.md), prefix-consistent in ``n``."""
    r_par, r_z, r_eps = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3))
    weights = r_par.dirichlet(np.ones(k))
    variances = 1.0 / r_par.gamma(1.0, 1.0, size=(k, d))
    means = np.sqrt(4.0 * variances) * r_par.standard_normal((k, d))
    u = r_z.random(n)
    z = np.minimum((np.cumsum(weights)[None, :-1] < u[:, None]).sum(1), k - 1)
    return means[z] + np.sqrt(variances[z]) * r_eps.standard_normal((n, d))


def load(n):
    path = os.path.join(REFERENCE_DIR, f"gmm_seed1_N{n}.npz")
    if os.path.exists(path):
        return np.load(path)["X"]
    return make_gmm(n)


def run_dynesty(X, seed):
    import dynesty
    from scipy.special import gammainccinv, logsumexp, ndtri

    k, d = 5, X.shape[1]

    def prior_transform(u):
        v = 1.0 - (1.0 - u[: k - 1]) ** (1.0 / np.arange(k - 1, 0, -1))
        stick = np.cumprod(1.0 - v)
        pi = np.append(v * np.concatenate([[1.0], stick[:-1]]), stick[-1])
        s2 = 1.0 / gammainccinv(1.0, u[k - 1 : k - 1 + k * d])
        mu = np.sqrt(4.0 * s2) * ndtri(u[k - 1 + k * d :])
        return np.concatenate([pi[:-1], mu, s2])

    def loglike(theta):
        pi = np.append(theta[: k - 1], max(1.0 - theta[: k - 1].sum(), 1e-300))
        mu = theta[k - 1 : k - 1 + k * d].reshape(k, d)
        s2 = theta[k - 1 + k * d :].reshape(k, d)
        lp = -0.5 * (((X[:, None, :] - mu) ** 2) / s2 + np.log(2 * np.pi * s2)).sum(-1)
        return float(logsumexp(lp + np.log(pi), axis=1).sum())

    sampler = dynesty.NestedSampler(loglike, prior_transform, (k - 1) + 2 * k * d, nlive=500,
                                    rstate=np.random.default_rng(seed))
    sampler.run_nested(dlogz=0.1, print_progress=False)
    return float(sampler.results.logz[-1])


def parse_assignments(items):
    out = {}
    for item in items or []:
        key, value = item.split("=", 1)
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--param", nargs="*", help="estimator parameter overrides, key=value")
    parser.add_argument("--engine", nargs="*", help="engine setting overrides, key=value")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1 matches dynesty's single-threaded timing)")
    parser.add_argument("--dynesty", action="store_true", help="also run dynesty (slow)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    params = parse_assignments(args.param)
    engine = parse_assignments(args.engine)
    if engine:
        EvidenceGMM._engine_defaults = {**EvidenceGMM._engine_defaults, **engine}
    print(f"params {params} engine {EvidenceGMM._engine_defaults} threads {args.threads}")
    header = f"{'N':>7} {'seed':>4} {'time s':>8} {'log Z':>12} {'reference':>12} {'diff':>8}"
    print(header)
    print("-" * len(header))
    for n in args.n:
        X = load(n)
        ref = REFERENCE.get(n, (np.nan, np.nan))[0]
        for seed in args.seeds:
            start = time.perf_counter()
            est = EvidenceGMM(random_state=seed, **params).fit(X)
            elapsed = time.perf_counter() - start
            print(f"{n:>7} {seed:>4} {elapsed:>8.1f} {est.log_evidence_:>12.2f} {ref:>12.2f} "
                  f"{est.log_evidence_ - ref:>8.2f}", flush=True)
            if args.dynesty:
                try:
                    start = time.perf_counter()
                    logz = run_dynesty(X, seed)
                except ImportError:
                    print("dynesty is not installed")
                    args.dynesty = False
                    continue
                print(f"{n:>7} {seed:>4} {time.perf_counter() - start:>8.1f} {logz:>12.2f} "
                      f"{ref:>12.2f} {logz - ref:>8.2f}  (dynesty)", flush=True)


if __name__ == "__main__":
    main()
