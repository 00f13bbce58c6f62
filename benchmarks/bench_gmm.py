"""EvidenceGMM on the paper's mixture setting against dynesty reference evidences.

The data are ``make_gaussian_mixture(N, random_state=1)`` (2-D, 5
components, data seed 1, prefix-consistent in N: the N = 1e3 data are the
first rows of the N = 1e4 data), bit for bit the data of the dynesty
reference runs. The table has one row per (N, sampler seed): wall time, skevidence's log evidence, the
dynesty reference, and their difference.

``--smc`` adds tempered SMC with HMC moves from t's at the posterior modes
that EM finds and the Laplace sum over them (:func:`tempered_smc`);
``--param key=value`` and ``--engine key=value`` override the estimator.
"""

import ast
import math
import time

import numpy as np
import torch
from sklearn.mixture import GaussianMixture

from skevidence import EvidenceGMM
from skevidence.datasets import make_gaussian_mixture
from skevidence.inference.resampling import systematic_resample
from skevidence.models import GaussianMixtureModel
from _harness import arguments
from bench_peers import Mixture, nested_sampling

# The paper's fixed priors (the estimator's defaults follow the data's scale).
PAPER_PRIORS = dict(mean_prior=0.0, variance_scale=1.0)
# dynesty, static nested sampling, 500 live points, on make_gaussian_mixture(N,
# random_state=1) (2 and 4 runs of the nested-sampling reference study; its
# data files are exactly these arrays, tests/test_datasets.py checks their sums).
REFERENCE = {1000: (-4494.94, 0.89), 10000: (-44096.59, 0.30)}


def load(n):
    """The reference data: 2-D, 5 components, data seed 1, prefix-consistent in ``n``."""
    return make_gaussian_mixture(n, n_components=5, random_state=1)


# -- independent check: tempered SMC from t's at the posterior modes --------------------


def log_posterior(model, X, theta):
    """Unnormalised log posterior ``[M]``."""
    return model.log_prior(theta) + model.log_likelihood(theta, (X,)).sum(1)


def _climb_from_em(X, Xt, model, seed):
    """One EM fit (random start) moved by L-BFGS to the posterior mode, ``[d]``.

    Each start is optimised on its own, so a start that diverges cannot
    spoil a line search shared with the others.
    """
    em = GaussianMixture(model.n_components, covariance_type="diag", random_state=seed,
                         init_params="random_from_data").fit(X)
    theta = model.pack(*(torch.as_tensor(a, dtype=torch.float64)[None]
                         for a in (em.weights_, em.means_, em.covariances_)))
    theta.requires_grad_(True)
    optimiser = torch.optim.LBFGS([theta], max_iter=3000, tolerance_grad=1e-9,
                                  tolerance_change=1e-14, history_size=50,
                                  line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        loss = -log_posterior(model, Xt, theta).sum()
        loss.backward()
        return loss

    optimiser.step(closure)
    return theta.detach()[0]


def posterior_modes(X, model, n_starts=40, seed=0, window=30.0):
    """Distinct posterior modes from many EM fits, with their Hessians and Laplace masses.

    scikit-learn's EM (diagonal covariances, one random start each) does not
    depend on skevidence's sampler; L-BFGS then moves every EM optimum to
    the posterior mode in the unconstrained parameters. Relabellings of one
    mode share its log posterior, which is what tells modes apart. Modes
    more than ``window`` nats below the best, or with a singular Hessian (a
    component left without data), are dropped. Returns ``modes [J, d]``,
    ``hessians [J, d, d]`` and the Laplace log masses ``[J]`` of one copy.
    """
    Xt = torch.as_tensor(X, dtype=torch.float64)
    theta = torch.stack([_climb_from_em(X, Xt, model, seed + s) for s in range(n_starts)])
    log_post = log_posterior(model, Xt, theta)
    # A start that left the finite numbers is dropped, not allowed to spoil the others.
    theta, log_post = theta[torch.isfinite(log_post)], log_post[torch.isfinite(log_post)]
    if theta.shape[0] == 0:
        raise RuntimeError("every mode search diverged")
    _, first = np.unique(np.round(-log_post.numpy(), 2), return_index=True)
    modes, hessians, masses = [], [], []
    for i in first:  # best first
        if log_post[i] < log_post.max() - window:
            break
        hessian = torch.autograd.functional.hessian(
            lambda t: log_posterior(model, Xt, t[None])[0], theta[i])
        sign, log_det = torch.linalg.slogdet(-hessian)
        if sign > 0 and torch.linalg.eigvalsh(-hessian).min() > 1e-6:
            modes.append(theta[i])
            hessians.append(hessian)
            masses.append(log_post[i] + 0.5 * model.n_params * math.log(2 * math.pi)
                          - 0.5 * log_det)
    return torch.stack(modes), torch.stack(hessians), torch.stack(masses)


def relabelling_maps(model):
    """``[K!, d, d]``: ``theta @ maps[p]`` relabels the components by permutation ``p``."""
    maps = model.relabelling_maps()
    if maps is None:
        raise ValueError(f"no relabellings enumerated for {model.n_components} components")
    return maps


def laplace_t_mixture(modes, chols, log_mass, maps, nu):
    """Sampler and log density of a mixture of t's, one per mode and relabelling.

    Mode ``j`` (scale ``chols[j] chols[j]^T``) has mass ``exp(log_mass[j])``,
    shared equally by its ``K!`` relabellings: the posterior is
    exchangeable in the component labels, and a proposal must cover every
    copy of every mode.
    """
    d = modes.shape[1]
    log_pi = torch.log_softmax(log_mass, 0)
    whitened_maps = maps[None] @ torch.linalg.inv(chols).mT[:, None]  # [J, K!, d, d]
    whitened_modes = torch.linalg.solve_triangular(chols, modes[..., None], upper=False)[..., 0]
    log_norm = (log_pi - torch.log(torch.diagonal(chols, dim1=1, dim2=2)).sum(1)
                + math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - d / 2 * math.log(nu * math.pi)
                - math.log(len(maps)))

    def log_q(theta):
        z = torch.einsum("md,jpde->jpme", theta, whitened_maps) - whitened_modes[:, None, None]
        log_t = -(nu + d) / 2 * torch.log1p(z.square().sum(-1) / nu)  # [J, K!, M]
        return torch.logsumexp((log_t + log_norm[:, None, None]).flatten(0, 1), 0)

    def sample(n, gen):
        j = torch.multinomial(log_pi.exp(), n, replacement=True, generator=gen)
        chi2 = torch.distributions.Chi2(torch.tensor(nu, dtype=torch.float64)).sample((n,))
        z = torch.randn(n, d, generator=gen, dtype=torch.float64) * torch.sqrt(nu / chi2)[:, None]
        theta = modes[j] + torch.einsum("me,mde->md", z, chols[j])
        labels = torch.randint(len(maps), (n,), generator=gen)
        return torch.einsum("md,mde->me", theta, maps[labels])

    return sample, log_q


def next_temperature(log_W, log_ratio, beta, target_cess):
    """The largest ``beta' <= 1`` whose conditional ESS fraction is ``>= target_cess``."""
    def cess(b):
        inc = (b - beta) * log_ratio
        return float(torch.exp(2 * torch.logsumexp(log_W + inc, 0)
                               - torch.logsumexp(log_W + 2 * inc, 0)))

    if cess(1.0) >= target_cess:
        return 1.0
    low, high = beta, 1.0
    for _ in range(50):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if cess(mid) >= target_cess else (low, mid)
    return low


def tempered_hmc_move(theta, parts, beta, log_parts, grad_parts, chol, step, n_leapfrog, gen):
    """One HMC transition per particle of ``q^(1-beta) p^beta``, inverse mass ``chol chol^T``.

    ``parts`` is ``(log p, log q)`` at ``theta`` (``[M]`` each);
    ``log_parts`` and ``grad_parts`` return them and their gradients.
    Returns the new ``theta``, ``parts`` and the acceptance rate.
    """
    def grad_target(t):
        grad_p, grad_q = grad_parts(t)
        return beta * grad_p + (1 - beta) * grad_q

    z = torch.randn(theta.shape, generator=gen, dtype=torch.float64)
    eps = step * (0.8 + 0.4 * float(torch.rand(1, generator=gen, dtype=torch.float64)))
    q = theta
    p = z @ torch.linalg.inv(chol) + 0.5 * eps * grad_target(q)  # momentum ~ N(0, mass)
    for i in range(n_leapfrog):
        q = q + eps * (p @ chol) @ chol.T
        p = p + (eps if i < n_leapfrog - 1 else 0.5 * eps) * grad_target(q)
    new_parts = log_parts(q)
    log_accept = (beta * (new_parts[0] - parts[0]) + (1 - beta) * (new_parts[1] - parts[1])
                  + 0.5 * (z.square().sum(1) - (p @ chol).square().sum(1)))
    u = torch.rand(theta.shape[0], generator=gen, dtype=torch.float64)
    accept = torch.log(u) < torch.nan_to_num(log_accept, nan=-math.inf)
    parts = tuple(torch.where(accept, new, old) for new, old in zip(new_parts, parts))
    return torch.where(accept[:, None], q, theta), parts, float(accept.double().mean())


def tempered_smc(X, n_particles=1000, n_moves=5, n_leapfrog=8, nu=5.0, target_cess=0.9,
                 seed=0, k=5):
    """Independent check: tempered SMC from a Laplace-t mixture to the posterior.

    The bridge ``q^(1-beta) p^beta`` runs from the proposal ``q``, t's at
    every mode that EM finds and their relabellings (:func:`posterior_modes`,
    :func:`laplace_t_mixture`), to the posterior ``p``. Each step picks the
    next ``beta`` by conditional ESS ``target_cess``, reweights, resamples
    (systematic) when the ESS falls below half, and moves the particles by
    ``n_moves`` HMC transitions with the best mode's Laplace covariance as
    inverse mass matrix. Posterior mass in modes that no EM start reaches
    is missed. Returns ``log Z``, the number of modes and the Laplace
    estimate (sum over the modes).
    """
    Xt = torch.as_tensor(X)
    model = GaussianMixtureModel(X.shape[1], k)
    modes, hessians, log_mass = posterior_modes(X, model, seed=seed)
    chols = torch.linalg.cholesky(torch.linalg.inv(-hessians))
    maps = relabelling_maps(model)
    sample_q, log_q = laplace_t_mixture(modes, chols, log_mass, maps, nu)
    laplace = float(torch.logsumexp(log_mass, 0)) + math.log(len(maps))
    chol = chols[0]

    def log_parts(theta):
        return log_posterior(model, Xt, theta), log_q(theta)

    def grad_parts(theta):
        theta_ = theta.detach().requires_grad_(True)
        grad_q = torch.autograd.grad(log_q(theta_).sum(), theta_)[0]
        return model.grad_log_prior(theta) + model.grad_log_likelihood(theta, (Xt,)), grad_q

    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)  # for the chi-squared draws, which take no generator
    M = n_particles
    theta = sample_q(M, gen)
    parts = log_parts(theta)
    log_W = torch.full((M,), -math.log(M), dtype=torch.float64)
    beta, log_z, step = 0.0, 0.0, 0.3
    while beta < 1.0:
        log_ratio = parts[0] - parts[1]
        beta_next = next_temperature(log_W, log_ratio, beta, target_cess)
        increment = (beta_next - beta) * log_ratio
        log_z += float(torch.logsumexp(log_W + increment, 0))
        log_W = torch.log_softmax(log_W + increment, 0)
        beta = beta_next
        if float(torch.exp(-torch.logsumexp(2 * log_W, 0))) < M / 2:
            u = float(torch.rand(1, generator=gen, dtype=torch.float64))
            keep = torch.as_tensor(systematic_resample(log_W.numpy(), u))
            theta, parts = theta[keep], tuple(part[keep] for part in parts)
            log_W = torch.full((M,), -math.log(M), dtype=torch.float64)
        for _ in range(n_moves):
            theta, parts, rate = tempered_hmc_move(theta, parts, beta, log_parts, grad_parts,
                                                   chol, step, n_leapfrog, gen)
            step *= math.exp(0.5 * (rate - 0.75))  # aim at 75% acceptance
    return log_z, len(modes), laplace


def parse_assignments(items):
    out = {}
    for item in items or []:
        key, value = item.split("=", 1)
        try:
            out[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            out[key] = value
    return out


def estimator_settings(args):
    """EvidenceGMM parameters from ``--param`` / ``--engine``; sets and prints the threads."""
    torch.set_num_threads(args.threads)
    params = parse_assignments(args.param)
    engine = parse_assignments(args.engine)
    if engine:
        params["engine_options"] = engine
    print(f"params {params} engine {{**EvidenceGMM._engine_defaults, **engine}} "
          f"threads {args.threads}")
    return params


def main():
    parser = arguments(__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--param", nargs="*", help="estimator parameter overrides, key=value")
    parser.add_argument("--engine", nargs="*", help="engine setting overrides, key=value")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch threads (1 matches dynesty's single-threaded timing)")
    parser.add_argument("--dynesty", action="store_true", help="also run dynesty (slow)")
    parser.add_argument("--smc", action="store_true", help="also run tempered SMC (slow)")
    args = parser.parse_args()
    params = estimator_settings(args)
    header = f"{'N':>7} {'seed':>4} {'time s':>8} {'log Z':>12} {'reference':>12} {'diff':>8}"
    print(header)
    print("-" * len(header))
    for n in args.n:
        X = load(n)
        ref = REFERENCE.get(n, (np.nan, np.nan))[0]
        for seed in args.seeds:
            start = time.perf_counter()
            est = EvidenceGMM(random_state=seed, **{**PAPER_PRIORS, **params}).fit(X)
            elapsed = time.perf_counter() - start
            print(f"{n:>7} {seed:>4} {elapsed:>8.1f} {est.log_evidence_:>12.2f} {ref:>12.2f} "
                  f"{est.log_evidence_ - ref:>8.2f}", flush=True)
            if args.dynesty:
                try:
                    start = time.perf_counter()
                    logz = nested_sampling(Mixture(n, data=X), seed)[0]
                except ImportError:
                    print("dynesty is not installed")
                    args.dynesty = False
                    continue
                print(f"{n:>7} {seed:>4} {time.perf_counter() - start:>8.1f} {logz:>12.2f} "
                      f"{ref:>12.2f} {logz - ref:>8.2f}  (dynesty)", flush=True)
            if args.smc:
                start = time.perf_counter()
                logz, n_modes, laplace = tempered_smc(X, seed=seed)
                print(f"{n:>7} {seed:>4} {time.perf_counter() - start:>8.1f} {logz:>12.2f} "
                      f"{ref:>12.2f} {logz - ref:>8.2f}  (tempered SMC over {n_modes} modes; "
                      f"their Laplace sum {laplace:.2f})", flush=True)


if __name__ == "__main__":
    main()
