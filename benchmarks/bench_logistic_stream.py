"""The paper's logistic model at large N: an importance-sampling reference, and fits against it.

The reference (a t at the mode) is cached in ``references/logistic_stream.json``
(``--recompute``); ``--fit`` adds one row per sampler seed and ``--at`` size.
"""

import math
import time

import numpy as np
import torch

from skevidence import EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from skevidence.models import LogisticRegressionModel
from _harness import arguments, cached, chi2, t_log_norm

_DATA_BLOCK, _SAMPLE_BLOCK = 20_000, 200


class LogisticPosterior:
    """The paper's logistic posterior on a data set: mode, Hessian, log density."""

    def __init__(self, X, y, n_classes):
        self.model = LogisticRegressionModel(X.shape[1], n_classes)
        self.d = self.model.n_params
        Xt, yt = torch.as_tensor(X), torch.as_tensor(y)
        self.blocks = [(Xt[i : i + _DATA_BLOCK], yt[i : i + _DATA_BLOCK])
                       for i in range(0, len(X), _DATA_BLOCK)]

    def log_density(self, theta):
        """Unnormalised log posterior of ``theta [K, d]``, ``[K]``, in blocks."""
        return torch.cat([sum((self.model.log_likelihood(part, block).sum(1)
                               for block in self.blocks), self.model.log_prior(part))
                          for part in theta.split(_SAMPLE_BLOCK)])

    def precision(self, theta):
        eye = torch.eye(self.d, dtype=theta.dtype) / self.model.prior_std**2
        return eye + sum(self.model.fisher_information(theta, b) for b in self.blocks)

    def mode(self, start=None, n_newton=100):
        """Newton's method (the posterior is log-concave) from ``start``, each step
        halved until it climbs: on nearly separable data a full step overshoots."""
        model = self.model
        theta = torch.zeros(self.d, dtype=torch.float64) if start is None else start.clone()
        for _ in range(n_newton):
            grad = model.grad_log_prior(theta[None])[0] + sum(
                model.grad_log_likelihood(theta[None], b)[0] for b in self.blocks)
            step = torch.linalg.solve(self.precision(theta), grad)
            current = self.log_density(theta[None])[0]
            while (self.log_density((theta + step)[None])[0] < current
                   and float(step.abs().max()) > 1e-12):
                step = step / 2
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
    d, gen = post.d, torch.Generator().manual_seed(seed)
    C = torch.linalg.cholesky(post.precision(mode))  # precision = C C^T, covariance^(1/2) = C^-T
    z = torch.randn(n_samples, d, generator=gen, dtype=torch.float64)
    u = chi2(n_samples, nu, gen) / nu
    theta = mode + torch.linalg.solve_triangular(C.T, (z / u.sqrt()[:, None]).T, upper=True).T
    # log density of the t proposal at theta: the Mahalanobis term is |z|^2 / u.
    maha = (z**2).sum(1) / u
    log_q = (t_log_norm(d, nu) + torch.log(torch.diagonal(C)).sum()
             - 0.5 * (nu + d) * torch.log1p(maha / nu))
    log_w = (post.log_density(theta) - log_q).numpy()
    w = np.exp(log_w - log_w.max())
    se = w.std(ddof=1) / w.mean() / math.sqrt(n_samples)  # delta method on log(mean)
    return log_w.max() + math.log(w.mean()), se, w.sum() ** 2 / (w**2).sum()


def importance_sampling(X, y, n_classes, n_samples=200_000, nu=10, seed=0):
    """Importance sampling from a t at the mode: log Z, its standard error, the ESS as a
    fraction of the draws and the Laplace approximation."""
    post = LogisticPosterior(X, y, n_classes)
    log_z, se, ess = t_importance_sampling(post, mode := post.mode(), n_samples, nu, seed)
    return log_z, se, ess / n_samples, post.laplace(mode)


def reference(n, data_seed, recompute=False, samples=4000, nu=8, is_seeds=(0, 1)):
    """The cached IS reference of ``make_logistic_regression(n, random_state=data_seed)``."""
    def compute():
        X, y = make_logistic_regression(n, random_state=data_seed)
        t0 = time.process_time()
        post = LogisticPosterior(X, y, len(np.unique(y)))
        mode = post.mode()
        runs = [t_importance_sampling(post, mode, samples, nu, seed) for seed in is_seeds]
        return {"log_z": float(np.mean([r[0] for r in runs])),
                # the runs are independent: the mean's error is the root mean square over k
                "std_err": float(np.sqrt(np.mean([r[1] ** 2 for r in runs]) / len(runs))),
                "ess": [float(r[2]) for r in runs], "runs": [float(r[0]) for r in runs],
                "laplace": post.laplace(mode), "cpu_s": time.process_time() - t0}
    key = f"data_seed={data_seed} n={n} samples={samples} nu={nu} is_seeds={list(is_seeds)}"
    return cached("logistic_stream.json", key, compute, recompute)


def fit_stream(X, y, ends, seed, refs, data_seed):
    """Feed the stream to one fit, in blocks ending at ``ends``; one row per end."""
    est = EvidenceLogisticRegression(random_state=seed)
    start, cpu = 0, 0.0
    for end in ends:
        t0 = time.process_time()
        est.partial_fit(X[start:end], y[start:end], classes=np.unique(y))
        cpu += time.process_time() - t0
        start = end
        std, diag = est.log_evidence_std_, est.diagnostics_
        error = est.log_evidence_ - refs[end]["log_z"]
        # The fit's own importance-sampling check (diagnostics_), at the same n.
        check = diag["importance_log_evidence"] - refs[end]["log_z"]
        print(f"{data_seed:>5d} {seed:>5d} {end:>8d} {cpu:>7.1f} "
              f"{est.log_evidence_:>13.3f} {error:>+8.3f} {std:>6.3f} {error / std:>+6.2f} "
              f"{check:>+8.3f} {diag['importance_log_evidence_std']:>6.3f} "
              f"{diag['importance_ess']:>5.2f}", flush=True)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--n", type=float, default=1e5)
    parser.add_argument("--data-seed", type=int, default=1)
    parser.add_argument("--recompute", action="store_true", help="ignore the cached references")
    parser.add_argument("--fit", action="store_true")
    parser.add_argument("--sampler-seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--at", type=float, nargs="+", default=[],
                        help="report the fit at these n (each gets its own IS reference)")
    args = parser.parse_args()
    n = int(args.n)
    ends = sorted({int(a) for a in args.at if a <= n} | {n})
    print(f"{'data':>5} {'N':>8} {'IS log Z':>14} {'std err':>8} {'ESS':>12} {'IS - Laplace':>12}"
          f" {'CPU s':>7}", flush=True)
    refs = {}
    for end in ends:
        refs[end] = ref = reference(end, args.data_seed, args.recompute)
        ess = "/".join(f"{e:.0f}" for e in ref["ess"])
        print(f"{args.data_seed:>5d} {end:>8d} {ref['log_z']:>14.3f} {ref['std_err']:>8.3f} "
              f"{ess:>12} {ref['log_z'] - ref['laplace']:>+12.3f} {ref['cpu_s']:>7.1f}",
              flush=True)
    if not args.fit:
        return
    X, y = make_logistic_regression(n, random_state=args.data_seed)
    print(f"{'data':>5} {'seed':>5} {'n':>8} {'CPU s':>7} "
          f"{'log Z':>13} {'error':>8} {'std':>6} {'z':>6} {'check':>8} {'std':>6} {'ESS':>5}"
          "  ({})", flush=True)
    for seed in args.sampler_seeds:
        fit_stream(X, y, ends, seed, refs, args.data_seed)


if __name__ == "__main__":
    main()
