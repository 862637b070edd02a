#!/usr/bin/env bash
# Usage: reproduce_dkef_test.sh quick|failure KEF REPO OUT
#   quick:   experiments/dkef-synthetic/reproduce-dkef.sh --quick --seeds 13 must succeed and write a table with every
#            model of the configs as a row and every data set as a column (one bold Fisher divergence
#            per data set), the truth row, both figures as PNGs, one results.json per run and seed,
#            and the spread table: mean ± sd over the two seeds in every cell; the classical and flow
#            baselines' rows on the seven synthetic sets and as clustered mixtures on MoR, and their
#            figures.
#   failure: with a kef that fails, the script must stop with a non-zero status, name the failing run
#            (the first, funnel) and not write a table.
set -uo pipefail
mode="$1" kef="$2" repo="$3" out="$4"
script="$repo/experiments/dkef-synthetic/reproduce-dkef.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }

case "$mode" in
quick)
  bash "$script" --quick --threads 2 --seeds 13 --out "$out" "$kef" || fail "reproduce-dkef.sh --quick exited with $?"
  for run in funnel banana ring square cosine mog mor mor_mixture figure1; do
    [ -s "$out/$run/results.json" ] || fail "no $out/$run/results.json"
    [ -s "$out/seed-13/$run/results.json" ] || fail "no $out/seed-13/$run/results.json"
    grep -q '"seed": 13' "$out/seed-13/$run/results.json" || fail "$out/seed-13/$run did not run with seed 13"
  done
  for run in funnel banana ring square cosine mog mor; do
    for sub in classical made flows; do
      [ -s "$out/$sub/$run/results.json" ] || fail "no $out/$sub/$run/results.json"
      grep -q '"seed": 13' "$out/seed-13/$sub/$run/results.json" || fail "$out/seed-13/$sub/$run did not run with seed 13"
    done
  done
  # Every baseline as a clustered mixture on MoR (their rows join the "MoR, 3 clusters" column).
  for d in "$out" "$out/seed-13"; do
    [ -s "$d/mixture_baselines/mor_mixture/results.json" ] || fail "no $d/mixture_baselines/mor_mixture/results.json"
  done
  # --quick stops every flow after 2 epochs.
  grep -q '"best_epoch"' "$out/flows/ring/results.json" || fail "no flow fit in $out/flows/ring/results.json"
  /usr/bin/python3 - "$out/flows/ring/results.json" "$out/made/ring/results.json" <<'PY' ||
import json, sys
for path in sys.argv[1:]:
    r = json.load(open(path))
    assert all(m["fit"]["iterations"] <= 2 for m in r["models"].values()), path
PY
    fail "a flow trained more than 2 epochs in --quick"
  spread="$out/table-seeds.md"
  [ -s "$spread" ] || fail "no $spread"
  grep -q 'over 2 seeds (12, 13)' "$spread" || fail "$spread does not name its seeds"
  for row in KEF-G DKEF-G-15 DKEF-G-50 DKEF-L-50 DKEF-L-50-1 DKEF-G-10 Gaussian GMM KDE MADE MADE-MoG RealNVP \
    MAF MAF-MoG truth; do
    grep -q "^| $row |" "$spread" || fail "row $row missing from $spread"
  done
  # Every model cell holds three spreads (score-matching loss / Fisher divergence / log-likelihood):
  # KEF-G has nine cells, a baseline the seven synthetic sets and the clustered mixture on MoR.
  cells=$(grep '^| KEF-G |' "$spread" | grep -o ' ± ' | wc -l)
  [ "$cells" -ge 27 ] || fail "expected mean ± sd in every KEF-G cell of $spread, found $cells spreads"
  cells=$(grep '^| MAF-MoG |' "$spread" | grep -o ' ± ' | wc -l)
  [ "$cells" -ge 24 ] || fail "expected mean ± sd in every MAF-MoG cell of $spread, found $cells spreads"
  grep -q 'n/a' "$spread" && fail "a metric is missing (n/a) in $spread"
  for png in figure2.png figure2-baselines.png figure2-mixture-baselines.png figure1.png; do
    [ "$(head -c 8 "$out/$png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$out/$png is not a PNG"
  done
  table="$out/table.md"
  [ -s "$table" ] || fail "no $table"
  header=$(grep -m1 '^| model |' "$table") || fail "no header row in $table"
  for col in Funnel Banana Ring Square Cosine MoG MoR "MoR, 3 clusters"; do
    grep -q "| $col |" <<< "$header" || fail "column $col missing: $header"
  done
  for row in KEF-G DKEF-G-15 DKEF-G-50 DKEF-L-50 DKEF-L-50-1 Gaussian GMM KDE MADE MADE-MoG RealNVP MAF MAF-MoG \
    truth; do
    grep -q "^| $row |" "$table" || fail "row $row missing from $table"
  done
  grep -q '^| DKEF-G-10 |' "$table" || fail "Figure 1's DKEF row missing from $table"
  # The first table: exactly one bold cell per data set column (ties aside, which random fits do not
  # produce), i.e. eight bold Fisher divergences.
  bold=$(sed -n '/^| model | Funnel/,/^$/p' "$table" | grep -o '\*\*[^*]*\*\*' | wc -l)
  [ "$bold" -eq 8 ] || fail "expected 8 bold Fisher divergences in the synthetic table, found $bold"
  grep -q 'n/a' "$table" && fail "a metric is missing (n/a) in $table"
  echo "ok: $table"
  ;;
failure)
  rm -rf "$out"
  msg=$(bash "$script" --quick --out "$out" /bin/false 2>&1)
  status=$?
  [ "$status" -ne 0 ] || fail "the script succeeded with a failing kef"
  grep -q 'run funnel failed' <<< "$msg" || fail "the message does not name the failing run: $msg"
  [ ! -e "$out/table.md" ] || fail "a table was written although a run failed"
  echo "ok: $msg"
  ;;
*) fail "unknown mode $mode" ;;
esac
