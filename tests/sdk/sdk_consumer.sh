#!/usr/bin/env bash
# sdk_consumer.sh BUILD_DIR SOURCE_DIR CMAKE NINJA CXX [BUILD_TYPE [PYTHON PYTHON_DIR]]
#
# Installs the kef build tree into a temporary prefix, checks that the installed headers are exactly
# those sdk/public_headers.txt lists, builds sdk/examples/imq_kernel (an out-of-tree plugin) and
# sdk/examples/embed against the installed package only (find_package(kef) with
# CMAKE_PREFIX_PATH=<prefix>), then runs the installed `kef` on the example pipeline with the new
# plugin found through KEF_PLUGIN_PATH.
set -euo pipefail

build_dir=$1 source_dir=$2 cmake=$3 ninja=$4 cxx=$5 build_type=${6:-Release}
# The Python package, when the build has it: the interpreter and the install directory relative to
# the prefix (KEF_PYTHON_INSTALL_DIR).
python=${7:-} python_dir=${8:-}

# Physical path: kef reports plugin directories with symlinks resolved.
work=$(cd "$(mktemp -d "${TMPDIR:-/tmp}/kef-sdk-consumer-XXXXXX")" && pwd -P)
# KEF_SDK_TEST_KEEP=1 keeps the directory (logs, builds, install tree) for inspection.
if [[ ${KEF_SDK_TEST_KEEP:-0} == 1 ]]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
prefix=$work/prefix

fail() { echo "sdk_consumer: FAILED: $*" >&2; exit 1; }
# Runs a command with its output in a log, shown only when it fails.
run() {
  local log=$1; shift
  if ! "$@" >"$work/$log.log" 2>&1; then
    cat "$work/$log.log" >&2
    fail "$log: $*"
  fi
}

echo "== install into $prefix"
run install "$cmake" --install "$build_dir" --prefix "$prefix"
config=$(find "$prefix" -name kefConfig.cmake -print -quit)
[[ -n $config ]] || fail "no kefConfig.cmake installed"
libdir=$(dirname "$(dirname "$(dirname "$config")")")
for f in "$prefix/bin/kef" "$libdir/libkef.so" "$prefix/include/kef/registry.hpp" \
         "$prefix/include/kef/plugin_abi.h" "$prefix/include/kef/sdk/plugin.hpp" \
         "$(dirname "$config")/KefPlugin.cmake"; do
  [[ -e $f ]] || fail "missing from the install tree: ${f#"$prefix"/}"
done
[[ -d $libdir/kef/plugins ]] || fail "no plugin directory ${libdir#"$prefix"/}/kef/plugins"

echo "== installed headers against sdk/public_headers.txt"
# The public surface is a list (docs/design.md, "The public surface"): the installed headers must be
# exactly those listed, so that making a header public is a deliberate act.
(cd "$prefix/include" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$work/installed_headers"
grep -v -e '^#' -e '^$' "$source_dir/sdk/public_headers.txt" | LC_ALL=C sort >"$work/listed_headers"
unlisted=$(LC_ALL=C comm -23 "$work/installed_headers" "$work/listed_headers")
missing=$(LC_ALL=C comm -13 "$work/installed_headers" "$work/listed_headers")
[[ -z $unlisted ]] || fail "installed but not in sdk/public_headers.txt (list it to make it public, or move it to its layer's src/):
$unlisted"
[[ -z $missing ]] || fail "in sdk/public_headers.txt but not installed:
$missing"
echo "$(wc -l <"$work/installed_headers") headers installed, as listed"

configure() {  # configure NAME SOURCE
  run "configure-$1" "$cmake" -S "$2" -B "$work/$1" -G Ninja -DCMAKE_MAKE_PROGRAM="$ninja" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_PREFIX_PATH="$prefix"
  # The package must come from the prefix, never from the build or source tree.
  grep -qF "kef_DIR:PATH=$prefix/" "$work/$1/CMakeCache.txt" \
    || fail "$1 found kef outside the prefix: $(grep '^kef_DIR' "$work/$1/CMakeCache.txt")"
  run "build-$1" "$cmake" --build "$work/$1" --parallel 1
}

echo "== build sdk/examples/imq_kernel"
configure imq "$source_dir/sdk/examples/imq_kernel"
[[ -f $work/imq/kef_imq_example.so ]] || fail "kef_imq_example.so not built"

echo "== build sdk/examples/embed"
configure embed "$source_dir/sdk/examples/embed"

export KEF_PLUGIN_PATH=$work/imq
# Nothing may come from the build tree: the installed kef finds its libkef through its RPATH.
unset LD_LIBRARY_PATH

echo "== embed: list plugins, build kernel/imq_example"
run embed "$work/embed/kef_embed" --kernel imq_example
grep -qF "loaded  imq_example 1.0.0  $work/imq/kef_imq_example.so" "$work/embed.log" \
  || { cat "$work/embed.log"; fail "kef_embed did not load the example's kef_imq_example.so"; }
grep -qF "$libdir/kef/plugins/" "$work/embed.log" \
  || { cat "$work/embed.log"; fail "kef_embed did not load the installed plugins"; }
if grep -qF "$build_dir" "$work/embed.log"; then cat "$work/embed.log"; fail "a plugin was loaded from the build tree"; fi

echo "== kef plugins --describe kernel/imq_example"
run describe "$prefix/bin/kef" plugins --describe kernel/imq_example
grep -q "beta" "$work/describe.log" || { cat "$work/describe.log"; fail "kernel/imq_example keys not described"; }

echo "== kef run pipeline.toml"
cd "$work"
run pipeline "$prefix/bin/kef" run "$source_dir/sdk/examples/imq_kernel/pipeline.toml" \
    --output "$work/out" --quiet
[[ -s $work/out/results.json ]] || { cat "$work/pipeline.log"; fail "no results.json"; }
grep -Eq '"imq_example": *"1\.0\.0"' "$work/out/results.json" || fail "results.json does not list the example plugin imq_example 1.0.0"

if [[ -n $python ]]; then
  echo "== import kef from $python_dir"
  cd "$work"
  # The installed package must link the installed libkef and load the installed plugins.
  PYTHONPATH="$prefix/$python_dir" run python "$python" -c '
import numpy as np, kef, sys
assert kef.__file__.startswith(sys.argv[1]), kef.__file__
X = np.random.default_rng(0).normal(size=(100, 2))
m = kef.fit(X, estimator={"type": "lite", "inducing_points": 20}, kernel={"type": "gaussian", "sigma": 1.0},
            base_measure={"type": "gaussian", "std": 3.0}, quiet=True)
assert np.all(np.isfinite(m.log_density(X)))
maps = {l.split()[-1] for l in open("/proc/self/maps") if "libkef.so" in l or "kef_lite.so" in l}
print("\n".join(sorted(maps)))
' "$prefix/"
  for lib in libkef.so kef/plugins/kef_lite.so; do
    grep -qF "$libdir/$lib" "$work/python.log" \
      || { cat "$work/python.log"; fail "the installed Python package did not load $libdir/$lib"; }
  done
  if grep -qF "$build_dir" "$work/python.log"; then cat "$work/python.log"; fail "Python loaded from the build tree"; fi
fi
echo "sdk_consumer: OK"
