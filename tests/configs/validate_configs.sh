#!/usr/bin/env bash
# Usage: validate_configs.sh KEF CONFIG_DIR — runs `kef validate` on every *.toml under CONFIG_DIR and
# fails naming each config that does not validate (and if there are none at all).
set -uo pipefail
kef="$1"
dir="$2"
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
