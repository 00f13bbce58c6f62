"""The docs quote measurements from one place: the results page.

What this checks, mechanically:

* A *measurement* in prose is a number followed by a unit of our
  measurements -- ``nat``/``nats``, ``x`` (a speed ratio such as ``20x``),
  ``CPU s``, ``s``/``seconds`` -- or a number right after ``RMS``, ``SD``
  or ``std of``.  Every such number quoted on a user page (``README.md``,
  ``docs/index.rst``, ``docs/paper.rst``, ``docs/user_guide/*.rst``) or in
  a docstring under ``skevidence/`` must also appear, as the same string of
  digits, on the results page ``docs/benchmarks.rst`` (for ``docs/paper.rst``
  also in the outputs of ``benchmarks/paper/`` that it shows, the files of
  ``docs/paper/``).  A range such as ``13-18 s`` needs both ends there.
  Docstrings are read as written in the source and, for the public API, as
  assembled at import.  Numbers inside code blocks (doctest output, ``::``
  blocks, inline literals) and round thresholds written as integers followed
  by ``nat``/``nats`` (advice such as "within 1 nat") are not measurements
  and are not checked.
* No ``:ref:`` on those pages, in those docstrings or on the results page
  itself points at a table's label without link text of its own: Sphinx
  would make the whole caption (command, commit, date) the link text.
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
    """One text per module: its docstrings, as written in the source."""
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for path in sorted((ROOT / "skevidence").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = [
            ast.get_docstring(node, clean=True) or ""
            for node in ast.walk(tree)
            if isinstance(node, kinds)
        ]
        yield f"{path.relative_to(ROOT)} (docstrings)", "\n\n".join(docs)


def _runtime_docstrings():
    """One text per public name: the docstrings assembled at import."""
    import skevidence

    for name in skevidence.__all__:
        obj = getattr(skevidence, name)
        methods = vars(obj).items() if isinstance(obj, type) else ()
        members = [obj] + [v for k, v in methods if not k.startswith("_")]
        docs = [getattr(member, "__doc__", None) for member in members]
        text = "\n\n".join(doc for doc in docs if isinstance(doc, str))
        yield f"skevidence.{name} (docstrings at import)", text


def _sources():
    for page in USER_PAGES:
        yield str(page.relative_to(ROOT)), page.read_text(encoding="utf-8")
    yield from _docstrings()
    yield from _runtime_docstrings()


SOURCES = dict(_sources())


def _measurements(text):
    """Yield ``(quote, numbers)`` for each measurement quoted in ``text``."""
    for match in MEASUREMENT.finditer(_prose(text)):
        value = match.group("value") or match.group("stat")
        if match.group("nat") and not re.search(r"\.\d", value):
            continue  # a round threshold such as "within 1 nat"
        numbers = re.findall(r"\d+(?:\.\d+)?", value)
        yield " ".join(match.group(0).split()), numbers


def _numbers(text):
    return set(re.findall(r"\d+(?:\.\d+)?", text))


def _results_numbers(name=""):
    """The numbers of the results page (and the paper's outputs, for its page)."""
    known = _numbers(RESULTS.read_text(encoding="utf-8"))
    if name == "docs/paper.rst":
        for path in (ROOT / "docs" / "paper").glob("*.*"):
            if path.suffix in {".csv", ".md", ".txt", ".json"}:
                known |= _numbers(path.read_text(encoding="utf-8"))
    return known


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_quoted_measurements_are_on_the_results_page(name):
    known = _results_numbers(name)
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


def _table_labels():
    """Labels on the results page that stand right before a table."""
    text = RESULTS.read_text(encoding="utf-8")
    return set(re.findall(r"^\.\. _([\w-]+):\n\n\.\. table::", text, flags=re.M))


@pytest.mark.parametrize("name", sorted(SOURCES) + ["docs/benchmarks.rst"])
def test_no_caption_as_link_text(name):
    text = SOURCES.get(name) or RESULTS.read_text(encoding="utf-8")
    bare = set(re.findall(r":ref:`([\w-]+)`", text)) & _table_labels()
    assert not bare, (
        f"{name} links to tables {sorted(bare)} with their captions as link "
        "text; write :ref:`short text <label>`"
    )


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
    assert "long-streams" in _table_labels()
