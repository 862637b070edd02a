#!/usr/bin/env bash
# Usage: bkl_experiments_test.sh 2|3 KEF REPO OUT
# 2: experiments/bkl/bkl_experiment2.py --quick must write the witness CSVs (x, mean, lower, upper, sd on the
#    grid, lower <= mean <= upper), the figures as PNGs and a table with a row per size and rule.
# 3: experiments/bkl/bkl_experiment3.py --quick must finish both bandwidth rules and write a table with their
#    SHD cells, each within [0, p(p-1)/2].
set -uo pipefail
which="$1" kef="$2" repo="$3" out="$4"
fail() { echo "FAIL: $*" >&2; exit 1; }
py=/usr/bin/python3
rm -rf "$out" && mkdir -p "$out"
is_png() { [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; }
if [ "$which" = 2 ]; then
  "$py" "$repo/experiments/bkl/bkl_experiment2.py" --quick --kef "$kef" --out "$out" > "$out/log.txt" 2>&1 ||
    { cat "$out/log.txt"; fail "bkl_experiment2.py --quick exited with an error"; }
  for f in densities witness-small witness-large witness-small-median witness-large-median profile-small \
           profile-large figure3 figure3-median profiles; do
    is_png "$out/$f.png" || fail "$out/$f.png is not a PNG"
  done
  for tag in small large; do
    for rule in median mode hmc; do
      csv="$out/witness-$tag-$rule.csv"
      [ "$(head -1 "$csv")" = "x,mean,lower,upper,sd" ] || fail "$csv: header"
      [ "$(wc -l < "$csv")" -eq 42 ] || fail "$csv: expected 41 grid rows"
      awk -F, 'NR > 1 && !($3 <= $2 && $2 <= $4 && $5 >= 0) { bad = 1 } END { exit bad }' "$csv" ||
        fail "$csv: a row with mean outside [lower, upper]"
    done
    for text in "median heuristic" "BKL mode" "BKL, integrated (HMC)"; do
      grep -q "^| $tag | [0-9]* | $text | [0-9]* | [0-9.]*" "$out/experiment2-table.md" || fail "experiment2-table.md: no row for $tag, $text"
    done
  done
  cat "$out/log.txt"
else
  "$py" "$repo/experiments/bkl/bkl_experiment3.py" --quick --kef "$kef" --out "$out" > "$out/log.txt" 2>&1 ||
    { cat "$out/log.txt"; fail "bkl_experiment3.py --quick exited with an error"; }
  for rule in median bkl; do
    row=$(grep "^| $rule |" "$out/experiment3-table.md") || fail "experiment3-table.md: no row for $rule"
    finished=$(awk -F'|' '{ print $3 }' <<< "$row" | awk '{ print $1 }')
    refused=$(awk -F'|' '{ print $4 }' <<< "$row" | tr -d ' ')
    [ "$((finished + refused))" -eq 1 ] || fail "$rule: the run neither finished nor was refused: $row"
    if [ "$finished" -eq 1 ]; then
      shd=$(awk -F'|' '{ print $5 }' <<< "$row" | tr -d ' ')
      awk -v s="$shd" 'BEGIN { exit !(s >= 0 && s <= 6) }' || fail "$rule: SHD $shd outside [0, 6]"
    fi
  done
  [ -s "$out/dag0.csv" ] && [ -s "$out/data-g0-r0.csv" ] || fail "the data and the true DAG are not kept in $out"
  cat "$out/log.txt"
fi
echo ok
