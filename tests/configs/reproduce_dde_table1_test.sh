#!/usr/bin/env bash
# Usage: reproduce_dde_table1_test.sh KEF REPO OUT
# experiments/dde-table1/reproduce-dde-table1.sh --quick must succeed and write, for each data set, a results.json
# with the MMD of both models (DDE's marked as measuring its approximate sampler), the timed draws,
# HMC's min ESS (and none for DDE's sampler network), and a table with a mean ± sd row per data set
# beside the paper's numbers, and (--figure) the figure of the draws over the test rows; the
# reference-kernel MMD² of every cell, equal to a direct NumPy computation with the DDE model's γ;
# --resample redoes the same draws without fitting; --remeasure regenerates a run's missing test rows
# (the same rows) and measures them again (the same value); --select reaches the DDE fit and the table;
# --f-bd fits DDE with another bandwidth and measures it with the reference's; --models dde runs DDE
# alone. A bad option exits 2.
set -uo pipefail
kef="$1" repo="$2" out="$3"
fail() { echo "FAIL: $*" >&2; exit 1; }
# γ of a seed directory's saved DDE model (its f's kernel exp(−γ‖x − y‖²)).
model_gamma() { sed -n 's/^gamma = //p' "$1/dde/models/dde/model.toml"; }
# direct_mmd SAMPLES TEST GAMMA GOT: MMD²_u of the two .npy files with exp(−γ‖x − y‖²), computed directly
# in NumPy, against the value in the file GOT.
direct_mmd() {
  /usr/bin/python3 - "$@" <<'PY'
import sys
import numpy as np
X, Y, gamma = np.load(sys.argv[1]), np.load(sys.argv[2]), float(sys.argv[3])
k = lambda A, B: np.exp(-gamma * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
n, p = len(X), len(Y)
kxx, kyy = k(X, X), k(Y, Y)
direct = ((kxx.sum() - np.trace(kxx)) / (n * (n - 1)) + (kyy.sum() - np.trace(kyy)) / (p * (p - 1))
          - 2 * k(X, Y).mean())
got = float(open(sys.argv[4]).read())
if not abs(got - direct) <= 1e-10 * max(1.0, abs(direct)):
    sys.exit(f"{sys.argv[4]}: kef {got!r}, direct {direct!r}")
PY
}
script="$repo/experiments/dde-table1/reproduce-dde-table1.sh"
bash "$script" --quick --figure --threads 2 --out "$out" "$kef" || fail "reproduce-dde-table1.sh --quick exited with $?"
[ -s "$out/figure.png" ] || fail "no $out/figure.png"
[ -s "$out/rings/seed1/kef/data/test.npy" ] || fail "no test rows for the figure"
for d in two_moons rings grid; do
  for s in 1 2; do
    for m in dde kef; do
      [ -s "$out/$d/seed$s/$m/results.json" ] || fail "no $out/$d/seed$s/$m/results.json"
      [ -s "$out/$d/seed$s/$m.sample_seconds" ] || fail "no $out/$d/seed$s/$m.sample_seconds"
    done
    grep -q '"sampler_approximate"' "$out/$d/seed$s/dde/results.json" || fail "DDE's MMD is not marked approximate ($d seed $s)"
    grep -Eq '^[0-9.e+-]+$' "$out/$d/seed$s/kef.min_ess" || fail "no HMC min ESS in $out/$d/seed$s/kef.min_ess"
    [ ! -e "$out/$d/seed$s/dde.min_ess" ] || fail "an ESS for DDE's sampler network ($d seed $s)"
    for m in dde kef; do
      grep -Eq '^-?[0-9.e+-]+$' "$out/$d/seed$s/$m.mmd_median" || fail "no median-σ MMD² in $out/$d/seed$s/$m.mmd_median"
      # The brute-force twin of the reference-kernel column: MMD²_u with the DDE model's γ in NumPy.
      direct_mmd "$out/$d/seed$s/$m.samples.npy" "$out/$d/seed$s/$m/data/test.npy" \
        "$(model_gamma "$out/$d/seed$s")" "$out/$d/seed$s/$m.mmd_ref" || fail "reference-kernel MMD² of $d seed $s $m"
    done
  done
done
table="$out/table.md"
[ -s "$table" ] || fail "no $table"
for d in two_moons rings grid; do
  row=$(grep "^| $d |" "$table") || fail "row $d missing from $table"
  [ "$(grep -o ' ± ' <<< "$row" | wc -l)" -ge 6 ] || fail "row $d lacks mean ± sd cells: $row"
done
# --resample: the same seeds give the same draws, and nothing is refitted.
cp "$out/grid/seed1/kef.samples.npy" "$out-first.npy"
fitted=$(stat -c %Y "$out/grid/seed1/kef/results.json")
bash "$script" --quick --resample --datasets grid --seeds 1 --out "$out" "$kef" || fail "--resample exited with $?"
cmp -s "$out/grid/seed1/kef.samples.npy" "$out-first.npy" || fail "--resample drew other samples"
[ "$(stat -c %Y "$out/grid/seed1/kef/results.json")" = "$fitted" ] || fail "--resample refitted the model"
# --remeasure on a run without its splits (as runs made before save_splits): the data-only rerun gives
# the same test rows, so the same value.
cp "$out/rings/seed2/dde/data/test.npy" "$out-test.npy"
cp "$out/rings/seed2/dde.mmd_ref" "$out-ref"
rm -r "$out/rings/seed2/dde/data" "$out/rings/seed2/dde.mmd_ref"
bash "$script" --quick --remeasure --datasets rings --seeds 2 --out "$out" "$kef" || fail "--remeasure exited with $?"
cmp -s "$out/rings/seed2/dde.splits/data/test.npy" "$out-test.npy" || fail "--remeasure regenerated other test rows"
cmp -s "$out/rings/seed2/dde.mmd_ref" "$out-ref" || fail "--remeasure measured another value"
# --select: DDE keeps its iterate by the sampler's MMD² to the training rows (quick: only the last, 30, is
# compared, every 100 epochs being 1000 iterations), says so in results.json, and the table says so.
bash "$script" --quick --select --datasets two_moons --seeds 1 --out "$out-select" "$kef" || fail "--select exited with $?"
grep -Eq '"selected_iteration": 30(\.0)?[,}[:space:]]' "$out-select/two_moons/seed1/dde/results.json" ||
  fail "--select: no selected_iteration in the DDE run's results.json"
grep -q 'select = \\"mmd\\"\|select = "mmd"' "$out-select/table.md" || fail "--select: the table does not say the iterate was selected"
# --f-bd 0.05 --models dde: DDE alone, fitted with σ² = 0.05 m² (γ twice the default run's, the same data),
# and measured with the reference's kernel, f_bd = 0.1 (the default run's γ, checked against NumPy).
bash "$script" --quick --models dde --f-bd 0.05 --datasets two_moons --out "$out-fbd" "$kef" ||
  fail "--f-bd exited with $?"
[ ! -e "$out-fbd/two_moons/seed1/kef" ] || fail "--models dde ran the KEF cell"
grep -q "f_bd = 0.05" "$out-fbd/table.md" || fail "--f-bd: the table does not say the bandwidth factor"
fitted=$(model_gamma "$out-fbd/two_moons/seed1") reference=$(model_gamma "$out/two_moons/seed1")
awk -v f="$fitted" -v r="$reference" 'BEGIN{d = f - 2 * r; exit !((d < 0 ? -d : d) <= 1e-12 * r)}' ||
  fail "--f-bd: fitted γ $fitted is not twice the default run's $reference"
direct_mmd "$out-fbd/two_moons/seed1/dde.samples.npy" "$out-fbd/two_moons/seed1/dde/data/test.npy" \
  "$reference" "$out-fbd/two_moons/seed1/dde.mmd_ref" || fail "--f-bd: reference-kernel MMD²"
bash "$script" --f-bd 0 --out "$out-bad" "$kef" 2> "$out-bad.err"
[ $? -eq 2 ] || fail "--f-bd 0 did not exit 2"
grep -q "'0' is not a positive number" "$out-bad.err" || fail "the --f-bd error does not name the value: $(cat "$out-bad.err")"
bash "$script" --seeds 1,x --out "$out-bad" "$kef" 2> "$out-bad.err"
[ $? -eq 2 ] || fail "a bad --seeds did not exit 2"
grep -q "'x' is not a seed" "$out-bad.err" || fail "the --seeds error does not name the value: $(cat "$out-bad.err")"
echo "ok: $table"
