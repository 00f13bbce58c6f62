"""The docs quote measurements from one place: the results page.

What this checks, mechanically:

* A *measurement* in prose is a number followed by a unit of our
  measurements -- ``nat``/``nats``, ``x`` (a speed ratio such as ``20x``),
  ``CPU s``, ``s``/``seconds`` -- or a number right after ``RMS``, ``SD``
  or ``std of``.  Every such number quoted on a user page (``README.md``,
  ``docs/index.rst``, ``docs/paper.rst``, ``docs/user_guide/*.rst``) or in
  a docstring under ``skevidence/`` must also appear, as the same string of
  digits, on the results page ``docs/benchmarks.rst``.  Numbers inside
  code blocks (doctest output, ``::`` blocks) and round thresholds written
  as integers followed by ``nat``/``nats`` (advice such as "within 1 nat")
  are not measurements and are not checked.
* No user page and no docstring under ``skevidence/`` holds a commit hash
  (a run of 7-40 hexadecimal characters with at least one digit and one
  letter) or a date (``YYYY-MM-DD``): only the results page names the
  commit and date of a run, in its tables' captions.
"""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "benchmarks.rst"

USER_PAGES = sorted(
    [ROOT / "README.md", ROOT / "docs" / "index.rst", ROOT / "docs" / "paper.rst"]
    + list((ROOT / "docs" / "user_guide").glob("*.rst"))
)

VALUE = r"[+-]?\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?"  # 0.34, -2.97, 13-18
MEASUREMENT = re.compile(
    rf"(?<![\w.+-])(?P<value>{VALUE})"
    r"(?:x\b|\s*(?:(?P<nat>nats?)\b|CPU s\b|s\b|seconds\b))"
    rf"|\b(?:RMS|SD|std of)\s+(?P<stat>{VALUE})"
)
COMMIT = re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")


def _prose(text):
    """``text`` without code: fenced and indented literal blocks, literals."""
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    out, skip, indent = [], False, 0
    for line in text.splitlines():
        stripped = line.lstrip()
        depth = len(line) - len(stripped)
        if skip:
            if stripped and depth <= indent:
                skip = False
            else:
                continue
        if (
            stripped.startswith((".. code-block::", ".. code::", ".. doctest::"))
            or stripped.startswith(">>>")
            or stripped.endswith("::")
        ):
            skip, indent = True, depth
            if stripped.endswith("::") and not stripped.startswith(".."):
                out.append(stripped[:-2])
            continue
        out.append(line)
    text = "\n".join(out)
    return re.sub(r"``[^`]*``|`[^`]*`", "", text)


def _docstrings():
    for path in sorted((ROOT / "skevidence").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(
                node,
                (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef),
            ):
                doc = ast.get_docstring(node, clean=True)
                if doc:
                    name = getattr(node, "name", "<module>")
                    yield f"{path.relative_to(ROOT)}:{name}", doc


def _sources():
    for page in USER_PAGES:
        yield str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")
    yield from _docstrings()


SOURCES = dict(_sources())


def _measurements(text):
    """Yield ``(quote, numbers)`` for each measurement quoted in ``text``."""
    for match in MEASUREMENT.finditer(_prose(text)):
        value = match.group("value") or match.group("stat")
        if match.group("nat") and not re.search(r"\.\d", value):
            continue  # a round threshold such as "within 1 nat"
        numbers = re.findall(r"\d+(?:\.\d+)?", value)
        yield " ".join(match.group(0).split()), numbers


def _results_numbers():
    return set(re.findall(r"\d+(?:\.\d+)?", RESULTS.read_text(encoding="utf-8")))


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_quoted_measurements_are_on_the_results_page(name):
    known = _results_numbers()
    missing = [
        quote
        for quote, numbers in _measurements(SOURCES[name])
        if not known.issuperset(numbers)
    ]
    assert not missing, (
        f"{name} quotes measurements not on docs/benchmarks.rst: {missing}; "
        "link to the table (:ref:) instead of quoting it"
    )


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_no_commit_hashes_or_dates(name):
    text = SOURCES[name]
    found = COMMIT.findall(text) + DATE.findall(text)
    assert not found, f"{name} names commits or dates: {found}"


def test_the_checks_see_what_they_look_for():
    assert [q for q, _ in _measurements("a fit took 12.5 CPU s, 20x PyMC")] == [
        "12.5 CPU s",
        "20x",
    ]
    assert [n for _, n in _measurements("RMS 0.34, an error of -0.45 nats")] == [
        ["0.34"],
        ["0.45"],
    ]
    assert [n for _, n in _measurements("13-18 s, 2 x parameters")] == [["13", "18"]]
    assert not list(_measurements("within 1 nat; ``0.5 s`` in code"))
    assert COMMIT.findall("commit 0b89a25 on 2026-11-26") == ["0b89a25"]
    assert DATE.findall("commit 0b89a25 on 2026-11-26") == ["2026-11-26"]
    assert not COMMIT.findall("deadline 1234567 and abcdefg")
