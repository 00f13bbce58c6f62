"""The importance-sampling check of the evidence at the posterior mode."""

import math
import os
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch
from sklearn.mixture import GaussianMixture

from skevidence import EvidenceLinearRegression
from skevidence.datasets import make_logistic_regression
from skevidence.inference import climbing, control_variates, curvature, importance, sgais
from skevidence.inference.importance import importance_log_evidence
from skevidence.models import GaussianMixtureModel, LinearRegressionModel, LogisticRegressionModel
from skevidence.models.base import Model
from skevidence.models.gmm import MAX_RELABELLED
from tests.conftest import gaussian_blobs, paper_linear_data

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "benchmarks"))
from bench_gmm_reference import reference_log_evidence  # noqa: E402

ONE = torch.ones(1, dtype=torch.float64)  # the weight of a start alone


@pytest.mark.parametrize("noise_std", [1.0, None])
def test_matches_the_closed_form_of_linear_regression(noise_std):
    X, y = paper_linear_data(2000, 3)
    model = LinearRegressionModel(5, noise_std=noise_std)
    store = (torch.as_tensor(X), torch.as_tensor(y))
    exact = model.exact_log_evidence(store)
    # From the prior's centre, far from the mode: the climb takes the curvature again.
    start = torch.zeros(model.n_params, dtype=torch.float64)
    for seed in range(3):
        est = importance_log_evidence(model, start[None], ONE, store, 128,
                                     torch.Generator().manual_seed(seed))
        # Over generator seeds 0-9 the errors spread with an SD of 0.03 (reported
        # std 0.033-0.037, ESS 0.8-0.9 of the draws): 0.15 is five SDs.
        assert abs(est.log_evidence - exact) < 0.15
        assert 0.025 < est.std < 0.06 and est.ess > 0.6


def test_logistic_estimate_agrees_with_many_more_draws():
    X, y = make_logistic_regression(5000, n_features=3, n_classes=3, random_state=0)
    model = LogisticRegressionModel(3, 3)
    store = (torch.as_tensor(X), torch.as_tensor(y))
    start = torch.zeros(model.n_params, dtype=torch.float64)
    many = importance_log_evidence(model, start[None], ONE, store, 8192,
                                  torch.Generator().manual_seed(99))
    assert many.std < 0.01 and many.ess > 0.6
    for seed in range(3):
        est = importance_log_evidence(model, start[None], ONE, store, 128,
                                     torch.Generator().manual_seed(seed))
        # 128 draws against 8192, seeds 0-9: SD 0.047 (reported std 0.048): 0.25 is five.
        assert abs(est.log_evidence - many.log_evidence) < 0.25


def test_single_precision_store_gives_the_same_estimate():
    X, y = make_logistic_regression(5000, n_features=3, n_classes=3, random_state=0)
    model = LogisticRegressionModel(3, 3)
    start = torch.zeros(model.n_params)
    stores = [(torch.as_tensor(X, dtype=dtype), torch.as_tensor(y))
              for dtype in (torch.float64, torch.float32)]
    est = [importance_log_evidence(model, start[None], ONE, store, 128,
                                  torch.Generator().manual_seed(0))
           for store in stores]
    # The same draws, weighed in double precision; the single-precision climb
    # moves the mode by rounding only: differences of 2e-5 to 3e-4 over seeds 0-4.
    assert abs(est[0].log_evidence - est[1].log_evidence) < 0.003


def test_models_without_one_mode_are_not_checked():
    class Declared(Model):
        n_params = 1

    # No declared mode (a user's model that says nothing), or a mixture with
    # more components than the relabellings are enumerated for (7! maps and more).
    assert not importance.applies(Declared())
    assert importance.applies(GaussianMixtureModel(2, 3))
    assert not importance.applies(GaussianMixtureModel(2, MAX_RELABELLED + 1))
    # A bounded store is a subsample: its scaled likelihood is not the posterior's.
    reg = EvidenceLinearRegression(n_particles=32, reservoir_size=1000, random_state=0)
    reg.fit(*paper_linear_data(1500, 1))
    assert math.isnan(reg.diagnostics_["importance_z"])


def _three_clusters(n, seed=0):
    """Three separated 2-D clusters, the model with priors from the data, and a start
    at scikit-learn's EM optimum (one particle, a relabelling of which is arbitrary)."""
    X = gaussian_blobs(n, [[-4.0, 0.0], [0.0, 4.0], [4.0, 0.0]], [1.0, 0.7, 1.3],
                       [0.3, 0.3, 0.4], seed)
    model = GaussianMixtureModel(2, 3, mean_prior=X.mean(0), variance_scale=X.var(0))
    em = GaussianMixture(3, covariance_type="diag", random_state=0).fit(X)
    start = model.pack(*(torch.as_tensor(a)[None] for a in (em.weights_, em.means_,
                                                             em.covariances_)))
    return X, model, start


def test_the_whole_stores_curvature_is_single_precision_to_a_hundredth():
    X, model, start = _three_clusters(20000)
    store = (torch.as_tensor(X),)
    single = curvature.whole_store_curvature(model, start[0], store, torch.float64)
    double = curvature.curvature_factor(model, start[0], store, 20000, torch.float64)
    precision, exact = single @ single.T, double @ double.T
    # The curvature only shapes the proposal (its importance weights are
    # exact): a precision within 1% of itself changes a t proposal's
    # efficiency by far less than its Monte Carlo error. Single-precision
    # sums over 2e4 rows err by at most about 2e4 u = 1e-3 of their terms.
    assert not torch.equal(precision, exact)
    assert float((precision - exact).norm() / exact.norm()) < 1e-2


def test_central_differences_give_the_curvature_of_models_without_one():
    # The path of user models without a fisher_information, against the
    # mixture's analytic one: central differences err by about 1e-7.
    X, model, start = _three_clusters(2000)
    rows = (torch.as_tensor(X),)
    analytic = control_variates.posterior_precision(
        model, start[0], 2.0 * model.fisher_information(start[0], rows))
    differenced = curvature.differenced_precision(model, start[0], rows, 2.0)
    torch.testing.assert_close(differenced, analytic, rtol=1e-5, atol=1e-4)


def test_mixture_estimate_covers_every_relabelling():
    X, model, start = _three_clusters(2000)
    store = (torch.as_tensor(X),)
    # The reference of benchmarks/bench_gmm_reference.py: L-BFGS from EM
    # starts, the Hessian by autograd, its own symmetrised proposal.
    ref = reference_log_evidence(X, model, n_draws=8000, n_starts=2, seed=0)
    assert ref["ess"] > 0.6 and ref["std_error"] < 0.01
    estimates = [importance_log_evidence(model, start, ONE, store, 128,
                                         torch.Generator().manual_seed(seed))
                 for seed in range(3)]
    # Seeds 0-9: errors -0.07..+0.07 against the reference (SD 0.05, reported
    # std 0.05-0.06, ESS 0.68-0.79): 0.25 is five SDs. Without the
    # relabellings the estimate would be log 3! = 1.79 low.
    for est in estimates:
        assert abs(est.log_evidence - ref["log_evidence"]) < 0.25 and est.ess > 0.6
    # Started from another labelling of the same optimum, it climbs to that
    # copy of the mode and estimates the same (seeds 0-9: -0.07..+0.07, SD 0.06).
    maps = model.relabelling_maps()
    assert maps.shape == (6, model.n_params, model.n_params)
    relabelled = importance_log_evidence(model, start @ maps[3], ONE, store, 128,
                                         torch.Generator().manual_seed(0))
    assert abs(relabelled.log_evidence - ref["log_evidence"]) < 0.25 and relabelled.ess > 0.6


def _two_mirrored_modes():
    """Clusters at -4, 0 and 4 and their mirror image, fitted with two components: the
    posterior's modes join the middle cluster to the left one or to the right one,
    mirror images of each other (not relabellings), so of equal mass."""
    rng = np.random.default_rng(0)
    half = np.concatenate([rng.normal(c, 1.0, 150) for c in (-4.0, 0.0, 4.0)])
    X = np.concatenate([half, -half])[:, None]
    model = GaussianMixtureModel(1, 2)

    def at(weights, means, variances):
        return model.pack(*(torch.tensor(a, dtype=torch.float64)[None]
                            for a in (weights, [[m] for m in means], [[v] for v in variances])))

    left, right = at([1 / 3, 2 / 3], [-4.0, 2.0], [1.0, 5.0]), at([2 / 3, 1 / 3], [-2.0, 4.0],
                                                                   [5.0, 1.0])
    return (torch.as_tensor(X),), model, left, right


def _near(point, n, generator):
    return point + 0.01 * torch.randn(n, point.shape[1], generator=generator, dtype=torch.float64)


def test_particles_split_between_modes_weigh_both():
    store, model, left, right = _two_mirrored_modes()
    gen = torch.Generator().manual_seed(0)
    W = torch.full((64,), 1 / 64, dtype=torch.float64)
    maps = model.relabelling_maps()
    # A cloud near one mode in mixed labellings holds one mode, relabelled.
    mixed = torch.einsum("md,mde->me", _near(left, 64, gen), maps[torch.arange(64) % 2])
    one = importance_log_evidence(model, mixed, W, store, 256, gen)
    assert one.minor_share == 0.0 and not one.lower_bound
    # A cloud split between the mirrored modes climbs to both; the proposal weighs
    # them alike (equal Laplace masses) and the estimate is twice the mass of one,
    # within three of the two estimates' combined error bars.
    split = torch.cat([_near(left, 32, gen), _near(right, 32, gen)])
    both = importance_log_evidence(model, split, W, store, 256, gen)
    # (Each climb stops within 0.005 nats of its mode's log density: the shares
    # differ from a half by at most about that.)
    assert both.minor_share == pytest.approx(0.5, abs=0.005) and not both.lower_bound
    assert abs(both.log_evidence - one.log_evidence - math.log(2.0)) < 3 * math.hypot(both.std,
                                                                                   one.std)
    # A mode that no particle holds joins the proposal from a search's points.
    found = importance_log_evidence(model, _near(left, 64, gen), W, store, 256, gen,
                                    starts=right)
    assert found.minor_share == pytest.approx(0.5, abs=0.005)
    assert abs(found.log_evidence - both.log_evidence) < 3 * math.hypot(found.std, both.std)


def test_particles_on_a_mode_not_found_leave_a_bound(monkeypatch):
    store, model, left, right = _two_mirrored_modes()
    gen = torch.Generator().manual_seed(0)
    W = torch.full((64,), 1 / 64, dtype=torch.float64)
    split = torch.cat([_near(left, 32, gen), _near(right, 32, gen)])
    one = importance_log_evidence(model, _near(left, 64, gen), W, store, 256, gen)
    # Where no climb reaches the other mode, half the cloud lies beyond the reach
    # of the mode found: no estimate, or, asked for as a bound, the mass of the
    # mode found, marked so.
    climb, maps = climbing.climb, model.relabelling_maps()

    def climb_but_not_to_the_right(model_, theta, *rest):
        if float((theta @ maps - right).norm(dim=-1).min()) < 0.5:
            return None
        return climb(model_, theta, *rest)

    monkeypatch.setattr(climbing, "climb", climb_but_not_to_the_right)
    assert importance_log_evidence(model, split, W, store, 256, gen) is None
    bound = importance_log_evidence(model, split, W, store, 256, gen, bound_where_spread=True)
    assert bound.lower_bound and bound.minor_share == 0.0
    assert abs(bound.log_evidence - one.log_evidence) < 3 * math.hypot(bound.std, one.std)


def test_where_newton_cannot_start_the_climb_goes_uphill_by_the_gradient(monkeypatch):
    X, y = paper_linear_data(2000, 3)
    model = LinearRegressionModel(5, noise_std=1.0)
    store = (torch.as_tensor(X), torch.as_tensor(y))
    exact = model.exact_log_evidence(store)
    start = torch.zeros(model.n_params, dtype=torch.float64)
    # The curvature where the climb starts (the prior's centre) is taken as
    # not positive definite, as at the mean of a cloud between configurations.
    real = importance.curvature_near_mode

    def curvature_away_from_start(model, theta, *args):
        return None if torch.equal(theta, start) else real(model, theta, *args)

    for module in (importance, climbing):
        monkeypatch.setattr(module, "curvature_near_mode", curvature_away_from_start)
    est = importance_log_evidence(model, start[None], ONE, store, 128,
                                  torch.Generator().manual_seed(0))
    # As from the start itself (test_matches_the_closed_form_of_linear_regression:
    # errors with an SD of 0.03 over generator seeds): 0.15 is five SDs.
    assert abs(est.log_evidence - exact) < 0.15 and est.ess > 0.6


def test_a_healthy_fit_agrees_and_the_check_leaves_the_run_as_it_was():
    X, y = paper_linear_data(3000, 3)
    reg = EvidenceLinearRegression(random_state=0).fit(X, y)
    d = reg.diagnostics_
    exact = reg._model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    assert abs(d["importance_log_evidence"] - exact) < 0.15  # as above
    assert abs(d["importance_z"]) < 4 and d["importance_ess"] > 0.6 and d["warnings"] == []
    # Its draws come from a generator of their own: a stream in two calls
    # (each checked) gives the numbers of one call.
    two = EvidenceLinearRegression(random_state=0).partial_fit(X[:1000], y[:1000])
    two.partial_fit(X[1000:], y[1000:])
    assert two.log_evidence_ == reg.log_evidence_
    assert two.diagnostics_["importance_log_evidence"] == d["importance_log_evidence"]
    again = EvidenceLinearRegression(random_state=0).fit(X, y)
    assert again.diagnostics_["importance_log_evidence"] == d["importance_log_evidence"]


def _unknown_noise_fit(X, y, **engine):
    return EvidenceLinearRegression(noise_std=None, n_particles=64, random_state=0,
                                    engine_options=engine or None).fit(X, y)


def test_folds_bring_the_evidence_to_the_closed_form_and_shrink_its_error_bar():
    X, y = paper_linear_data(9000, 5)
    folded, alone = _unknown_noise_fit(X, y), _unknown_noise_fit(X, y, fold_importance=False)
    exact = folded._model.exact_log_evidence((torch.as_tensor(X), torch.as_tensor(y)))
    std, alone_std = ({n: s for n, s in zip(fit.evidence_trace_["n_seen"],
                                            fit.evidence_trace_["log_evidence_std"])}
                      for fit in (folded, alone))
    # The folded run starts by importance on the first chunk and folds at
    # 4000 and 8000 (4 warm-up lengths, doubling): there the error bar drops
    # to about the importance estimate's own (0.01 at the start, 0.04-0.12 at
    # the folds over random_state 0-4), while alone the annealing's grows
    # past 0.3 (0.33 at the first chunk, 0.42 at 4000 on this seed). 0.2
    # lies between the two spreads.
    assert std[500] < 0.1 < 0.3 < alone_std[500]
    assert std[4000] < 0.2 and std[8000] < 0.2 and alone_std[4000] > 0.3
    # Over random_state 0-4 the folded run errs -0.22 to +0.13 with std
    # 0.08-0.16 (the annealing adds to it again from 8000 on); alone up to
    # +0.69 with std 0.45. 0.45 is about three times the largest std. (The
    # engine's numbers: the reported ones combine either run with the
    # estimators' check at the end.)
    engine = [fit.diagnostics_ for fit in (folded, alone)]
    assert abs(engine[0]["annealing_log_evidence"] - exact) < 0.45
    assert engine[0]["annealing_log_evidence_std"] < 0.2 < engine[1]["annealing_log_evidence_std"]


def test_folds_are_at_fixed_points_of_the_stream():
    X, y = paper_linear_data(9000, 5)
    one = _unknown_noise_fit(X, y)
    streamed = EvidenceLinearRegression(noise_std=None, n_particles=64, random_state=0)
    for start, stop in ((0, 2500), (2500, 6000), (6000, 9000)):
        streamed.partial_fit(X[start:stop], y[start:stop])
    # The engine's numbers are one call's, bit for bit.
    for key, value in one.evidence_trace_.items():
        np.testing.assert_array_equal(streamed.evidence_trace_[key], value)
    for key in ("annealing_log_evidence", "annealing_log_evidence_std"):
        assert streamed.diagnostics_[key] == one.diagnostics_[key]
    # The reported ones combine them with the estimators' check, which the
    # stream made at 6000 (the data doubled since 2500) and carried forward,
    # one call at 9000: two estimates of one evidence, within their error bars.
    assert streamed.diagnostics_["posterior_gap_n_seen"] == 6000
    assert one.diagnostics_["posterior_gap_n_seen"] == 9000
    assert abs(streamed.log_evidence_ - one.log_evidence_) \
        < 2.0 * math.hypot(streamed.log_evidence_std_, one.log_evidence_std_)


@pytest.mark.parametrize("method", ["smc", "ais"])
def test_the_baselines_are_not_folded(method):
    # The thesis's baselines report the annealing's estimate alone: past the
    # first fold point (4000 rows) they give the same numbers either way.
    X, y = paper_linear_data(4500, 2)
    fits = [EvidenceLinearRegression(n_particles=16, n_burnin=2, method=method, random_state=0,
                                     engine_options={"fold_importance": fold}).fit(X, y)
            for fold in (True, False)]
    assert fits[0].log_evidence_ == fits[1].log_evidence_
    assert fits[0].log_evidence_std_ == fits[1].log_evidence_std_


def test_a_fold_that_disagrees_with_the_running_estimate_widens_the_error_bar():
    # The state at 4000 rows, unfolded, then folded as the engine would at
    # that point: once as it is and once with its estimate 2 nats high (about
    # 4.5 of its std, 0.45), as a lagging cloud's drift would leave it.
    X, y = paper_linear_data(4000, 5)
    reg = _unknown_noise_fit(X, y, fold_importance=False)
    config = replace(reg._config, fold_importance=True)
    folded = {}
    for offset in (0.0, 2.0):
        state = sgais.successor(reg._state)  # (its own clone of the random stream)
        state = replace(state, log_evidence=state.log_evidence + offset)
        state = sgais.fold_in_importance(reg._model, state, config, n_before=3999)
        folded[offset] = state
    calm, drifted = folded[0.0], folded[2.0]
    # As it is (seed 0), the running estimate is 0.61 above the importance
    # estimate, 1.6 of the 0.39 that the two variances explain: the factor is
    # 0.61^2 / 0.154 (the annealing's variance) = 2.4. Shifted by 2 nats it is
    # 2.61^2 / 0.154 = 44: the excess is what the annealing's error bar missed.
    assert 1.0 <= calm.variance_inflation < 5 and drifted.variance_inflation > 30
    # The combination then all but ignores the running estimate (its weight
    # var_is / (var + var_is): 0.0013 / 6.8): 2 nats of offset move it by
    # less than 0.01.
    assert abs(drifted.debiased_log_evidence - calm.debiased_log_evidence) < 0.01
    # Later annealing variance counts that many times over.
    for state in (calm, drifted):
        state = replace(state, log_evidence_var=state.log_evidence_var + 0.04)
        assert state.log_evidence_std ** 2 == pytest.approx(
            state.fold_var + 0.04 * state.variance_inflation)


def _counting_log_posterior(monkeypatch):
    """Count the climb's evaluations over the store (``calls[0]``)."""
    calls, original = [0], climbing.log_posterior_on

    def counted(model, store, dtype):
        log_p_and_grad = original(model, store, dtype)

        def evaluate(theta):
            calls[0] += 1
            return log_p_and_grad(theta)
        return evaluate
    monkeypatch.setattr(climbing, "log_posterior_on", counted)
    return calls


def test_the_climb_starts_from_an_earlier_mode_that_the_particles_surround(monkeypatch):
    X, model, start = _three_clusters(2000)
    store = (torch.as_tensor(X),)
    calls = _counting_log_posterior(monkeypatch)
    first = importance_log_evidence(model, start, ONE, store, 128,
                                    torch.Generator().manual_seed(0))
    from_mean = calls[0]
    # From the mode it reached (in another labelling: it is relabelled to the
    # particles'), the climb is one evaluation that finds it converged.
    maps = model.relabelling_maps()
    calls[0] = 0
    again = importance_log_evidence(model, start, ONE, store, 128,
                                    torch.Generator().manual_seed(0), start=first.mode @ maps[4])
    assert calls[0] == 1 < from_mean
    # The same mode, within rounding, and the same draws, scaled by the
    # curvature at the mode instead of at the start of the first climb: the
    # estimates differ by 0.005, a tenth of their std (0.045).
    assert torch.allclose(again.mode, first.mode, atol=1e-6)
    assert abs(again.log_evidence - first.log_evidence) < 0.02
    # A start the particles do not surround (a mode they left: a cluster's mean
    # moved far) is not taken: the climb is the one from their mean.
    left = first.mode.clone()
    left[2] += 3.0
    calls[0] = 0
    other = importance_log_evidence(model, start, ONE, store, 128,
                                    torch.Generator().manual_seed(0), start=left)
    assert calls[0] == from_mean and other.log_evidence == first.log_evidence


def test_newton_tests_every_step_in_double_precision():
    # A skewed log density, e x - exp(x) with its mode at 1, and a curvature a
    # quarter of the one there: full steps overshoot, by predicted rises below a nat.
    def log_p_and_grad(theta):
        x = theta.to(torch.float64)
        return (math.e * x - x.exp()).sum()[None], (math.e - x.exp())[None]

    chol = torch.full((1, 1), (math.e / 4) ** 0.5, dtype=torch.float64)
    start = torch.tensor([0.3], dtype=torch.float64)
    values = []

    def recorded(theta):
        value, grad = log_p_and_grad(theta)
        values.append(float(value[0]))
        return value, grad

    theta, converged = climbing.newton(recorded, start, chol, 0.0)
    # Steps that fell were halved, never taken: it ends at the highest point it
    # evaluated, converged near the mode.
    assert converged and abs(float(theta[0]) - 1.0) < 0.01
    assert float(log_p_and_grad(theta)[0][0]) == max(values)
    # Taken untested below a nat (a single-precision store), the same steps
    # go back and forth across the mode for every allowed Newton step.
    theta, converged = climbing.newton(recorded, start, chol, 1.0)
    assert not converged and abs(float(theta[0]) - 1.0) > 0.1
