"""Rewrite every shown output of the README and the documentation by running its code.

An output block is a ``text`` block that follows a ``python`` block with
nothing but blank lines between them; it shows what that block prints. Run
from the repository root::

    python docs/regenerate_outputs.py

The README's blocks run as a reader who ran only the README's command 1
would run them: in a fresh interpreter in which the packages of the test
extra that ``pip install -e .`` does not install cannot be imported
(:data:`NOT_IN_COMMAND_ONE`). ``tests/test_docs_code.py`` runs the same
blocks and checks that what they print matches the pages.
"""

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The test extra's packages that `pip install -e .` does not bring (scipy
# stays: scikit-learn requires it, so command 1 installs it).
NOT_IN_COMMAND_ONE = ("pandas", "matplotlib", "arviz", "dask", "distributed", "pytest")

# Makes the blocked packages fail to import, as if absent. A finder, not
# ``sys.modules[name] = None``: scikit-learn looks a package up in
# sys.modules and would take the None for the module.
_BLOCKER = """import sys


class _NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {names!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled())
del sys, _NotInstalled
"""


def pages():
    """The README and the documentation's reST pages that hold output blocks."""
    found = [ROOT / "README.md"]
    for page in sorted((ROOT / "docs").rglob("*.rst")):
        if {"_build", "generated", "auto_examples"} & set(page.parts):
            continue
        found.append(page)
    return [page for page in found if output_blocks(page)]


def _indent(line):
    return len(line) - len(line.lstrip())


def _dedent(lines):
    lines = list(lines)
    while lines and not lines[-1].strip():
        lines.pop()
    width = min(_indent(line) for line in lines if line.strip())
    return "\n".join(line[width:] for line in lines) + "\n"


def _next_filled(lines, i):
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i


def _markdown_fence(lines, i):
    """The end (exclusive) of the fenced body that starts at line ``i``."""
    while lines[i].strip() != "```":
        i += 1
    return i


def _rst_body(lines, i, indent):
    """The span ``(start, end)`` of the body of the directive on line ``i - 1``."""
    i = _next_filled(lines, i)
    start = i
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
        i += 1
    while i > start and not lines[i - 1].strip():
        i -= 1
    return start, i


def _markdown_pairs(lines):
    for i, line in enumerate(lines):
        if line.strip() != "```python":
            continue
        code_end = _markdown_fence(lines, i + 1)
        j = _next_filled(lines, code_end + 1)
        if j < len(lines) and lines[j].strip() == "```text":
            yield (i + 1, code_end), (j + 1, _markdown_fence(lines, j + 1)), ""


def _rst_pairs(lines):
    for i, line in enumerate(lines):
        if line.strip() != ".. code-block:: python":
            continue
        indent = _indent(line)
        code = _rst_body(lines, i + 1, indent)
        j = _next_filled(lines, code[1])
        if (j < len(lines) and lines[j].strip() == ".. code-block:: text"
                and _indent(lines[j]) == indent):
            output = _rst_body(lines, j + 1, indent)
            yield code, output, " " * _indent(lines[output[0]])


def output_blocks(page):
    """``(code, shown_output, output_span, output_indent)`` for each output block of ``page``.

    ``output_span`` is the ``(start, end)`` of the shown output's lines.
    """
    lines = page.read_text().split("\n")
    pairs = _markdown_pairs(lines) if page.suffix == ".md" else _rst_pairs(lines)
    return [(_dedent(lines[code[0]:code[1]]), _dedent(lines[out[0]:out[1]]), out, indent)
            for code, out, indent in pairs]


def run_block(code, *, command_one):
    """What ``code`` prints, run in a fresh interpreter in a scratch folder.

    Parameters
    ----------
    code : str
        The block's source.
    command_one : bool
        Whether the packages of :data:`NOT_IN_COMMAND_ONE` are blocked, as
        after the README's command 1.

    Returns
    -------
    str
        The block's standard output; a failing block raises
        ``subprocess.CalledProcessError`` carrying its standard error.
    """
    prelude = _BLOCKER.format(names=NOT_IN_COMMAND_ONE) if command_one else ""
    with tempfile.TemporaryDirectory() as scratch:
        done = subprocess.run([sys.executable, "-c", prelude + code], cwd=scratch,
                              capture_output=True, text=True,
                              env=_environment())
    if done.returncode:
        raise subprocess.CalledProcessError(done.returncode, "block", done.stdout, done.stderr)
    return done.stdout


def _environment():
    import os

    env = dict(os.environ)
    # The checkout's package, whatever the scratch folder.
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.setdefault("MPLBACKEND", "Agg")
    return env


def is_readme(page):
    return page.name == "README.md"


def regenerate(page):
    """Rewrite each output block of ``page`` with what its code prints now."""
    lines = page.read_text().split("\n")
    # From the end, so that the earlier blocks' line numbers stay valid.
    for code, _, (start, end), indent in reversed(output_blocks(page)):
        printed = run_block(code, command_one=is_readme(page)).rstrip("\n").split("\n")
        lines[start:end] = [indent + line if line else "" for line in printed]
    page.write_text("\n".join(lines))


def main():
    for page in pages():
        regenerate(page)
        print(f"regenerated {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
