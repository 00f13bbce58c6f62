"""The paper's logistic model at large N: an importance-sampling reference, and the cloud's spread.

At large N the posterior of the paper's logistic model (44 parameters) is
close to Gaussian, so importance sampling from a multivariate t (``--nu``
degrees of freedom) centred at the posterior mode with the inverse Hessian
as its scale matrix gives the evidence to a few hundredths of a nat; its
effective sample size and standard error are printed beside it, with the
Laplace value (which needs no sampling).

    OMP_NUM_THREADS=1 python benchmarks/bench_logistic_stream.py --n 1e5
    OMP_NUM_THREADS=1 python benchmarks/bench_logistic_stream.py --n 1e5 --fit --at 2e3 1e4 3e4 1e5

With ``--fit`` the stream is also fed to ``EvidenceLogisticRegression``
(``partial_fit`` in blocks ending at the ``--at`` points) and, at each of
them, the particle cloud is compared with the Laplace posterior of the data
seen: ``spread`` is the mean eigenvalue of ``Sigma_particles
Sigma_post^{-1}`` (1 for a cloud of the posterior's size; 1 + e inflates
every direction's variance by e), ``offset`` the squared Mahalanobis
distance of the cloud's mean from the mode (about d / M = 0.34 for M = 128
independent draws), and ``error`` the running log evidence minus the
reference at that n. A cloud too wide by ``e`` per direction loses about
``(b / 2n) d e`` nats per chunk of ``b`` (the chunk's likelihood is spread
over more of the parameter space than the posterior puts there), about
``0.5 d e ln(N / n0)`` over a stream.
"""

import argparse
import ast
import math
import time

import numpy as np
import torch

from skevidence import EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from skevidence.models import LogisticRegressionModel

_DATA_BLOCK = 20_000
_SAMPLE_BLOCK = 200


class LogisticPosterior:
    """The paper's logistic posterior on a data set: mode, Hessian, log density."""

    def __init__(self, X, y, n_classes):
        self.model = LogisticRegressionModel(X.shape[1], n_classes)
        Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
        self.blocks = [(Xt[i : i + _DATA_BLOCK], yt[i : i + _DATA_BLOCK])
                       for i in range(0, len(X), _DATA_BLOCK)]

    @property
    def d(self):
        return self.model.n_params

    def log_density(self, theta):
        """Unnormalised log posterior of ``theta [K, d]``, ``[K]``, in blocks."""
        out = []
        for start in range(0, theta.shape[0], _SAMPLE_BLOCK):
            part = theta[start : start + _SAMPLE_BLOCK]
            total = self.model.log_prior(part)
            for block in self.blocks:
                total = total + self.model.log_likelihood(part, block).sum(1)
            out.append(total)
        return torch.cat(out)

    def precision(self, theta):
        eye = torch.eye(self.d, dtype=theta.dtype) / self.model.prior_std**2
        return eye + sum(self.model.fisher_information(theta, b) for b in self.blocks)

    def mode(self, start=None, n_newton=50):
        """Newton's method (the posterior is log-concave) from ``start``."""
        model = self.model
        theta = torch.zeros(self.d, dtype=torch.float64) if start is None else start.clone()
        for _ in range(n_newton):
            grad = model.grad_log_prior(theta[None])[0] + sum(
                model.grad_log_likelihood(theta[None], b)[0] for b in self.blocks)
            step = torch.linalg.solve(self.precision(theta), grad)
            theta = theta + step
            if float(step.abs().max()) < 1e-10:
                break
        return theta

    def laplace(self, mode):
        log_det = torch.linalg.slogdet(self.precision(mode))[1]
        return float(self.log_density(mode[None])[0] + 0.5 * self.d * math.log(2 * math.pi)
                     - 0.5 * log_det)


def t_importance_sampling(post, mode, n_samples, nu, seed):
    """log Z, its standard error and the ESS from a multivariate-t proposal at the mode."""
    d = post.d
    gen = torch.Generator().manual_seed(seed)
    precision = post.precision(mode)
    C = torch.linalg.cholesky(precision)  # precision = C C^T, covariance^(1/2) = C^-T
    z = torch.randn(n_samples, d, generator=gen, dtype=torch.float64)
    u = _chi2(n_samples, nu, gen) / nu
    delta = torch.linalg.solve_triangular(C.T, (z / u.sqrt()[:, None]).T, upper=True).T
    theta = mode + delta
    # log density of the t proposal at theta: the Mahalanobis term is |z|^2 / u.
    maha = (z**2).sum(1) / u
    log_q = (math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - 0.5 * d * math.log(nu * math.pi)
             + torch.log(torch.diagonal(C)).sum() - 0.5 * (nu + d) * torch.log1p(maha / nu))
    log_w = (post.log_density(theta) - log_q).numpy()
    top = log_w.max()
    w = np.exp(log_w - top)
    log_z = top + math.log(w.mean())
    ess = w.sum() ** 2 / (w**2).sum()
    se = w.std(ddof=1) / w.mean() / math.sqrt(n_samples)  # delta method on log(mean)
    return log_z, se, ess


def _chi2(n, nu, gen):
    """Chi-square draws as sums of squared normals (integer ``nu``), reproducible."""
    return (torch.randn(n, int(nu), generator=gen, dtype=torch.float64) ** 2).sum(1)


def cloud_vs_posterior(theta, W, mode, precision):
    """Mean eigenvalue of Sigma_particles Sigma_post^-1 and the mean's Mahalanobis offset."""
    mean = W @ theta
    centred = theta - mean
    cov = (centred * W[:, None]).T @ centred
    spread = float(torch.trace(cov @ precision)) / theta.shape[1]
    offset = float((mean - mode) @ precision @ (mean - mode))
    return spread, offset


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e5)
    parser.add_argument("--samples", type=int, default=4000)
    parser.add_argument("--nu", type=int, default=8)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--at", type=float, nargs="+", default=[2e3, 1e4, 3e4, 1e5])
    parser.add_argument("--options", default="{}",
                        help="estimator parameters (a Python dict literal)")
    args = parser.parse_args()
    n = int(args.n)
    X, y = make_logistic_regression(n, random_state=1)
    classes = np.unique(y)
    K = len(classes)

    t0 = time.process_time()
    post = LogisticPosterior(X, y, K)
    mode = post.mode()
    laplace = post.laplace(mode)
    print(f"N = {n}: Laplace {laplace:.3f}  ({time.process_time() - t0:.1f} CPU s)", flush=True)
    refs = []
    for seed in args.seeds:
        t0 = time.process_time()
        log_z, se, ess_value = t_importance_sampling(post, mode, args.samples, args.nu, seed)
        refs.append(log_z)
        print(f"  t({args.nu}) IS seed {seed}: log Z {log_z:.3f} +- {se:.3f}, ESS "
              f"{ess_value:.0f} / {args.samples}, IS - Laplace {log_z - laplace:+.3f} "
              f"({time.process_time() - t0:.1f} CPU s)", flush=True)
    reference = float(np.mean(refs))
    if not args.fit:
        return

    options = ast.literal_eval(args.options)
    est = EvidenceLogisticRegression(**{"random_state": 0, **options})
    ends = sorted({int(a) for a in args.at if a <= n} | {n})
    print(f"{'n':>8} {'CPU s':>7} {'spread':>7} {'offset':>7} {'log Z':>12} {'Laplace':>12} "
          f"{'error':>8} {'std':>6}  ({options})", flush=True)
    start, cpu, prev_mode = 0, 0.0, None
    for end in ends:
        t0 = time.process_time()
        est.partial_fit(X[start:end], y[start:end], classes=classes)
        cpu += time.process_time() - t0
        start = end
        sub = post if end == n else LogisticPosterior(X[:end], y[:end], K)
        sub_mode = mode if end == n else sub.mode(prev_mode)
        prev_mode = sub_mode
        state = est._state
        W = torch.as_tensor(state.weights, dtype=state.theta.dtype)
        spread, offset = cloud_vs_posterior(state.theta.to(torch.float64), W.to(torch.float64),
                                            sub_mode, sub.precision(sub_mode))
        sub_laplace = laplace if end == n else sub.laplace(sub_mode)
        ref = reference if end == n else sub_laplace
        print(f"{end:>8d} {cpu:>7.1f} {spread:>7.3f} {offset:>7.2f} {est.log_evidence_:>12.3f} "
              f"{sub_laplace:>12.3f} {est.log_evidence_ - ref:>+8.3f} {state.log_evidence_std:>6.3f}",
              flush=True)
    print(f"(error at N against the IS reference {reference:.3f}, before against Laplace)")


if __name__ == "__main__":
    main()
