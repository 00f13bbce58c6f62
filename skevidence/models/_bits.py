"""Log-sum-exp and softmax over the classes of ``[M, K, B]`` scores given in bits (base 2).

On the CPU torch's ``exp2`` costs markedly less than its ``exp``, and the
exponentials are most of a softmax model's likelihood. A model therefore
scales its scores by ``LOG2_E`` inside the product that makes them (a
``[M K, p]`` factor: free), and these return the normaliser in nats.
They overwrite the scores unless these are tracked by autograd, since a
fresh ``[M, K, B]`` tensor costs more than the arithmetic.
"""

import math

import torch

__all__ = ["LN_2", "LOG2_E", "POWER_FLOOR", "log_normalizer_bits_", "summed_log_normalizer_bits_",
           "softmax_bits_"]

LN_2 = math.log(2.0)
LOG2_E = 1.0 / LN_2  # scores in nats times this are in bits
# Shifted scores below this many bits count as this: 2^-100 is lost in any
# normaliser (at least 1) in single or double precision, and the powers and
# probabilities stay clear of subnormal numbers, which the CPU handles slowly.
POWER_FLOOR = -100.0


def _shifted_powers_(bits, out=None):
    """``2^(bits - max_k bits)`` over dim 1 (into ``out``, of any dtype, if given) and the
    shift ``[M, 1, B]``; in place, each power at least ``2^POWER_FLOOR`` (autograd's
    copy keeps the exact powers)."""
    # A constant shift; where every class is -inf (or one +inf) the shift is 0, so
    # that no NaN arises, and the normaliser takes the max (-inf or +inf) as
    # torch.logsumexp does, whatever the floor made of the powers.
    top = bits.detach().amax(dim=1, keepdim=True)
    shift = top.nan_to_num(0.0, 0.0, 0.0)
    if bits.requires_grad:
        return (bits - shift).exp2(), top
    shifted = bits.sub_(shift)
    if out is not None:  # (the floor then in the narrower dtype, at half the traffic)
        shifted = out.copy_(shifted)
    return shifted.clamp_min_(POWER_FLOOR).exp2_(), top


def log_normalizer_bits_(bits, with_proba=False):
    """``log sum_k 2^bits[:, k, :]`` in nats, ``[M, B]``, and optionally the softmax."""
    powers, top = _shifted_powers_(bits)
    total = powers.sum(1)
    return (total.log2() + top.squeeze(1)) * LN_2, _proba_if(with_proba, powers, total)


def summed_log_normalizer_bits_(bits, with_proba=False, out=None):
    """:func:`log_normalizer_bits_` summed over the observations, ``[M]``, with one log per many.

    ``out``, a tensor shaped like ``bits`` (float32 for float64 ``bits``),
    takes the powers and the softmax: the shifted powers lie in ``[0, 1]``
    and their sums in ``[1, K]``, so single precision loses no range and
    halves the cost of the exponentials; the shift and the sum of the
    logarithms stay in the dtype of ``bits``. Pass a buffer reused from
    call to call: a fresh one each call, of another size than ``bits``,
    makes the allocator map new pages every time, which costs more than
    the arithmetic.
    """
    powers, top = _shifted_powers_(bits, out)
    total = powers.sum(1)
    log_norm = (_sum_log2(total.to(bits.dtype), bits.shape[1]) + top.sum((1, 2))) * LN_2
    return log_norm, _proba_if(with_proba, powers, total)


def _proba_if(with_proba, powers, total):
    """The softmax ``powers / total`` (in ``powers``) if asked for, else None."""
    if not with_proba:
        return None
    inv_total = total.reciprocal()[:, None]
    return powers * inv_total if powers.requires_grad else powers.mul_(inv_total)


def _sum_log2(total, n_classes):
    """``sum_b log2 total[:, b]``, ``[M]``, for totals in ``[1, n_classes]``.

    The largest class contributes ``2^0``, so a total lies in ``[1, K]``
    and a product of ``100 / log2 K`` of them below ``2^100`` (less in a
    half-precision dtype, whose range is smaller): one
    logarithm per product instead of one per observation (a logarithm
    costs about what the exponentials of four classes do, so one per
    observation would rival the softmax itself).
    """
    room = min(100.0, math.log2(torch.finfo(total.dtype).max) - 2.0)
    group = max(1, int(room // math.log2(max(n_classes, 2))))
    M, B = total.shape
    cut = B - B % group
    products = total[:, :cut].reshape(M, -1, group).prod(2)
    return products.log2().sum(1) + total[:, cut:].log2().sum(1)


def softmax_bits_(bits):
    """``softmax`` over dim 1 of scores in bits, ``[M, K, B]``."""
    powers, _ = _shifted_powers_(bits)
    total = powers.sum(1, keepdim=True)
    return powers / total if powers.requires_grad else powers.div_(total)
