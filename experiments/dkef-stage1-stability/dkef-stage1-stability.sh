#!/usr/bin/env bash
# DKEF's stage-1 stability on Figure 1's 1-D mixture 0.3 N(-1, 0.2²) + 0.7 N(1, 1²)
# (experiments/dkef-stage1-stability/configs/stage1_stability.toml: figure1.toml as a new user would run it, the patience of 200
# steps instead of the figure's no-early-stopping, over learning rates, seeds and two training
# schedules:
#   kef        kef's defaults: the validation loss every 10 steps, no gradient clipping;
#   reference  the reference code's: the validation loss after every step (eval_every = 1) and the
#              gradient clipped at global norm 100 (gradient_clip_norm = 100);
#   every      eval_every = 1 alone;  clip  gradient_clip_norm = 100 alone.
# Only DKEF-G-10's stage 1 changes; KEF-G (figure1.toml's settings, learning rate 1e-3, once per seed from
# stage1_stability_kefg.toml) is the comparison.
#
#   experiments/dkef-stage1-stability/dkef-stage1-stability.sh [--out DIR] [--threads N] [--rates R,R,...] [--seeds S,S,...]
#       [--schedules kef,reference,every,clip] [--max-steps N] [--config FILE] [KEF]
#
# --config: another DKEF-G-10 config on the same data instead of stage1_stability.toml, e.g.
# stage1_stability_defaults.toml (the estimator's defaults: M = 300 learned inducing points, λ from
# 10^-2, 10000 steps at most).
#
# Defaults: DIR = runs/dkef-stage1, rates 1e-3,1e-2,3e-2, seeds 12,1,2,3,4, schedules kef,reference,
# max steps 1000. Writes DIR/<schedule>/lr<R>/seed-<S>/ and DIR/kefg/seed-<S>/ (one kef run each;
# existing results are kept, so an interrupted study resumes) and DIR/table.md: per
# schedule and learning rate, mean ± sd over the seeds of DKEF-G-10's and KEF-G's held-out Fisher
# divergence, DKEF-G-10's stage-1 best step and steps run, its largest gradient norm and the steps the
# clip scaled.
set -euo pipefail
die() { echo "dkef-stage1-stability: $*" >&2; exit 1; }
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
kef="$repo/build/bin/kef"
out="runs/dkef-stage1"
threads=()
rates=1e-3,1e-2,3e-2
seeds=12,1,2,3,4
schedules=kef,reference
max_steps=1000
config="$repo/experiments/dkef-stage1-stability/configs/stage1_stability.toml"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift ;;
    --threads) threads=(--threads "$2"); shift ;;
    --rates) rates="$2"; shift ;;
    --seeds) seeds="$2"; shift ;;
    --schedules) schedules="$2"; shift ;;
    --max-steps) max_steps="$2"; shift ;;
    --config) config="$2"; shift ;;
    -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    -*) die "unknown option $1" ;;
    *) kef="$1" ;;
  esac
  shift
done
[ -x "$kef" ] || die "no kef executable at $kef"
mkdir -p "$out"
out=$(cd "$out" && pwd)
m="model.DKEF-G-10.estimator"
IFS=, read -r -a rate_list <<< "$rates"
IFS=, read -r -a seed_list <<< "$seeds"
IFS=, read -r -a schedule_list <<< "$schedules"
# KEF-G, the comparison, once per seed.
for s in "${seed_list[@]}"; do
  dir="$out/kefg/seed-$s"
  [ -s "$dir/results.json" ] && continue
  echo "dkef-stage1-stability: KEF-G seed $s"
  mkdir -p "$out/kefg"
  "$kef" run "$repo/experiments/dkef-stage1-stability/configs/stage1_stability_kefg.toml" --set "seed=$s" "${threads[@]}" \
    --output "$dir" --quiet > "$dir.log" 2>&1 || { tail -n 20 "$dir.log" >&2; die "run $dir failed"; }
done
for sched in "${schedule_list[@]}"; do
  case "$sched" in
    kef) extra=() ;;
    reference) extra=(--set "$m.eval_every=1" --set "$m.gradient_clip_norm=100") ;;
    every) extra=(--set "$m.eval_every=1") ;;
    clip) extra=(--set "$m.gradient_clip_norm=100") ;;
    *) die "unknown schedule $sched (expected kef, reference, every, clip)" ;;
  esac
  for r in "${rate_list[@]}"; do
    for s in "${seed_list[@]}"; do
      dir="$out/$sched/lr$r/seed-$s"
      if [ -s "$dir/results.json" ]; then continue; fi  # resumable
      echo "dkef-stage1-stability: $sched lr $r seed $s"
      mkdir -p "$(dirname "$dir")"
      "$kef" run "$config" --set "seed=$s" --set "$m.learning_rate=$r" \
        --set "$m.max_steps=$max_steps" "${extra[@]}" "${threads[@]}" --output "$dir" --quiet \
        > "$dir.log" 2>&1 || { tail -n 20 "$dir.log" >&2; die "run $dir failed"; }
    done
  done
done
/usr/bin/python3 "$repo/experiments/dkef-stage1-stability/analysis.py" table "$out" "$schedules" "$rates" "$seeds" \
  > "$out/table.md"
cat "$out/table.md"
