#!/usr/bin/env python3
"""Builds the kef manual: build_docs.py --kef BUILD/bin/kef --out BUILD/docs [--tolerant]

Copies the pages of docs/ (and CHANGELOG.md, which changelog.md includes) into OUT/src, generates
the component reference into OUT/src/reference/components from the built `kef` (gen_components.py),
and runs Sphinx: OUT/html. Warnings are errors unless --tolerant. Copies keep their times and the
generated pages are rewritten only when they change, so a second build redoes only what changed.
"""
import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
GENERATED = Path("reference") / "components"
SKIP = {"__pycache__", "reference"}  # reference/ is generated, never copied


def sync_tree(src, dst):
    """Mirrors src into dst (files added, changed or removed), keeping modification times."""
    dst.mkdir(parents=True, exist_ok=True)
    wanted = set()
    for entry in src.iterdir():
        if entry.name in SKIP or entry.name.startswith("."):
            continue
        wanted.add(entry.name)
        target = dst / entry.name
        if entry.is_dir():
            sync_tree(entry, target)
        elif not target.exists() or not filecmp.cmp(entry, target, shallow=False):
            shutil.copy2(entry, target)
    for entry in dst.iterdir():
        if entry.name not in wanted and entry.name not in SKIP:
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kef", required=True, help="the built kef command")
    ap.add_argument("--out", required=True, type=Path, help="output directory (src/, html/, doctrees/)")
    ap.add_argument("--python-path", default="", help="directory of the built kef Python package (autodoc)")
    ap.add_argument("--tolerant", action="store_true", help="warnings are not errors")
    args = ap.parse_args()
    for module, package in (("sphinx", "python3-sphinx"), ("myst_parser", "python3-myst-parser"), ("furo", "furo")):
        try:
            __import__(module)
        except ImportError:
            print("build_docs: " + sys.executable + " cannot import " + module + ": install the Debian package " +
                  package + " (bash scripts/install-deps.sh installs it)", file=sys.stderr)
            return 2
    start = time.monotonic()
    out = args.out.resolve()
    src = out / "src"
    sync_tree(DOCS, src)
    changelog = out / "CHANGELOG.md"  # changelog.md includes ../CHANGELOG.md
    if not changelog.exists() or not filecmp.cmp(REPO / "CHANGELOG.md", changelog, shallow=False):
        shutil.copy2(REPO / "CHANGELOG.md", changelog)
    gen = subprocess.run([sys.executable, str(DOCS / "gen_components.py"), "--kef", args.kef, "--out",
                          str(src / GENERATED)])
    if gen.returncode != 0:
        return gen.returncode
    env = dict(os.environ, KEF_SOURCE_DIR=str(REPO))
    if args.python_path:  # the Python API page documents the built package from its docstrings
        env["PYTHONPATH"] = str(Path(args.python_path).resolve()) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-q", "-d", str(out / "doctrees"), "-j", "1"]
    if not args.tolerant:
        cmd += ["-W", "--keep-going"]
    status = subprocess.run(cmd + [str(src), str(out / "html")], env=env).returncode
    if status == 0:
        print("build_docs: " + str(out / "html" / "index.html") + " in " + format(time.monotonic() - start, ".1f") +
              " s")
    return status


if __name__ == "__main__":
    sys.exit(main())
