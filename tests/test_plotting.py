import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.container import BarContainer  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

from skevidence import (  # noqa: E402
    BayesianModelAverager,
    EvidenceLinearRegression,
    EvidenceSearch,
)
from skevidence.plotting import plot_evidence_trace, plot_model_posterior  # noqa: E402

FAST = dict(n_particles=16, n_burnin=2, batch_size=100, random_state=0)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    return X, X @ [1.0, -0.5] + rng.normal(size=400)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_evidence_trace_draws_one_point_per_chunk(data):
    reg = make_pipeline(StandardScaler(), EvidenceLinearRegression(**FAST)).fit(*data)
    trace = reg[-1].evidence_trace_
    axes = plot_evidence_trace(reg)
    assert len(axes) == 3
    x, y = axes[0].lines[0].get_data()
    np.testing.assert_array_equal(x, trace["n_seen"])
    np.testing.assert_allclose(y, trace["log_evidence"] / trace["n_seen"])
    ess = axes[2].lines[0].get_ydata()
    np.testing.assert_allclose(ess, trace["ess"] / FAST["n_particles"])


def test_evidence_trace_reads_a_nested_pipeline(data):
    nested = make_pipeline(StandardScaler(),
                           make_pipeline(StandardScaler(), EvidenceLinearRegression(**FAST)))
    axes = plot_evidence_trace(nested.fit(*data))
    np.testing.assert_array_equal(axes[0].lines[0].get_xdata(),
                                  nested[-1][-1].evidence_trace_["n_seen"])


def test_evidence_trace_draws_on_given_axes_and_checks_them(data):
    reg = EvidenceLinearRegression(**FAST).fit(*data)
    _, given = plt.subplots(1, 3)
    assert all(a is b for a, b in zip(plot_evidence_trace(reg, ax=given), given))
    with pytest.raises(ValueError, match="3 Axes"):
        plot_evidence_trace(reg, ax=given[:2])
    with pytest.raises(Exception, match="not fitted"):
        plot_evidence_trace(EvidenceLinearRegression())


def _bars(ax):
    return next(c for c in ax.containers if isinstance(c, BarContainer))


def _bar_heights(ax):
    return np.array([patch.get_height() for patch in _bars(ax)])


def test_model_posterior_of_a_search(data):
    search = EvidenceSearch(EvidenceLinearRegression(**FAST),
                            {"prior_std": [0.01, 1.0, 100.0]}).fit(*data)
    axes = plot_model_posterior(search)
    r = search.results_
    np.testing.assert_allclose(_bar_heights(axes[0]), r["log_evidence"] - r["log_evidence"].max())
    np.testing.assert_allclose(_bar_heights(axes[1]), r["posterior_probability"])
    labels = [t.get_text() for t in axes[0].get_xticklabels()]
    assert labels == ["prior_std=0.01", "prior_std=1.0", "prior_std=100.0"]
    # error bars are drawn exactly when the fit reports them
    assert bool(_bars(axes[0]).errorbar) == ("log_evidence_std" in r)


def test_model_posterior_of_an_averager_with_error_bars(data):
    bma = BayesianModelAverager([("narrow", EvidenceLinearRegression(prior_std=0.1, **FAST)),
                                 ("wide", EvidenceLinearRegression(prior_std=1.0, **FAST))])
    bma.fit(*data)
    bma.log_evidence_stds_ = np.array([0.5, 0.25])  # as the errorbar branch sets them
    axes = plot_model_posterior(bma)
    np.testing.assert_allclose(_bar_heights(axes[1]), bma.weights_)
    segments = _bars(axes[0]).errorbar.lines[2][0].get_segments()
    np.testing.assert_allclose([s[1, 1] - s[0, 1] for s in segments], [1.0, 0.5])
    with pytest.raises(TypeError, match="EvidenceSearch or BayesianModelAverager"):
        plot_model_posterior(EvidenceLinearRegression(**FAST).fit(*data))
