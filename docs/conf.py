"""Sphinx configuration: numpydoc API pages, a sphinx-gallery of the examples.

Build (warnings are errors, as in CI)::

    python -m sphinx -W -b html docs docs/_build/html
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
