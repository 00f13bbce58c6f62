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

from . import _gmm_kernels as kernels
from . import _gmm_modes, _labels
from ._bits import LOG2_E, log_normalizer_bits_, summed_log_normalizer_bits_
from ._gmm_kernels import MixtureRows, Parts
from .base import LOG_2PI, Model
from .batches import PreparedBatch, stacked_terms

__all__ = ["GaussianMixtureModel"]

# Most components with relabelling maps: 7! = 5040 maps would cost more than they save.
MAX_RELABELLED = 6


class MixtureParameters(NamedTuple):
    """``M`` mixtures' parameters in their natural maps (``GaussianMixtureModel.unpack``)."""

    log_weights: torch.Tensor  # [M, K]
    means: torch.Tensor  # [M, K, D]
    variances: torch.Tensor  # [M, K, D]


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

    def prior_location(self, theta):
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

    def parts(self, theta):
        """``theta``'s blocks with its log-weights and precisions, computed once."""
        logits, means, log_var = self._split(theta)
        return Parts(means, log_var, self._log_weights(logits), torch.exp(-log_var))

    def _log_weights(self, logits):
        full = torch.cat([logits, logits.new_zeros(logits.shape[0], 1)], dim=1)
        return torch.log_softmax(full, dim=1)

    def unpack(self, theta):
        """The ``MixtureParameters`` of ``theta [M, d]``."""
        logits, means, log_var = self._split(theta)
        return MixtureParameters(self._log_weights(logits), means, log_var.exp())

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
        image of the identity. ``None`` past ``MAX_RELABELLED`` components.
        """
        if self.n_components > MAX_RELABELLED:
            return None
        eye = torch.eye(self.n_params, dtype=dtype, device=device)
        log_w, means, variances = self.unpack(eye)
        return torch.stack([self.pack(log_w[:, p].exp(), means[:, p], variances[:, p])
                            for p in itertools.permutations(range(self.n_components))])

    def mode_candidates(self, theta, rows, generator):
        """Each component moved in turn to a few data points, and fresh starts; MAP-EM
        (``_gmm_modes.mode_candidates``)."""
        return _gmm_modes.mode_candidates(self, theta, rows, generator)

    # -- prior -----------------------------------------------------------------------

    def sample_prior(self, n, generator, dtype=torch.float64, device="cpu"):
        K, D = self.n_components, self.n_features
        kw = dict(generator=generator, dtype=dtype, device=device)
        # Gamma draws through torch's sampler would bypass the generator, so the
        # Dirichlet and inverse-gamma draws use generator-driven constructions:
        # an exponential is -log U; Gamma(a) for general a by Marsaglia-Tsang.
        gammas = _gamma(self.weight_concentration, (n, K), **kw)
        weights = gammas / gammas.sum(1, keepdim=True)
        m0, b = self.prior_location(torch.empty(0, dtype=dtype, device=device))
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
        normal = -0.5 * K * D * (LOG_2PI + math.log(self.mean_variance_factor))
        return dirichlet + inv_gamma + normal

    def log_prior(self, theta):
        return self._log_prior_and_grad(self.parts(theta))[0]

    def grad_log_prior(self, theta):
        return self._log_prior_and_grad(self.parts(theta))[1]

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
        m0, b = self.prior_location(parts.means)
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
        parts = self.parts(theta)
        log_lik, g_lik = self._log_likelihood_and_grad(parts, batch)
        log_prior, g_prior = self._log_prior_and_grad(parts)
        return log_prior.add_(log_lik, alpha=weight), g_prior.add_(g_lik, alpha=weight)

    # -- likelihood ------------------------------------------------------------------

    def prepare_batch(self, batch):
        """The batch with its features ``[x^2, x, 1]`` (``_gmm_kernels.MixtureRows``)."""
        return PreparedBatch(batch, MixtureRows(kernels.joint_features(batch[0])))

    def prepare_move_batch(self, batch):
        """:meth:`prepare_batch` that also has the moves form the powers of the joint,
        the responsibilities and their sums in single precision (the exponentials
        are most of their cost). The joint, whose expanded square cancels, and the
        logarithms stay double: the log likelihood errs by about 1e-9 of itself, the
        gradient, whose variance terms cancel, by up to 1e-4 of its largest entry
        (data 40 standard deviations from the origin), which the accept step corrects."""
        rows = MixtureRows(kernels.joint_features(batch[0]))
        if rows.features.dtype == torch.float64:
            rows.single, rows.buffers = rows.features.float(), {}
        return PreparedBatch(batch, rows)

    def component_log_joint(self, theta, X, scale=1.0):
        """``scale (log w_k + log N(x_b | mean_k, diag var_k))``, ``[M, K, B]``
        (``_gmm_kernels.log_joint``)."""
        return kernels.log_joint(self.parts(theta), kernels.joint_features(X), scale)

    def log_likelihood(self, theta, batch):
        return log_normalizer_bits_(self.component_log_joint(theta, batch[0], scale=LOG2_E))[0]

    def log_likelihood_sum(self, theta, batch):
        parts, X = self.parts(theta), batch[0]
        return sum(summed_log_normalizer_bits_(kernels.log_joint(
            parts, kernels.joint_features(X[rows]), scale=LOG2_E))[0]
            for rows in kernels.row_slices(theta.shape[0], self.n_components, X.shape[0],
                                           X.device))

    def responsibilities(self, theta, X):
        """Posterior component probabilities of every datum, ``[M, B, K]``."""
        return torch.softmax(self.component_log_joint(theta, X), dim=1).transpose(1, 2)

    def spare_weight(self, theta, weights, store):
        """The weight of the particles with a component that explains less than a tenth
        of a stored observation (``_gmm_kernels.spare_weight``), ``float``."""
        return kernels.spare_weight(self.parts, self.n_components, theta, weights, store)

    def grad_log_likelihood(self, theta, batch):
        """Responsibility-weighted sums of the per-component gradients
        (``_gmm_kernels.gradient``)."""
        return self.log_likelihood_and_grad(theta, batch)[1]

    def log_likelihood_and_grad(self, theta, batch):
        """Both from one ``[M, K, B]`` joint: its logsumexp and its softmax (in place), at
        half the cost of :meth:`log_likelihood` plus :meth:`grad_log_likelihood`."""
        return self._log_likelihood_and_grad(self.parts(theta), batch)

    def _log_likelihood_and_grad(self, parts, batch):
        """:meth:`log_likelihood_and_grad` from the parameter maps of :meth:`parts`."""
        if not isinstance(batch, PreparedBatch):
            batch = self.prepare_batch(batch)
        log_lik, moments = kernels.summed_over_rows(parts, batch.stats)
        return log_lik, kernels.gradient(parts, moments, batch[0].shape[0])

    def weighted_grad_log_likelihood(self, theta, terms):
        """All the terms' rows in one pass, each row's responsibilities weighted: one call
        costs about what a call on the largest term does where the rows are few."""
        (X,), row_weights = stacked_terms(terms)
        parts, features = self.parts(theta), kernels.joint_features(X)
        _, moments = kernels.summed_over_rows(parts, MixtureRows(features,
                                                                 row_weights[:, None] * features))
        return kernels.gradient(parts, moments, row_weights.sum())

    def fisher_information(self, theta, batch):
        """Observed information of the batch at one ``theta [d]``, ``[d, d]``: minus its
        Hessian (``_gmm_kernels.information``). Not the expected information,
        so that a control variate's linear term matches each row's change of
        gradient; it need not be positive definite away from a mode."""
        return kernels.information(self.parts(theta[None]), batch[0].to(theta.dtype))

    def weighted_fisher_information(self, theta, terms):
        """All the terms' rows in one pass, each row's information weighted."""
        (X,), row_weights = stacked_terms(terms)
        return kernels.information(self.parts(theta[None]), X.to(theta.dtype),
                                   row_weights.to(theta.dtype))

    def prior_precision(self, theta):
        """Minus the Hessian of :meth:`log_prior` at one ``theta [d]``, ``[d, d]``."""
        K, D = self.n_components, self.n_features
        logits, means, log_var = self._split(theta[None])
        w = self._log_weights(logits).exp()[0, : K - 1]
        m0, b = self.prior_location(theta)
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
        (``_labels.match_labels``), the information of each matched
        component is averaged over them in log space (a geometric mean),
        and each particle gets the average in its own labelling. The scale
        then follows the component, not the particle's position: a scale
        that follows the position of the particle it moves makes the move
        leave the posterior, and the evidence comes out too high.
        """
        _, means, log_var = self._split(theta[live])
        labels = _labels.match_labels(means, log_var, self.prior_location(theta)[1])
        return self._scale_from(*(_labels.shared_by_component(info, live, labels)
                                  for info in self._component_information(theta, n_eff)))

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
        m0, b = self.prior_location(theta)
        centred = means - m0
        log_var_info = (0.5 * n_eff * w + b * precision
                        + 0.5 * centred.square() * precision / c)
        return weight_info, mean_info, log_var_info

    def _scale_from(self, weight_info, mean_info, log_var_info):
        M, K = weight_info.shape
        info = torch.cat([weight_info[:, : K - 1], mean_info.reshape(M, -1),
                          log_var_info.reshape(M, -1)], 1)
        return info.clamp_min(1e-300).rsqrt()

    # -- closed form -------------------------------------------------------------------

    def exact_log_evidence(self, batch):
        """Normal-Inverse-Gamma evidence per feature; one component only, float64.

        With one component the features are independent a priori and
        given the parameters, and each is the conjugate model
        ``x ~ N(m, v)``, ``m | v ~ N(mean_prior, v / kappa0)``,
        ``v ~ InvGamma(a, b)`` with ``kappa0 = 1 / mean_variance_factor``.
        """
        if self.n_components != 1:
            raise NotImplementedError("the closed-form evidence exists only for n_components=1, "
                                      f"got {self.n_components}")
        X = batch[0].to(torch.float64)
        n = X.shape[0]
        kappa0 = 1.0 / self.mean_variance_factor
        a = self.variance_shape
        m0, b = self.prior_location(X)
        kappa_n = kappa0 + n
        a_n = a + 0.5 * n
        xbar = X.mean(0)
        scatter = (X - xbar).square().sum(0)
        b_n = b + 0.5 * scatter + 0.5 * kappa0 * n * (xbar - m0).square() / kappa_n
        per_feature = (-0.5 * n * LOG_2PI + 0.5 * (math.log(kappa0) - math.log(kappa_n))
                       + a * torch.log(b) - a_n * torch.log(b_n)
                       + math.lgamma(a_n) - math.lgamma(a))
        return float(per_feature.sum())


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
