#!/usr/bin/env bash
# Usage: validate_configs.sh KEF DIR... — runs `kef validate` on every *.toml under each DIR (the shipped
# configs/ and the experiments' configs under experiments/) and fails naming each config that does not
# validate (and if there are none at all).
set -uo pipefail
kef="$1"
shift
# The DDE Table 2 configs read numeric CSVs that experiments/dde-table2/dde_conditional_data.py derives
# from the R data sets in data/. A test must not write into the source tree, so those configs are
# validated as copies in a temporary directory, beside the CSVs written there.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
conditional="$repo/experiments/dde-table2/configs"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -d "$conditional" ]; then
  /usr/bin/python3 "$repo/experiments/dde-table2/dde_conditional_data.py" "$scratch/data" "$repo/data" > /dev/null ||
    { echo "FAILED: experiments/dde-table2/dde_conditional_data.py (the DDE Table 2 configs need its CSVs)" >&2; exit 1; }
fi
files=()
for dir in "$@"; do
  mapfile -d '' found < <(find "$dir" -name '*.toml' -not -path '*/results/*' -print0 | sort -z)
  [ "${#found[@]}" -gt 0 ] || { echo "no *.toml under $dir" >&2; exit 1; }
  files+=("${found[@]}")
done
failed=0
for f in "${files[@]}"; do
  target="$f"
  if [ "$(cd "$(dirname "$f")" && pwd)" = "$conditional" ]; then
    target="$scratch/$(basename "$f")"
    cp "$f" "$target"
  fi
  if ! "$kef" validate "$target"; then
    echo "FAILED: kef validate $f" >&2
    failed=$((failed + 1))
  fi
done
echo "validated ${#files[@]} configs, $failed failed"
[ "$failed" -eq 0 ]
