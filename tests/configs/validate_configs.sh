#!/usr/bin/env bash
# Usage: validate_configs.sh KEF CONFIG_DIR — runs `kef validate` on every *.toml under CONFIG_DIR and
# fails naming each config that does not validate (and if there are none at all).
set -uo pipefail
kef="$1"
dir="$2"
# The DDE Table 2 configs read numeric CSVs that scripts/dde_conditional_data.py derives from the R data
# sets in data/. A test must not write into the source tree, so those configs are
# validated as copies in a temporary directory, beside the CSVs written there.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
conditional="$dir/paper/dde/conditional"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -d "$conditional" ]; then
  /usr/bin/python3 "$repo/scripts/dde_conditional_data.py" "$scratch/data" "$repo/data" > /dev/null ||
    { echo "FAILED: scripts/dde_conditional_data.py (the DDE Table 2 configs need its CSVs)" >&2; exit 1; }
fi
mapfile -d '' files < <(find "$dir" -name '*.toml' -print0 | sort -z)
[ "${#files[@]}" -gt 0 ] || { echo "no *.toml under $dir" >&2; exit 1; }
failed=0
for f in "${files[@]}"; do
  target="$f"
  if [ -d "$conditional" ] && [ "$(dirname "$f")" = "$conditional" ]; then
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
