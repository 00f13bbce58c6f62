"""Gaussian mixture with diagonal covariances (paper, Appendix B.3).

Prior: ``weights ~ Dirichlet(weight_concentration)``,
``variance_kj ~ InvGamma(variance_shape, variance_scale)`` and
``mean_kj | variance_kj ~ N(mean_prior, mean_variance_factor * variance_kj)``.
The component assignments are marginalised (logsumexp over components).

Unconstrained parameter vector, for ``K`` components and ``D`` features::

    theta = [logits (K - 1), means (K * D), log_variances (K * D)]

The weights are ``softmax([logits, 0])`` (additive log-ratio with the last
logit fixed at 0, so there is no redundant direction; one component has no
weight parameter at all) and the variances ``exp(log_variances)``. With
those maps the log-Jacobians are ``sum_k log w_k`` for the weights and
``sum log_variances`` for the variances, and :meth:`log_prior` includes
both.
"""

import functools
import itertools
import math
from typing import NamedTuple

import numpy as np
import torch

from ._bits import (LOG2_E, log_normalizer_bits_, single_precision_buffer,
                    summed_log_normalizer_bits_)
from .base import Model, PreparedBatch, block_elements, row_blocks, stacked_terms

__all__ = ["GaussianMixtureModel"]

_LOG_2PI = math.log(2.0 * math.pi)
# Most components whose relabellings (K! of them) the importance-sampling
# estimate at the mode covers (inference/importance.py).
MAX_RELABELLED = 6
# Data points each component is moved to in :meth:`mode_candidates`, the
# EM iterations that follow on at most SEARCH_ROWS rows, and those of the
# REFINED best on all rows. A few points per component already lift a cloud
# trapped well below the mode; on a few well-separated components it takes
# more of them to reach the best mode rather than one just below it
# (docs: benchmarks, Gaussian mixture).
RELOCATIONS = 8
# Climbs from k-means++ seeds, whatever the particles hold, on at most
# FRESH_ROWS rows; the best FRESH_KEPT join the search. Moving one component
# at a time cannot leave a configuration that two or more must leave together:
# without fresh starts, runs that differ only in the sampler's seed each find
# their own cloud's mode and their evidences disagree by tens of nats; a
# hundred or so starts make them agree, a few dozen do not. The climbs run on
# FRESH_ROWS rows: a start only has to reach a mode's basin, which a subsample
# locates, and on all SEARCH_ROWS rows the many starts would dominate the cost
# of the search
# (docs: benchmarks, Gaussian mixture).
FRESH_STARTS = 128
FRESH_ROWS = 2048
FRESH_KEPT = 8
SEARCH_ROWS = 16384
EM_ITERATIONS = 40
REFINE_ITERATIONS = 20
REFINED = 3
# Entries of the [points, K, rows] joint per block of rows on the CPU, where
# one call evaluates many points on many rows: they stay in the cache, where
# a larger block spills to memory and each row costs more. On a GPU,
# base.block_elements.
CACHE_ELEMENTS = 1 << 19
# A component whose responsibilities sum to less than this explains no datum
# (spare_weight): it follows its prior. A light but real component (a few
# rows in a thousand) can dip below one observation under a fair share of the
# posterior; a tenth of one is low enough that it rarely counts as empty.
EMPTY_COUNT = 0.1


class _Parts(NamedTuple):
    """The blocks of ``theta [M, d]`` and the maps of them that every density reads."""

    means: torch.Tensor  # [M, K, D]
    log_var: torch.Tensor  # [M, K, D]
    log_w: torch.Tensor  # [M, K]
    precision: torch.Tensor  # [M, K, D]


class GaussianMixtureModel(Model):
    """Mixture of ``n_components`` diagonal Gaussians with conjugate-style priors.

    Parameters
    ----------
    n_features : int
        Dimension ``D`` of the observations.
    n_components : int, default=5
        Number of mixture components ``K``.
    weight_concentration : float, default=1.0
        Symmetric Dirichlet concentration of the weights.
    variance_shape : float, default=1.0
        Shape of the inverse-gamma prior on every variance.
    variance_scale : float or array-like of shape (n_features,), default=1.0
        Scale of the inverse-gamma prior on the variances (per feature when
        an array).
    mean_prior : float or array-like of shape (n_features,), default=0.0
        Prior mean of every component mean (per feature when an array).
    mean_variance_factor : float, default=4.0
        The prior variance of a mean is this factor times its component's
        variance.
    """

    def __init__(self, n_features, n_components=5, weight_concentration=1.0,
                 variance_shape=1.0, variance_scale=1.0, mean_prior=0.0,
                 mean_variance_factor=4.0):
        self.n_features = int(n_features)
        self.n_components = int(n_components)
        self.weight_concentration = float(weight_concentration)
        self.variance_shape = float(variance_shape)
        self.variance_scale = _per_feature(variance_scale, n_features)
        self.mean_prior = _per_feature(mean_prior, n_features)
        self.mean_variance_factor = float(mean_variance_factor)
        K, D = self.n_components, self.n_features
        self.n_params = (K - 1) + 2 * K * D

    def _prior_location(self, theta):
        """``(mean_prior, variance_scale)`` as ``[D]`` tensors like ``theta``."""
        kw = dict(dtype=theta.dtype, device=theta.device)
        return torch.as_tensor(self.mean_prior, **kw), torch.as_tensor(self.variance_scale, **kw)

    # -- parameter maps ------------------------------------------------------------

    def _split(self, theta):
        K, D = self.n_components, self.n_features
        M = theta.shape[0]
        logits = theta[:, : K - 1]
        means = theta[:, K - 1 : K - 1 + K * D].reshape(M, K, D)
        log_var = theta[:, K - 1 + K * D :].reshape(M, K, D)
        return logits, means, log_var

    def _parts(self, theta):
        """``theta``'s blocks with its log-weights and precisions, computed once."""
        logits, means, log_var = self._split(theta)
        return _Parts(means, log_var, self._log_weights(logits), torch.exp(-log_var))

    def _log_weights(self, logits):
        full = torch.cat([logits, logits.new_zeros(logits.shape[0], 1)], dim=1)
        return torch.log_softmax(full, dim=1)

    def unpack(self, theta):
        """``(log_weights [M, K], means [M, K, D], variances [M, K, D])``."""
        logits, means, log_var = self._split(theta)
        return self._log_weights(logits), means, log_var.exp()

    def pack(self, weights, means, variances):
        """Inverse of :meth:`unpack` (from weights, not log-weights), ``[M, d]``."""
        M = means.shape[0]
        log_w = torch.log(weights)
        logits = log_w[:, :-1] - log_w[:, -1:]
        return torch.cat([logits, means.reshape(M, -1), torch.log(variances).reshape(M, -1)], 1)

    def relabelling_maps(self, dtype=torch.float64, device="cpu"):
        """``[K!, d, d]``: ``theta @ maps[p]`` relabels the components by permutation ``p``.

        Relabelling is linear in the unconstrained parameters (the additive
        log-ratio logits are differences of log-weights), so each map is the
        image of the identity. ``None`` past ``MAX_RELABELLED`` components
        (7! = 5040 maps and more would cost more than they save).
        """
        if self.n_components > MAX_RELABELLED:
            return None
        eye = torch.eye(self.n_params, dtype=dtype, device=device)
        log_w, means, variances = self.unpack(eye)
        return torch.stack([self.pack(log_w[:, p].exp(), means[:, p], variances[:, p])
                            for p in itertools.permutations(range(self.n_components))])

    def mode_candidates(self, theta, rows, generator):
        """Each component moved in turn to a few data points, and fresh starts; MAP-EM.

        A cloud caught in a lesser configuration (a component spent on a
        cluster that another covers, so that a small cluster has none)
        cannot leave it by local moves once the data are many: the barrier
        grows with them. Moving one component to a data point and climbing
        by EM crosses it (``_relocated_starts``); where two or more
        components must move together, starts that need no cloud do
        (``_fresh_modes``). These climb on a strided subsample of
        ``rows`` (whose mode is not the full data's), the best ``REFINED``
        of them then on all of ``rows`` (the best alone past
        ``4 * SEARCH_ROWS`` rows, where that EM costs most of the search). ``[REFINED or 1, d]``, in ``theta``'s dtype.

        The climbs run in single precision, which costs less: they
        only propose points, which the search then rates on every row in
        double precision.
        """
        X = rows[0].to(torch.float32)
        subsample = _strided(X, SEARCH_ROWS)
        starts = torch.cat([self._relocated_starts(theta.to(torch.float32), subsample, generator),
                            self._fresh_modes(subsample, generator)])
        found = self._best(self._map_em(starts, subsample, EM_ITERATIONS), subsample,
                           REFINED if X.shape[0] <= 4 * SEARCH_ROWS else 1)
        return self._map_em(found, X, REFINE_ITERATIONS).to(theta.dtype)

    def _relocated_starts(self, theta, X, generator):
        """``[K * RELOCATIONS, d]``: ``theta`` with one component moved to a data point,
        drawn half uniformly and half where ``theta`` explains the data worst, with
        a small weight and variance."""
        K, D, L = self.n_components, self.n_features, RELOCATIONS
        log_w, means, variances = self.unpack(theta[None])
        log_density = torch.logsumexp(self._log_joint(theta[None], X), dim=1)[0]
        uniform = torch.randint(X.shape[0], (L - L // 2,), generator=generator, device=X.device)
        badly_explained = torch.multinomial(torch.softmax(-log_density, 0), L // 2,
                                            replacement=True, generator=generator)
        locations = X[torch.cat([uniform, badly_explained])]  # [L, D]
        weights = log_w.exp().expand(K, L, K).clone()
        means = means.expand(K, L, K, D).clone()
        variances = variances.expand(K, L, K, D).clone()
        for k in range(K):  # K small: each candidate moves one component
            weights[k, :, k] = 1.0 / (2 * K)
            means[k, :, k] = locations
            variances[k, :, k] = X.var(0) / K**2
        weights = weights / weights.sum(-1, keepdim=True)
        return self.pack(weights.reshape(K * L, K), means.reshape(K * L, K, D),
                         variances.reshape(K * L, K, D))

    def _fresh_modes(self, X, generator):
        """``[FRESH_KEPT, d]``: the best of ``FRESH_STARTS`` EM climbs from k-means++
        seeds on at most ``FRESH_ROWS`` rows of ``X`` (equal weights, the data's
        variance over ``K^2``)."""
        K = self.n_components
        coarse = _strided(X, FRESH_ROWS)
        means = _kmeans_plus_plus(coarse, K, FRESH_STARTS, generator)  # [S, K, D]
        starts = self.pack(torch.full(means.shape[:2], 1.0 / K, dtype=X.dtype, device=X.device),
                           means, (coarse.var(0) / K**2).expand_as(means))
        return self._best(self._map_em(starts, coarse, EM_ITERATIONS), coarse, FRESH_KEPT)

    def _best(self, theta, X, n):
        """The ``n`` rows of ``theta`` with the highest log posterior on ``X``."""
        log_p = self.log_prior(theta) + self.log_likelihood_sum(theta, (X,))
        return theta[torch.nan_to_num(log_p, nan=-math.inf).argsort(descending=True)[:n]]

    def _map_em(self, theta, X, n_iterations):
        """``n_iterations`` of EM for the posterior mode in the unconstrained parameters.

        The M step maximises the expected log joint with this model's prior
        and the Jacobians of its parameter maps in closed form: weights
        ``(N_k + alpha) / (N + K alpha)``; means shrunk to the prior mean as
        by ``1 / mean_variance_factor`` pseudo-observations; variances
        ``(b + (m - m0)^2 / (2 c) + S_k / 2) / (a + 1 / 2 + N_k / 2)``. Each
        iteration raises the log posterior (an ECM: the mean's optimum does
        not depend on the variance).
        """
        m0, b = self._prior_location(X)
        a, c = self.variance_shape, self.mean_variance_factor
        alpha, K = self.weight_concentration, self.n_components
        features = {"features": _joint_features(X)}
        D = self.n_features
        for _ in range(n_iterations):
            moments = self._summed_over_rows(self._parts(theta), features)[1]  # S2, S1, N_k
            S2, S1, Nk = moments[..., :D], moments[..., D : 2 * D], moments[..., 2 * D :]
            weights = (Nk[..., 0] + alpha) / (X.shape[0] + K * alpha)
            means = (S1 + m0 / c) / (Nk + 1.0 / c)
            scatter = (S2 - 2.0 * means * S1 + Nk * means.square()).clamp_min(0.0)
            variances = ((b + (means - m0).square() / (2.0 * c) + 0.5 * scatter)
                         / (a + 0.5 + 0.5 * Nk))
            theta = self.pack(weights, means, variances)
        return theta

    # -- prior -----------------------------------------------------------------------

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        K, D = self.n_components, self.n_features
        kw = dict(generator=generator, dtype=dtype, device=device)
        # Gamma draws through torch's sampler would bypass the generator, so the
        # Dirichlet and inverse-gamma draws use generator-driven constructions:
        # an exponential is -log U; Gamma(a) for general a by Marsaglia-Tsang.
        gammas = _gamma(self.weight_concentration, (n, K), **kw)
        weights = gammas / gammas.sum(1, keepdim=True)
        m0, b = self._prior_location(torch.empty(0, dtype=dtype, device=device))
        variances = b / _gamma(self.variance_shape, (n, K, D), **kw)
        eps = torch.randn(n, K, D, **kw)
        means = m0 + (self.mean_variance_factor * variances).sqrt() * eps
        # A weight that underflows to 0 would map to an infinite logit.
        weights = weights.clamp_min(torch.finfo(dtype).tiny)
        return self.pack(weights, means, variances)

    @functools.cached_property
    def _log_prior_constant(self):
        K, D = self.n_components, self.n_features
        a, b, alpha = self.variance_shape, self.variance_scale, self.weight_concentration
        dirichlet = math.lgamma(K * alpha) - K * math.lgamma(alpha)
        inv_gamma = K * (a * float(np.log(b).sum()) - D * math.lgamma(a))
        normal = -0.5 * K * D * (_LOG_2PI + math.log(self.mean_variance_factor))
        return dirichlet + inv_gamma + normal

    def log_prior(self, theta):
        return self._log_prior_and_grad(self._parts(theta))[0]

    def grad_log_prior(self, theta):
        return self._log_prior_and_grad(self._parts(theta))[1]

    def _log_prior_and_grad(self, parts):
        """Both from shared terms: ``[M]`` and ``[M, d]``.

        The Dirichlet density times the additive-log-ratio Jacobian
        ``prod_k w_k``; each variance's InvGamma density of ``v = exp(s)``
        times the Jacobian ``v`` (``-(a + 1) s - b / v + s``); each mean's
        normal density given its variance. In ``s`` the last two share
        ``t = b / v + (m - m0)^2 / (2 c v)``: the log density is ``-(a +
        1/2) s - t`` and its derivative ``t - a - 1/2``.
        """
        K = self.n_components
        alpha, a, c = self.weight_concentration, self.variance_shape, self.mean_variance_factor
        m0, b = self._prior_location(parts.means)
        centred = parts.means - m0
        scaled = centred * parts.precision / c  # minus the means' gradient
        t = torch.addcmul(b * parts.precision, centred, scaled, value=0.5)
        log_prior = (alpha * parts.log_w.sum(1) - torch.add(t, parts.log_var, alpha=a + 0.5)
                     .sum((1, 2)) + self._log_prior_constant)
        g_logits = alpha - K * alpha * parts.log_w[:, : K - 1].exp()
        M = scaled.shape[0]
        return log_prior, torch.cat([g_logits, scaled.reshape(M, -1).neg(),
                                     t.reshape(M, -1).sub(a + 0.5)], 1)

    def log_joint_and_grad(self, theta, batch, weight=1.0):
        """:meth:`Model.log_joint_and_grad` with the parameter maps computed once."""
        parts = self._parts(theta)
        log_lik, g_lik = self._log_likelihood_and_grad(parts, batch)
        log_prior, g_prior = self._log_prior_and_grad(parts)
        return log_prior.add_(log_lik, alpha=weight), g_prior.add_(g_lik, alpha=weight)

    # -- likelihood ------------------------------------------------------------------

    def prepare_batch(self, batch):
        """The batch with its features ``[x^2, x, 1]`` (the right factor of ``_log_joint``)."""
        return PreparedBatch(batch, features=_joint_features(batch[0]))

    def prepare_move_batch(self, batch):
        """:meth:`prepare_batch` that also has the moves form the powers of the joint,
        the responsibilities and their sums in single precision (the joint and the
        logarithms stay double: the log likelihood errs by about 1e-9 of itself)."""
        features = _joint_features(batch[0])
        if features.dtype != torch.float64:
            return PreparedBatch(batch, features=features)
        return PreparedBatch(batch, features=features, single_features=features.float(),
                             buffers={})

    def _log_joint(self, theta, X, prepared=None, scale=1.0):
        """``scale (log w_k + log N(x_b | mean_k, diag var_k))``, laid out ``[M, K, B]``.

        The data index is last because torch reduces slowly over a short
        last dimension. ``scale=LOG2_E`` gives it in bits (``_bits``).
        """
        return self._joint_from(self._parts(theta), X, prepared, scale)

    def _joint_from(self, parts, X, prepared=None, scale=1.0):
        """:meth:`_log_joint` from the parameter maps of :meth:`_parts`."""
        K, D = self.n_components, self.n_features
        means, log_var, precision = parts.means, parts.log_var, parts.precision  # [M, K, D]
        M = means.shape[0]
        # -sum_j (x_j - m_j)^2 p_j / 2 expanded, with the constant of each
        # component as a third block: one [M K, 2D + 1] x [2D + 1, B] product
        # gives the joint, with no [M, K, B, D] (or further [M, K, B]) tensor.
        const = parts.log_w - 0.5 * ((means.square() * precision).sum(2) + log_var.sum(2)
                                     + D * _LOG_2PI)
        coef = torch.cat([-0.5 * precision, means * precision, const[:, :, None]], dim=2)
        features = _joint_features(X) if prepared is None else prepared["features"]
        return ((scale * coef.reshape(M * K, 2 * D + 1)) @ features.T).reshape(M, K, -1)

    def log_likelihood(self, theta, batch):
        return log_normalizer_bits_(self._log_joint(theta, batch[0], scale=LOG2_E))[0]

    def log_likelihood_sum(self, theta, batch):
        parts, X = self._parts(theta), batch[0]
        return sum(summed_log_normalizer_bits_(self._joint_from(parts, X[rows], scale=LOG2_E))[0]
                   for rows in _row_slices(theta.shape[0], self.n_components, X.shape[0],
                                           X.device))

    def responsibilities(self, theta, X):
        """Posterior component probabilities of every datum, ``[M, B, K]``."""
        return torch.softmax(self._log_joint(theta, X), dim=1).transpose(1, 2)

    def spare_weight(self, theta, weights, store):
        """The weight of the particles with a component that explains less than
        ``EMPTY_COUNT`` stored observations (the sum of its responsibilities), ``float``.

        In single precision (cheaper than double): only counts near ``EMPTY_COUNT``
        matter, sums of small responsibilities that it gives to about 1e-7 of
        themselves; each block's counts are added in double. Counts only
        grow from block to block, so a particle leaves the pass once each
        of its components has reached ``EMPTY_COUNT``: where every
        component explains data, the first block decides (the same result
        as the whole pass, at a fraction of it on many rows).
        """
        M, K = theta.shape[0], self.n_components
        theta = theta.float()
        counts = torch.zeros(M, K, dtype=torch.float64, device=theta.device)
        open_ = torch.arange(M, device=theta.device)  # the particles not yet decided
        for block in row_blocks(store, M):
            block_counts = self._summed_over_rows(self._parts(theta[open_]), {
                "features": _joint_features(block[0].float())})[1][:, :, 2 * self.n_features]
            counts[open_] += block_counts.double()
            open_ = open_[counts[open_].amin(1) < EMPTY_COUNT]
            if open_.numel() == 0:
                break
        return float(weights[counts.amin(1) < EMPTY_COUNT].sum())

    def grad_log_likelihood(self, theta, batch):
        """Responsibility-weighted sums of the per-component gradients.

        With ``r_nk`` the responsibilities, ``N_k = sum_n r_nk``,
        ``S1 = sum_n r_nk x_n`` and ``S2 = sum_n r_nk x_n^2``:
        d/dlogit_k = N_k - B w_k, d/dmean = (S1 - N_k m) / v,
        d/dlog v = -N_k / 2 + (S2 - 2 m S1 + N_k m^2) / (2 v).
        """
        return self.log_likelihood_and_grad(theta, batch)[1]

    def log_likelihood_and_grad(self, theta, batch):
        """Both from one ``[M, K, B]`` joint: its logsumexp and its softmax (in place).

        The exact warm-up needs both at every step; computing the joint
        once halves its cost against :meth:`log_likelihood` plus
        :meth:`grad_log_likelihood` separately.
        """
        return self._log_likelihood_and_grad(self._parts(theta), batch)

    def _log_likelihood_and_grad(self, parts, batch):
        """:meth:`log_likelihood_and_grad` from the parameter maps of :meth:`_parts`.

        From a batch of :meth:`prepare_move_batch` the powers of the joint,
        the responsibilities and their sums over the rows are single
        precision (the exponentials are most of their cost): the joint,
        whose expanded square cancels, and the logarithms stay double, so
        the log likelihood errs by about 1e-9 of itself; the gradient, whose
        variance terms cancel, by up to 1e-4 of its largest entry (data 40
        standard deviations from the origin), which the moves' accept step
        corrects.
        """
        X = batch[0]
        prepared = batch.stats if isinstance(batch, PreparedBatch) else {
            "features": _joint_features(X)}
        log_lik, moments = self._summed_over_rows(parts, prepared)
        return log_lik, self._gradient_from(parts, moments, X.shape[0])

    def weighted_grad_log_likelihood(self, theta, terms):
        """All the terms' rows in one pass, each row's responsibilities weighted (its
        ``[x^2, x, 1]`` scaled by its term's weight): one call costs about what a
        call on the largest term does where the rows are few (a mini-batch of the
        past data and one of the chunk, at each step of the moves)."""
        (X,), row_weights = stacked_terms(terms)
        parts, features = self._parts(theta), _joint_features(X)
        _, moments = self._summed_over_rows(parts, {
            "features": features, "weighted_features": row_weights[:, None] * features})
        return self._gradient_from(parts, moments, row_weights.sum())

    def _gradient_from(self, parts, moments, n_rows):
        """The gradient from the moments of :meth:`_summed_over_rows` over ``n_rows`` rows."""
        K, D = self.n_components, self.n_features
        means, precision = parts.means, parts.precision
        S2, S1, Nk = moments[:, :, :D], moments[:, :, D : 2 * D], moments[:, :, 2 * D]
        g_logits = Nk[:, : K - 1] - n_rows * parts.log_w[:, : K - 1].exp()
        Nk3 = Nk[:, :, None]
        g_means = (S1 - Nk3 * means) * precision
        sq = S2 - 2.0 * means * S1 + Nk3 * means.square()
        g_log_var = -0.5 * Nk3 + 0.5 * sq * precision
        M = means.shape[0]
        return torch.cat([g_logits, g_means.reshape(M, -1), g_log_var.reshape(M, -1)], 1)

    def _summed_over_rows(self, parts, prepared):
        """The log likelihood summed over the rows, ``[M]``, and ``sum_n r_nk [x_n^2, x_n,
        1]`` (S2, S1 and N_k), ``[M, K, 2 D + 1]``, in :func:`_row_slices` of the rows.
        ``prepared``: the stats of a prepared batch, or a dict with its ``"features"``
        (and ``"weighted_features"``, which the moments then sum instead)."""
        M, K = parts.means.shape[0], self.n_components
        features = prepared["features"]
        log_lik, moments = 0.0, 0.0
        for rows in _row_slices(M, K, features.shape[0], features.device):
            block = {key: value if key == "buffers" else value[rows]
                     for key, value in prepared.items()}
            # [M, K, rows], overwritten by the responsibilities (or they go to a buffer)
            joint = self._joint_from(parts, None, block, scale=LOG2_E)
            out = single_precision_buffer(block, joint.shape, joint.device)
            block_lik, resp = summed_log_normalizer_bits_(joint, with_proba=True, out=out)
            if out is not None:
                rows_features = block["single_features"]
            else:
                rows_features = block.get("weighted_features", block["features"])
            # S2, S1 and N_k from one product
            block_moments = resp.reshape(M * K, -1) @ rows_features
            log_lik = log_lik + block_lik
            moments = moments + block_moments.reshape(M, K, -1).to(parts.means.dtype)
        return log_lik, moments

    def fisher_information(self, theta, batch):
        """Observed information of the batch at one ``theta [d]``, ``[d, d]``: minus its Hessian.

        With ``a_k`` the log joint of component ``k``, ``g_k`` its gradient
        and ``r_k`` the responsibilities, one row's Hessian is
        ``sum_k r_k (H_k + g_k g_k^T) - gbar gbar^T`` (``gbar = sum_k r_k
        g_k``). ``g_k`` and ``H_k`` live in the logits and component ``k``'s
        own ``2 D`` slots, so the first sum is ``K`` small blocks and only
        ``gbar gbar^T`` costs ``O(B d^2)``. Not the expected information
        (the data enter through the responsibilities), so that a control
        variate's linear term matches each row's change of gradient; it
        need not be positive definite away from a mode.
        """
        return self._information(theta, batch[0].to(theta.dtype))

    def weighted_fisher_information(self, theta, terms):
        """All the terms' rows in one pass, each row's information weighted."""
        (X,), row_weights = stacked_terms(terms)
        return self._information(theta, X.to(theta.dtype), row_weights.to(theta.dtype))

    def _information(self, theta, X, row_weights=None):
        """:meth:`fisher_information` of the rows ``X``, each weighted by ``row_weights [B]``
        (None: all 1)."""
        K, D, B = self.n_components, self.n_features, X.shape[0]
        parts = self._parts(theta[None])
        w, means, precision = parts.log_w[0, : K - 1].exp(), parts.means[0], parts.precision[0]
        resp = torch.softmax(self._joint_from(parts, X)[0], dim=0).T  # [B, K]
        diff = X[:, None, :] - means
        u, q = diff * precision, 0.5 * diff.square() * precision  # [B, K, D]
        layout = _information_layout(K, D, X.device)
        dlog_w = layout.logit_eye.to(X.dtype) - w  # [K, K - 1]
        # Component k's gradient in its slots (logits, its means, its log-variances).
        own = torch.cat([dlog_w.expand(B, K, K - 1), u, q - 0.5], dim=2)  # [B, K, m]
        weighted = resp[:, :, None] * own
        mean_grad = torch.cat([resp @ dlog_w, weighted[:, :, K - 1 : K - 1 + D].reshape(B, -1),
                               weighted[:, :, K - 1 + D :].reshape(B, -1)], dim=1)
        n_rows, row_mean_grad = B, mean_grad
        if row_weights is not None:  # the rows' own terms weighted, their outer products once
            resp = resp * row_weights[:, None]
            weighted = resp[:, :, None] * own
            n_rows, row_mean_grad = row_weights.sum(), row_weights[:, None] * mean_grad
        blocks = -weighted.permute(1, 2, 0) @ own.transpose(0, 1)  # [K, m, m]
        # Minus the components' own Hessians, summed with the responsibilities: in
        # each (mean, log-variance) pair of slots, sum r p, sum r u (twice) and sum r q.
        counts, sums = resp.sum(0)[:, None], weighted[:, :, K - 1 :].sum(0)  # [K, 1], [K, 2D]
        r_u, r_q = sums[:, :D], sums[:, D:] + 0.5 * counts
        hessians = torch.cat([counts * precision, r_u, r_u, r_q], dim=1)  # [K, 4D]
        info = row_mean_grad.T @ mean_grad
        info.index_put_(layout.blocks, blocks, accumulate=True)
        info.index_put_(layout.hessians, hessians, accumulate=True)
        info[: K - 1, : K - 1] += n_rows * (torch.diag(w) - torch.outer(w, w))
        return info

    def prior_precision(self, theta):
        """Minus the Hessian of :meth:`log_prior` at one ``theta [d]``, ``[d, d]``."""
        K, D = self.n_components, self.n_features
        logits, means, log_var = self._split(theta[None])
        w = self._log_weights(logits).exp()[0, : K - 1]
        m0, b = self._prior_location(theta)
        precision, c = torch.exp(-log_var[0]), self.mean_variance_factor
        centred = means[0] - m0
        out = torch.zeros(self.n_params, self.n_params, dtype=theta.dtype, device=theta.device)
        out[: K - 1, : K - 1] = K * self.weight_concentration * (torch.diag(w) - torch.outer(w, w))
        means_at = K - 1 + torch.arange(K * D, device=theta.device)
        log_var_at = means_at + K * D
        out[means_at, means_at] = (precision / c).reshape(-1)
        cross = -(centred * precision / c).reshape(-1)
        out[means_at, log_var_at] = cross
        out[log_var_at, means_at] = cross
        out[log_var_at, log_var_at] = (b * precision
                                       + 0.5 * centred.square() * precision / c).reshape(-1)
        return out

    def posterior_scale(self, theta, n_eff):
        """Per-particle posterior standard deviations from the Fisher information.

        Diagonal of ``n_eff`` times the expected Fisher information of one
        observation, treating the components as well separated (logit
        ``w_k (1 - w_k)``, mean ``w_k / v``, log-variance ``w_k / 2``), plus
        the prior's curvature so an empty component keeps its prior scale.
        """
        return self._scale_from(*self._component_information(theta, n_eff))

    def shared_posterior_scale(self, theta, live, n_eff):
        """:meth:`posterior_scale` shared by the particles up to the labelling of the components.

        Each live particle's components are matched to those of the first
        (``_match_labels``), the information of each matched
        component is averaged over them in log space (a geometric mean),
        and each particle gets the average in its own labelling. The scale
        then follows the component, not the particle's position: a scale
        that follows the position of the particle it moves makes the move
        leave the posterior, and the evidence comes out too high.
        """
        kept = theta[live]
        labels = self._match_labels(kept, kept[0])
        order = labels.argsort(dim=1)  # back to each particle's own labelling
        shared = []
        for info in self._component_information(theta, n_eff):
            matched = _take_components(info[live].clamp_min(1e-300).log(), labels)
            mean = matched.mean(0).exp()
            full = mean.expand((theta.shape[0],) + mean.shape).clone()  # the dead: any labelling
            full[live] = mean[order]
            shared.append(full)
        return self._scale_from(*shared)

    def _component_information(self, theta, n_eff):
        """Fisher information of each component's weight, mean and log-variance (see above).

        ``([M, K], [M, K, D], [M, K, D])``; the weight's is that of its
        logit, ``w_k (1 - w_k)`` (the last component's has no logit).
        """
        logits, means, log_var = self._split(theta)
        K = self.n_components
        weights = self._log_weights(logits).exp()
        weight_info = (n_eff + K * self.weight_concentration) * weights * (1.0 - weights)
        w = weights[:, :, None]
        precision = torch.exp(-log_var)
        c = self.mean_variance_factor
        mean_info = (n_eff * w + 1.0 / c) * precision
        m0, b = self._prior_location(theta)
        centred = means - m0
        log_var_info = (0.5 * n_eff * w + b * precision
                        + 0.5 * centred.square() * precision / c)
        return weight_info, mean_info, log_var_info

    def _scale_from(self, weight_info, mean_info, log_var_info):
        M, K = weight_info.shape
        info = torch.cat([weight_info[:, : K - 1], mean_info.reshape(M, -1),
                          log_var_info.reshape(M, -1)], 1)
        return info.clamp_min(1e-300).rsqrt()

    def _match_labels(self, theta, reference):
        """``[M, K]``: particle m's component ``labels[m, k]`` is ``reference``'s ``k``.

        The relabelling that brings each particle's means and log-variances
        nearest to those of ``reference [d]``, the means in units of the
        prior's ``variance_scale`` (the data's scale by default, so that,
        like every step of the sampler, the matching does not change when
        the data are rescaled; not the reference's own variances, which
        early in the annealing are heavy-tailed prior draws): over all
        ``K!`` of them up to ``MAX_RELABELLED`` components, greedily past
        it (a loop over the components, the reference's heaviest first).
        """
        logits, means, log_var = self._split(theta)
        ref_logits, ref_means, ref_log_var = self._split(reference[None])
        _, unit = self._prior_location(theta)
        mean_gap = (means[:, :, None] - ref_means[:, None]).square() / unit
        var_gap = (log_var[:, :, None] - ref_log_var[:, None]).square()
        cost = (mean_gap + var_gap).sum(-1)  # [M, j, k]
        M, K = cost.shape[:2]
        if K <= MAX_RELABELLED:
            perms = torch.tensor(list(itertools.permutations(range(K))), device=theta.device)
            total = cost[:, perms, torch.arange(K, device=theta.device)].sum(-1)  # [M, K!]
            return perms[total.argmin(dim=1)]
        labels = torch.empty(M, K, dtype=torch.long, device=theta.device)
        rows = torch.arange(M, device=theta.device)
        for k in self._log_weights(ref_logits)[0].argsort(descending=True).tolist():
            j = cost[:, :, k].argmin(dim=1)
            labels[:, k] = j
            cost[rows, j, :] = math.inf  # component j of each particle is taken
        return labels

    # -- closed form -------------------------------------------------------------------

    def exact_log_evidence(self, batch):
        """Normal-Inverse-Gamma evidence per feature; one component only, float64.

        With one component the features are independent a priori and
        given the parameters, and each is the conjugate model
        ``x ~ N(m, v)``, ``m | v ~ N(mean_prior, v / kappa0)``,
        ``v ~ InvGamma(a, b)`` with ``kappa0 = 1 / mean_variance_factor``.
        """
        if self.n_components != 1:
            raise NotImplementedError(
                "the closed-form evidence exists only for n_components=1, "
                f"got {self.n_components}"
            )
        X = batch[0].to(torch.float64)
        n = X.shape[0]
        kappa0 = 1.0 / self.mean_variance_factor
        a = self.variance_shape
        m0, b = self._prior_location(X)
        kappa_n = kappa0 + n
        a_n = a + 0.5 * n
        xbar = X.mean(0)
        scatter = (X - xbar).square().sum(0)
        b_n = b + 0.5 * scatter + 0.5 * kappa0 * n * (xbar - m0).square() / kappa_n
        per_feature = (-0.5 * n * _LOG_2PI + 0.5 * (math.log(kappa0) - math.log(kappa_n))
                       + a * torch.log(b) - a_n * torch.log(b_n)
                       + math.lgamma(a_n) - math.lgamma(a))
        return float(per_feature.sum())


def _row_slices(n_points, n_components, n_rows, device):
    """Slices of ``n_rows`` rows whose ``[n_points, n_components, rows]`` joint holds at
    most ``CACHE_ELEMENTS`` entries on the CPU (one row at least), at most
    :func:`~.base.block_elements` on another device."""
    limit = CACHE_ELEMENTS if torch.device(device).type == "cpu" else block_elements(device)
    step = max(1, limit // max(n_points * n_components, 1))
    return [slice(start, start + step) for start in range(0, max(n_rows, 1), step)]


def _joint_features(X):
    """``[x^2, x, 1]`` per observation, ``[B, 2D + 1]``."""
    return torch.cat([X.square(), X, X.new_ones(X.shape[0], 1)], dim=1)


class _InformationLayout(NamedTuple):
    """Constant index sets of :meth:`GaussianMixtureModel.fisher_information`."""

    logit_eye: torch.Tensor  # [K, K - 1]: d log w_k / d logit_j = [k = j] - w_j
    blocks: tuple  # the [K, m, m] blocks' entries of theta's [d, d] (component k's slots)
    hessians: tuple  # the [K, 4 D] diagonal entries of each (mean, log-variance) pair


@functools.lru_cache(maxsize=None)
def _information_layout(K, D, device):
    """The :class:`_InformationLayout` of ``K`` components in ``D`` features, once per device."""
    k, j = torch.arange(K, device=device)[:, None], torch.arange(D, device=device)
    mean, var = K - 1 + k * D + j, K - 1 + (K + k) * D + j  # [K, D] each
    slots = torch.cat([torch.arange(K - 1, device=device).expand(K, K - 1), mean, var], dim=1)
    return _InformationLayout(
        torch.eye(K, K - 1, dtype=torch.float64, device=device),
        (slots[:, :, None], slots[:, None, :]),
        (torch.cat([mean, mean, var, var], dim=1), torch.cat([mean, var, mean, var], dim=1)))


def _per_feature(value, n_features):
    """A scalar or a length-``n_features`` vector as a float64 array of that length."""
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        return np.full(n_features, float(arr))
    if arr.shape != (n_features,):
        raise ValueError(f"expected a scalar or {n_features} values, got shape {arr.shape}")
    return arr.copy()


def _gamma(shape, size, generator, dtype, device):
    """Gamma(shape, 1) draws from ``generator`` (Marsaglia & Tsang, 2000)."""
    boost = shape < 1.0
    a = shape + 1.0 if boost else shape
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    out = torch.empty(size, dtype=dtype, device=device)
    todo = torch.ones(size, dtype=torch.bool, device=device)
    while bool(todo.any()):
        z = torch.randn(size, generator=generator, dtype=dtype, device=device)
        u = torch.rand(size, generator=generator, dtype=dtype, device=device)
        v = (1.0 + c * z) ** 3
        ok = (v > 0) & (torch.log(u) < 0.5 * z.square() + d - d * v.clamp_min(1e-300)
                        + d * torch.log(v.clamp_min(1e-300)))
        accept = todo & ok
        out = torch.where(accept, d * v, out)
        todo = todo & ~ok
    if boost:
        u = torch.rand(size, generator=generator, dtype=dtype, device=device)
        out = out * u ** (1.0 / shape)
    return out


def _strided(X, n_rows):
    """Every ``k``-th row of ``X``, ``k`` the least that leaves about ``n_rows``."""
    return X[:: max(1, X.shape[0] // n_rows)]


def _kmeans_plus_plus(X, K, n_starts, generator):
    """``[n_starts, K, D]`` means seeded as k-means++ does (Arthur and Vassilvitskii,
    2007): each a row of ``X`` drawn with probability proportional to its squared
    distance from the nearest mean drawn before."""
    pick = torch.randint(X.shape[0], (n_starts,), generator=generator, device=X.device)
    means = [X[pick]]
    d2 = (X - means[0][:, None]).square().sum(-1)  # [S, N]
    for _ in range(1, K):
        pick = torch.multinomial(d2.clamp_min(torch.finfo(X.dtype).tiny), 1,
                                 generator=generator)[:, 0]
        means.append(X[pick])
        d2 = torch.minimum(d2, (X - means[-1][:, None]).square().sum(-1))
    return torch.stack(means, 1)


def _take_components(values, labels):
    """``values [M, K, ...]`` with each particle's components reordered by ``labels [M, K]``."""
    index = labels.reshape(labels.shape + (1,) * (values.dim() - 2)).expand_as(values)
    return torch.gather(values, 1, index)
