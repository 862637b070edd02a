#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, ASan and UBSan and runs each for a bounded time:
# scripts/fuzz.sh SECONDS [TARGET...] (default targets: npy csv toml model_archive). The build directory
# is the sanitizer build that `make test-sanitize` uses (KEF_FUZZ_BUILD_DIR, default build-sanitize,
# configured by scripts/configure-sanitize.sh when it is not yet), so CI compiles everything once.
# Seed corpora come from the repository: fuzz/corpus/TARGET (small committed inputs: CSV header forms,
# hexadecimal and underflowing values, non-regular files, deep TOML, a saved model of every model type),
# configs/ and a model saved by that build's own kef; findings are written to BUILD/findings/TARGET/ and
# make the script exit 1.
set -euo pipefail

if [ $# -lt 1 ] || ! [[ "$1" =~ ^[0-9]+$ ]] || [ "$1" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh SECONDS [npy|csv|toml|model_archive]..." >&2
  exit 2
fi
seconds=$1
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy csv toml model_archive)

root=$(cd "$(dirname "$0")/.." && pwd)
build=${KEF_FUZZ_BUILD_DIR:-$root/build-sanitize}
jobs=${JOBS:-$(nproc)}

if ! command -v clang++ > /dev/null; then
  echo "fuzz.sh: clang++ not found; run scripts/install-deps.sh (it installs clang)" >&2
  exit 2
fi

if ! grep -q '^KEF_BUILD_FUZZ:BOOL=ON' "$build/CMakeCache.txt" 2> /dev/null; then
  bash "$root/scripts/configure-sanitize.sh" "$build" > "$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; exit 1; }
fi
build_targets=(kef kef_plugin_synthetic kef_plugin_lite kef_plugin_gaussian)
for t in "${targets[@]}"; do build_targets+=("kef_fuzz_$t"); done
nice cmake --build "$build" -j "$jobs" --target "${build_targets[@]}"

# ASan's leak checker stays on: the model-archive target's registry is reachable from a static
# pointer until exit, which LSan does not count as a leak. UBSan stops at once.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

seeds=$build/seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{npy,csv,toml,model_archive}
cp "$root"/configs/*.toml "$seeds/toml/"
for t in npy csv toml model_archive; do
  if compgen -G "$root/fuzz/corpus/$t/*" > /dev/null; then cp "$root/fuzz/corpus/$t"/* "$seeds/$t/"; fi
done
printf 'a,b\n1,2\n3.5,-4e-3\n' > "$seeds/csv/plain.csv"
printf '"a","b,c"\r\n1,"2"\r\nNA,3\r\n' > "$seeds/csv/quoted.csv"
printf 'a;b\r1;2\r' > "$seeds/csv/cr.csv"
# A saved model, from the fuzz build's own kef: its arrays seed the NPY target, the directory the archive.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/p.toml" << 'TOML'
schema_version = 1
[data]
type = "synthetic/banana"
n = 200
split = { test = 50, validation = 0 }
[[model]]
name = "m"
[model.estimator]
type = "lite"
inducing_points = 5
[model.kernel]
type = "gaussian"
sigma = 1.5
[model.base_measure]
type = "gaussian"
std = 4.0
TOML
"$build/bin/kef" run "$work/p.toml" --quiet --output "$work/out" > /dev/null
model=$work/out/models/m
cp "$model"/*.npy "$seeds/npy/"
{
  cat "$model/model.toml"
  for f in "$model"/*.npy; do
    printf '#@@ %s\n' "$(basename "$f")"
    cat "$f"
  done
} > "$seeds/model_archive/lite"

status=0
for t in "${targets[@]}"; do
  corpus=$build/corpus/$t
  findings=$build/findings/$t
  mkdir -p "$corpus" "$findings"
  echo "fuzz.sh: $t for $seconds s"
  if ! (cd "$findings" && "$build/bin/kef_fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 "$corpus" "$seeds/$t" 2>&1 | tail -n 12); then
    status=1
  fi
  if compgen -G "$findings/crash-*" > /dev/null || compgen -G "$findings/timeout-*" > /dev/null ||
     compgen -G "$findings/oom-*" > /dev/null; then
    echo "fuzz.sh: $t: findings in $findings" >&2
    status=1
  fi
done
exit $status
