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
