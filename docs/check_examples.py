#!/usr/bin/env python3
"""Runs the examples of the manual and the README: check_examples.py --kef BUILD/bin/kef [PAGE.md...]

Every fenced code block of each page (default: README.md and every page under docs/) is handled by
the first word of its info string, the language, and the markers after it (docs/CONTRIBUTING-docs.md):

  toml                a complete pipeline: written into the page's scratch directory, `kef validate`
  toml fragment       part of a pipeline: must parse as TOML
  sh, bash            run as one `bash -e -o pipefail` script
  console             its `$ ` lines (with their `\\` continuations) run as one script; the rest is output
  python              run with python3, the built kef module importable (--python-path)
  LANG no-run: WHY    not run; the reason is required
  anything else       not run (text output, C++ excerpts, ...); a block with no language is an error

The blocks of one page run in order in one scratch directory that links the repository's top-level
folders, with the built kef first on PATH. Exits 1 naming the page, line and block of every failure.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SHELLS = {"sh", "bash", "shell"}
NOT_LINKED = {".git", "runs", "docs"}
TIMEOUT = 120


class Block:
    def __init__(self, page, line, lang, markers, text):
        self.page, self.line, self.lang, self.markers, self.text = page, line, lang, markers, text

    def where(self):
        return str(self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page) + ":" + \
            str(self.line) + ": ```" + " ".join([self.lang] + self.markers)


def blocks_of(page):
    """The fenced blocks of a Markdown page (CommonMark fences, indented ones in lists included)."""
    lines = page.read_text().splitlines()
    out, i = [], 0
    fence = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
    while i < len(lines):
        m = fence.match(lines[i])
        if not m:
            i += 1
            continue
        indent, marker, info = len(m.group(1)), m.group(2), m.group(3).strip()
        body, j = [], i + 1
        closing = re.compile(r"^\s*" + re.escape(marker[0]) + "{" + str(len(marker)) + r",}\s*$")
        while j < len(lines) and not closing.match(lines[j]):
            body.append(lines[j][indent:] if lines[j][:indent].strip() == "" else lines[j].lstrip())
            j += 1
        words = info.split()
        lang = words[0] if words else ""
        out.append(Block(page, i + 1, lang, words[1:], "\n".join(body) + "\n"))
        i = j + 1
    return out


def no_run_reason(block):
    """The reason of a `no-run: REASON` marker, '' when unmarked; None when marked without a reason."""
    info = " ".join(block.markers)
    if not info.startswith("no-run"):
        return ""
    reason = info[len("no-run"):].lstrip(":").strip()
    return reason if reason else None


def console_script(text):
    commands, continuing = [], False
    for line in text.splitlines():
        if continuing:
            commands.append(line)
        elif line.startswith("$ "):
            commands.append(line[2:])
        else:
            continue
        continuing = line.rstrip().endswith("\\")
    return "\n".join(commands) + "\n"


def scratch_dir(root, page):
    d = Path(tempfile.mkdtemp(prefix=page.stem + "-", dir=root))
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED and not entry.name.startswith("build"):
            (d / entry.name).symlink_to(entry)
    return d


def run(cmd, cwd, env, what):
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        return what + " did not finish in " + str(TIMEOUT) + " s"
    except OSError as e:
        return what + " could not be started: " + str(e)
    if r.returncode != 0:
        return what + " exited " + str(r.returncode) + ":\n" + (r.stdout + r.stderr).strip()[-3000:]
    return None


def check_block(block, scratch, env, counter):
    reason = no_run_reason(block)
    if reason is None:
        return "marked no-run without a reason (write `no-run: WHY`)", "error"
    if reason:
        return None, "not run"
    if block.lang == "toml":
        if "fragment" in block.markers:
            try:
                tomllib.loads(block.text)
            except tomllib.TOMLDecodeError as e:
                return "not valid TOML: " + str(e), "error"
            return None, "parsed"
        counter[0] += 1
        path = scratch / ("example-" + str(block.line) + ".toml")
        path.write_text(block.text)
        return run([env["KEF"], "validate", path.name], scratch, env, "`kef validate`"), "validated"
    if block.lang in SHELLS or block.lang == "console":
        script = console_script(block.text) if block.lang == "console" else block.text
        if not script.strip():
            return None, "no commands"
        return run(["bash", "-e", "-o", "pipefail", "-c", script], scratch, env, "the script"), "ran"
    if block.lang in ("python", "py", "python3"):
        path = scratch / ("example-" + str(block.line) + ".py")
        path.write_text(block.text)
        return run([env["KEF_PYTHON"], path.name], scratch, env, "python3"), "ran"
    return None, "not run"


def default_pages():
    pages = [REPO / "README.md"] + sorted((REPO / "docs").rglob("*.md"))
    return [p for p in pages if p.name != "CONTRIBUTING-docs.md" and "reference" not in p.relative_to(REPO).parts]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kef", required=True, help="the built kef command")
    ap.add_argument("--python-path", default="", help="directory holding the built kef Python module")
    ap.add_argument("--python", default="/usr/bin/python3", help="the Python that runs python blocks")
    ap.add_argument("pages", nargs="*", type=Path)
    args = ap.parse_args()
    kef = str(Path(args.kef).resolve())
    env = dict(os.environ, KEF=kef, KEF_PYTHON=args.python, PATH=str(Path(kef).parent) + os.pathsep + os.environ["PATH"])
    if args.python_path:
        env["PYTHONPATH"] = str(Path(args.python_path).resolve()) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    pages = [p.resolve() for p in args.pages] or default_pages()
    failures, tally = [], {}
    with tempfile.TemporaryDirectory(prefix="kef-docs-examples-") as root:
        for page in pages:
            scratch, counter = None, [0]
            for block in blocks_of(page):
                if block.lang.startswith("{"):
                    continue  # MyST directives (toctree, math, include, ...)
                if not block.lang:
                    failures.append(block.where() + ": a code block needs a language (`text` for output)")
                    continue
                if scratch is None:
                    scratch = scratch_dir(Path(root), page)
                start = time.monotonic()
                problem, what = check_block(block, scratch, env, counter)
                tally[what] = tally.get(what, 0) + 1
                took = time.monotonic() - start
                if took > 5:
                    print(block.where() + ": took " + format(took, ".1f") + " s")
                if problem:
                    failures.append(block.where() + ": " + problem)
    print("check_examples: " + (", ".join(str(n) + " " + w for w, n in sorted(tally.items())) or "no blocks") + " in " +
          str(len(pages)) + " pages")
    if failures:
        print("\n\n".join(failures), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
