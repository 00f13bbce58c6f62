"""The search for modes that the particles missed (inference/mode_search.py)."""

import warnings
from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import torch
from sklearn.datasets import load_digits, load_wine
from sklearn.decomposition import PCA
from sklearn.exceptions import ConvergenceWarning
from sklearn.preprocessing import StandardScaler

from skevidence import EvidenceGMM
from skevidence.inference import importance_steps, sgais
from skevidence.inference.importance import importance_log_evidence, within_reach
from skevidence.inference.mode_search import missed_mode
from skevidence.inference.posterior_gap import log_posterior_and_grad
from skevidence.models import _gmm_modes
from skevidence.models.batches import row_blocks
from tests.inference.test_importance import ONE, _three_clusters

# The log evidence of EvidenceGMM(n_components=2)'s model on the digits of
# the last test, from benchmarks/bench_gmm_reference.py's reference_log_evidence
# (4000 draws, 8 EM starts, seed 0): standard error 0.03, ESS 0.25.
DIGITS_REFERENCE = -12407.25
# EvidenceGMM(n_components=2)'s model on standardised wine, the same way
# (20000 draws, 16 EM starts, seed 0): standard error 0.02, ESS 0.11, 3 modes.
WINE_REFERENCE = -3009.55


def _trapped(model, X):
    """A lesser configuration: two components split the first cluster, one covers the
    other two (the component and its weight between them, wide along the first axis)."""
    X = torch.as_tensor(X)
    weights = torch.tensor([[0.2, 0.2, 0.6]], dtype=torch.float64)
    means = torch.tensor([[[-4.5, 0.0], [-3.5, 0.0], [2.0, 2.0]]], dtype=torch.float64)
    variances = torch.tensor([[[0.3, 1.0], [0.3, 1.0], [5.0, 5.0]]], dtype=torch.float64)
    return _gmm_modes.map_em(model, model.pack(weights, means, variances), X, 50)


def _cloud(point, seed, n=64):
    gen = torch.Generator().manual_seed(seed)
    near = point + 0.01 * torch.randn(n, point.shape[1], generator=gen, dtype=torch.float64)
    return near, torch.full((n,), 1 / n, dtype=torch.float64)


def test_the_search_finds_the_mass_a_trapped_cloud_misses():
    X, model, start = _three_clusters(2000)
    store = (torch.as_tensor(X),)
    trapped = _trapped(model, X)
    blocks = row_blocks(store, 1)
    drop = (log_posterior_and_grad(model, start, blocks, 1.0)[0]
            - log_posterior_and_grad(model, trapped, blocks, 1.0)[0])
    assert float(drop) > 1000  # the particles' configuration holds next to no mass
    particles, W = _cloud(trapped, 0)
    gen = torch.Generator().manual_seed(0)
    healthy = importance_log_evidence(model, start, ONE, store, 128, gen)
    missed = missed_mode(model, particles, W, store, 64, gen).estimate
    # Seeds 0-9 (particles, search and draws): -0.17..+0.08 against the
    # estimate at the mode, SD 0.08, ESS 0.68-0.79: 0.5 is six SDs.
    assert abs(missed.log_evidence - healthy.log_evidence) < 0.5 and missed.ess > 0.6


def test_a_cloud_at_the_best_mode_has_nothing_missed():
    X, model, start = _three_clusters(2000)
    store = (torch.as_tensor(X),)
    particles, W = _cloud(start, 0)
    gen = torch.Generator().manual_seed(0)
    healthy = importance_log_evidence(model, start, ONE, store, 128, gen)
    found = missed_mode(model, particles, W, store, 64, gen)
    # The search climbs to the particles' own mode (its point may beat them
    # by a little): its mass is theirs (seeds 0-9: -0.27..+0.10, SD 0.1).
    assert found is None or abs(found.estimate.log_evidence - healthy.log_evidence) < 0.6


def test_past_the_first_fold_the_search_leaves_the_clouds_own_mode_unweighed():
    X, model, start = _three_clusters(2000)
    store = (torch.as_tensor(X),)
    particles, W = _cloud(start, 0)
    gen = torch.Generator().manual_seed(0)
    # The search's best point beats these particles and lies within reach of
    # them (in any labelling): it is left unweighed.
    particles = start + 0.05 * (particles - start) / 0.01
    assert missed_mode(model, particles, W, store, 64, gen) is not None
    assert missed_mode(model, particles, W, store, 64, gen, leave_cloud_mode=True) is None
    maps = model.relabelling_maps()
    near = torch.cat([start, start @ maps[3], _trapped(model, X)])
    assert within_reach(model, near, particles, W, store).tolist() == [True, True, False]
    # A trapped cloud's missed mode is out of its reach: still weighed.
    trapped, W = _cloud(_trapped(model, X), 0)
    assert missed_mode(model, trapped, W, store, 64, gen, leave_cloud_mode=True) is not None
    config = sgais.SGAISConfig(warmup_size=1000)
    state = SimpleNamespace(n_seen=config.late_start - 1)
    assert not importance_steps.folds_weigh_the_cloud(model, state, config)
    state.n_seen += 1
    assert importance_steps.folds_weigh_the_cloud(model, state, config)


def test_fresh_starts_reach_the_best_mode_without_a_cloud():
    # Where two components must move at once, relocating one at a time from
    # the cloud cannot reach the better mode; the k-means++ starts need no
    # cloud. Seeds 0-9: each reached the optimum of EM from scikit-learn's
    # fit to 2e-12 nats.
    X, model, start = _three_clusters(2000)
    X = torch.as_tensor(X)
    optimum = _gmm_modes.map_em(model, start, X, 50)
    log_p = model.log_prior(optimum) + model.log_likelihood_sum(optimum, (X,))
    # mode_candidates' settings: 128 starts, 40 EM iterations, at most 8 kept,
    # one per log posterior to hundredths (copies of one mode share theirs).
    fresh = _gmm_modes.fresh_modes(model, X, torch.Generator().manual_seed(0), 128, 40, 8)
    fresh_log_p = model.log_prior(fresh) + model.log_likelihood_sum(fresh, (X,))
    assert 1 <= fresh.shape[0] <= 8 and float(fresh_log_p.max()) > float(log_p) - 0.01
    assert torch.round(fresh_log_p * 100).unique().numel() == fresh.shape[0]


def test_a_fit_caught_in_a_lesser_mode_moves_to_the_one_it_missed():
    # scikit-learn's digits through StandardScaler, PCA(5), StandardScaler;
    # two components. Without the search every sampler seed (0-2) ended 64
    # nats below the reference, with a std of 0.4 and no warning: the cloud
    # loses the better configuration between 500 and 1000 rows. With it
    # (relocations alone) seeds 0-3 erred -1.07..+0.98; with the k-means++
    # starts and the search at the end of the fit +0.08, +0.05, -0.49,
    # -0.23.
    X = StandardScaler().fit_transform(load_digits().data)
    X = StandardScaler().fit_transform(PCA(5, random_state=0).fit_transform(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = EvidenceGMM(n_init=1, n_particles=128, n_components=2, random_state=0).fit(X)
    assert abs(fit.log_evidence_ - DIGITS_REFERENCE) < 2.0
    # No mode the final search finds outweighs the estimate beyond its error
    # bar: its mass is within four reported std of log_evidence_ (the excess
    # is that gap minus two std). Four, not two: for an estimate that is right
    # the gap is about normal with that std, and two std is exceeded on one
    # run in forty, i.e. on some CPU's rounding of this seed.
    excess = fit.diagnostics_["missed_mode_excess"]
    assert np.isnan(excess) or excess < 2.0 * fit.log_evidence_std_


def test_a_cloud_trapped_a_few_nats_low_moves_too():
    # Standardised wine, two components, sampler seed 1: the cloud ends 4.5
    # nats low with a std of 0.37, and the search's mass exceeds the estimate
    # plus twice its std by 3.7 nats, below the log(100) at which the engine
    # used to move. At log(10) it moves: seeds 1 and 9 (the two of 0-10 that
    # were trapped) err -0.14 and +0.18 with std 0.07-0.09.
    X = StandardScaler().fit_transform(load_wine().data)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fit = EvidenceGMM(n_init=1, n_particles=128, n_components=2, random_state=1).fit(X)
    assert abs(fit.log_evidence_ - WINE_REFERENCE) < 1.0
    assert fit.diagnostics_["missed_mode_excess"] < 0


@dataclass(frozen=True)
class _Marks:
    n_seen: int
    searched_at: int
    ended_search_at: int


def test_a_stream_in_small_calls_searches_once_per_doubling():
    # Chunks of 500 rows in calls of 5000: the chunks' schedule searches at
    # each doubling, the end of a call once the data have doubled since the
    # last call that ended with one (for the estimators' checks). Counted
    # apart, they searched at 16000 and 20000, 32000 and 40000, ...
    state = _Marks(n_seen=0, searched_at=0, ended_search_at=0)
    searched = []
    for end in range(500, 40001, 500):
        state, due = importance_steps.missed_mode_search_due(replace(state, n_seen=end),
                                                              ends_update=end % 5000 == 0)
        if due:
            searched.append(end)
    assert searched == [500, 1000, 2000, 4000, 5000, 10000, 20000, 40000]
