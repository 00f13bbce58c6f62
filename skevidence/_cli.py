"""Command line: ``python -m skevidence compare DATA.csv --model ... --grid ...``.

Ranks a grid of models by their evidence on a CSV file. The file is read
twice with the standard library's ``csv`` module, in chunks, so its size is
not limited by memory: the first pass finds the classes (classification)
and the features' means and standard deviations, the second standardises
the features and feeds each chunk to :meth:`EvidenceSearch.partial_fit`.
With ``--degree`` the candidates are pipelines (polynomial features, a
scaler fitted on the first chunk and then frozen, the estimator), streamed
as :mod:`skevidence._streaming` streams them.
"""

import argparse
import json
import math
import sys
import warnings

import numpy as np
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import PolynomialFeatures, StandardScaler
from tqdm import tqdm

from ._csv_chunks import CLIError, chunks, numeric_target, read_header
from ._format import error_bar_decimals
from .exceptions import EvidenceTieWarning
from .linear_model import EvidenceLinearRegression, EvidenceLogisticRegression
from .linear_model._logistic import (MIN_ROWS_PER_CLASS, check_class_targets,
                                     warn_if_too_many_classes)
from .mixture import EvidenceGMM
from .model_selection import EvidenceSearch

__all__ = ["main"]

MODELS = {
    "linear": EvidenceLinearRegression,
    "logistic": EvidenceLogisticRegression,
    "gmm": EvidenceGMM,
}


# The pipeline's name of --degree; the table calls it "degree".
_DEGREE = "polynomialfeatures__degree"


def _parse_value(text):
    """``"3"`` -> 3, ``"0.5"`` -> 0.5, ``"none"`` -> None, ``"true"`` -> True, else the text."""
    lowered = text.strip().lower()
    if lowered in ("none", "null"):
        return None
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def _parse_grid(specs):
    grid = {}
    for spec in specs:
        name, sep, values = spec.partition("=")
        if not sep or not name.strip() or not values.strip():
            raise CLIError(f"--grid {spec!r}: expected NAME=V1,V2,...")
        grid[name.strip()] = [_parse_value(v) for v in values.split(",")]
    return grid


def _parse_degrees(text):
    """``"1,2"`` -> ``[1, 2]``; None stays None (no feature map)."""
    if text is None:
        return None
    try:
        degrees = [int(v) for v in text.split(",")]
    except ValueError:
        degrees = []
    if not degrees or min(degrees) < 1:
        raise CLIError(f"--degree {text!r}: expected positive integers D1,D2,...")
    return degrees


def _candidates(estimator, grid, degrees):
    """The search's base model and grid: the estimator and ``grid`` as they
    are, or, with ``degrees``, the pipeline of the feature map and the grid
    with its names addressing the pipeline's steps.

    The map is ``PolynomialFeatures`` (no bias column: the estimators fit
    their own intercept) then a ``StandardScaler``, since the products of
    standardised features are not standardised; both are fitted on the
    first chunk and frozen, so the evidence is that of the model on those
    frozen features.
    """
    if degrees is None:
        return estimator, grid
    pipeline = make_pipeline(PolynomialFeatures(include_bias=False), StandardScaler(),
                             estimator)
    last = pipeline.steps[-1][0]
    steps_grid = {f"{last}__{name}": values for name, values in grid.items()}
    return pipeline, {_DEGREE: degrees, **steps_grid}


def _user_name(name, pipeline):
    """A grid name as the user gave it: ``degree``, or the estimator's parameter
    without the pipeline's step name."""
    if not pipeline:
        return name
    return "degree" if name == _DEGREE else name.partition("__")[2]


def _scan(path, columns, target, chunk_size, model=None, progress=False):
    """First pass: row count, the features' scaler (fitted chunk by chunk), sorted class labels.

    A linear model's target is checked here, so that a bad cell stops the
    command before any fit; its values are not collected as classes.
    """
    scaler, classes = StandardScaler(), set()
    with tqdm(unit="rows", desc="scan", file=sys.stderr, disable=not progress) as bar:
        for chunk in chunks(path, columns, target, chunk_size):
            scaler.partial_fit(chunk.X)
            if chunk.y is not None and model == "linear":
                numeric_target(chunk.y, chunk.lines, path, target)
            elif chunk.y is not None:
                classes.update(chunk.y.tolist())
            bar.update(chunk.X.shape[0])
    if not hasattr(scaler, "n_samples_seen_"):
        raise CLIError(f"{path} has a header but no data rows")
    return int(scaler.n_samples_seen_), scaler, _labels(sorted(classes))


def _labels(classes):
    """Class labels as integers when they all are, else as (sorted) strings.

    Labels that are all numbers but not all integers are a continuous
    target: refused with scikit-learn's words (ValueError).
    """
    try:
        numbers = np.array([float(c) for c in classes], dtype=np.float64)
    except ValueError:
        return np.array(classes)
    check_class_targets(numbers)
    return np.unique(numbers.astype(np.int64))


def _check_columns(path, header, model, target):
    if model == "gmm":
        if target is not None:
            raise CLIError("--target is for --model linear and logistic; a mixture models "
                           "every column")
    elif target is None:
        raise CLIError(f"--model {model} needs --target COLUMN (one of: {', '.join(header)})")
    elif target not in header:
        raise CLIError(f"{path} has no column {target!r} (columns: {', '.join(header)})")
    columns = [c for c in header if c != target]
    if not columns:
        raise CLIError(f"{path} has no feature column besides the target")
    return columns


def compare(args):
    """Fit the grid chunk by chunk and return the table of results (a list of dicts).

    With ``--every N`` the table so far is printed after every ``N`` chunks
    (the last one excepted: it is the returned table).
    """
    grid = _parse_grid(args.grid)
    degrees = _parse_degrees(args.degree)
    header = read_header(args.data)
    columns = _check_columns(args.data, header, args.model, args.target)
    if degrees is not None and args.model == "gmm":
        raise CLIError("--degree is for --model linear and logistic: a mixture's evidence "
                       "is the density of its own columns, not comparable across feature maps")
    estimator = MODELS[args.model](random_state=args.random_state)
    unknown = sorted(set(grid) - set(estimator.get_params()))
    if unknown:
        raise CLIError(f"--grid: {args.model} has no parameter {', '.join(unknown)} "
                       f"(parameters: {', '.join(sorted(estimator.get_params()))})")
    show = _show_progress(args)
    n, scaler, classes = _scan(args.data, columns, args.target, args.chunk_size, args.model,
                               progress=show)
    if args.model == "logistic":
        _check_classes(classes, n, args.target)
    search = EvidenceSearch(*_candidates(estimator, grid, degrees), n_jobs=args.n_jobs)
    seen = 0
    with tqdm(total=n, unit="rows", desc="fit", file=sys.stderr, disable=not show) as bar:
        rows = chunks(args.data, columns, args.target, args.chunk_size)
        for k, chunk in enumerate(rows, start=1):
            X, y, lines = chunk.X, chunk.y, chunk.lines
            with warnings.catch_warnings():
                if seen + X.shape[0] < n:
                    # A ranking before the last chunk is provisional: warn of
                    # a tie in the final one only, not once a chunk.
                    warnings.simplefilter("ignore", EvidenceTieWarning)
                _partial_fit(search, args, X if args.no_standardize else scaler.transform(X),
                             y, lines, classes)
            seen += X.shape[0]
            bar.update(X.shape[0])
            if args.every and k % args.every == 0 and seen < n:
                bar.write(_render(_table(search, seen), args), file=sys.stdout,
                          end="\n" if args.json else "\n\n")
    return _table(search, n)


def _show_progress(args):
    """The bar is on with --verbose, off with --quiet, else where stderr is a terminal."""
    if args.quiet:
        return False
    return args.verbose or sys.stderr.isatty()


def _partial_fit(search, args, X, y, lines, classes):
    """One chunk into the search, its target read as the model needs it."""
    if args.model == "logistic":
        search.partial_fit(X, _class_labels(y, classes), classes=classes)
    elif args.model == "linear":
        search.partial_fit(X, numeric_target(y, lines, args.data, args.target))
    else:
        search.partial_fit(X)


def _class_labels(y, classes):
    """The chunk's labels (text) in the type of ``classes`` ("1.0" reads as 1)."""
    if classes.dtype.kind == "i":
        return y.astype(np.float64).astype(np.int64)
    return y.astype(classes.dtype)


def _check_classes(classes, n_rows, target):
    """Refuse what cannot be a classification, before any fit.

    Numbers with fewer than ``MIN_ROWS_PER_CLASS`` rows per distinct value
    are a quantity read as labels (a whole-number target such as a count or
    a price): the command refuses them, since the fit would run for a long
    time on classes seen once or twice. Text labels only warn, as the
    estimator does: they name classes, however many.
    """
    if len(classes) < 2:
        raise CLIError(f"column {target!r} has fewer than two classes")
    if classes.dtype.kind in "iuf" and n_rows < MIN_ROWS_PER_CLASS * len(classes):
        raise CLIError(
            f"column {target!r} holds {len(classes)} distinct numbers in {n_rows} rows "
            f"({n_rows / len(classes):.1f} rows per class, fewer than {MIN_ROWS_PER_CLASS}): "
            "a quantity, not class labels; use --model linear, or bin it into classes")
    warn_if_too_many_classes(n_rows, len(classes))


def _table(search, n):
    r = search.results_
    pipeline = isinstance(search.estimator, Pipeline)
    stds = r.get("log_evidence_std")
    rows = []
    for i, params in enumerate(r["params"]):
        std = None if stds is None or not math.isfinite(stds[i]) else float(stds[i])
        rows.append({
            "params": _plain_params(params, pipeline),
            "log_evidence": float(r["log_evidence"][i]),
            "log_evidence_std": std,
            "posterior_probability": float(r["posterior_probability"][i]),
            "log_bayes_factor": float(r["log_bayes_factor"][i]),
            "rank": int(r["rank"][i]),
        })
    return {"n_samples": n, "best_params": _plain_params(search.best_params_, pipeline),
            "results": rows}


def _plain_params(params, pipeline):
    """Parameters under the names the user gave them, as plain Python values."""
    return {_user_name(k, pipeline): _plain(v) for k, v in params.items()}


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


def _format_table(table):
    rows = sorted(table["results"], key=lambda row: row["rank"])
    # Parameters with one value in the grid are the same in every row: leave them out.
    varying = [k for k in rows[0]["params"] if len({repr(r["params"][k]) for r in rows}) > 1]
    labels = [", ".join(f"{k}={row['params'][k]}" for k in varying) or "-" for row in rows]
    width = max(len("model"), *map(len, labels))
    lines = [f"{table['n_samples']} observations",
             f"{'model':<{width}}  {'log evidence':>14}  {'+-':>6}  {'P(M | D)':>9}"
             f"  {'log BF vs best':>14}  {'rank':>4}"]
    for label, row in zip(labels, rows):
        std = "-" if row["log_evidence_std"] is None else _error_bar(row["log_evidence_std"])
        lines.append(f"{label:<{width}}  {row['log_evidence']:>14.2f}  {std:>6}"
                     f"  {row['posterior_probability']:>9.4f}  {row['log_bayes_factor']:>14.2f}"
                     f"  {row['rank']:>4}")
    return "\n".join(lines)


def _render(table, args):
    """The table as text, as JSON, or (with --every) as one JSON line among others."""
    if not args.json:
        return _format_table(table)
    return json.dumps(table) if args.every else json.dumps(table, indent=2)


def _error_bar(std):
    """``std`` with 2 decimals, or more where those would show ``0.00``."""
    return f"{std:.{max(2, error_bar_decimals(std))}f}"


def build_parser():
    parser = argparse.ArgumentParser(
        prog="python -m skevidence",
        description="Rank models by their Bayesian evidence. Without a command, run the demo.")
    commands = parser.add_subparsers(dest="command")
    cmp = commands.add_parser(
        "compare", help="rank a grid of models on a CSV file by their evidence",
        description="Fit every candidate of a parameter grid on a CSV file (header row of "
                    "column names; read in chunks, so any size) and rank them by log "
                    "evidence. The features are standardised with their mean and standard "
                    "deviation over the file (a first pass) unless --no-standardize.")
    cmp.add_argument("data", help="CSV file with a header row")
    cmp.add_argument("--model", required=True, choices=sorted(MODELS),
                     help="linear (regression), logistic (classification) or gmm (density)")
    cmp.add_argument("--target", metavar="COLUMN",
                     help="the column to predict (linear and logistic); the others are features")
    cmp.add_argument("--grid", metavar="NAME=V1,V2,...", action="append", default=[],
                     help="estimator parameter and its values; repeat for more parameters "
                          "(one value fixes a parameter, e.g. --grid n_particles=64)")
    cmp.add_argument("--degree", metavar="D1,D2,...",
                     help="compare polynomial feature maps of these degrees (linear and "
                          "logistic): each candidate is PolynomialFeatures(degree), a "
                          "StandardScaler, then the model; both fitted on the first chunk "
                          "and frozen")
    cmp.add_argument("--json", action="store_true",
                     help="print the table as JSON (with --every: one table per line)")
    cmp.add_argument("--chunk-size", "--chunksize", type=int, default=10_000, metavar="ROWS",
                     help="rows per partial_fit call (default 10000)")
    cmp.add_argument("--every", type=int, default=None, metavar="N",
                     help="also print the ranking so far after every N chunks")
    cmp.add_argument("--no-standardize", action="store_true",
                     help="use the features as they are in the file")
    cmp.add_argument("--random-state", type=int, default=0, help="seed of every fit (default 0)")
    cmp.add_argument("--n-jobs", type=int, default=None, help="candidates fitted in parallel")
    progress = cmp.add_mutually_exclusive_group()
    progress.add_argument("-v", "--verbose", action="store_true",
                          help="show a progress bar on stderr (the default where stderr "
                               "is a terminal)")
    progress.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv=None):
    """Run the command line; returns the exit status (2 for a user error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.chunk_size < 1:
            raise CLIError("--chunk-size must be a positive integer")
        if args.every is not None and args.every < 1:
            raise CLIError("--every must be a positive integer")
        table = compare(args)
    except (CLIError, ValueError) as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"skevidence compare: error: {message}", file=sys.stderr)
        return 2
    print(_render(table, args))
    return 0
