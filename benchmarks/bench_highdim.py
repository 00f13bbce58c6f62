"""EvidenceLogisticRegression with hundreds of parameters, fewer particles than twice them.

Data: ``paper`` (d = 44), ``synth100`` / ``synth200`` (d = 100 / 200), ``digits3`` (d = 195),
``digits`` (d = 650); reference: importance sampling from a t at the mode, or AIS on digits.
"""

import math

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceLogisticRegression
from skevidence.datasets import make_logistic_regression
from skevidence.inference.kernels import ghmc, precision_preconditioner
from _harness import Timed, arguments, chi2, t_log_norm
from bench_logistic_stream import LogisticPosterior, t_importance_sampling


def load(name, split=0):
    if name == "paper":
        X, y = make_logistic_regression(1333, random_state=1)
    elif name.startswith("synth"):  # the paper's generator, 4 classes, d = 100 or 200
        p = {"synth100": 24, "synth200": 49}[name]
        X, y = make_logistic_regression(4 * (p + 1) * 4, n_features=p, n_classes=4,
                                        random_state=0)
    else:
        X, y = load_digits(return_X_y=True)
        if name == "digits3":
            keep = y < 3
            X, y = X[keep], y[keep]
    return train_test_split(X, y, test_size=0.3, random_state=split)


def log_posterior(model, X, y):
    """``theta -> (log posterior, its gradient)``."""
    def log_post(t):
        ll, g = model.log_likelihood_and_grad(t, (X, y))
        return ll + model.log_prior(t), g + model.grad_log_prior(t)
    return log_post


def posterior_moments(model, X, y, mode, precision, n_chains=64, n_rounds=20, seed=0):
    """Mean and covariance of exact GHMC draws (the second half of ``n_rounds`` x 100 steps)
    from the Laplace approximation, preconditioned by the chains' mean curvature."""
    gen = torch.Generator().manual_seed(seed)
    theta = mode + torch.randn(n_chains, model.n_params, generator=gen,
                               dtype=torch.float64) @ precision_preconditioner(precision).T
    W = torch.full((n_chains,), 1.0 / n_chains, dtype=torch.float64)
    log_post, step, draws = log_posterior(model, X, y), 0.05, []
    for k in range(n_rounds):
        chol = precision_preconditioner(model.expected_fisher_information(theta, W, (X, y))
                                        + model.prior_precision(mode))
        for _ in range(5):
            theta, acceptance = ghmc(theta, log_post, 20, step, 0.2, chol, gen)
            step = min(max(step * math.exp(2 * (acceptance - 0.8)), 1e-4), 4.0)
            if k >= n_rounds // 2:
                draws.append(theta)
    draws = torch.cat(draws)
    return draws.mean(0), torch.cov(draws.T)


def _t_log_density_and_grad(theta, mean, chol, nu):
    """Multivariate t (location ``mean``, scale ``chol chol^T``, ``nu`` dof) and its gradient."""
    d = theta.shape[1]
    z = torch.linalg.solve_triangular(chol, (theta - mean).T, upper=False).T
    delta = (z**2).sum(1)
    log_q = (t_log_norm(d, nu) - torch.log(torch.diagonal(chol)).sum()
             - 0.5 * (nu + d) * torch.log1p(delta / nu))
    sigma_inv_x = torch.linalg.solve_triangular(chol.T, z.T, upper=True).T
    return log_q, -((nu + d) / (nu + delta))[:, None] * sigma_inv_x


def annealed_reference(model, X, y, mean, cov, n_chains=256, n_temps=400, n_steps=5, nu=10.0,
                       n_batches=8, seed=0):
    """log Z by AIS (Neal 2001) from a t at the posterior's moments, where the t alone has
    no usable ESS (digits): ``n_temps`` steps ``q^(1 - b) p^b``, ``b = (k / n_temps)^4``,
    each with ``n_steps`` exact GHMC steps. Returns the estimate, its standard error (over
    ``n_batches`` batches), the ESS fraction and the acceptance."""
    gen, chol = torch.Generator().manual_seed(seed), torch.linalg.cholesky(cov)
    z = torch.randn(n_chains, model.n_params, generator=gen, dtype=torch.float64)
    theta = mean + (z / torch.sqrt(chi2(n_chains, nu, gen) / nu)[:, None]) @ chol.T
    log_post = log_posterior(model, X, y)
    betas = np.linspace(0.0, 1.0, n_temps + 1) ** 4
    log_w = torch.zeros(n_chains, dtype=torch.float64)
    step, acceptances = 0.1, []
    for b0, b1 in zip(betas[:-1], betas[1:]):
        log_q = _t_log_density_and_grad(theta, mean, chol, nu)[0]
        log_w += (b1 - b0) * (log_post(theta)[0] - log_q)

        def target(t, b=b1):
            lp, gp = log_post(t)
            lq, gq = _t_log_density_and_grad(t, mean, chol, nu)
            return (1 - b) * lq + b * lp, (1 - b) * gq + b * gp

        theta, acceptance = ghmc(theta, target, n_steps, step, 0.2, chol, gen)
        step = min(max(step * math.exp(2 * (acceptance - 0.8)), 1e-4), 4.0)
        acceptances.append(acceptance)
    batches = [float(torch.logsumexp(w, 0)) - math.log(w.shape[0])
               for w in log_w.chunk(n_batches)]
    w = torch.softmax(log_w, 0)
    return (float(torch.logsumexp(log_w, 0)) - math.log(n_chains),
            float(np.std(batches, ddof=1)) / math.sqrt(n_batches),
            float(1.0 / (w**2).sum()) / n_chains, float(np.mean(acceptances)))


def posterior(X, y):
    """The data as tensors (labels 0..K-1) and their LogisticPosterior."""
    Xs, yt = torch.as_tensor(X), torch.as_tensor(np.searchsorted(np.unique(y), y))
    return Xs, yt, LogisticPosterior(Xs, yt, len(np.unique(y)))


def reference(data, split, max_d_is=200):
    """(log Z, standard error, ESS fraction, method) on the training data of ``data``."""
    Xtr, _, ytr, _ = load(data, split)
    Xs, yt, post = posterior(StandardScaler().fit_transform(Xtr), ytr)
    mode = post.mode()
    if post.d <= max_d_is and data not in ("digits", "digits3"):
        log_z, se, ess = t_importance_sampling(post, mode, 100_000, 10, 0)
        return log_z, se, ess / 100_000, "IS"
    mean, cov = posterior_moments(post.model, Xs, yt, mode, post.precision(mode))
    est, se, ess, _ = annealed_reference(post.model, Xs, yt, mean, cov)
    return est, se, ess, "AIS"


def run(data, n_particles, seed, split=0):
    Xtr, Xte, ytr, yte = load(data, split)
    baseline = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000)).fit(Xtr, ytr)
    est = EvidenceLogisticRegression(n_particles=n_particles, random_state=seed)
    pipe, failed = make_pipeline(StandardScaler(), est), None
    with Timed() as t:
        try:
            pipe.fit(Xtr, ytr)
        except FloatingPointError as exc:
            failed = str(exc)[:40]
    Xs, yt, post = posterior(pipe[0].transform(Xtr), ytr)
    model, mode = post.model, post.mode()
    ll_mode = float(model.log_likelihood(mode[None], (Xs, yt)).sum())
    row = dict(d=model.n_params, acc_lr=baseline.score(Xte, yte), ll_mode=ll_mode, cpu=t.cpu,
               wall=t.wall, warned=any("ConvergenceWarning" in w for w in t.warnings))
    if failed:
        return dict(row, acc=math.nan, ll=math.nan, logz=math.nan, failed=failed)
    theta, W = torch.as_tensor(est.particles_), torch.as_tensor(est.particle_weights_)
    ll = float(W @ model.log_likelihood(theta, (Xs, yt)).sum(1))
    return dict(row, acc=pipe.score(Xte, yte), ll=ll, logz=est.log_evidence_)


def main():
    parser = arguments(__doc__)
    parser.add_argument("--data", nargs="+", default=["paper", "synth100", "digits3", "digits"])
    parser.add_argument("--particles", nargs="+", type=int, default=[128])
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--splits", nargs="+", type=int, default=[0])
    parser.add_argument("--no-reference", action="store_true")
    args = parser.parse_args()
    print(f"{'data':>8} {'d':>4} {'split':>5} {'M':>4} {'seed':>4} {'acc':>6} "
          f"{'acc_LR':>6} {'ll':>8} {'ll_mode':>8} {'logZ':>9} {'ref':>9} {'se':>5} {'ESS':>6} "
          f"{'diff':>6} {'cpu_s':>6} {'wall_s':>6} warn", flush=True)
    for data in args.data:
        for split in args.splits:
            ref, se, ess = (math.nan,) * 3
            if not args.no_reference:
                with Timed() as t:
                    ref, se, ess, how = reference(data, split)
                print(f"# {data} split {split}: reference {how} {ref:.2f} +- {se:.2f} "
                      f"(ESS {ess:.3f}, {t.cpu:.0f} CPU s)", flush=True)
            for M in args.particles:
                for seed in range(args.seeds):
                    r = run(data, M, seed, split)
                    print(f"{data:>8} {r['d']:>4} {split:>5} {M:>4} {seed:>4} "
                          f"{r['acc']:6.3f} {r['acc_lr']:6.3f} {r['ll']:8.1f} "
                          f"{r['ll_mode']:8.1f} {r['logz']:9.2f} {ref:9.2f} {se:5.2f} "
                          f"{ess:6.3f} {r['logz'] - ref:6.2f} {r['cpu']:6.1f} "
                          f"{r['wall']:6.1f} {'W' if r['warned'] else '-'} "
                          f"{r.get('failed', '')}", flush=True)


if __name__ == "__main__":
    main()
