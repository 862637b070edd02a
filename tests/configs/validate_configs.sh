#!/usr/bin/env bash
# Usage: validate_configs.sh KEF CONFIG_DIR — runs `kef validate` on every *.toml under CONFIG_DIR and
# fails naming each config that does not validate (and if there are none at all).
set -uo pipefail
kef="$1"
dir="$2"
# The DDE Table 2 configs read numeric CSVs that scripts/dde_conditional_data.py derives from the staged
# R data sets (not committed): write them next to the configs (a git-ignored data/ folder) first.
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
conditional="$dir/paper/dde/conditional"
if [ -d "$conditional" ]; then
  /usr/bin/python3 "$repo/scripts/dde_conditional_data.py" "$conditional/data" "$repo/../shared/data" ||
    { echo "FAILED: scripts/dde_conditional_data.py (the DDE Table 2 configs need its CSVs)" >&2; exit 1; }
fi
mapfile -d '' files < <(find "$dir" -name '*.toml' -print0 | sort -z)
[ "${#files[@]}" -gt 0 ] || { echo "no *.toml under $dir" >&2; exit 1; }
failed=0
for f in "${files[@]}"; do
  if ! "$kef" validate "$f"; then
    echo "FAILED: kef validate $f" >&2
    failed=$((failed + 1))
  fi
done
echo "validated ${#files[@]} configs, $failed failed"
[ "$failed" -eq 0 ]
