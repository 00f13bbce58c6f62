"""EvidenceGMM: evidence against closed forms, density, sampling, priors, state."""

import math
import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone

from skevidence import EvidenceGMM
from skevidence.datasets import make_gaussian_mixture
from skevidence.models import GaussianMixtureModel
from tests.conftest import gaussian_blobs

X3 = gaussian_blobs(5000, [[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]], [1.0, 0.7, 1.3],
                    [0.3, 0.3, 0.4], 0)


def test_one_component_evidence_matches_closed_form():
    X = gaussian_blobs(1000, [[1.0, -2.0]], [[1.5, 0.6]], [1.0], 5)
    est = EvidenceGMM(n_components=1, n_particles=64, random_state=0).fit(X)
    exact = est.exact_log_evidence(X)
    # With 32 particles the errors over random_state 0-7 reached 1.06 (double
    # precision warm-up) and 1.21 (single, the default; RMS 0.48 and 0.54);
    # with 64 particles they were 0.22, 0.08, -0.30, -0.26, 0.46, -0.08,
    # 0.29, 0.51 (RMS 0.31, largest 0.51; 0.12 to -0.45, RMS 0.27, before
    # the adjusted moves shared their scale); 1 nat is the bar.
    assert abs(est.log_evidence_ - exact) < 1.0
    assert est.weights_.shape == (1,)
    assert est.covariances_.shape == (1, 2)


def test_one_component_evidence_matches_closed_form_at_ten_thousand():
    # The second size. Default settings (before the data-scale
    # priors), over random_state 0-2 the errors were +0.23, -0.11, -0.14
    # nats (spread 0.2; +0.01, 0.00, -0.03 with the default priors and the
    # shared scale of the adjusted moves; -0.06, -0.03, -0.02 with the
    # second-order control variate); 1 nat is the bar.
    X = make_gaussian_mixture(10_000, n_components=1, random_state=5)
    est = EvidenceGMM(n_components=1, random_state=0).fit(X)
    assert abs(est.log_evidence_ - est.exact_log_evidence(X)) < 1.0


def test_score_samples_is_a_normalised_density():
    rng = np.random.default_rng(6)
    X = np.concatenate([rng.normal(-2.0, 0.5, 150), rng.normal(1.5, 1.0, 250)])[:, None]
    est = EvidenceGMM(n_components=2, n_particles=32, random_state=0).fit(rng.permutation(X))
    grid = np.linspace(-12, 12, 4001)[:, None]
    log_density = est.score_samples(grid)
    assert np.all(np.isfinite(log_density))
    # Trapezoid rule on a fine grid; the tails beyond +-12 carry < 1e-6.
    assert np.trapezoid(np.exp(log_density), grid[:, 0]) == pytest.approx(1.0, abs=1e-3)
    assert est.score(X) == pytest.approx(est.score_samples(X).mean())
    proba = est.predict_proba(X)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    np.testing.assert_array_equal(est.predict(X), proba.argmax(1))
    samples, labels = est.sample(50)
    assert samples.shape == (50, 1) and labels.shape == (50,)
    assert set(labels) <= {0, 1}
    with pytest.raises(ValueError, match="'n_samples' parameter of sample must be an int"):
        est.sample(0)


def _state(est):
    return est.log_evidence_, len(est.evidence_trace_["n_seen"]), est.particles_.copy()


def test_bad_input_raises_and_leaves_the_estimator_unchanged():
    X = X3[:600]
    est = EvidenceGMM(n_components=2, n_particles=16, n_burnin=2, random_state=0).fit(X)
    before = _state(est)
    bad = X[:100].copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError):
        est.partial_fit(bad)
    with pytest.raises(ValueError):
        est.partial_fit(np.ones((10, 3)))
    after = _state(est)
    assert before[0] == after[0] and before[1] == after[1]
    np.testing.assert_array_equal(before[2], after[2])
    with pytest.raises(ValueError):
        EvidenceGMM(n_components=0).fit(X)
    with pytest.raises(ValueError):
        EvidenceGMM(variance_scale=-1.0).fit(X)


def test_reproducible_clone_and_pickle():
    X = X3[:400]
    # Explicit priors: the default ones come from the first batch, which
    # differs between the two partial_fit calls and one fit.
    params = dict(n_components=3, n_particles=16, n_burnin=2, random_state=1,
                  mean_prior=0.0, variance_scale=1.0)
    a = EvidenceGMM(**params).fit(X)
    b = clone(a).fit(X)
    assert a.log_evidence_ == b.log_evidence_
    np.testing.assert_array_equal(a.particles_, b.particles_)
    c = pickle.loads(pickle.dumps(a))
    np.testing.assert_array_equal(c.score_samples(X[:5]), a.score_samples(X[:5]))
    # partial_fit in two calls on chunk boundaries equals one fit.
    d = EvidenceGMM(**params, batch_size=200).partial_fit(X[:200]).partial_fit(X[200:])
    e = EvidenceGMM(**params, batch_size=200).fit(X)
    assert d.log_evidence_ == e.log_evidence_


def test_evidence_ranks_the_true_number_of_components_first():
    # The bar of the evidence's model choice: the true K first in >= 4 of 5
    # data seeds at N=5000 with 1..6 components (design notes).
    # At N=2000 with 64 particles the measured gap of K=3 over K=4 was
    # 2.08, 1.62, 2.27 nats for random_state 0, 1, 2 (at N=1000 only 0.75,
    # less than the sampler's spread); fewer components are far worse (K=2
    # trails by hundreds of nats), so only K=4 is fitted here.
    # Measured with the paper's fixed priors, passed explicitly (with the
    # data-scale defaults K=3 and K=4 were within 0.2 nat at this N).
    X = X3[:2000]
    logz = {k: EvidenceGMM(n_components=k, n_particles=64, random_state=0, mean_prior=0.0,
                           variance_scale=1.0).fit(X).log_evidence_
            for k in (3, 4)}
    assert logz[3] > logz[4]


def test_sample_follows_the_fitted_mixture():
    X = X3[:1000]
    est = EvidenceGMM(n_components=3, n_particles=32, random_state=0).fit(X)
    samples, labels = est.sample(4000)
    again, _ = est.sample(4000)
    np.testing.assert_array_equal(samples, again)  # seeded from random_state
    # Posterior-predictive draws have the data's moments: standard errors of
    # the means are ~0.06 for 4000 draws of a spread ~3.5, so 0.3 is 5 SE.
    np.testing.assert_allclose(samples.mean(0), X.mean(0), atol=0.3)
    np.testing.assert_allclose(samples.std(0), X.std(0), rtol=0.1)
    assert set(np.unique(labels)) <= {0, 1, 2}


# -- priors on the data's scale -------------------------------------------------------


def test_default_priors_follow_the_first_batch_and_stay_frozen():
    X = X3[:600]
    est = EvidenceGMM(n_components=2, n_particles=16, n_burnin=2, random_state=0)
    est.partial_fit(X[:300])
    np.testing.assert_allclose(est.mean_prior_, X[:300].mean(0))
    np.testing.assert_allclose(est.variance_scale_, 0.1 * X[:300].var(0))
    est.partial_fit(X[300:] * 10.0)
    np.testing.assert_allclose(est.mean_prior_, X[:300].mean(0))
    np.testing.assert_allclose(est.variance_scale_, 0.1 * X[:300].var(0))
    # The paper's fixed priors as explicit values.
    paper = EvidenceGMM(n_components=2, n_particles=16, n_burnin=2, mean_prior=0.0,
                        variance_scale=1.0, random_state=0).fit(X)
    np.testing.assert_array_equal(paper.mean_prior_, [0.0, 0.0])
    np.testing.assert_array_equal(paper.variance_scale_, [1.0, 1.0])
    # prior_ states the whole prior, the data-scaled values resolved.
    assert set(paper.prior_) == {"weight_concentration", "variance_shape", "variance_scale",
                                 "mean_prior", "mean_variance_factor"}
    np.testing.assert_array_equal(est.prior_.variance_scale, est.variance_scale_)
    np.testing.assert_array_equal(est.prior_["mean_prior"], est.mean_prior_)
    assert paper.prior_.mean_variance_factor == 4.0
    assert "Dirichlet" in repr(paper.prior_) and "variance_scale" in repr(paper.prior_)
    # exact_log_evidence uses the frozen priors of a fitted estimator.
    one = EvidenceGMM(n_components=1, n_particles=16, n_burnin=2, random_state=0).fit(X[:300])
    model = GaussianMixtureModel(2, 1, mean_prior=X[:300].mean(0),
                                 variance_scale=0.1 * X[:300].var(0))
    assert one.exact_log_evidence(X) == pytest.approx(
        model.exact_log_evidence((torch.as_tensor(X),)), rel=1e-12)


@pytest.mark.parametrize("n_components", [1, 2])
def test_rescaling_the_data_shifts_the_evidence_by_the_jacobian(n_components):
    # With the priors on the data's scale and the same random_state the
    # particle paths are scale-equivariant (every step of the sampler is),
    # so the shift is exact up to rounding: the measured deviation from
    # -N D log c was 1.3e-6 to 5.1e-6 nats for c = 1e-3 and 1e4 and 1 and 2
    # components (below 1e-9 before the moves summed the responsibilities
    # in single precision, whose rounding differs with the scale); 1e-4
    # leaves room for rounding, not for a flipped accept decision.
    # (A single-precision warm-up, warmup_dtype="float32", rounds differently
    # at each scale, which flips Metropolis decisions: pinned to double here.)
    X = X3[:300]
    N, D = X.shape
    params = dict(n_components=n_components, n_particles=32, n_burnin=5, random_state=0,
                  engine_options={"warmup_dtype": None})
    base = EvidenceGMM(**params).fit(X).log_evidence_
    for c in (1e-3, 1e4):
        scaled = EvidenceGMM(**params).fit(X * c)
        assert scaled.log_evidence_ + N * D * math.log(c) == pytest.approx(base, abs=1e-4)
    exact = EvidenceGMM(n_components=1).exact_log_evidence
    assert exact(X * 1e4) + N * D * math.log(1e4) == pytest.approx(exact(X), abs=1e-8)
