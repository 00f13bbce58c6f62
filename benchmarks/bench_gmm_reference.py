"""An importance-sampling reference for identifiable mixtures, and EvidenceGMM against it.

:func:`reference_log_evidence` is cached in ``references/gmm_reference.json``; one row per
(geometry, N, sampler seed), then the errors' summary per geometry and N.
"""

import math

import numpy as np
import torch
from sklearn.mixture import GaussianMixture

from skevidence import EvidenceGMM
from skevidence.inference.relabelling import inverted
from _harness import Timed, arguments, cached, error_summary, t_log_norm

# Identifiable 3-cluster 2-D geometries: (centres, per-feature sds, weights).
GEOMETRIES = {
    "separated": ([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]], [[1.0, 1.0], [0.7, 0.7], [1.3, 1.3]],
                  [0.3, 0.3, 0.4]),
    "elongated": ([[0.0, -3.0], [0.0, 3.0], [6.0, 0.0]], [[3.0, 0.5], [2.0, 0.8], [0.6, 2.5]],
                  [0.5, 0.3, 0.2]),
    "unequal": ([[0.0, 0.0], [5.0, 5.0], [-5.0, 6.0]], [[2.0, 2.0], [0.3, 0.3], [1.0, 0.5]],
                [0.8, 0.15, 0.05]),
}


def log_posterior(model, X, theta, block=256):
    """Unnormalised log posterior ``[M]``, in blocks of particles to bound memory."""
    return torch.cat([model.log_prior(t) + model.log_likelihood(t, (X,)).sum(1)
                      for t in theta.split(block)])


def _climb_from_em(X, Xt, model, seed):
    """One EM fit (random start) moved by L-BFGS to the posterior mode, ``[d]`` (each start on
    its own: one that diverges cannot spoil a line search shared with the others)."""
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
    """Distinct posterior modes from EM fits moved by L-BFGS, and their Hessians, best first:
    ``modes [J, d]``, ``hessians [J, d, d]``. Relabellings share a log posterior, which tells
    modes apart; those over ``window`` nats below the best or with a singular Hessian go."""
    Xt = torch.as_tensor(X, dtype=torch.float64)
    theta = torch.stack([_climb_from_em(X, Xt, model, seed + s) for s in range(n_starts)])
    log_post = log_posterior(model, Xt, theta)
    # A start that left the finite numbers is dropped, not allowed to spoil the others.
    theta, log_post = theta[torch.isfinite(log_post)], log_post[torch.isfinite(log_post)]
    if theta.shape[0] == 0:
        raise RuntimeError("every mode search diverged")
    _, first = np.unique(np.round(-log_post.numpy(), 2), return_index=True)
    modes, hessians = [], []
    for i in first:  # best first
        if log_post[i] < log_post.max() - window:
            break
        hessian = torch.autograd.functional.hessian(
            lambda t: log_posterior(model, Xt, t[None])[0], theta[i])
        if torch.linalg.slogdet(-hessian)[0] > 0 and torch.linalg.eigvalsh(-hessian).min() > 1e-6:
            modes.append(theta[i])
            hessians.append(hessian)
    return torch.stack(modes), torch.stack(hessians)


def make_clusters(n, geometry, seed):
    """``n`` draws of a named 3-component geometry, in a random order."""
    centres, sds, weights = (np.asarray(a, dtype=float) for a in GEOMETRIES[geometry])
    rng = np.random.default_rng(seed)
    z = rng.choice(len(weights), size=n, p=weights)
    return centres[z] + sds[z] * rng.standard_normal((n, centres.shape[1]))


def reference_log_evidence(X, model, n_draws=20000, nu=8.0, n_starts=4, seed=0):
    """Importance-sampling ``log p(X)`` for a mixture from t's (``nu`` dof) at its posterior
    modes (``n_starts`` EM starts) and their relabellings, each mode weighted by its Laplace
    mass: a dict of ``log_evidence``, ``std_error`` (delta method), ``ess`` (a fraction),
    ``laplace`` (the modes' Laplace masses summed, times ``K!``) and ``n_modes`` (optima
    within 30 nats of the best up to labels). A t at the best mode alone misses the mass of
    the others, and its weights grow heavy-tailed: the estimate then creeps up with the draws."""
    Xt = torch.as_tensor(X, dtype=torch.float64)
    modes, hessians = posterior_modes(X, model, n_starts=n_starts, seed=seed)
    J, d = modes.shape
    cov = torch.linalg.inv(-hessians)
    chols = torch.linalg.cholesky(0.5 * (cov + cov.transpose(1, 2)))
    log_laplace = (log_posterior(model, Xt, modes) + 0.5 * d * math.log(2 * math.pi)
                   - 0.5 * torch.linalg.slogdet(-hessians)[1])
    log_pi = torch.log_softmax(log_laplace, 0)  # the proposal's weight on each mode
    maps = model.relabelling_maps()  # theta @ maps[p] relabels by permutation p
    P = maps.shape[0]
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n_draws, d))  # standard multivariate t draws
    z = torch.as_tensor(z * np.sqrt(nu / rng.chisquare(nu, size=n_draws))[:, None])
    labels = torch.as_tensor(rng.integers(P, size=n_draws))
    which = torch.as_tensor(rng.choice(J, size=n_draws, p=log_pi.exp().numpy())) if J > 1 \
        else torch.zeros(n_draws, dtype=torch.long)
    phi = torch.empty(n_draws, d, dtype=torch.float64)
    for j in range(J):  # one mode at a time: a [n_draws, d, d] stack of factors would not fit
        phi[which == j] = modes[j] + z[which == j] @ chols[j].T
    theta = torch.einsum("md,mde->me", phi, maps[labels])
    # log q: the mean over relabellings p of the mixture's density at phi = theta @ maps[p]^-1,
    # over |det maps[p]| (the additive-log-ratio logits make a relabelling linear, not a
    # permutation).
    inverse_maps, log_dets = inverted(maps)
    log_t = []
    for j in range(J):
        log_t_norm = t_log_norm(d, nu) - torch.log(torch.diagonal(chols[j])).sum()
        for p in range(P):
            w = torch.linalg.solve_triangular(chols[j], (theta @ inverse_maps[p] - modes[j]).T,
                                              upper=False).T
            log_t.append(log_pi[j] + log_t_norm - log_dets[p]
                         - (nu + d) / 2 * torch.log1p(w.square().sum(1) / nu))
    log_q = torch.logsumexp(torch.stack(log_t), 0) - math.log(P)
    log_w = (log_posterior(model, Xt, theta) - log_q).numpy()
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    log_z = float(np.logaddexp.reduce(log_w) - math.log(n_draws))
    w = np.exp(log_w - log_w.max())
    ess = float(w.sum() ** 2 / np.square(w).sum())
    return {"log_evidence": log_z, "std_error": math.sqrt(max(1.0 / ess - 1.0 / n_draws, 0.0)),
            "ess": ess / n_draws, "n_modes": J,
            "laplace": float(torch.logsumexp(log_laplace, 0)) + math.log(P)}


def model_of(estimator):
    """The GaussianMixtureModel of a fitted EvidenceGMM (its frozen priors included)."""
    return estimator._model


def main():
    parser = arguments(__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[4000, 20000])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    print(f"{'geometry':>10} {'N':>6} {'seed':>4} {'time s':>7} {'cpu s':>7} {'log Z':>12} "
          f"{'reference':>12} {'se':>6} {'ess':>5} {'diff':>7} {'std':>6}\n" + "-" * 92)
    rows = []  # (geometry, n, diff, std)
    for n in args.n:  # every geometry at the smaller N first
        for geometry in GEOMETRIES:
            X = make_clusters(n, geometry, 0)  # data seed 0
            ref = None
            for seed in args.seeds:
                with Timed() as t:
                    est = EvidenceGMM(n_components=3, random_state=seed).fit(X)
                if ref is None:  # the model's priors are set from the data: the key fixes it
                    ref = cached("gmm_reference.json", f"{geometry} n={n} data_seed=0 draws=20000",
                                 lambda: reference_log_evidence(X, model_of(est)))
                diff = est.log_evidence_ - ref["log_evidence"]
                rows.append((geometry, n, diff, est.log_evidence_std_))
                print(f"{geometry:>10} {n:>6} {seed:>4} {t.wall:>7.1f} {t.cpu:>7.1f} "
                      f"{est.log_evidence_:>12.2f} "
                      f"{ref['log_evidence']:>12.2f} {ref['std_error']:>6.3f} {ref['ess']:>5.2f} "
                      f"{diff:>7.2f} {est.log_evidence_std_:>6.2f}", flush=True)
    print_summary(rows)


def print_summary(rows):
    """Per (geometry, N), per N and overall."""
    print(f"\n{'group':>18} {'runs':>4} {'med|d|':>7} {'worst':>7} {'<=1std':>6} {'<=2std':>6} "
          f"{'std/RMS':>8}")
    geometry, n, diffs, stds = (np.array(column) for column in zip(*rows))
    groups = [(f"{g} {m}", (geometry == g) & (n == m))
              for m in dict.fromkeys(n) for g in dict.fromkeys(geometry)]
    groups += [(f"all {m}", n == m) for m in dict.fromkeys(n)] + [("all", n == n)]
    for label, mask in groups:
        if mask.any():
            s = error_summary(diffs[mask], stds[mask])
            print(f"{label:>18} {mask.sum():>4} {s['median_abs']:>7.2f} {s['worst']:>7.2f} "
                  f"{s['cov1']:>6.2f} {s['cov2']:>6.2f} {s['ratio']:>8.2f}")


if __name__ == "__main__":
    main()
