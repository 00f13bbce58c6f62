"""The mixture's fused likelihood kernels, on the parameter maps of :class:`Parts` and
the rows: log joint, moments of the responsibilities, gradient, information, spare weight."""

import functools
from dataclasses import dataclass
from typing import NamedTuple

import torch

from ._bits import LOG2_E, summed_log_normalizer_bits_
from .base import LOG_2PI
from .batches import block_elements, row_blocks



class Parts(NamedTuple):
    """The blocks of ``theta [M, d]`` and the maps of them that every density reads."""

    means: torch.Tensor  # [M, K, D]
    log_var: torch.Tensor  # [M, K, D]
    log_w: torch.Tensor  # [M, K]
    precision: torch.Tensor  # [M, K, D]


@dataclass
class MixtureRows:
    """Rows as the kernels read them: the ``stats`` of a mixture's prepared batch."""

    features: torch.Tensor  # [B, 2D + 1]: [x^2, x, 1]
    weighted: torch.Tensor | None = None  # the features times each row's weight: summed instead
    single: torch.Tensor | None = None  # the features in float32, for single-precision moments
    buffers: dict | None = None  # float32 buffers of the responsibilities, by shape

    def block(self, rows):
        """These rows' slice ``rows`` (the buffers shared)."""
        return MixtureRows(*(None if t is None else t[rows]
                             for t in (self.features, self.weighted, self.single)), self.buffers)

    def buffer(self, shape):
        """A float32 buffer of ``shape`` for the responsibilities, reused; None without buffers."""
        if self.buffers is not None and shape not in self.buffers:
            self.buffers[shape] = torch.empty(shape, dtype=torch.float32, device=self.single.device)
        return None if self.buffers is None else self.buffers[shape]


def joint_features(X):
    """``[x^2, x, 1]`` per observation, ``[B, 2D + 1]``."""
    return torch.cat([X.square(), X, X.new_ones(X.shape[0], 1)], dim=1)


def row_slices(n_points, n_components, n_rows, device):
    """Slices of ``n_rows`` rows whose ``[n_points, n_components, rows]`` joint holds at
    most :func:`~.base.block_elements` entries (one row at least)."""
    step = max(1, block_elements(device) // max(n_points * n_components, 1))
    return [slice(start, start + step) for start in range(0, max(n_rows, 1), step)]


def log_joint(parts, features, scale=1.0):
    """``scale (log w_k + log N(x_b | mean_k, diag var_k))``, laid out ``[M, K, B]``.

    The data index is last because torch reduces slowly over a short
    last dimension. ``scale=LOG2_E`` gives it in bits (``_bits``).
    """
    means, log_var, precision = parts.means, parts.log_var, parts.precision  # [M, K, D]
    M, K, D = means.shape
    # -sum_j (x_j - m_j)^2 p_j / 2 expanded, with the constant of each
    # component as a third block: one [M K, 2D + 1] x [2D + 1, B] product
    # gives the joint, with no [M, K, B, D] (or further [M, K, B]) tensor.
    const = parts.log_w - 0.5 * ((means.square() * precision).sum(2) + log_var.sum(2)
                                 + D * LOG_2PI)
    coef = torch.cat([-0.5 * precision, means * precision, const[:, :, None]], dim=2)
    return ((scale * coef.reshape(M * K, 2 * D + 1)) @ features.T).reshape(M, K, -1)


def summed_over_rows(parts, rows):
    """The log likelihood summed over the rows, ``[M]``, and ``sum_n r_nk [x_n^2, x_n, 1]``
    (S2, S1 and N_k), ``[M, K, 2 D + 1]``, in :func:`row_slices` of the
    :class:`MixtureRows` ``rows`` (the moments sum its ``weighted`` features where it has them)."""
    M, K = parts.log_w.shape
    log_lik, moments = 0.0, 0.0
    for in_block in row_slices(M, K, rows.features.shape[0], rows.features.device):
        block = rows.block(in_block)
        # [M, K, rows], overwritten by the responsibilities (or they go to a buffer)
        joint = log_joint(parts, block.features, scale=LOG2_E)
        out = block.buffer(tuple(joint.shape))
        block_lik, resp = summed_log_normalizer_bits_(joint, with_proba=True, out=out)
        summed = block.features if block.weighted is None else block.weighted
        # S2, S1 and N_k from one product
        block_moments = resp.reshape(M * K, -1) @ (summed if out is None else block.single)
        log_lik = log_lik + block_lik
        moments = moments + block_moments.reshape(M, K, -1).to(parts.means.dtype)
    return log_lik, moments


def gradient(parts, moments, n_rows):
    """The log likelihood's gradient from the moments of :func:`summed_over_rows` over
    ``n_rows`` rows, ``[M, d]``.

    With ``r_nk`` the responsibilities, ``N_k = sum_n r_nk``,
    ``S1 = sum_n r_nk x_n`` and ``S2 = sum_n r_nk x_n^2``:
    d/dlogit_k = N_k - B w_k, d/dmean = (S1 - N_k m) / v,
    d/dlog v = -N_k / 2 + (S2 - 2 m S1 + N_k m^2) / (2 v).
    """
    means, precision = parts.means, parts.precision
    M, K, D = means.shape
    S2, S1, Nk = moments[:, :, :D], moments[:, :, D : 2 * D], moments[:, :, 2 * D]
    g_logits = Nk[:, : K - 1] - n_rows * parts.log_w[:, : K - 1].exp()
    Nk3 = Nk[:, :, None]
    g_means = (S1 - Nk3 * means) * precision
    sq = S2 - 2.0 * means * S1 + Nk3 * means.square()
    g_log_var = -0.5 * Nk3 + 0.5 * sq * precision
    return torch.cat([g_logits, g_means.reshape(M, -1), g_log_var.reshape(M, -1)], 1)


def information(parts, X, row_weights=None):
    """Observed information of the rows ``X`` at the one point of ``parts``, ``[d, d]``,
    each row weighted by ``row_weights [B]`` (None: all 1).

    With ``a_k`` the log joint of component ``k``, ``g_k`` its gradient
    and ``r_k`` the responsibilities, one row's Hessian is
    ``sum_k r_k (H_k + g_k g_k^T) - gbar gbar^T`` (``gbar = sum_k r_k
    g_k``). ``g_k`` and ``H_k`` live in the logits and component ``k``'s
    own ``2 D`` slots, so the first sum is ``K`` small blocks and only
    ``gbar gbar^T`` costs ``O(B d^2)``.
    """
    _, K, D = parts.means.shape
    B = X.shape[0]
    w, means, precision = parts.log_w[0, : K - 1].exp(), parts.means[0], parts.precision[0]
    resp = torch.softmax(log_joint(parts, joint_features(X))[0], dim=0).T  # [B, K]
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


def spare_weight(parts_of, n_components, theta, weights, store, empty_count=0.1):
    """The weight of the particles ``theta`` with a component that explains less than
    ``empty_count`` stored observations (the sum of its responsibilities: a light real
    component rarely dips below 0.1), ``float``; ``parts_of`` maps points to their
    :class:`Parts`.

    In single precision, which gives sums of small responsibilities to about 1e-7
    of themselves. Counts only grow, so a particle leaves the pass once each of
    its components has reached ``empty_count``: where every component explains
    data, the first block of rows decides.
    """
    theta, M = theta.float(), theta.shape[0]
    counts = torch.zeros(M, n_components, dtype=torch.float64, device=theta.device)
    open_ = torch.arange(M, device=theta.device)  # the particles not yet decided
    for block in row_blocks(store, M):
        rows = MixtureRows(joint_features(block[0].float()))
        moments = summed_over_rows(parts_of(theta[open_]), rows)[1]
        counts[open_] += moments[:, :, -1].double()
        open_ = open_[counts[open_].amin(1) < empty_count]
        if open_.numel() == 0:
            break
    return float(weights[counts.amin(1) < empty_count].sum())


class _InformationLayout(NamedTuple):
    """Constant index sets of :func:`information`."""

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
