"""skevidence side by side with PyMC's ``sample_smc``, on the paper's three models.

Both see the same data and model on one thread; the peer (its defaults, optional:
``pip install skevidence[benchmark]``) runs in a child process under ``--time-cap``
wall seconds (one stopped there shows the CPU seconds it used). ``Linear`` and
:func:`nested_sampling` also give the dynesty runs of the other scripts.
"""

import math
import multiprocessing
import os
import resource
import time
import traceback
import warnings

import numpy as np
import torch

from skevidence import EvidenceGMM, EvidenceLinearRegression, EvidenceLogisticRegression
from skevidence.datasets import (make_gaussian_mixture, make_linear_regression,
                                 make_logistic_regression)
from _harness import GMM_PAPER, LINEAR_PAPER, Timed, arguments

# Importance-sampling references of make_logistic_regression(N, random_state=1)
# (bench_logistic_stream.importance_sampling, standard error about 0.01 nats).
LOGISTIC_IS = {1000: -629.39, 10_000: -5664.20}


class Linear:
    def __init__(self, n, data=None):
        self.X, self.y = make_linear_regression(n, random_state=0) if data is None else data
        self.Phi = np.hstack([self.X, np.ones((n, 1))])
        self.d = self.Phi.shape[1]

    def skevidence(self, seed):
        return EvidenceLinearRegression(random_state=seed, **LINEAR_PAPER).fit(self.X, self.y)

    def reference(self):
        return EvidenceLinearRegression(**LINEAR_PAPER).exact_log_evidence(self.X, self.y), "exact"

    def loglike(self, theta):
        r = self.y - self.Phi @ theta
        return -0.5 * len(self.y) * math.log(2 * math.pi) - 0.5 * float(r @ r)

    def prior_transform(self, u):  # dynesty's map from the unit cube: N(0, 1) coefficients
        from scipy.special import ndtri
        return ndtri(u)

    def pymc_model(self, pm):
        with pm.Model() as model:
            beta = pm.Normal("beta", 0.0, 1.0, shape=self.d)
            pm.Normal("y", mu=pm.math.dot(self.Phi, beta), sigma=1.0, observed=self.y)
        return model


class Logistic:
    def __init__(self, n):
        self.X, self.y = make_logistic_regression(n, random_state=1)
        self.K, self.p = int(self.y.max()) + 1, self.X.shape[1]

    def skevidence(self, seed):
        return EvidenceLogisticRegression(random_state=seed).fit(self.X, self.y)

    def reference(self):
        n = len(self.y)
        if n in LOGISTIC_IS:
            return LOGISTIC_IS[n], "IS (stored)"
        from bench_logistic_stream import importance_sampling
        est = importance_sampling(self.X, self.y, self.K, n_samples=max(4000, int(2e8 // n)))
        return est[0], f"IS +-{est[1]:.2f}"

    def pymc_model(self, pm):
        with pm.Model() as model:
            W = pm.Normal("W", 0.0, 1.0, shape=(self.K, self.p))
            b = pm.Normal("b", 0.0, 1.0, shape=self.K)
            pm.Categorical("y", logit_p=pm.math.dot(self.X, W.T) + b, observed=self.y)
        return model


class Mixture:
    k = 5

    def __init__(self, n):
        self.X = make_gaussian_mixture(n, n_components=self.k, random_state=1)
        self.D = self.X.shape[1]

    def skevidence(self, seed):
        return EvidenceGMM(random_state=seed, **GMM_PAPER).fit(self.X)

    def reference(self):
        from bench_gmm_reference import reference_log_evidence

        from skevidence.models import GaussianMixtureModel
        ref = reference_log_evidence(self.X, GaussianMixtureModel(self.D, self.k, **GMM_PAPER))
        return ref["log_evidence"], f"IS ESS {ref['ess']:.1%}"

    def pymc_model(self, pm):
        import pytensor.tensor as pt
        with pm.Model() as model:
            w = pm.Dirichlet("w", np.ones(self.k))
            s2 = pm.InverseGamma("s2", alpha=1.0, beta=1.0, shape=(self.k, self.D))
            mu = pm.Normal("mu", 0.0, pt.sqrt(4.0 * s2), shape=(self.k, self.D))
            X = self.X[:, None, :]
            lp = -0.5 * (((X - mu[None]) ** 2) / s2[None] + pt.log(2 * np.pi * s2[None])).sum(-1)
            pm.Potential("loglik", pm.math.logsumexp(lp + pt.log(w)[None], axis=1).sum())
        return model


PROBLEMS = {"linear": Linear, "logistic": Logistic, "gmm": Mixture}


def run_pymc(problem, seed):
    import logging

    import pymc as pm
    logging.getLogger("pymc").setLevel(logging.ERROR)
    with problem.pymc_model(pm):
        idata = pm.sample_smc(chains=1, cores=1, random_seed=seed, progressbar=False,
                              compute_convergence_checks=False)
    values = np.concatenate([np.atleast_1d(np.asarray(v, dtype=float)).ravel()
                             for v in np.asarray(idata.sample_stats["log_marginal_likelihood"]
                                                 .values, dtype=object).ravel()])
    return float(values[np.isfinite(values)][-1]), None


def nested_sampling(problem, seed):
    """dynesty's static sampler as in the reference runs (500 live points, ``dlogz=0.1``):
    log Z, its error, likelihood calls, seconds."""
    import dynesty
    t = time.perf_counter()
    sampler = dynesty.NestedSampler(problem.loglike, problem.prior_transform, problem.d,
                                    nlive=500, rstate=np.random.default_rng(seed))
    sampler.run_nested(dlogz=0.1, print_progress=False)
    res = sampler.results
    return (float(res.logz[-1]), float(res.logzerr[-1]), int(np.sum(res.ncall)),
            time.perf_counter() - t)


RUNNERS = {"pymc": run_pymc}


def _child(runner, problem, seed, queue):
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    devnull = os.open(os.devnull, os.O_WRONLY)  # the peers' own progress output
    for fd in (1, 2):
        os.dup2(devnull, fd)
    try:
        queue.put(("ok", *runner(problem, seed)))
    except BaseException:
        queue.put(("error", traceback.format_exc().strip().splitlines()[-1]))


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_capped(runner, problem, seed, cap):
    """``runner`` in a forked child, killed after ``cap`` wall seconds: ``("ok", log Z,
    likelihood evaluations, wall s, CPU s)`` or ``("cap" or "error", note, CPU s)``.
    The CPU seconds are the child's and those of the children it waited for (compilers)."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(runner, problem, seed, queue))
    wall, cpu = time.perf_counter(), _children_cpu()
    proc.start()
    try:
        result = queue.get(timeout=cap)
        if result[0] == "ok":
            result += (time.perf_counter() - wall,)
    except Exception:  # queue.Empty: over the cap
        result = ("cap", f"over the time cap of {cap:.0f} s wall")
    proc.terminate()
    proc.join()
    return result + (_children_cpu() - cpu,)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--models", nargs="+", default=list(PROBLEMS), choices=list(PROBLEMS))
    parser.add_argument("--sizes", nargs="+", type=float, help="default 1e3 1e4 (linear: 1e5 too)")
    parser.add_argument("--peers", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--time-cap", type=float, default=600.0, help="wall seconds per peer run")
    args = parser.parse_args()
    torch.set_num_threads(1)
    # One small fit first: one-time costs (lazy imports, first kernels) count in no estimate.
    EvidenceLinearRegression(random_state=0).fit(*make_linear_regression(100, random_state=0))
    available = []
    for p in args.peers:
        try:
            __import__(p)
            available.append(p)
        except Exception:
            print(f"note: {p} is not importable (pip install skevidence[benchmark]); skipped")
    print(f"load average at start {os.getloadavg()[0]:.1f} ({os.cpu_count()} CPUs)", flush=True)
    print(f"{'model':>8} {'N':>7} {'sampler':>10} {'wall s':>7} {'CPU s':>7} {'log Z':>12} "
          f"{'error':>7} {'lik. evals':>10} {'CPU / sk':>8}", flush=True)
    for name in args.models:
        sizes = args.sizes or ([1e3, 1e4, 1e5] if name == "linear" else [1e3, 1e4])
        for n in map(int, sizes):
            problem = PROBLEMS[name](n)
            ref, ref_note = problem.reference()
            with Timed() as sk:
                est = problem.skevidence(args.seed)
            row = lambda who, text: print(f"{name:>8} {n:>7} {who:>10}{text}", flush=True)  # noqa
            row("reference", f" {'':>15} {ref:>12.2f} ({ref_note})")
            row("skevidence", f" {sk.wall:>7.1f} {sk.cpu:>7.1f} {est.log_evidence_:>12.2f} "
                f"{est.log_evidence_ - ref:>+7.2f} {'-':>10} {1.0:>8.2f}")
            for peer in available:
                result = run_capped(RUNNERS[peer], problem, args.seed, args.time_cap)
                if result[0] == "cap":
                    # a lower bound of the ratio: the CPU it used before the cap
                    row(peer, f"  stopped: {result[1]} after {result[2]:.0f} CPU s "
                        f"(CPU / sk >= {result[2] / sk.cpu:.1f})")
                elif result[0] != "ok":
                    row(peer, f"  skipped: {result[1]}")
                else:
                    _, logz, n_like, wall, cpu = result
                    evals = f"{n_like:>10d}" if n_like is not None else f"{'-':>10}"
                    row(peer, f" {wall:>7.1f} {cpu:>7.1f} {logz:>12.2f} {logz - ref:>+7.2f} "
                        f"{evals} {cpu / sk.cpu:>8.2f}")
    print(f"load average at end {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
