#!/usr/bin/env bash
# Usage: standalone_test.sh REPO — fails, naming each file and line, when a test, config, script,
# experiment or the data folder refers to a `shared` folder beside the repository. A clone with nothing
# beside it must pass `make test`: the data the tests and experiments read lives in data/. The
# benchmarks (bench/) may name the anchor programs kept beside the repository; they report plainly when
# those are absent and still time kef. Recorded runs under results/ quote the command lines they were
# made with and are not read by anything.
set -uo pipefail
repo="$1"
cd "$repo" || exit 1
dirs=()
for d in tests configs scripts experiments data python fuzz; do
  [ -d "$d" ] && dirs+=("$d")
done
# The pattern is built from pieces so that this script does not match itself.
up='\.\.'
q='"'
# C++ composes paths with operator/: the quoted parent and the quoted folder name with a slash between
# them name the same folder.
pattern="${up}/shared|shared/(data|anchors|research-notes|papers)|${q}${up}${q}[[:space:]]*/[[:space:]]*${q}shared${q}"
hits=$(grep -rnIE "$pattern" "${dirs[@]}" Makefile CMakeLists.txt .ci 2>/dev/null | grep -v '/results/' || true)
if [ -n "$hits" ]; then
  echo "files that read or name the folder beside the repository (copy what is needed into data/):" >&2
  echo "$hits" >&2
  exit 1
fi
echo "no test, config, script or experiment names a folder outside the repository"
