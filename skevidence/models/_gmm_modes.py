"""The mixture's search for modes that its particles missed (``Model.mode_candidates``).

A cloud caught in a lesser configuration (a component spent on a cluster
that another covers, so that a small cluster has none) cannot leave it by
local moves once the data are many: the barrier grows with them. Moving one
component to a data point and climbing by EM crosses it; where two or more
components must move together, starts that need no cloud do (docs:
benchmarks, Gaussian mixture).
"""

import math

import numpy as np
import torch
from sklearn.cluster import kmeans_plusplus

from ._gmm_kernels import MixtureRows, joint_features, summed_over_rows


def mode_candidates(model, theta, rows, generator, relocations=8, fresh_starts=128,
                    search_rows=16384, em_iterations=40, refined=3):
    """Points near the modes of ``model``'s posterior on ``rows``, ``[refined or 1, d]``.

    Starts moved from ``theta [d]`` and fresh ones climb by MAP-EM on a strided
    subsample of ``rows`` (whose mode is not the full data's), the best of them
    then on all of ``rows``; in single precision, which costs less: they only
    propose points, which the search rates on every row in double precision.

    ``relocations``: data points per component moved to, and fresh modes kept
    (fewer miss well-separated ones). ``fresh_starts``: climbs from k-means++
    seeds (a hundred or so make runs that differ in seed agree).
    ``search_rows``: rows of the climbs, of the fresh ones an eighth (a
    subsample locates a mode's basin). ``em_iterations``: EM iterations of the
    climbs (half as many for the best on all rows). ``refined``: climbs refined
    on all rows (one past ``4 * search_rows`` rows, where that EM costs most).
    """
    X = rows[0].to(torch.float32)
    subsample = strided(X, search_rows)
    starts = torch.cat([
        relocated_starts(model, theta.to(torch.float32), subsample, generator, relocations),
        fresh_modes(model, strided(subsample, search_rows // 8), generator, fresh_starts,
                    em_iterations, relocations)])
    found = best(model, map_em(model, starts, subsample, em_iterations), subsample,
                 refined if X.shape[0] <= 4 * search_rows else 1)
    return map_em(model, found, X, em_iterations // 2).to(theta.dtype)


def relocated_starts(model, theta, X, generator, n_locations):
    """``[K * n_locations, d]``: ``theta`` with one component moved to a data point,
    drawn half uniformly and half where ``theta`` explains the data worst, with
    a small weight and variance."""
    K, D, L = model.n_components, model.n_features, n_locations
    log_w, means, variances = model.unpack(theta[None])
    log_density = torch.logsumexp(model.component_log_joint(theta[None], X), dim=1)[0]
    uniform = torch.randint(X.shape[0], (L - L // 2,), generator=generator, device=X.device)
    badly_explained = torch.multinomial(torch.softmax(-log_density, 0), L // 2,
                                        replacement=True, generator=generator)
    locations = X[torch.cat([uniform, badly_explained])]  # [L, D]
    weights = log_w.exp().expand(K, L, K).clone()
    means = means.expand(K, L, K, D).clone()
    variances = variances.expand(K, L, K, D).clone()
    k = torch.arange(K, device=X.device)  # candidate group k moves component k
    weights[k, :, k], means[k, :, k], variances[k, :, k] = 1.0 / (2 * K), locations, X.var(0) / K**2
    weights = weights / weights.sum(-1, keepdim=True)
    return model.pack(weights.reshape(K * L, K), means.reshape(K * L, K, D),
                      variances.reshape(K * L, K, D))


def fresh_modes(model, coarse, generator, n_starts, n_iterations, n_kept):
    """``[n_kept, d]``: the best of ``n_starts`` climbs of ``n_iterations`` EM
    iterations from k-means++ seeds (scikit-learn's, seeded from ``generator``)
    on the rows ``coarse`` (equal weights, the data's variance over ``K^2``)."""
    K = model.n_components
    seed = int(torch.randint(2**31 - 1, (1,), generator=generator, device=generator.device))
    random_state, rows = np.random.RandomState(seed), coarse.cpu().numpy()
    means = torch.as_tensor(np.stack([kmeans_plusplus(rows, K, random_state=random_state)[0]
                                      for _ in range(n_starts)]), device=coarse.device)
    starts = model.pack(torch.full(means.shape[:2], 1.0 / K, dtype=coarse.dtype,
                                   device=coarse.device),
                        means, (coarse.var(0) / K**2).expand_as(means))
    return best(model, map_em(model, starts, coarse, n_iterations), coarse, n_kept)


def best(model, theta, X, n):
    """The ``n`` rows of ``theta`` with the highest log posterior on ``X``, one per value
    to hundredths of a nat: climbs that reach one mode, or relabelled copies of it,
    share their value there."""
    log_p = torch.nan_to_num(model.log_prior(theta) + model.log_likelihood_sum(theta, (X,)),
                             nan=-math.inf)
    order = log_p.argsort(descending=True)
    rounded = torch.round(log_p[order] * 100)
    distinct = torch.ones_like(rounded, dtype=torch.bool)
    distinct[1:] = rounded[1:] != rounded[:-1]
    return theta[order[distinct][:n]]


def map_em(model, theta, X, n_iterations):
    """``n_iterations`` of EM for the posterior mode in the unconstrained parameters.

    The M step maximises the expected log joint with the model's prior
    and the Jacobians of its parameter maps in closed form: weights
    ``(N_k + alpha) / (N + K alpha)``; means shrunk to the prior mean as
    by ``1 / mean_variance_factor`` pseudo-observations; variances
    ``(b + (m - m0)^2 / (2 c) + S_k / 2) / (a + 1 / 2 + N_k / 2)``. Each
    iteration raises the log posterior (an ECM: the mean's optimum does
    not depend on the variance). scikit-learn's ``GaussianMixture`` has no
    such prior (its Bayesian one another), so the EM is ours.
    """
    m0, b = model.prior_location(X)
    a, c = model.variance_shape, model.mean_variance_factor
    alpha, K, D = model.weight_concentration, model.n_components, model.n_features
    rows = MixtureRows(joint_features(X))
    for _ in range(n_iterations):
        moments = summed_over_rows(model.parts(theta), rows)[1]  # S2, S1, N_k
        S2, S1, Nk = moments[..., :D], moments[..., D : 2 * D], moments[..., 2 * D :]
        weights = (Nk[..., 0] + alpha) / (X.shape[0] + K * alpha)
        means = (S1 + m0 / c) / (Nk + 1.0 / c)
        scatter = (S2 - 2.0 * means * S1 + Nk * means.square()).clamp_min(0.0)
        variances = ((b + (means - m0).square() / (2.0 * c) + 0.5 * scatter)
                     / (a + 0.5 + 0.5 * Nk))
        theta = model.pack(weights, means, variances)
    return theta


def strided(X, n_rows):
    """Every ``k``-th row of ``X``, ``k`` the least that leaves about ``n_rows``."""
    return X[:: max(1, X.shape[0] // n_rows)]
