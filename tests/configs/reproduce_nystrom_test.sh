#!/usr/bin/env bash
# Usage: reproduce_nystrom_test.sh KEF REPO OUT
# experiments/nystrom/reproduce-nystrom.sh --quick must succeed and write a table with a row per n and a column
# per method (full, both Nyström rules, lite) holding mean ± sd cells, one results.json per run and
# seed, the curves' CSVs and the figure as a PNG.
set -uo pipefail
kef="$1" repo="$2" out="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
bash "$repo/experiments/nystrom/reproduce-nystrom.sh" --quick --threads 2 --out "$out" "$kef" || fail "reproduce-nystrom.sh --quick exited with $?"
for n in 100 200; do
  for method in full nystrom_half nystrom_third lite; do
    for s in 1 2; do
      [ -s "$out/D2/n$n/$method/seed$s/results.json" ] || fail "no $out/D2/n$n/$method/seed$s/results.json"
    done
  done
done
table="$out/table.md"
[ -s "$table" ] || fail "no $table"
grep -q '^| n | full | Nyström θ = 1/2 | Nyström θ = 1/3 | lite, matched M |' "$table" || fail "header missing in $table"
for n in 100 200; do
  row=$(grep "^| $n |" "$table") || fail "row n = $n missing from $table"
  [ "$(grep -o ' ± ' <<< "$row" | wc -l)" -ge 4 ] || fail "row n = $n lacks mean ± sd cells: $row"
done
[ "$(head -c 8 "$out/figure.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$out/figure.png is not a PNG"
[ "$(wc -l < "$out/csv/D2-nystrom_half-J.csv")" -eq 3 ] || fail "the Nyström curve should have two points"
echo "ok: $table"
