#!/usr/bin/env bash
# The wheel as a user gets it: built from an already compiled build directory (KEF_WHEEL_FROM_BUILD:
# `cmake --install` of that tree, nothing compiled), installed into a fresh venv in a temporary
# directory outside the source tree, then used there with no build tree, PYTHONPATH or
# LD_LIBRARY_PATH: the package's tests (the `kef` entry point as their kef command), a fit, sampling,
# save and reload, and a check that every library came from the venv.
# Usage: wheel_test.sh SOURCE_DIR BUILD_DIR PYTHON
set -euo pipefail
src=$1 build=$2 python=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/kef-wheel-test-XXXXXX")
trap 'rm -rf "$work"' EXIT
unset PYTHONPATH LD_LIBRARY_PATH KEF_PLUGIN_PATH

# The files the build reads, copied, so that nothing is written into the source tree.
mkdir -p "$work/src/python/kef" "$work/tests"
cp "$src/pyproject.toml" "$src/setup.py" "$src/CMakeLists.txt" "$src/README.md" "$work/src/"
cp "$src"/python/kef/*.py "$work/src/python/kef/"
# The package's own tests, but the one that reads the source tree's README.
cp "$src"/tests/python/conftest.py "$src"/tests/python/test_*.py "$work/tests/"
rm "$work/tests/test_readme.py"

cd "$work/src"
KEF_WHEEL_FROM_BUILD=$build "$python" -m build --wheel --no-isolation --outdir "$work/dist" >"$work/build.log" 2>&1 ||
  { cat "$work/build.log"; exit 1; }
wheel=$(ls "$work"/dist/kef-*.whl)
version=$(sed -n 's/^project(kef VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
case "$(basename "$wheel")" in
  kef-"$version"-*-linux_*.whl) ;;
  *) echo "unexpected wheel name $(basename "$wheel") (version $version, a platform wheel)"; exit 1 ;;
esac

cd "$work"
"$python" -m venv --system-site-packages venv
venv/bin/pip install --no-index --no-deps --quiet "$wheel"
rm -rf "$work/src"   # the installed package must not need anything of the build

test "$(venv/bin/pip show kef | sed -n 's/^Version: //p')" = "$version"
venv/bin/kef --version
venv/bin/kef plugins >/dev/null
venv/bin/python - "$work" "$version" <<'PY'
import importlib.metadata, os, sys
import numpy as np
import kef, kef.sklearn
work, version = sys.argv[1], sys.argv[2]
assert importlib.metadata.version("kef") == version == kef.__version__
assert kef.__file__.startswith(os.path.join(work, "venv")), kef.__file__
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 2))
model = kef.fit(X, {"type": "lite", "inducing_points": 50}, {"type": "gaussian", "sigma": "median"},
                "gaussian", seed=1, quiet=True)
draws = model.sample(50, seed=2, quiet=True)
assert draws.shape == (50, 2) and np.isfinite(draws).all()
model.save(os.path.join(work, "m"))
again = kef.load(os.path.join(work, "m"))
assert (again.log_density(X) == model.log_density(X)).all()
assert kef.sklearn.Maf(max_epochs=2).fit(X).score(X) < 0
# Every kef library this process mapped is the venv's.
with open("/proc/self/maps") as maps:
    mapped = {line.split()[-1] for line in maps if "libkef" in line or "/kef/" in line}
outside = [p for p in mapped if p.startswith("/") and not p.startswith(os.path.join(work, "venv"))
           and "python3" not in p]
assert mapped and not outside, outside
print("wheel ok:", os.path.basename(os.path.dirname(kef.__file__)), len(mapped), "kef files mapped")
PY
KEF_EXE="$work/venv/bin/kef" venv/bin/python -m pytest -q -p no:cacheprovider tests
