"""An importance-sampling reference for identifiable mixtures, and EvidenceGMM against it.

The reference (:func:`reference_log_evidence`) is importance sampling from
an equal-weight mixture of multivariate t's (``nu = 8``) at the posterior
mode (L-BFGS from EM starts) and at all ``K!`` relabellings of it, with the
Hessian's covariance, in ``GaussianMixtureModel``'s coordinates. It holds
where the posterior has one mode up to relabelling; its ESS says when not.
One row per (geometry, N, sampler seed): log Z with the defaults, the
reference with its standard error and ESS, the difference. References are
cached in ``references/gmm_reference.json``; ``--trace-at`` prints the error
along the stream.
"""

import ast
import json
import math
import os
import pathlib
import sys
import time

import numpy as np
import torch

from sklearn.mixture import GaussianMixture

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skevidence import EvidenceGMM  # noqa: E402
from _harness import arguments  # noqa: E402

# Identifiable 3-cluster 2-D geometries: (centres, per-feature sds, weights).
GEOMETRIES = {
    "separated": ([[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]], [[1.0, 1.0], [0.7, 0.7], [1.3, 1.3]],
                  [0.3, 0.3, 0.4]),
    "elongated": ([[0.0, -3.0], [0.0, 3.0], [6.0, 0.0]], [[3.0, 0.5], [2.0, 0.8], [0.6, 2.5]],
                  [0.5, 0.3, 0.2]),
    "unequal": ([[0.0, 0.0], [5.0, 5.0], [-5.0, 6.0]], [[2.0, 2.0], [0.3, 0.3], [1.0, 0.5]],
                [0.8, 0.15, 0.05]),
}


# -- the posterior's modes (EM starts climbed by L-BFGS) --------------------------


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


def make_clusters(n, geometry, seed):
    """``n`` draws of a named 3-component geometry, in a random order."""
    centres, sds, weights = (np.asarray(a, dtype=float) for a in GEOMETRIES[geometry])
    rng = np.random.default_rng(seed)
    z = rng.choice(len(weights), size=n, p=weights)
    return centres[z] + sds[z] * rng.standard_normal((n, centres.shape[1]))


def _log_posterior_blocks(model, Xt, theta, block=256):
    """Unnormalised log posterior ``[M]``, in blocks of particles to bound memory."""
    out = [model.log_prior(t) + model.log_likelihood(t, (Xt,)).sum(1)
           for t in theta.split(block)]
    return torch.cat(out)


def _student_t_draws(n, d, nu, rng):
    """Standard multivariate t draws ``[n, d]`` (numpy ``rng``)."""
    z = rng.standard_normal((n, d))
    return z * np.sqrt(nu / rng.chisquare(nu, size=n))[:, None]


def reference_log_evidence(X, model, n_draws=20000, nu=8.0, n_starts=4, seed=0):
    """Importance-sampling ``log p(X)`` for an identifiable mixture.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    model : GaussianMixtureModel
        The model (priors included) whose evidence is wanted.
    n_draws : int
        Number of importance draws.
    nu : float
        Degrees of freedom of the t components.
    n_starts : int
        EM starts for the mode search.
    seed : int
        Seeds the EM starts and the draws.

    Returns
    -------
    dict with ``log_evidence``, ``std_error`` (delta method,
    ``sqrt((1/ESS - 1/n_draws))``), ``ess`` (fraction of ``n_draws``),
    ``laplace`` (Laplace approximation times ``K!``) and ``n_modes``
    (distinct optima within 30 nats of the best; more than 1 warns that
    the posterior is not one mode up to relabelling).
    """
    Xt = torch.as_tensor(X, dtype=torch.float64)
    modes, hessians, _ = posterior_modes(X, model, n_starts=n_starts, seed=seed)
    mode, hessian, n_modes = modes[0], hessians[0], modes.shape[0]
    cov = torch.linalg.inv(-hessian)
    cov = 0.5 * (cov + cov.T)
    chol = torch.linalg.cholesky(cov)
    maps = relabelling_maps(model)  # theta @ maps[p] relabels by permutation p
    P, d = maps.shape[0], model.n_params
    rng = np.random.default_rng(seed)
    z = torch.as_tensor(_student_t_draws(n_draws, d, nu, rng))
    labels = torch.as_tensor(rng.integers(P, size=n_draws))
    theta = torch.einsum("md,mde->me", mode + z @ chol.T, maps[labels])
    # log q: the mean over relabellings p of the density of theta = phi @ maps[p]
    # with phi ~ t(mode, cov), i.e. t(theta @ maps[p]^-1) / |det maps[p]|
    # (the additive-log-ratio logits make a relabelling linear, not a permutation).
    log_t_norm = (math.lgamma((nu + d) / 2) - math.lgamma(nu / 2) - d / 2 * math.log(nu * math.pi)
                  - torch.log(torch.diagonal(chol)).sum())
    inverse_maps = torch.linalg.inv(maps)
    log_dets = torch.linalg.slogdet(maps)[1]
    log_t = []
    for p in range(P):
        back = theta @ inverse_maps[p] - mode
        w = torch.linalg.solve_triangular(chol, back.T, upper=False).T
        log_t.append(log_t_norm - log_dets[p]
                     - (nu + d) / 2 * torch.log1p(w.square().sum(1) / nu))
    log_q = torch.logsumexp(torch.stack(log_t), 0) - math.log(P)
    log_w = (_log_posterior_blocks(model, Xt, theta) - log_q).numpy()
    log_w = np.where(np.isfinite(log_w), log_w, -np.inf)
    log_z = float(np.logaddexp.reduce(log_w) - math.log(n_draws))
    w = np.exp(log_w - log_w.max())
    ess = float(w.sum() ** 2 / np.square(w).sum())
    laplace = (float(log_posterior(model, Xt, mode[None])[0]) + 0.5 * d * math.log(2 * math.pi)
               - 0.5 * float(torch.linalg.slogdet(-hessian)[1]) + math.log(P))
    return {"log_evidence": log_z, "std_error": math.sqrt(max(1.0 / ess - 1.0 / n_draws, 0.0)),
            "ess": ess / n_draws, "n_modes": n_modes, "laplace": laplace}


CACHE = pathlib.Path(__file__).parent / "references" / "gmm_reference.json"


def cached_reference(X, model, key, n_draws):
    """:func:`reference_log_evidence`, read from ``references/gmm_reference.json`` when
    computed before. ``key`` names the data (geometry, size, data seed); the model's
    priors are set from the data, so it also fixes the model."""
    key = f"{key} draws={n_draws}"
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    if key not in cache:
        cache[key] = reference_log_evidence(X, model, n_draws=n_draws)
        CACHE.parent.mkdir(exist_ok=True)
        CACHE.write_text(json.dumps(dict(sorted(cache.items())), indent=1) + "\n")
    return cache[key]


def model_of(estimator):
    """The GaussianMixtureModel of a fitted EvidenceGMM (its frozen priors included)."""
    return estimator._model


def main():
    parser = arguments(__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[4000, 20000])
    parser.add_argument("--geometries", nargs="+", default=list(GEOMETRIES))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--data-seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=20000)
    parser.add_argument("--param", nargs="*", help="estimator parameter overrides, key=value")
    parser.add_argument("--engine", nargs="*", help="engine setting overrides, key=value")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--trace-at", type=int, nargs="*",
                        help="also the error of evidence_trace_ at these n (reference on X[:n])")
    args = parser.parse_args()
    params = estimator_settings(args)
    if args.trace_at:
        return trace_errors(args, params)
    header = (f"{'geometry':>10} {'N':>6} {'seed':>4} {'time s':>7} {'cpu s':>7} {'log Z':>12} "
              f"{'reference':>12} {'se':>6} {'ess':>5} {'diff':>7} {'std':>6}")
    print(header)
    print("-" * len(header))
    rows = []  # (geometry, n, diff, std)
    for n in args.n:  # every geometry at the smaller N first
        for geometry in args.geometries:
            X = make_clusters(n, geometry, args.data_seed)
            ref = None
            for seed in args.seeds:
                start, cpu = time.perf_counter(), time.process_time()
                est = EvidenceGMM(n_components=3, random_state=seed, **params).fit(X)
                elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
                if ref is None:
                    ref = cached_reference(X, model_of(est), f"{geometry} n={n} "
                                           f"data_seed={args.data_seed}", args.draws)
                diff = est.log_evidence_ - ref["log_evidence"]
                rows.append((geometry, n, diff, est.log_evidence_std_))
                print(f"{geometry:>10} {n:>6} {seed:>4} {elapsed:>7.1f} {cpu:>7.1f} "
                      f"{est.log_evidence_:>12.2f} "
                      f"{ref['log_evidence']:>12.2f} {ref['std_error']:>6.3f} {ref['ess']:>5.2f} "
                      f"{diff:>7.2f} {est.log_evidence_std_:>6.2f}", flush=True)
    print_summary(rows)


def trace_errors(args, params):
    """Where the error enters: the running estimate minus the reference on ``X[:n]``.

    The fitted model's priors are frozen from all of ``X``, and the trace's
    ``log_evidence`` at ``n_seen = n`` estimates ``log p(X[:n])`` under them.
    """
    print(f"{'geometry':>10} {'N':>6} {'seed':>4} " + " ".join(f"{'n=' + str(m):>8}" for m in
                                                           args.trace_at)
          + f" {'std at n':>24}")
    for n in args.n:
        for geometry in args.geometries:
            X = make_clusters(n, geometry, args.data_seed)
            refs = None
            for seed in args.seeds:
                est = EvidenceGMM(n_components=3, random_state=seed, **params).fit(X)
                if refs is None:
                    refs = [cached_reference(X[:m], model_of(est), f"{geometry} n={m} of {n} "
                                             f"data_seed={args.data_seed}",
                                             args.draws)["log_evidence"]
                            for m in args.trace_at]
                trace = est.evidence_trace_
                at = [int(np.flatnonzero(trace["n_seen"] == m)[0]) for m in args.trace_at]
                diffs = [trace["log_evidence"][i] - r for i, r in zip(at, refs)]
                stds = " ".join(f"{trace['log_evidence_std'][i]:.2f}" for i in at)
                print(f"{geometry:>10} {n:>6} {seed:>4} " + " ".join(f"{d:>8.2f}" for d in diffs)
                      + f" {stds:>24}", flush=True)


def summary_line(label, diffs, stds):
    """Median / worst |diff| and the fraction within 1 and 2 reported std."""
    mag = np.abs(diffs)
    worst = diffs[np.argmax(mag)]
    return (f"{label:>18} {len(diffs):>4} {np.median(diffs):>7.2f} {np.median(mag):>7.2f} "
            f"{worst:>7.2f} {np.mean(mag <= stds):>6.2f} {np.mean(mag <= 2 * stds):>6.2f} "
            f"{stds.mean() / np.sqrt(np.mean(diffs ** 2)):>8.2f}")


def print_summary(rows):
    """Per (geometry, N), per N and overall: the bar is median |diff| <= 0.5, worst <= 1."""
    print()
    header = (f"{'group':>18} {'runs':>4} {'median':>7} {'med|d|':>7} {'worst':>7} "
              f"{'<=1std':>6} {'<=2std':>6} {'std/RMS':>8}")
    print(header)
    print("-" * len(header))
    geometry = np.array([r[0] for r in rows])
    n = np.array([r[1] for r in rows])
    diffs = np.array([r[2] for r in rows])
    stds = np.array([r[3] for r in rows])
    groups = [(f"{g} {m}", (geometry == g) & (n == m))
              for m in dict.fromkeys(n) for g in dict.fromkeys(geometry)]
    groups += [(f"all {m}", n == m) for m in dict.fromkeys(n)] + [("all", n == n)]
    for label, mask in groups:
        if mask.any():
            print(summary_line(label, diffs[mask], stds[mask]))


if __name__ == "__main__":
    main()
