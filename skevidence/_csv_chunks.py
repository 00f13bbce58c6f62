"""A CSV file read in chunks of rows, with errors that name the cell and the fix.

The command line (:mod:`skevidence._cli`) reads its data through these, with
the standard library's ``csv`` module, so a file's size is not limited by
memory.
"""

import csv
from dataclasses import dataclass

import numpy as np

__all__ = ["CLIError", "CsvChunk", "read_header", "chunks", "numeric_target"]


class CLIError(Exception):
    """A user error, reported as one line on stderr with exit status 2."""


@dataclass(frozen=True)
class CsvChunk:
    """Rows of the file: features as floats, the target as text, and their line numbers."""

    X: np.ndarray  # [rows, features] float64
    y: np.ndarray | None  # [rows] str; None without a target
    lines: list  # the rows' line numbers in the file, for messages that name a row


def read_header(path):
    try:
        with open(path, newline="") as f:
            header = next(csv.reader(f), None)
    except OSError as exc:
        raise CLIError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not header:
        raise CLIError(f"{path} is empty: expected a header row of column names")
    return [name.strip() for name in header]


def chunks(path, columns, target, chunk_size):
    """Yield a :class:`CsvChunk` of at most ``chunk_size`` rows at a time."""
    header = read_header(path)
    feature_idx = [header.index(c) for c in columns]
    target_idx = None if target is None else header.index(target)
    with open(path, newline="") as f:
        reader = csv.reader(f)
        next(reader)
        rows, lines = [], []
        for row in reader:
            if not row or all(not cell.strip() for cell in row):
                continue  # blank line
            if len(row) != len(header):
                raise CLIError(f"{path}, line {reader.line_num}: {len(row)} fields, "
                               f"expected {len(header)}")
            rows.append(row)
            lines.append(reader.line_num)
            if len(rows) == chunk_size:
                yield _to_arrays(rows, lines, header, feature_idx, target_idx, path)
                rows, lines = [], []
        if rows:
            yield _to_arrays(rows, lines, header, feature_idx, target_idx, path)


def _to_arrays(rows, lines, header, feature_idx, target_idx, path):
    """The :class:`CsvChunk` of ``rows``, whose line numbers are ``lines``."""
    try:
        X = np.array([[float(row[i]) for i in feature_idx] for row in rows], dtype=np.float64)
    except ValueError:
        raise CLIError(_not_a_number(rows, lines, header, feature_idx, target_idx, path)) from None
    if not np.isfinite(X).all():
        row, col = np.argwhere(~np.isfinite(X))[0]
        raise CLIError(f"{path}, line {lines[row]}, column {header[feature_idx[col]]!r}: "
                       f"{rows[row][feature_idx[col]].strip()!r} is not finite; drop or impute "
                       "the rows with missing or infinite values")
    y = None if target_idx is None else np.array([row[target_idx].strip() for row in rows])
    return CsvChunk(X, y, lines)


def _not_a_number(rows, lines, header, feature_idx, target_idx, path):
    """The message for the first feature cell of the chunk that is not a number.

    It names the cell and suggests the fix that applies: an empty cell is a
    missing value, to drop or impute; text in a column is a label column to
    name with --target when none is named, else a column to encode or drop.
    """
    for row, line in zip(rows, lines):
        for i in feature_idx:
            try:
                float(row[i])
            except ValueError:
                break
        else:
            continue
        cell, where = row[i].strip(), f"{path}, line {line}, column {header[i]!r}"
        if not cell:
            return f"{where}: empty cell; drop or impute the rows with missing values"
        if target_idx is None:
            return (f"{where}: {cell!r} is not a number; if {header[i]!r} is the label "
                    f"column, name it with --target {header[i]}")
        return (f"{where}: {cell!r} is not a number; features must be numeric: encode "
                f"the column as numbers or drop it")
    raise AssertionError("a cell failed to convert but none was found")


def numeric_target(y, lines, path, target):
    """The target column of a chunk as floats; a cell that is not a finite number is named."""
    numbers = np.full(len(y), np.nan)
    for k, cell in enumerate(y):
        try:
            numbers[k] = float(cell)
        except ValueError:
            break
    bad = np.flatnonzero(~np.isfinite(numbers))
    if bad.size:
        k = bad[0]
        cell, where = str(y[k]), f"{path}, line {lines[k]}, column {target!r}"
        if not cell:
            raise CLIError(f"{where}: empty cell; drop or impute the rows with a missing target")
        if _is_number(cell):  # "inf", "nan"
            raise CLIError(f"{where}: {cell!r} is not finite; drop or impute those rows")
        raise CLIError(f"{where}: {cell!r} is not numeric; --model linear needs a numeric "
                       "target (for class labels: --model logistic)")
    return numbers


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True
