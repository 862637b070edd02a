"""The README's Python example runs as written (the first ```python block of its "## Python"
section), in a fresh directory."""
import os
import pathlib
import re
import subprocess
import sys

README = pathlib.Path(__file__).resolve().parents[2] / "README.md"


def python_example():
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Python\n"):]
    section = section[:section.index("\n## ", 1)]
    match = re.search(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert match, "README.md: no ```python block in the Python section"
    return match.group(1)


def test_readme_python_example_runs(tmp_path):
    code = python_example()
    assert "kef.fit(" in code and "GridSearchCV" in code and "two_sample_test" in code
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ), timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "banana-model" / "model.toml").is_file()
    assert "'permutation'" in r.stdout and "'sigma'" in r.stdout
