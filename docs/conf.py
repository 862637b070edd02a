# Sphinx configuration of the kef manual. Built by docs/build_docs.py (`make docs`), which copies the
# pages into the build tree and generates the component reference beside them; see
# docs/CONTRIBUTING-docs.md.
import os
import posixpath
import re
from pathlib import Path

from docutils import nodes

project = "kef"
author = "the kef authors"
copyright = "the kef authors, BSD-3-Clause"

_cmake = Path(os.environ.get("KEF_SOURCE_DIR", Path(__file__).resolve().parent.parent)) / "CMakeLists.txt"
_version = re.search(r"project\(kef VERSION ([0-9.]+)", _cmake.read_text()) if _cmake.is_file() else None
release = version = _version.group(1) if _version else "unknown"

extensions = ["myst_parser", "sphinx.ext.autodoc"]
myst_enable_extensions = ["dollarmath", "amsmath", "deflist", "colon_fence"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["CONTRIBUTING-docs.md", "_build"]
html_theme = "furo"
html_title = "kef " + release
html_static_path = []
# MathJax from the Debian package (libjs-mathjax) when it is installed: the manual builds and reads
# offline; otherwise Sphinx's default CDN address.
if Path("/usr/share/javascript/mathjax/MathJax.js").is_file():
    mathjax_path = "file:///usr/share/javascript/mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML"

# The repository the pages come from, and where links to its files (plugin READMEs, configs, sources)
# point: KEF_SOURCE_URL (e.g. a web view of the repository) or, by default, the files of the checkout
# itself, relative to the built HTML.
KEF_SOURCE_DIR = Path(os.environ.get("KEF_SOURCE_DIR", Path(__file__).resolve().parent.parent)).resolve()
KEF_SOURCE_URL = os.environ.get("KEF_SOURCE_URL", "")


def _repository_link(app, env, node, contnode):
    """A Markdown link from a page to a file of the repository outside docs/.

    MyST treats a relative link as a reference to another page; one that names an existing file of the
    repository becomes a link to that file. A link to a file that does not exist stays unresolved, and
    the build (warnings are errors) fails on it.
    """
    target = node.get("reftarget", "")
    if not target or "://" in target or target.startswith("#"):
        return None
    path, _, anchor = target.partition("#")
    page_dir = posixpath.dirname(node.get("refdoc", ""))
    in_repo = posixpath.normpath(posixpath.join("docs", page_dir, path))
    if in_repo.startswith("..") or in_repo.startswith("docs/") or in_repo == "docs":
        return None
    if not (KEF_SOURCE_DIR / in_repo).exists():
        return None
    if KEF_SOURCE_URL:
        uri = KEF_SOURCE_URL.rstrip("/") + "/" + in_repo
    else:
        html_dir = Path(app.outdir).resolve() / Path(node.get("refdoc", "")).parent
        uri = os.path.relpath(KEF_SOURCE_DIR / in_repo, html_dir)
    if anchor:
        uri += "#" + anchor
    ref = nodes.reference("", "", internal=False, refuri=uri)
    ref += contnode
    return ref


def _plain_docstring(app, what, name, obj, options, lines):
    """kef's docstrings are plain text (what help() shows), not reStructuredText: shown as written."""
    if any(line.strip() for line in lines):
        lines[:] = ["::", ""] + ["   " + line for line in lines] + [""]


def setup(app):
    app.connect("missing-reference", _repository_link)
    app.connect("autodoc-process-docstring", _plain_docstring)
