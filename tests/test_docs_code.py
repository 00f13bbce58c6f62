"""Every Python block of the README and of the documentation runs as written.

Each block runs on its own, in a fresh namespace: a reader who copies one
block into a session gets what the page says, without the blocks above it.
A fragment that cannot run on its own (a user's file, a cluster) belongs in
a ``text`` block, not a ``python`` one.
"""

import importlib.util
import math
import re
from pathlib import Path

import matplotlib
import pytest

# Blocks that draw must not need a screen.
matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent


def _load_regenerator():
    spec = importlib.util.spec_from_file_location(
        "regenerate_outputs", ROOT / "docs" / "regenerate_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


regenerate_outputs = _load_regenerator()

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


def _shown_outputs():
    """The code of each output block, mapped to the outputs the pages show for it.

    The README and the documentation's front page show the same quick start:
    one run checks both.
    """
    shown = {}
    for page in regenerate_outputs.pages():
        for code, output, _, _ in regenerate_outputs.output_blocks(page):
            shown.setdefault(code, []).append(output)
    return shown


_SHOWN = _shown_outputs()


@pytest.mark.parametrize("code", _collect())
def test_block_runs(code, tmp_path, monkeypatch, request):
    if "README.md" in request.node.callspec.id:
        # As after the README's command 1: pandas, matplotlib, ... absent.
        printed = regenerate_outputs.run_block(code, command_one=True)
    elif code in _SHOWN:
        printed = regenerate_outputs.run_block(code, command_one=False)
    else:
        monkeypatch.chdir(tmp_path)
        exec(compile(code, "<block>", "exec"), {"__name__": "__docs__"})
        return
    for shown in _SHOWN.get(code, []):
        assert_output_matches(printed, shown)


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")
_WITH_ERROR_BAR = re.compile(r"(-?\d+(?:\.\d+)?) ± (\d+(?:\.\d+)?)")


def _last_place(number):
    """One unit in the last decimal place written in ``number``."""
    _, _, decimals = number.partition(".")
    return 10.0 ** -len(decimals)


def _tolerances(line, bar):
    """The tolerance of each number of a printed ``line``, in order.

    An estimate followed by ``± s`` may differ by its error bar ``s``; the
    bar itself by its own size (a second run's bar is as uncertain). An
    integer (a row count, a grid value) must match exactly. Any other bare
    number, a posterior probability or an exact value, may move by
    ``bar / 2``, ``bar`` the largest error bar of the block: a posterior
    probability ``p_k = softmax(log Z)_k`` changes by at most
    ``p_k (1 - p_k) (|d log Z_k| + max_j |d log Z_j|) <= max_j |d log Z_j| / 2``.
    Every non-integer also gets one unit in its last printed place, its
    rounding.
    """
    tolerances = {}
    for match in _WITH_ERROR_BAR.finditer(line):
        error_bar = float(match.group(2))
        tolerances[match.start(1)] = error_bar + _last_place(match.group(1))
        tolerances[match.start(2)] = error_bar + _last_place(match.group(2))
    result = []
    for match in _NUMBER.finditer(line):
        number = match.group()
        if match.start() in tolerances:
            result.append(tolerances[match.start()])
        elif "." in number:
            result.append(bar / 2 + _last_place(number))
        else:
            result.append(0.0)
    return result


def _largest_error_bar(text):
    return max((float(m.group(2)) for m in _WITH_ERROR_BAR.finditer(text)), default=0.0)


def assert_output_matches(printed, shown):
    """Each number ``printed`` is within its tolerance of the one ``shown``, the words equal."""
    printed_lines, shown_lines = printed.strip().splitlines(), shown.strip().splitlines()
    assert len(printed_lines) == len(shown_lines), (printed, shown)
    bar = max(_largest_error_bar(printed), _largest_error_bar(shown))
    for got, want in zip(printed_lines, shown_lines):
        assert _NUMBER.sub("#", got).split() == _NUMBER.sub("#", want).split(), (got, want)
        numbers = zip(_NUMBER.findall(got), _NUMBER.findall(want),
                      _tolerances(want, bar), _tolerances(got, bar))
        for value, expected, shown_tol, printed_tol in numbers:
            # Either line's error bar may be the wider: a page regenerated
            # on another machine shows its own.
            tolerance = max(shown_tol, printed_tol)
            assert math.isclose(float(value), float(expected), rel_tol=0, abs_tol=tolerance), \
                (got, want, value, expected, tolerance)


def test_output_check_fails_outside_the_error_bar():
    shown = "a -100.5 ± 0.2, probability 1.000\n  500 exact -3.21\n"
    assert_output_matches("a -100.6 ± 0.2, probability 1.000\n  500 exact -3.21\n", shown)
    for printed in ["a -100.9 ± 0.2, probability 1.000\n  500 exact -3.21\n",
                    "a -100.5 ± 0.2, probability 0.000\n  500 exact -3.21\n",
                    "a -100.5 ± 0.2, probability 1.000\n  501 exact -3.21\n",
                    "b -100.5 ± 0.2, probability 1.000\n  500 exact -3.21\n"]:
        with pytest.raises(AssertionError):
            assert_output_matches(printed, shown)


def test_every_output_block_is_collected():
    # The README's two and the documentation's quick start.
    assert sum(map(len, _SHOWN.values())) >= 3


def test_command_one_blocker_hides_pandas():
    code = "from sklearn.datasets import load_diabetes\nload_diabetes(as_frame=True)\n"
    with pytest.raises(regenerate_outputs.subprocess.CalledProcessError) as failure:
        regenerate_outputs.run_block(code, command_one=True)
    assert "requires pandas" in failure.value.stderr
    # and only the blocked packages are absent: the same code runs without it
    assert regenerate_outputs.run_block("import pandas\n", command_one=False) == ""
