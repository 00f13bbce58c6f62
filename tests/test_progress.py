"""``verbose``: a progress bar within chunks and across ``partial_fit`` calls, silence by default."""

import functools
import re

import numpy as np
import tqdm.auto

from skevidence import EvidenceLinearRegression, EvidenceLogisticRegression
from tests.conftest import paper_linear_data

CHEAP = {"n_particles": 16, "n_burnin": 2, "random_state": 0}


def _bar_states(err):
    """The bar's successive renderings (tqdm rewrites its line with carriage returns)."""
    return [line for line in re.split(r"[\r\n]+", err) if line.strip()]


def test_silent_by_default(capfd):
    X, y = paper_linear_data(700, 0)
    EvidenceLinearRegression(**CHEAP).fit(X, y).partial_fit(X, y)
    clf = EvidenceLogisticRegression(**CHEAP).fit(X, (y > 0).astype(int))
    clf.partial_fit(X, (y > 0).astype(int))
    assert capfd.readouterr() == ("", "")


def test_bar_counts_observations_and_reports_within_a_chunk(capfd, monkeypatch):
    # Redraw on every update (tqdm otherwise skips those within 0.1 s).
    monkeypatch.setattr(tqdm.auto, "tqdm", functools.partial(tqdm.auto.tqdm, mininterval=0))
    X, y = paper_linear_data(700, 1)
    # The annealing from the prior on the first chunk, which a start by
    # importance sampling (fold_importance) would skip.
    EvidenceLinearRegression(verbose=1, engine_options={"fold_importance": False},
                             **CHEAP).fit(X, y)
    out, err = capfd.readouterr()
    assert out == ""
    states = _bar_states(err)
    assert states[-1].startswith("EvidenceLinearRegression") and "700/700" in states[-1]
    assert "log_evidence=" in states[-1] and "n_seen=700" in states[-1]
    # A temperature strictly inside (0, 1): the bar moved within a chunk.
    assert any(re.search(r"lam=0\.\d", s) for s in states)


def test_bar_totals_carry_across_partial_fit(capfd):
    X, y = paper_linear_data(1200, 2)
    reg = EvidenceLinearRegression(verbose=1, **CHEAP)
    reg.partial_fit(X[:500], y[:500])
    first = _bar_states(capfd.readouterr().err)
    reg.partial_fit(X[500:], y[500:])
    second = _bar_states(capfd.readouterr().err)
    assert "500/500" in first[-1]
    # The second call's bar starts where the first ended and counts to the total.
    assert "500/1200" in second[0] and "1200/1200" in second[-1]
    # Its elapsed time includes the first call's: never below it.
    def seconds(state):
        m, s = re.search(r"\[(\d+):(\d+)", state).groups()
        return 60 * int(m) + int(s)

    assert seconds(second[-1]) >= seconds(first[-1])
    # A fresh fit starts the count over.
    reg.fit(X[:300], y[:300])
    assert "300/300" in _bar_states(capfd.readouterr().err)[-1]
    assert np.isfinite(reg.log_evidence_)
