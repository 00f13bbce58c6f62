"""Every Python block of the README and of the documentation runs as written.

Each block runs on its own, in a fresh namespace: a reader who copies one
block into a session gets what the page says, without the blocks above it.
A fragment that cannot run on its own (a user's file, a cluster) belongs in
a ``text`` block, not a ``python`` one.
"""

import re
from pathlib import Path

import matplotlib
import pytest

# Blocks that draw must not need a screen.
matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent

_MARKDOWN_BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)
_RST_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block:: python\s*$")


def markdown_blocks(text):
    """The bodies of the ```python fences of a Markdown text."""
    return [match.group(1) for match in _MARKDOWN_BLOCK.finditer(text)]


def rst_blocks(text):
    """The bodies of the ``.. code-block:: python`` directives of a reST text, dedented."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        directive = _RST_DIRECTIVE.match(lines[i])
        i += 1
        if not directive:
            continue
        indent = len(directive.group(1))
        # Options (":caption: ...") and blank lines before the body.
        while i < len(lines) and (not lines[i].strip() or lines[i].strip().startswith(":")):
            i += 1
        body = []
        while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
            body.append(lines[i])
            i += 1
        blocks.append(_dedent(body))
    return blocks


def _indent(line):
    return len(line) - len(line.lstrip())


def _dedent(lines):
    while lines and not lines[-1].strip():
        lines.pop()
    width = min(_indent(line) for line in lines if line.strip())
    return "\n".join(line[width:] for line in lines) + "\n"


def _collect():
    cases = []
    readme = ROOT / "README.md"
    for k, block in enumerate(markdown_blocks(readme.read_text())):
        cases.append(pytest.param(block, id=f"README.md-{k}"))
    for page in sorted((ROOT / "docs").rglob("*.rst")):
        if "_build" in page.parts or "generated" in page.parts or "auto_examples" in page.parts:
            continue
        for k, block in enumerate(rst_blocks(page.read_text())):
            name = page.relative_to(ROOT).as_posix()
            cases.append(pytest.param(block, id=f"{name}-{k}"))
    return cases


def test_the_pages_have_python_blocks():
    # Guards the parsers: a change of markup must not silently collect nothing.
    assert len(markdown_blocks((ROOT / "README.md").read_text())) >= 2
    assert len(rst_blocks((ROOT / "docs" / "index.rst").read_text())) >= 1


def test_rst_parser_keeps_indented_body_and_stops_at_dedent():
    text = (
        "Intro\n\n.. code-block:: python\n   :caption: x\n\n"
        "   a = 1\n\n   if a:\n       b = 2\n\nAfter.\n"
    )
    assert rst_blocks(text) == ["a = 1\n\nif a:\n    b = 2\n"]


@pytest.mark.parametrize("code", _collect())
def test_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<block>", "exec"), {"__name__": "__docs__"})
