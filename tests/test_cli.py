import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_iris

from skevidence.__main__ import main

# Cheap engine settings (grid entries with one value fix a parameter).
FAST = ["--grid", "n_particles=16", "--grid", "n_burnin=2"]


@pytest.fixture(scope="module")
def iris_csv(tmp_path_factory):
    """Iris as a user would export it: a header row, labels as species names."""
    iris = load_iris(as_frame=True)
    frame = iris.frame
    folder = tmp_path_factory.mktemp("iris")
    frame.drop(columns="target").to_csv(folder / "iris.csv", index=False)
    labelled = frame.assign(target=iris.target_names[iris.target])
    labelled.to_csv(folder / "iris_labelled.csv", index=False)
    return folder


def run_json(capsys, *argv):
    assert main(["compare", *map(str, argv), "--json", *FAST]) == 0
    return json.loads(capsys.readouterr().out)


def test_gmm_on_unlabelled_iris_ranks_the_three_species_first(iris_csv, capsys):
    table = run_json(capsys, iris_csv / "iris.csv", "--model", "gmm",
                     "--grid", "n_components=1,2,3")
    assert table["n_samples"] == 150
    rows = table["results"]
    assert [r["params"]["n_components"] for r in rows] == [1, 2, 3]
    # 3 components beat 2 by about 44 nats and 1 by about 300 (seed 0), far
    # beyond the run-to-run spread of a few nats at these settings.
    assert table["best_params"]["n_components"] == 3
    assert sum(r["posterior_probability"] for r in rows) == pytest.approx(1.0)
    best = max(rows, key=lambda r: r["log_evidence"])
    assert best["rank"] == 1 and best["log_bayes_factor"] == 0.0
    for r in rows:
        assert r["log_bayes_factor"] == pytest.approx(r["log_evidence"] - best["log_evidence"])
        assert r["log_evidence_std"] is None or r["log_evidence_std"] >= 0


def test_logistic_on_labelled_iris_streams_in_chunks(iris_csv, capsys):
    # Iris is sorted by species: the first chunk of 64 rows shows two of the
    # three classes, so the classes must come from the first pass.
    args = (iris_csv / "iris_labelled.csv", "--model", "logistic", "--target", "target",
            "--grid", "prior_std=0.3,3")
    streamed = run_json(capsys, *args, "--chunk-size", "64")
    whole = run_json(capsys, *args)
    for table in (streamed, whole):
        assert table["n_samples"] == 150
        assert [r["params"]["prior_std"] for r in table["results"]] == [0.3, 3]
        assert np.isfinite([r["log_evidence"] for r in table["results"]]).all()
        # the narrow prior cannot separate the species: about 40 nats worse (seed 0)
        assert table["best_params"]["prior_std"] == 3


def test_text_table(iris_csv, capsys):
    assert main(["compare", str(iris_csv / "iris.csv"), "--model", "gmm",
                 "--grid", "n_components=1,2", *FAST]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "150 observations"
    assert lines[1].split()[:3] == ["model", "log", "evidence"]
    assert lines[2].startswith("n_components=2") and lines[3].startswith("n_components=1")


@pytest.mark.parametrize("argv, message", [
    (["{missing}", "--model", "gmm"], "cannot read"),
    (["{labelled}", "--model", "logistic", "--target", "species"], "no column 'species'"),
    (["{labelled}", "--model", "logistic"], "needs --target"),
    (["{unlabelled}", "--model", "gmm", "--target", "target"], "--target is for"),
    (["{labelled}", "--model", "gmm"], "not a number"),
    (["{labelled}", "--model", "linear", "--target", "target"], "not numeric"),
    (["{unlabelled}", "--model", "gmm", "--grid", "n_components"], "NAME=V1,V2"),
    (["{unlabelled}", "--model", "gmm", "--grid", "n_comp=1,2"], "no parameter n_comp"),
    (["{unlabelled}", "--model", "gmm", "--grid", "n_components=0"], "'n_components' parameter"),
    (["{unlabelled}", "--model", "gmm", "--degree", "1,2"], "--degree is for"),
    (["{labelled}", "--model", "logistic", "--target", "target", "--degree", "0,1"],
     "positive integers"),
    (["{unlabelled}", "--model", "gmm", "--every", "0"], "--every must be"),
])
def test_user_errors_give_one_line_and_status_2(iris_csv, capsys, argv, message):
    paths = {"missing": iris_csv / "nope.csv", "labelled": iris_csv / "iris_labelled.csv",
             "unlabelled": iris_csv / "iris.csv"}
    argv = [a.format(**paths) for a in argv]
    assert main(["compare", *argv, *FAST]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1 and message in captured.err


def test_module_entry_point_reports_a_missing_file_without_traceback(tmp_path):
    missing = tmp_path / "missing.csv"
    proc = subprocess.run([sys.executable, "-m", "skevidence", "compare", str(missing),
                           "--model", "gmm"], capture_output=True, text=True,
                          cwd=Path(__file__).parent.parent)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"skevidence compare: error: cannot read {missing}: No such file or directory"]


def test_first_pass_statistics_match_numpy_across_chunks(tmp_path):
    from skevidence._cli import _scan

    # Features far from zero (sums of squares would cancel) and a constant one.
    X = np.random.default_rng(0).normal(1e9, 3.0, size=(1003, 3))
    X[:, 2] = 5.0
    path = tmp_path / "big.csv"
    np.savetxt(path, X, delimiter=",", header="a,b,c", comments="", fmt="%.17g")
    n, scaler, classes = _scan(path, ["a", "b", "c"], None, chunk_size=100)
    mean, std = scaler.mean_, scaler.scale_
    assert n == 1003 and classes.size == 0
    np.testing.assert_allclose(mean, X.mean(axis=0), rtol=1e-15)
    # Values near 1e9 carry about 1e-7 of rounding, so a std of 3 agrees to
    # about 1e-7 relative; plain sums of squares would be off by about 100.
    np.testing.assert_allclose(std[:2], X[:, :2].std(axis=0), rtol=1e-6)
    assert std[2] == 1.0  # constant column left as it is


def _write_csv(path, header, rows):
    path.write_text("\n".join([",".join(header), *(",".join(map(str, r)) for r in rows)]) + "\n")
    return path


def test_continuous_target_is_refused_at_once_with_scikit_learns_words(tmp_path):
    # Diabetes-like: a numeric target with a fraction, as a regression's.
    rng = np.random.default_rng(0)
    rows = [(*rng.standard_normal(3).round(3), round(100 + 50 * rng.random(), 2))
            for _ in range(5000)]
    data = _write_csv(tmp_path / "continuous.csv", ["a", "b", "c", "target"], rows)
    proc = subprocess.run([sys.executable, "-m", "skevidence", "compare", str(data),
                           "--model", "logistic", "--target", "target"],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent.parent)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "skevidence compare: error: Unknown label type: continuous. Maybe you are trying to "
        "fit a classifier, which expects discrete classes on a regression target with "
        "continuous values."]


def test_a_whole_number_target_with_about_one_row_per_value_is_refused(tmp_path):
    # scikit-learn's diabetes target: whole numbers, 214 values in 442 rows.
    rng = np.random.default_rng(0)
    rows = [(*rng.standard_normal(2).round(3), int(rng.integers(25, 346))) for _ in range(442)]
    data = _write_csv(tmp_path / "counts.csv", ["a", "b", "target"], rows)
    proc = subprocess.run([sys.executable, "-m", "skevidence", "compare", str(data),
                           "--model", "logistic", "--target", "target"],
                          capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).parent.parent)
    assert proc.returncode == 2
    assert "rows per class, fewer than 3): a quantity, not class labels; use --model " \
        "linear" in proc.stderr


def test_text_labels_with_about_one_row_per_class_warn(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = [(*rng.standard_normal(2).round(3), f"c{k // 2}") for k in range(40)]  # 2 rows a class
    data = _write_csv(tmp_path / "many.csv", ["a", "b", "target"], rows)
    with pytest.warns(UserWarning, match="20 classes in 40 rows"):
        run_json(capsys, data, "--model", "logistic", "--target", "target")


def test_integral_float_labels_are_classes(tmp_path, capsys):
    # "1.0" and "1" are the same class, as in a file that pandas wrote.
    rng = np.random.default_rng(0)
    rows = [(*rng.standard_normal(2).round(3), ["0.0", "1", "1.0", "2"][k % 4])
            for k in range(60)]
    data = _write_csv(tmp_path / "floats.csv", ["a", "b", "target"], rows)
    assert run_json(capsys, data, "--model", "logistic", "--target", "target")["n_samples"] == 60


@pytest.mark.parametrize("cell, model, message", [
    ("", ["--model", "linear", "--target", "y"],
     "line 4, column 'b': empty cell; drop or impute the rows with missing values"),
    ("x", ["--model", "linear", "--target", "y"],
     "line 4, column 'b': 'x' is not a number; features must be numeric: encode"),
    ("x", ["--model", "gmm"],
     "line 4, column 'b': 'x' is not a number; if 'b' is the label column, "
     "name it with --target b"),
])
def test_a_cell_that_is_not_a_number_is_named_with_its_fix(tmp_path, capsys, cell, model,
                                                           message):
    rows = [(0.1, 0.2, 1.0), (0.3, 0.4, 2.0), (0.5, cell, 3.0), (0.7, 0.8, 4.0)]
    data = _write_csv(tmp_path / "cells.csv", ["a", "b", "y"], rows)
    if "gmm" in model:
        data = _write_csv(tmp_path / "cells.csv", ["a", "b"], [r[:2] for r in rows])
    assert main(["compare", str(data), *model, *FAST]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"skevidence compare: error: {data}, {message}")
    if "--target" in model:  # given: the advice must not be to give it
        assert "--target" not in err


@pytest.mark.parametrize("cell, message", [
    ("", "line 3, column 'y': empty cell; drop or impute the rows with a missing target"),
    ("nan", "line 3, column 'y': 'nan' is not finite"),
    ("big", "line 3, column 'y': 'big' is not numeric; --model linear needs a numeric target"),
])
def test_a_bad_target_cell_stops_the_linear_model_before_any_fit(tmp_path, capsys, cell,
                                                                 message):
    rows = [(0.1, 1.0), (0.3, cell), *((0.1 * k, k) for k in range(30))]
    data = _write_csv(tmp_path / "target.csv", ["a", "y"], rows)
    # chunks of 2 rows: the bad cell is in the first, and must stop the first pass
    assert main(["compare", str(data), "--model", "linear", "--target", "y",
                 "--chunk-size", "2", *FAST]) == 2
    assert capsys.readouterr().err.startswith(f"skevidence compare: error: {data}, {message}")


def test_table_error_bars_show_a_significant_digit():
    from skevidence._cli import _error_bar

    assert _error_bar(0.236) == "0.24" and _error_bar(0.0042) == "0.004"


# -- streaming a file through feature maps ------------------------------------------------

STREAM_ROWS, STREAM_CHUNK = 20_000, 2_000


@pytest.fixture(scope="module")
def quadratic_csv(tmp_path_factory):
    """20,000 rows of a target with a quadratic term, for --degree 1,2."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(STREAM_ROWS, 2))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.3 * X[:, 0] ** 2 + rng.normal(size=STREAM_ROWS)
    path = tmp_path_factory.mktemp("stream") / "quadratic.csv"
    np.savetxt(path, np.column_stack([X, y]), delimiter=",", header="a,b,y", comments="",
               fmt="%.6g")
    return path


def test_degree_grid_ranks_as_the_streamed_search(quadratic_csv, capsys):
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import PolynomialFeatures, StandardScaler

    from skevidence import EvidenceLinearRegression
    from skevidence.model_selection import EvidenceSearch

    assert main(["compare", str(quadratic_csv), "--model", "linear", "--target", "y",
                 "--chunksize", str(STREAM_CHUNK), "--degree", "1,2", "--every", "4",
                 "--json", *FAST]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""  # no bar: stderr is not a terminal here
    # --every 4 over 10 chunks: the tables after 4 and 8 chunks, then the final one.
    tables = [json.loads(line) for line in captured.out.splitlines()]
    assert [t["n_samples"] for t in tables] == [8000, 16000, STREAM_ROWS]
    table = tables[-1]
    assert [r["params"] for r in table["results"]] == [
        {"degree": d, "n_particles": 16, "n_burnin": 2} for d in (1, 2)]
    # The same stream through the library: features standardised over the
    # file, then the pipeline's own scaler fitted on the first chunk.
    data = np.loadtxt(quadratic_csv, delimiter=",", skiprows=1)
    X, y = StandardScaler().fit_transform(data[:, :2]), data[:, 2]
    model = make_pipeline(PolynomialFeatures(include_bias=False), StandardScaler(),
                          EvidenceLinearRegression(random_state=0, n_particles=16, n_burnin=2))
    search = EvidenceSearch(model, {"polynomialfeatures__degree": [1, 2]})
    for start in range(0, STREAM_ROWS, STREAM_CHUNK):
        search.partial_fit(X[start:start + STREAM_CHUNK], y[start:start + STREAM_CHUNK])
    assert [r["rank"] for r in table["results"]] == list(search.results_["rank"])
    assert table["best_params"]["degree"] == 2
    # The file's scaler is fitted chunk by chunk there and at once here:
    # the features agree to rounding, and so do the evidences.
    np.testing.assert_allclose([r["log_evidence"] for r in table["results"]],
                               search.results_["log_evidence"], rtol=1e-9)


def test_the_file_is_parsed_one_chunk_at_a_time(quadratic_csv, capsys, monkeypatch):
    # Bounded memory: no more than one chunk's rows are parsed at a time,
    # and the fit pass fits each chunk before the next is read.
    from skevidence import _cli, _csv_chunks

    events = []
    to_arrays, partial_fit = _csv_chunks._to_arrays, _cli._partial_fit

    def counting_to_arrays(rows, *args):
        events.append(("parse", len(rows)))
        return to_arrays(rows, *args)

    def counting_partial_fit(search, args, X, *rest):
        events.append(("fit", X.shape[0]))
        return partial_fit(search, args, X, *rest)

    monkeypatch.setattr(_csv_chunks, "_to_arrays", counting_to_arrays)
    monkeypatch.setattr(_cli, "_partial_fit", counting_partial_fit)
    assert main(["compare", str(quadratic_csv), "--model", "linear", "--target", "y",
                 "--chunk-size", str(STREAM_CHUNK), "--degree", "1,2", "--every", "5",
                 "-v", *FAST]) == 0
    n_chunks = STREAM_ROWS // STREAM_CHUNK
    chunk = STREAM_CHUNK
    assert events == [("parse", chunk)] * n_chunks + [("parse", chunk), ("fit", chunk)] * n_chunks
    captured = capsys.readouterr()
    assert f"{STREAM_ROWS}/{STREAM_ROWS}" in captured.err  # the fit pass's bar, forced by -v
    out = captured.out.splitlines()
    assert [line for line in out if line.endswith("observations")] == [
        "10000 observations", "20000 observations"]
    assert out[out.index("20000 observations") + 2].startswith("degree=2")


def test_a_tie_is_reported_once_for_the_final_ranking(quadratic_csv, capsys):
    # Two priors a millionth apart, on the same seed: a tie in every chunk's
    # ranking, reported for the last one only.
    from skevidence.exceptions import EvidenceTieWarning

    with pytest.warns(EvidenceTieWarning) as record:
        run_json(capsys, quadratic_csv, "--model", "linear", "--target", "y",
                 "--chunksize", "5000", "--grid", "prior_std=1,1.000001")
    assert len([w for w in record if w.category is EvidenceTieWarning]) == 1
