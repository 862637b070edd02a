#!/usr/bin/env bash
# Usage: reproduce_dkef_real_test.sh quick|failure KEF REPO OUT
#   quick:   experiments/dkef-real/reproduce-dkef-real.sh --quick --seeds 5 must succeed and write one results.json
#            per data set (run with seed 5), summary.csv with a row per data set and model, a table with
#            every model of the configs as a row of each data set's section and a number in every
#            metric cell (DKEF's own relative-FSSD p-value excepted), the figure's CSV with the 12
#            panels (3 data sets x 4 metrics) and a PNG, fits.csv with a row per data set and model;
#            analysis.py retabulate must rebuild the table and the figure's CSV from summary.csv alone;
#            then --collect must rebuild them without running.
#   failure: with a kef that fails, the script must stop with a non-zero status, name the failing run
#            (the first, redwine/seed-0) and not write a table.
set -uo pipefail
mode="$1" kef="$2" repo="$3" out="$4"
script="$repo/experiments/dkef-real/reproduce-dkef-real.sh"
fail() { echo "FAIL: $*" >&2; exit 1; }
models=(DKEF KEF MADE MADE-MoG MAF MAF-MoG RealNVP Gaussian GMM KDE)

case "$mode" in
quick)
  rm -rf "$out"
  bash "$script" --quick --threads 2 --seeds 5 --out "$out" "$kef" || fail "reproduce-dkef-real.sh --quick exited with $?"
  for ds in redwine whitewine parkinsons; do
    r="$out/$ds/seed-5/results.json"
    [ -s "$r" ] || fail "no $r"
    grep -q '"seed": 5' "$r" || fail "$r did not run with seed 5"
  done
  summary="$out/summary.csv"
  [ "$(($(wc -l < "$summary") - 1))" -eq 30 ] || fail "expected 30 rows (3 data sets x 10 models) in $summary"
  table="$out/table.md"
  [ -s "$table" ] || fail "no $table"
  for section in RedWine WhiteWine Parkinsons; do
    sed -n "/^## $section /,/^## \|^Mean/p" "$table" > "$out/section.md"
    [ -s "$out/section.md" ] || fail "no section $section in $table"
    for m in "${models[@]}"; do
      line=$(grep "^| $m |" "$out/section.md") || fail "row $m missing from $section in $table"
      # Five cells after the model: four metrics and the reliability count; only DKEF's p-value is empty.
      empty=$(awk -F'|' '{n = 0; for (i = 3; i <= 7; i++) if ($i ~ /^ *— *$/) n++; print n}' <<< "$line")
      want=0
      [ "$m" != DKEF ] || want=1
      [ "$empty" -eq "$want" ] || fail "$section, $m: $empty empty cells (expected $want): $line"
    done
  done
  panels=$(tail -n +2 "$out/figure3.csv" | cut -d, -f1 | sort -u | wc -l)
  [ "$panels" -eq 12 ] || fail "expected 12 panels in $out/figure3.csv, found $panels"
  [ "$(head -c 8 "$out/figure3.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$out/figure3.png is not a PNG"
  fits="$out/fits.csv"
  [ "$(($(wc -l < "$fits") - 1))" -eq 30 ] || fail "expected 30 rows (3 data sets x 10 models) in $fits"
  # DKEF's and KEF's rows carry the normaliser's AIS check; a flow's row its best epoch.
  [ "$(awk -F, '($3 == "DKEF" || $3 == "KEF") && $12 != "" && $13 != ""' "$fits" | wc -l)" -eq 6 ] ||
    fail "DKEF's and KEF's rows in $fits lack the AIS check"
  [ "$(awk -F, '$3 == "MAF" && $7 != ""' "$fits" | wc -l)" -eq 3 ] || fail "MAF's rows in $fits lack the best epoch"
  # The kept results (summary.csv and timings.tsv without the runs) rebuild the same table and figure CSV.
  mkdir -p "$out/kept"
  cp "$summary" "$out/timings.tsv" "$out/kept/"
  /usr/bin/python3 "$repo/experiments/dkef-real/analysis.py" retabulate "$out/kept" --quick > "$out/kept/table.md" ||
    fail "analysis.py retabulate exited with $?"
  cmp -s "$out/kept/table.md" "$table" || fail "retabulate from summary.csv wrote a different table: $out/kept/table.md"
  cmp -s "$out/kept/figure3.csv" "$out/figure3.csv" || fail "retabulate from summary.csv wrote a different figure3.csv"
  cp "$table" "$out/table-first.md"
  bash "$script" --quick --collect --seeds 5 --out "$out" "$kef" || fail "--collect exited with $?"
  diff -q "$table" "$out/table-first.md" > /dev/null || fail "--collect wrote a different table"
  [ -s "$out/figure3.png" ] || fail "--collect wrote no figure"
  echo "ok: $table"
  ;;
failure)
  rm -rf "$out"
  msg=$(bash "$script" --quick --seeds 0 --out "$out" /bin/false 2>&1)
  status=$?
  [ "$status" -ne 0 ] || fail "the script succeeded with a failing kef"
  grep -q 'run redwine/seed-0 failed' <<< "$msg" || fail "the message does not name the failing run: $msg"
  [ ! -e "$out/table.md" ] || fail "a table was written although a run failed"
  echo "ok: $msg"
  ;;
*) fail "unknown mode $mode" ;;
esac
