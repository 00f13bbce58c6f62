"""GaussianMixtureModel: densities, gradients, prior sampling, exact evidence."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from skevidence.models import GaussianMixtureModel, Model
from skevidence.models import batches as batches_module
from skevidence.models import _gmm_kernels as kernels
from skevidence.models import _gmm_modes, _labels
from skevidence.models.batches import row_blocks
from tests.conftest import gaussian_blobs

PRIOR = dict(weight_concentration=1.5, variance_shape=2.0, variance_scale=0.7,
             mean_prior=0.3, mean_variance_factor=3.0)


def _theta(model, n, seed):
    return model.sample_prior(n, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("n_components", [1, 3])
def test_analytic_gradients_match_autograd(n_components):
    model = GaussianMixtureModel(2, n_components, **PRIOR)
    theta = _theta(model, 7, 0)
    X = torch.as_tensor(gaussian_blobs(50, [[0, 0], [3, -2]], [1.0, 2.0], [0.5, 0.5], 0))
    assert model.n_params == (n_components - 1) + 2 * n_components * 2
    torch.testing.assert_close(model.grad_log_likelihood(theta, (X,)),
                               Model.grad_log_likelihood(model, theta, (X,)))
    torch.testing.assert_close(model.grad_log_prior(theta), Model.grad_log_prior(model, theta))


@pytest.mark.parametrize("n_components, n_features", [(1, 2), (3, 2), (2, 3)])
def test_observed_information_and_prior_precision_are_minus_autograds_hessians(
        n_components, n_features):
    model = GaussianMixtureModel(n_features, n_components, **PRIOR)
    theta = _theta(model, 1, 2)[0]
    X = torch.as_tensor(np.random.default_rng(2).normal(0.0, 2.0, (60, n_features)))
    hessian = torch.autograd.functional.hessian(
        lambda t: model.log_likelihood_sum(t[None], (X,))[0], theta)
    torch.testing.assert_close(model.fisher_information(theta, (X,)), -hessian)
    prior_hessian = torch.autograd.functional.hessian(lambda t: model.log_prior(t[None])[0],
                                                      theta)
    torch.testing.assert_close(model.prior_precision(theta), -prior_hessian)


def test_fused_log_likelihood_and_grad_match_the_separate_methods():
    # The exact warm-up's fused kernel (one joint, softmax in place) against
    # the log-likelihood summed and autograd's gradient of it.
    model = GaussianMixtureModel(2, 3, **PRIOR)
    theta = _theta(model, 7, 1)
    X = torch.as_tensor(gaussian_blobs(50, [[0, 0], [3, -2]], [1.0, 2.0], [0.5, 0.5], 1))
    log_lik, grad = model.log_likelihood_and_grad(theta, (X,))
    torch.testing.assert_close(log_lik, model.log_likelihood(theta, (X,)).sum(1),
                               rtol=1e-12, atol=1e-9)
    torch.testing.assert_close(grad, Model.grad_log_likelihood(model, theta, (X,)))


def test_weighted_terms_in_one_pass_match_one_call_per_term():
    # One pass over the rows of every term, each row weighted, against the
    # base class's call per term (the engine's past and chunk mini-batches).
    model = GaussianMixtureModel(2, 3, **PRIOR)
    theta = _theta(model, 7, 3)
    X = torch.as_tensor(gaussian_blobs(80, [[0, 0], [3, -2]], [1.0, 2.0], [0.5, 0.5], 3))
    terms = [(37.5, (X[:60],)), (0.3, (X[60:],))]
    torch.testing.assert_close(model.weighted_grad_log_likelihood(theta, terms),
                               Model.weighted_grad_log_likelihood(model, theta, terms))
    torch.testing.assert_close(model.weighted_fisher_information(theta[0], terms),
                               Model.weighted_fisher_information(model, theta[0], terms))


def test_log_likelihood_matches_scipy():
    model = GaussianMixtureModel(2, 3)
    theta = _theta(model, 4, 1)
    X = gaussian_blobs(30, [[0, 0], [3, -2]], [1.0, 2.0], [0.5, 0.5], 1)
    log_w, means, variances = (t.numpy() for t in model.unpack(theta))
    comp = stats.norm.logpdf(X[None, :, None, :], means[:, None], np.sqrt(variances[:, None]))
    expected = np.logaddexp.reduce(log_w[:, None, :] + comp.sum(-1), axis=2)
    got = model.log_likelihood(theta, (torch.as_tensor(X),)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10)


def test_log_prior_is_scipy_density_plus_log_jacobian():
    model = GaussianMixtureModel(2, 3, **PRIOR)
    theta = _theta(model, 5, 2)
    log_w, means, variances = (t.numpy() for t in model.unpack(theta))
    w = np.exp(log_w)
    expected = []
    for i in range(theta.shape[0]):
        lp = stats.dirichlet.logpdf(w[i], np.full(3, PRIOR["weight_concentration"]))
        lp += stats.invgamma.logpdf(variances[i], PRIOR["variance_shape"],
                                    scale=PRIOR["variance_scale"]).sum()
        lp += stats.norm.logpdf(means[i], PRIOR["mean_prior"],
                                np.sqrt(PRIOR["mean_variance_factor"] * variances[i])).sum()
        # Jacobians: additive log-ratio -> prod_k w_k; log-variance -> prod v.
        lp += log_w[i].sum() + np.log(variances[i]).sum()
        expected.append(lp)
    np.testing.assert_allclose(model.log_prior(theta).numpy(), expected, rtol=1e-10)


def test_sample_prior_follows_the_prior():
    model = GaussianMixtureModel(1, 3, **PRIOR)
    n = 20000
    log_w, means, variances = (t.numpy() for t in model.unpack(_theta(model, n, 3)))
    alpha = np.full(3, PRIOR["weight_concentration"])
    v = variances.ravel()
    m = means.ravel()
    # Kolmogorov-Smirnov at a fixed seed: p-values below 1e-3 would flag a
    # wrong distribution (a correct sampler fails at this seed with prob 1e-3).
    w1 = np.exp(log_w[:, 0])
    assert stats.kstest(w1, stats.beta(alpha[0], alpha.sum() - alpha[0]).cdf).pvalue > 1e-3
    ig = stats.invgamma(PRIOR["variance_shape"], scale=PRIOR["variance_scale"])
    assert stats.kstest(v, ig.cdf).pvalue > 1e-3
    z = (m - PRIOR["mean_prior"]) / np.sqrt(PRIOR["mean_variance_factor"] * v)
    assert stats.kstest(z, stats.norm.cdf).pvalue > 1e-3


def test_sample_prior_and_log_prior_agree_through_importance_sampling():
    # E_q[p / q] = 1 for any proposal q covering p: with q a wide Gaussian
    # on the unconstrained space and p = exp(log_prior), the integral of
    # the prior density over R^d must be 1 (checks every Jacobian term).
    model = GaussianMixtureModel(1, 2, **PRIOR)
    gen = torch.Generator().manual_seed(4)
    theta = _theta(model, 200000, 4)
    centre = theta.mean(0)
    scale = 1.5 * theta.std(0)
    q = torch.distributions.Normal(centre, scale)
    draws = centre + scale * torch.randn(200000, model.n_params, generator=gen, dtype=torch.float64)
    log_ratio = model.log_prior(draws) - q.log_prob(draws).sum(1)
    log_integral = float(torch.logsumexp(log_ratio, 0) - math.log(draws.shape[0]))
    # The Monte-Carlo error of this estimate over seeds 0-4 was below 0.02.
    assert abs(log_integral) < 0.05


def test_exact_log_evidence_matches_quadrature():
    X = np.array([[0.4], [-1.1], [2.3], [0.9], [1.6]])
    model = GaussianMixtureModel(1, 1, **PRIOR)
    a, b = PRIOR["variance_shape"], PRIOR["variance_scale"]
    m0, c = PRIOR["mean_prior"], PRIOR["mean_variance_factor"]

    def joint(m, s):
        v = np.exp(s)
        prior = (stats.invgamma.logpdf(v, a, scale=b) + s
                 + stats.norm.logpdf(m, m0, np.sqrt(c * v)))
        return np.exp(prior + stats.norm.logpdf(X[:, 0], m, np.sqrt(v)).sum())

    value, _ = integrate.dblquad(joint, -6, 6, -10, 10, epsabs=1e-14, epsrel=1e-10)
    exact = model.exact_log_evidence((torch.as_tensor(X),))
    assert exact == pytest.approx(math.log(value), abs=1e-6)
    with pytest.raises(NotImplementedError):
        GaussianMixtureModel(1, 2).exact_log_evidence((torch.as_tensor(X),))


def test_posterior_scale_matches_the_conjugate_posterior():
    # One component, many observations: the Fisher scale of the mean and of
    # the log-variance must match the exact NIG posterior (std of the mean
    # sqrt(v / n), of log v sqrt(2 / n)) to within the prior's O(1/n) share.
    model = GaussianMixtureModel(1, 1)
    n = 10000
    theta = torch.tensor([[0.5, math.log(2.0)]], dtype=torch.float64)
    scale = model.posterior_scale(theta, n)[0]
    assert float(scale[0]) == pytest.approx(math.sqrt(2.0 / n), rel=1e-3)
    assert float(scale[1]) == pytest.approx(math.sqrt(2.0 / n), rel=1e-3)
    # Weights: a multinomial logit's information is n w (1 - w).
    model = GaussianMixtureModel(1, 2)
    theta = model.pack(torch.tensor([[0.2, 0.8]], dtype=torch.float64),
                       torch.zeros(1, 2, 1, dtype=torch.float64),
                       torch.ones(1, 2, 1, dtype=torch.float64))
    assert float(model.posterior_scale(theta, n)[0, 0]) == pytest.approx(
        1.0 / math.sqrt(n * 0.16), rel=1e-3)


@pytest.mark.parametrize("n_components", [3, 7])
def test_match_labels_finds_the_relabelling(n_components):
    model = GaussianMixtureModel(2, n_components)
    gen = torch.Generator().manual_seed(0)
    reference = 3.0 * torch.randn(model.n_params, generator=gen, dtype=torch.float64)
    perms = torch.stack([torch.randperm(n_components, generator=gen) for _ in range(5)])
    log_w, means, variances = model.unpack(reference[None].expand(5, -1))
    rows = torch.arange(5)[:, None]
    theta = model.pack(log_w[rows, perms].exp(), means[rows, perms], variances[rows, perms])
    theta = theta + 0.01 * torch.randn(theta.shape, generator=gen, dtype=torch.float64)
    # Particle m's component j holds reference's perms[m, j] (up to the
    # noise), so reference's k is the particle's perms[m]^-1(k).
    _, means, log_var = model._split(torch.cat([reference[None], theta]))
    labels = _labels.match_labels(means, log_var, model.prior_location(theta)[1])
    torch.testing.assert_close(labels[1:], perms.argsort(dim=1))


def test_shared_posterior_scale_follows_the_components_not_the_particles():
    model = GaussianMixtureModel(2, 3)
    gen = torch.Generator().manual_seed(1)
    base = torch.randn(1, model.n_params, generator=gen, dtype=torch.float64)
    maps = model.relabelling_maps()
    theta = torch.cat([base @ maps[p] for p in range(6)])
    theta = theta + 0.1 * torch.randn(theta.shape, generator=gen, dtype=torch.float64)
    live = torch.ones(6, dtype=torch.bool)
    shared = model.shared_posterior_scale(theta, live, 100.0)
    # Relabelled copies get the relabelled scale, of which the means and
    # log-variances are the geometric mean of the particles' own.
    inverse = torch.linalg.inv(maps)
    own = model.posterior_scale(torch.einsum("md,mde->me", theta, inverse), 100.0)  # base's labels
    for p in range(6):
        back = shared[p] @ inverse[p]
        torch.testing.assert_close(back[2:], own[:, 2:].log().mean(0).exp())
    # A diverged particle (no weight, any parameters) changes nothing.
    theta[2], live[2] = float("nan"), False
    again = model.shared_posterior_scale(theta, live, 100.0)
    assert torch.isfinite(again).all()
    others = model.shared_posterior_scale(theta[live], live[live], 100.0)
    torch.testing.assert_close(again[live], others)


def test_prepared_batch_gives_the_same_log_likelihood_and_gradient():
    # The exact warm-up evaluates Model.prepare_batch's batch; it must be
    # the same function of theta as the plain batch.
    model = GaussianMixtureModel(2, 3, **PRIOR)
    theta = _theta(model, 7, 2)
    X = torch.as_tensor(gaussian_blobs(50, [[0, 0], [3, -2]], [1.0, 2.0], [0.5, 0.5], 2))
    for a, b in zip(model.log_likelihood_and_grad(theta, (X,)),
                    model.log_likelihood_and_grad(theta, model.prepare_batch((X,)))):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-10)


def _single_precision_bounds(model, theta, X):
    """Bounds on what the moves' single-precision batch can change: of the log
    likelihood ``[M]`` and of the gradient ``[M, d]``, from the arithmetic.

    With ``u = 2^-24``: a shifted power ``2^b`` (``b`` in ``[-100, 0]``,
    rounded to single) errs by at most ``100 ln 2 u`` of itself, so each
    row's normaliser (``K`` powers summed) and each responsibility by at most
    ``c u`` of itself with ``c = 100 + 4 K``; a row's log normaliser then by
    ``c u``, the log likelihood by ``B c u``. The moments ``S_j = sum_n r_nk
    f_j(x_n)`` (``f = x^2, x, 1``) are single-precision sums of ``B`` such
    terms: error at most ``gamma A_j``, ``gamma = (B + c) u / (1 - (B + c) u)``,
    ``A_j = sum_n r_nk |f_j(x_n)|``. The gradient combines them linearly
    (``N_k``; ``p (S1 - N_k m)``; ``p (S2 - 2 m S1 + N_k m^2) / 2``).
    """
    u, (B, K) = 2.0**-24, (X.shape[0], model.n_components)
    c = 100 + 4 * K
    gamma = (B + c) * u / (1 - (B + c) * u)
    r = model.responsibilities(theta, X)  # [M, B, K], double
    A0 = r.sum(1)[:, :, None]  # [M, K, 1]
    A1 = torch.einsum("mbk,bd->mkd", r, X.abs())
    A2 = torch.einsum("mbk,bd->mkd", r, X.square())
    parts = model.parts(theta)
    m, p = parts.means.abs(), parts.precision
    M = theta.shape[0]
    grad_bound = torch.cat([
        gamma * A0[:, : K - 1, 0],
        (p * gamma * (A1 + m * A0)).reshape(M, -1),
        (0.5 * p * gamma * (A2 + 2 * m * A1 + m.square() * A0)).reshape(M, -1)], 1)
    return B * c * u, grad_bound


def test_move_batch_sums_in_single_precision_and_errs_only_at_its_rounding():
    # The moves' batch forms the responsibilities and their sums in single
    # precision, the joint and the logarithms in double; data far from the
    # origin (the expanded square cancels most there), 2000 rows, and
    # components over them that share the rows. Every difference from the
    # double-precision batch lies within the arithmetic's bound.
    model = GaussianMixtureModel(2, 3, **PRIOR)
    X = torch.as_tensor(gaussian_blobs(2000, [[40, 0], [43, -2]], [1.0, 2.0], [0.5, 0.5], 3))
    rng = torch.Generator().manual_seed(3)
    means = torch.tensor([[40.0, 0.0], [43.0, -2.0], [41.0, -1.0]]) + torch.randn(
        7, 3, 2, generator=rng, dtype=torch.float64)
    theta = model.pack(torch.full((7, 3), 1.0 / 3, dtype=torch.float64), means,
                       torch.full((7, 3, 2), 2.0, dtype=torch.float64))
    lik_bound, grad_bound = _single_precision_bounds(model, theta, X)
    exact, single = model.prepare_batch((X,)), model.prepare_move_batch((X,))
    log_lik, grad = model.log_likelihood_and_grad(theta, exact)
    log_lik_single, grad_single = model.log_likelihood_and_grad(theta, single)
    assert log_lik_single.dtype == grad_single.dtype == torch.float64
    assert not torch.equal(grad_single, grad)  # the single-precision path was taken
    # The log likelihood's bound is tight (B c u, about 0.013 nats), so the
    # moves' accept step, which reads it, is exact to that. The gradient's is
    # a worst case, loose where the square cancels (most entries here far
    # below the gradient, the variances' up to most of it); a proposal that
    # follows a rounded gradient is still accepted or rejected exactly.
    assert lik_bound < 0.05
    assert float((grad_bound < 0.01 * grad.abs()).double().mean()) > 0.5
    assert ((log_lik_single - log_lik).abs() <= lik_bound).all()
    assert ((grad_single - grad).abs() <= grad_bound).all()
    # The buffer of the powers is reused, per particle count.
    for a, b, bound in zip(model.log_likelihood_and_grad(theta[:3], single),
                           model.log_likelihood_and_grad(theta[:3], exact),
                           (lik_bound, grad_bound[:3])):
        assert ((a - b).abs() <= bound).all()
    again = model.log_likelihood_and_grad(theta, single)
    assert torch.equal(again[0], log_lik_single) and torch.equal(again[1], grad_single)
    joint, joint_grad = model.log_joint_and_grad(theta, single, 0.3)
    prior, prior_grad = model.log_prior(theta), model.grad_log_prior(theta)
    # (the prior's terms in double add at most a few ulps of themselves)
    assert ((joint - (prior + 0.3 * log_lik)).abs()
            <= 0.3 * lik_bound + 1e-12 * prior.abs()).all()
    assert ((joint_grad - (prior_grad + 0.3 * grad)).abs()
            <= 0.3 * grad_bound + 1e-12 * prior_grad.abs()).all()


def test_spare_weight_is_the_weight_of_particles_with_an_unused_component():
    X = torch.as_tensor(gaussian_blobs(200, [[-3.0], [3.0]], [[0.5], [0.5]], [0.5, 0.5], 0))
    model = GaussianMixtureModel(1, n_components=3)
    means = torch.tensor([[[-3.0], [3.0], [3.0]], [[-3.0], [3.0], [40.0]], [[-3.0], [3.0], [40.0]]])
    theta = model.pack(torch.full((3, 3), 1 / 3), means, torch.ones(3, 3, 1)).to(torch.float64)
    weights = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    assert model.spare_weight(theta, weights, (X,)) == pytest.approx(0.5)
    assert Model.spare_weight(model, theta, weights, (X,)) is None  # the contract's default


def test_spare_weight_leaves_the_pass_once_each_particle_is_decided(monkeypatch):
    # Counts only grow: particles whose components all reach the empty count (0.1) in the
    # first blocks need no more rows, and the rest get the whole store's counts.
    X = torch.as_tensor(gaussian_blobs(400, [[-3.0], [3.0]], [[0.5], [0.5]], [0.5, 0.5], 0))
    model = GaussianMixtureModel(1, n_components=3)
    far = [[[-3.0], [3.0], [3.0]], [[-3.0], [3.0], [40.0]], [[-3.0], [3.0], [7.0]]]
    theta = model.pack(torch.full((3, 3), 1 / 3), torch.tensor(far),
                       torch.ones(3, 3, 1)).to(torch.float64)
    weights = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    whole = model.spare_weight(theta, weights, (X,))
    rows_seen = []
    summed = kernels.summed_over_rows
    monkeypatch.setattr(kernels, "summed_over_rows", lambda parts, rows: (
        rows_seen.append(parts.means.shape[0] * rows.features.shape[0])
        or summed(parts, rows)))
    monkeypatch.setattr(batches_module, "BLOCK_ELEMENTS", 3 * 50)  # 50-row blocks
    assert model.spare_weight(theta, weights, (X,)) == whole
    # The first particle leaves after one block; the third's component at 7
    # explains 0.33 of a row in all, reaching the empty count after a few blocks;
    # the second's at 40 none, so it alone sees every row.
    assert whole == pytest.approx(0.3)
    assert rows_seen[0] == 3 * 50 and 400 < sum(rows_seen) < 2 * 400


def test_row_blocks_give_the_sums_of_one_block(monkeypatch):
    # Passes over many rows go through the joint in cache-sized row blocks
    # (batches.BLOCK_ELEMENTS); 16-row blocks must sum to what one block gives, for
    # the log likelihood, its gradient (plain, prepared and single-precision
    # batches), the EM's steps and the spare weight.
    model = GaussianMixtureModel(2, 3, **PRIOR)
    theta = _theta(model, 7, 4)
    X = torch.as_tensor(gaussian_blobs(50, [[0, 0], [3, -2]], [1.0, 2.0], [0.5, 0.5], 4))
    batches = [(X,), model.prepare_batch((X,)), model.prepare_move_batch((X,))]
    weights = torch.full((7,), 1 / 7, dtype=torch.float64)

    def evaluate():
        return ([model.log_likelihood_sum(theta, (X,))]
                + [v for batch in batches for v in model.log_likelihood_and_grad(theta, batch)]
                + [_gmm_modes.map_em(model, theta, X, 3),
                   torch.tensor(model.spare_weight(theta, weights, (X,)))])

    whole = evaluate()
    monkeypatch.setattr(batches_module, "BLOCK_ELEMENTS", 7 * 3 * 16)
    assert len(kernels.row_slices(7, 3, 50, X.device)) == 4
    for i, (a, b) in enumerate(zip(evaluate(), whole)):
        # The single-precision batch's gradient (item 6) sums its moments in
        # float32: blocks change its rounding, by 1e-7 of its largest entry here.
        atol = 1e-5 * float(b.abs().max()) if i == 6 else 1e-9
        torch.testing.assert_close(a, b, rtol=1e-9, atol=atol)


def test_row_blocks_are_larger_on_a_gpu():
    # Off the CPU a block bounds memory alone: 8192 particles take 4096 rows a
    # block there (kernel launches per block), 64 on the CPU (the cache).
    store = (torch.empty(100_000, 3, device="meta"),)
    assert [b[0].shape[0] for b in row_blocks(store, 8192)[:2]] == [4096, 4096]
    assert row_blocks((torch.empty(100_000, 3),), 8192)[0][0].shape[0] == 64
    assert kernels.row_slices(8192, 3, 100_000, "meta")[0] == slice(0, 1365)
    assert kernels.row_slices(8192, 3, 100_000, "cpu")[0] == slice(0, 21)
