"""Sphinx configuration: numpydoc API pages, a sphinx-gallery of the examples.

Build (warnings are errors and every cross-reference must resolve, as in
CI)::

    python -m sphinx -n -W -b html docs docs/_build/html
"""

import os
import sys
from pathlib import Path

# Build the package of this checkout even when another copy is installed.
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# The examples' tensors are small: one thread is as fast and does not spin
# against other processes on a shared machine (as in tests/conftest.py).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import skevidence  # noqa: E402

torch.set_num_threads(1)

project = "skevidence"
author = "the skevidence developers"
copyright = "2026, the skevidence developers"
release = version = skevidence.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]

# -- API pages ----------------------------------------------------------------
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False}
numpydoc_show_class_members = False  # the class template lists the members
numpydoc_class_members_toctree = False

# -- Cross-references -----------------------------------------------------------
# Every reference must resolve (``-n``). The build must not depend on the
# network (CI cannot always reach the projects' sites), so there is no
# intersphinx: references to other libraries stay plain text, and only
# those are ignored below. A reference into skevidence is never ignored:
# a dead one fails the build.
nitpicky = True

# Names of other projects (and of the standard library) used in docstrings
# and parameter types.
_EXTERNAL_PACKAGES = ("sklearn", "numpy", "np", "scipy", "torch", "joblib",
                      "matplotlib", "pandas", "tqdm", "collections", "typing",
                      "numbers", "os", "pathlib")
nitpick_ignore_regex = [
    (r"py:.*", rf"({'|'.join(_EXTERNAL_PACKAGES)})(\..+)?"),
]

# Types in Parameters / Returns sections: the names of skevidence's public
# classes link to their pages; every other word (the numpydoc type
# grammar: "array-like of shape (n_samples,)", "int or None",
# "torch.Generator", ...) stays plain text. numpydoc's built-in aliases
# point into other projects' inventories (``python:int``), which this
# build does not load, so they are replaced by plain text too.
numpydoc_xref_param_type = True
numpydoc_xref_ignore = "all"


def _public_aliases():
    """``{name: documented target}`` for the public classes of skevidence.

    Both the short name and every dotted path a docstring may use (the
    defining module, e.g. ``skevidence.linear_model.EvidenceLinearRegression``)
    map to the path the API reference documents.
    """
    import importlib

    aliases = {}
    public = {"skevidence": skevidence.__all__,
              "skevidence.models": None, "skevidence.exceptions": None}
    for module_name, names in public.items():
        module = importlib.import_module(module_name)
        for name in names if names is not None else module.__all__:
            obj = getattr(module, name)
            if not isinstance(obj, type):
                continue
            target = f"{module_name}.{name}"
            aliases[name] = target
            aliases[f"{obj.__module__}.{name}"] = target
    aliases["SGAISConfig"] = "skevidence.inference.sgais.SGAISConfig"
    return aliases


try:
    from numpydoc.xref import DEFAULT_LINKS as _NUMPYDOC_LINKS
except ImportError:  # a numpydoc without it: the -n build names any alias to override
    _NUMPYDOC_LINKS = {}
numpydoc_xref_aliases = {**{word: word for word in _NUMPYDOC_LINKS}, **_public_aliases()}


def _check_engine_options_documented():
    """Fail the build when a field of SGAISConfig is missing from its docstring.

    The API page of ``engine_options`` is that docstring's Parameters
    section, written by hand; a new field must not go undocumented.
    """
    import dataclasses

    from numpydoc.docscrape import NumpyDocString

    from skevidence.inference.sgais import SGAISConfig

    # An entry may name several fields ("a, b : type"), as numpydoc allows.
    documented = {name.strip() for entry in NumpyDocString(SGAISConfig.__doc__)["Parameters"]
                  for name in entry.name.split(",")}
    missing = [f.name for f in dataclasses.fields(SGAISConfig) if f.name not in documented]
    if missing:
        raise RuntimeError(f"SGAISConfig's docstring does not document {missing}")


_check_engine_options_documented()

# -- HTML ---------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"skevidence {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []

# -- Gallery --------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "show_memory": False,
    "plot_gallery": "True",
}


def _skip_metadata_routing(app, what, name, obj, skip, options):
    """Leave out scikit-learn's generated ``set_*_request`` methods (metadata routing)."""
    if name.startswith("set_") and name.endswith("_request"):
        return True
    return skip


def setup(app):
    app.connect("autodoc-skip-member", _skip_metadata_routing)
