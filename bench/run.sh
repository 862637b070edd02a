#!/usr/bin/env bash
# Runs kef's benchmarks against their baselines in the same run and prints the ratios.
#   bash bench/run.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
anchors="$root/../shared/anchors"
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
val() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "== DGEMM peak: the faster of OpenBLAS and Eigen, one 1024^3 product per thread (ratios below are against it)"
"$build/bin/bench_lite" gemm | tee "$work/gemm.txt"
gemm=$(val gemm_gflops "$work/gemm.txt")
# OpenBLAS 0.3.21 falls back to its Prescott (SSE3) kernels on x86 models it does not recognise; kef then
# computes its products with Eigen (kef/linalg.hpp) while NumPy keeps the slow kernels. Where that happens,
# the NumPy anchors also run with OPENBLAS_CORETYPE set to the kernels the CPU supports, and both ratios
# are printed: against NumPy as installed, and against NumPy with OpenBLAS fixed.
fixed_core=""
if grep -q "products: Eigen (OpenBLAS chose" "$work/gemm.txt"; then
  if grep -qw avx512f /proc/cpuinfo && grep -qw avx512bw /proc/cpuinfo; then fixed_core=SkylakeX; else fixed_core=Haswell; fi
  echo "OpenBLAS fell back to generic kernels on this CPU; NumPy anchors are also timed with OPENBLAS_CORETYPE=$fixed_core"
fi

N=20000 D=10 M=300
echo "== lite fit N=$N D=$D M=$M (kef, best of 3)"
"$build/bin/bench_lite" fit $N $D $M "$work" | tee "$work/kef.txt"
kef_s=$(val fit_seconds "$work/kef.txt")
flops=$(val syrk_flops "$work/kef.txt")

if [ -f "$anchors/lite_numpy.py" ] && $py -c "import numpy" 2>/dev/null; then
  echo "== NumPy anchor (OpenBLAS), same inputs: sigma 2, std 3, lambda_alpha 1e-3, lambda_C 1e-3"
  best=""
  for rep in 1 2 3; do
    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      $py "$anchors/lite_numpy.py" "$work/train.npy" "$work/inducing.npy" 2.0 3.0 1e-3 1e-3 > "$work/np.txt"
    s=$(val fit_seconds "$work/np.txt")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; fi
  done
  echo "numpy_fit_seconds $best"
  awk -v a="$best" -v b="$kef_s" 'BEGIN{printf "ratio numpy/kef = %.2fx (target >= 6x)\n", a/b}'
  if [ -n "$fixed_core" ]; then
    OPENBLAS_CORETYPE=$fixed_core LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      $py "$anchors/lite_numpy.py" "$work/train.npy" "$work/inducing.npy" 2.0 3.0 1e-3 1e-3 > "$work/np_fixed.txt"
    awk -v a="$(val fit_seconds "$work/np_fixed.txt")" -v b="$kef_s" -v c="$fixed_core" \
      'BEGIN{printf "numpy with OPENBLAS_CORETYPE=%s: %.3f s; ratio numpy/kef = %.2fx\n", c, a, a/b}'
  fi
else
  echo "NumPy anchor not available (needs /usr/bin/python3 with numpy and ../shared/anchors)"
fi
awk -v f="$flops" -v g="$gemm" -v t="$kef_s" \
  'BEGIN{ideal=f/(g*1e9); printf "ideal at DGEMM rate = %.4f s; kef / ideal = %.2f (target <= 1.5)\n", ideal, t/ideal}'

echo "== peak memory N=200000 D=10 M=300"
"$build/bin/bench_lite" memory 200000 10 300 | tee "$work/mem.txt"
awk -v d="$(val data_mb "$work/mem.txt")" -v p="$(val peak_rss_mb "$work/mem.txt")" \
  'BEGIN{printf "peak RSS - data = %.1f MB (target <= 200 MB)\n", p-d}'

echo "== log_likelihood: importance sampling for a lite model, U=2000000 D=11 M=300 (best of 3)"
"$build/bin/bench_likelihood" 2000000 11 300 | tee "$work/ll.txt"
awk -v k="$(val kernel_gflops "$work/ll.txt")" -v m="$(val model_gflops "$work/ll.txt")" \
    -v g="$(val gemm_gflops "$work/ll.txt")" -v r="$(val proposals_per_second "$work/ll.txt")" \
  'BEGIN{printf "log_likelihood: %.3g proposals/s; K(Y,Z) flops at %.1f%% of DGEMM (model alone %.1f%%)\n", r, 100*k/g, 100*m/g}'

echo "== log_likelihood: importance sampling for a lite model with DKEF's deep kernel, R=3 W=30 L=3 M=300 D=11, U=1000000 (best of 3)"
"$build/bin/bench_likelihood" 1000000 11 300 deep | tee "$work/lld.txt"
awk -v k="$(val kernel_gflops "$work/lld.txt")" -v g="$(val gemm_gflops "$work/lld.txt")" \
    -v r="$(val proposals_per_second "$work/lld.txt")" -v s="$(val seconds_per_1e9 "$work/lld.txt")" \
  'BEGIN{printf "deep log_likelihood: %.3g proposals/s, 10^9 proposals in %.1f min (target <= 20 min); %.1f GFLOP/s = %.1f%% of DGEMM\n", r, s/60, k, 100*k/g}'

echo "== the same with DKEF's own q0, a generalised normal (beta = 1.5: gamma variates per coordinate)"
"$build/bin/bench_likelihood" 1000000 11 300 deep generalized_normal | tee "$work/lldg.txt"
awk -v r="$(val proposals_per_second "$work/lldg.txt")" -v s="$(val seconds_per_1e9 "$work/lldg.txt")" \
    -v q="$(val sample_per_second "$work/lldg.txt")" \
  'BEGIN{printf "deep log_likelihood, generalised normal q0: %.3g proposals/s, 10^9 proposals in %.1f min; q0 alone %.3g draws/s\n", r, s/60, q}'

echo "== DKEF stage-1 step, R=3 W=30 L=3 M=300 batches 100/100 D=11, learned q0, 2 threads (kef best of 3 runs of the median of 30 steps; PyTorch anchor median of 30 steps)"
best=""
for rep in 1 2 3; do
  "$build/bin/bench_dkef" --threads 2 > "$work/dkef.txt"
  s=$(val seconds_per_step "$work/dkef.txt")
  if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; cp "$work/dkef.txt" "$work/dkef_best.txt"; fi
done
cat "$work/dkef_best.txt"
if [ -f "$anchors/dkef_torch.py" ] && $py -c "import torch" 2>/dev/null; then
  $py "$anchors/dkef_torch.py" --threads 2 | tee "$work/torch.txt"
  awk -v a="$(val seconds_per_step "$work/torch.txt")" -v b="$best" \
    'BEGIN{printf "dkef step: ratio pytorch/kef = %.1fx (target >= 10x)\n", a/b}'
else
  echo "PyTorch anchor not available (needs /usr/bin/python3 with torch: bash scripts/install-deps.sh --bench)"
fi

echo "== Stein tests (plugin stein) N=10000 D=10: FSSD (J=10 and J=100, 2000 null draws), KSD (Gaussian, 1000 bootstrap draws)"
if $py -c "import numpy" 2>/dev/null; then
  blas_py() { LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} $py "$@"; }
  for J in 10 100; do
    boot=-1; [ "$J" = 100 ] && boot=1000
    # OPENBLAS_NUM_THREADS=1 makes kef's OpenBLAS policy (one thread; kef/parallel.cpp sets it when libkef
    # loads) hold from the start: otherwise the pthreads OpenBLAS has already started an idle worker that
    # spins for ~0.1 s and takes the second core from kef's threads (FSSD J = 10: 24 ms instead of 2.4).
    OPENBLAS_NUM_THREADS=1 "$build/bin/bench_stein" 10000 10 $J "$work/stein$J" 2000 $boot | tee "$work/stein$J.txt"
    blas_py "$here/stein_numpy.py" "$work/stein$J/X.npy" "$work/stein$J/V.npy" 4.0 0.1 2000 $boot | tee "$work/stein_np$J.txt"
    awk -v a="$(val numpy_fssd_seconds "$work/stein_np$J.txt")" -v b="$(val fssd_seconds "$work/stein$J.txt")" -v j=$J \
      'BEGIN{printf "fssd J=%d: ratio numpy/kef = %.2fx (target >= 10x)\n", j, a/b}'
  done
  for t in ksd_stat ksd_test; do
    awk -v a="$(val numpy_${t}_seconds "$work/stein_np100.txt")" -v b="$(val ${t}_seconds "$work/stein100.txt")" -v t=$t \
      'BEGIN{printf "%s: ratio numpy/kef = %.2fx (target >= 10x)\n", t, a/b}'
  done
  # Lower bounds at the machine's DGEMM peak (the faster of OpenBLAS and Eigen, both measured above).
  peak=$(awk -v a="$gemm" -v b="$(val eigen_gemm_gflops "$work/stein100.txt")" 'BEGIN{print (a > b ? a : b)}')
  awk -v f="$(val fssd_cov_flops "$work/stein100.txt")" -v p="$peak" -v n="$(val numpy_fssd_seconds "$work/stein_np100.txt")" \
      -v k="$(val fssd_seconds "$work/stein100.txt")" \
    'BEGIN{printf "fssd J=100: covariance alone %.3g flops at the DGEMM peak %.0f GFLOP/s = %.3f s (kef %.3f s); 10x NumPy needs %.3f s\n", f, p, f/(p*1e9), k, n/10}'
  awk -v f="$(val ksd_bootstrap_flops "$work/stein100.txt")" -v p="$peak" -v n="$(val numpy_ksd_test_seconds "$work/stein_np100.txt")" \
      -v k="$(val ksd_test_seconds "$work/stein100.txt")" \
    'BEGIN{printf "ksd_test: bootstrap alone %.3g flops at the DGEMM peak %.0f GFLOP/s = %.3f s (kef %.3f s); 10x NumPy needs %.3f s\n", f, p, f/(p*1e9), k, n/10}'
else
  echo "NumPy not available (needs /usr/bin/python3 with numpy)"
fi

echo "== Kernel tests (kef/mmd_test.hpp, kef/hsic_test.hpp): n=2000 per sample D=2, 1000 permutations, Gamma approximation"
OPENBLAS_NUM_THREADS=1 "$build/bin/bench_kernel_tests" 2000 2 1000 "$work/kt" 3 | tee "$work/kt.txt"
if $py -c "import numpy, scipy" 2>/dev/null; then
  LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
    $py "$here/kernel_tests_numpy.py" "$work/kt/X.npy" "$work/kt/Y.npy" "$(val sigma "$work/kt.txt")" 1000 1 |
    tee "$work/kt_np.txt"
  for t in mmd hsic; do
    awk -v a="$(val numpy_${t}_seconds "$work/kt_np.txt")" -v b="$(val ${t}_seconds "$work/kt.txt")" -v t=$t \
      'BEGIN{printf "%s permutation test: ratio numpy/kef = %.2fx (target >= 10x)\n", t, a/b}'
  done
  # MMD: the null is one product K·A, which NumPy also does in OpenBLAS; the bound is that product at the
  # machine's DGEMM peak.
  awk -v f="$(val mmd_product_flops "$work/kt.txt")" -v g="$(val gemm_gflops "$work/kt.txt")" \
      -v k="$(val mmd_seconds "$work/kt.txt")" \
    'BEGIN{ideal=f/(g*1e9); printf "mmd: K·A %.3g flops at the DGEMM peak %.0f GFLOP/s = %.3f s; kef %.3f s = %.2fx of it (target <= 1.5)\n", f, g, ideal, k, k/ideal}'
else
  echo "NumPy/SciPy not available (needs /usr/bin/python3 with numpy and scipy)"
fi

echo "== Aggregated tests (kef/aggregated_test.hpp): MMDAgg, n = m = 500, d = 10, Laplace + Gaussian x 10 bandwidths, B1 = B2 = 2000, B3 = 50, wild bootstrap (best of 3)"
OPENBLAS_NUM_THREADS=1 "$build/bin/bench_aggregated_tests" "$work/agg" 500 10 2000 3 | tee "$work/agg.txt"
awk -v s="$(val products_seconds "$work/agg.txt")" -v f="$(val product_flops "$work/agg.txt")" \
    -v r="$(val products_gflops "$work/agg.txt")" -v q="$(val gemm_products_gflops "$work/agg.txt")" \
    -v g="$(val gemm_gflops "$work/agg.txt")" -v m="$(val mmdagg_seconds "$work/agg.txt")" \
  'BEGIN{printf "mmdagg: the 20 quadratic forms over 4001 draws take %.3f s of the library call (%.3f s); H·W would be %.3g flops, %.3f s at the DGEMM rate %.0f GFLOP/s; kef at %.1f GFLOP/s-equivalent = %.2fx DGEMM (pattern tables); as H·W itself %.1f GFLOP/s = %.2fx DGEMM\n", s, m, f, f/(g*1e9), g, r, r/g, q, q/g}'
# The reference (antoninschrab/mmdagg, never part of kef): a checkout named by KEF_MMDAGG_REFERENCE.
ref="${KEF_MMDAGG_REFERENCE:-}"
if [ -n "$ref" ] && [ -f "$ref/mmdagg/np.py" ] && $py -c "import numpy, scipy" 2>/dev/null; then
  $py "$here/aggregated_tests_bench.py" "$build/bin/kef" "$ref" 3 | tee "$work/agg_ref.txt"
  awk -v a="$(val reference_seconds "$work/agg_ref.txt")" -v b="$(val kef_seconds "$work/agg_ref.txt")" \
      -v c="$(val reference_cpu_seconds "$work/agg_ref.txt")" -v d="$(val kef_cpu_seconds "$work/agg_ref.txt")" \
    'BEGIN{printf "mmdagg (kef test two-sample --aggregate, whole command): reference/kef = %.2fx (target >= 10x); CPU seconds %.2fx\n", a/b, c/d}'
else
  echo "MMDAgg reference anchor not available (set KEF_MMDAGG_REFERENCE to a checkout of antoninschrab/mmdagg holding mmdagg/np.py; needs /usr/bin/python3 with numpy and scipy)"
fi

echo "== Bayesian kernel learning (docs/math.md §9): marginal pseudolikelihood n=10000 D=5 m=100, value and value+gradient (medians of 20 calls), then the tau^2 = 1 mode"
OPENBLAS_NUM_THREADS=1 "$build/bin/bench_bkl" 10000 5 100 "$work/bkl" --threads 2 --evals 20 | tee "$work/bkl.txt"
if [ -f "$anchors/bkl_numpy.py" ] && $py -c "import numpy, scipy" 2>/dev/null; then
  # The anchor on the same rows and landmarks (its BLAS at 2 threads, as kef).
  OPENBLAS_NUM_THREADS=2 $py "$anchors/bkl_numpy.py" --data "$work/bkl/X.npy" --landmarks "$work/bkl/Z.npy" \
    --evals 20 --tau2 1.0 | tee "$work/bkl_np.txt"
  for t in seconds_per_eval seconds_per_eval_grad; do
    awk -v a="$(val $t "$work/bkl_np.txt")" -v b="$(val $t "$work/bkl.txt")" -v t=$t \
      'BEGIN{printf "bkl %s: ratio numpy/kef = %.1fx (target >= 10x)\n", t, a/b}'
  done
  echo "bkl tau^2 = 1 optimum: kef $(val fixed_tau2_opt_lengthscale "$work/bkl.txt"), anchor $(val fixed_tau2_opt_lengthscale "$work/bkl_np.txt")"
else
  echo "NumPy anchor not available (needs /usr/bin/python3 with numpy and scipy, and ../shared/anchors/bkl_numpy.py)"
fi

N=10000 D=5 m=200
echo "== Nyström fit N=$N D=$D m=$m (orders [1]: M = m·D = $((m * D))), sigma 2, std 3, lambda 1e-3 (kef, best of 3)"
"$build/bin/bench_nystrom" fit $N $D $m "$work/ny" | tee "$work/ny.txt"
ny_s=$(val fit_seconds "$work/ny.txt")
if [ -f "$anchors/nystrom_numpy.py" ] && $py -c "import scipy" 2>/dev/null; then
  best=""
  for rep in 1 2 3; do
    LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      $py "$anchors/nystrom_numpy.py" "$work/ny/train.npy" --basis-idx "$work/ny/idx.npy" --sigma 2 --std 3 \
      --lam 1e-3 > "$work/ny_np.txt"
    s=$(val fit_seconds "$work/ny_np.txt")
    if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; fi
  done
  echo "numpy_fit_seconds $best"
  awk -v a="$best" -v b="$ny_s" 'BEGIN{printf "nystrom: ratio numpy/kef = %.2fx (target >= 10x)\n", a/b}'
  if [ -n "$fixed_core" ]; then
    OPENBLAS_CORETYPE=$fixed_core LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
      $py "$anchors/nystrom_numpy.py" "$work/ny/train.npy" --basis-idx "$work/ny/idx.npy" --sigma 2 --std 3 \
      --lam 1e-3 > "$work/ny_np_fixed.txt"
    awk -v a="$(val fit_seconds "$work/ny_np_fixed.txt")" -v b="$ny_s" -v c="$fixed_core" \
      'BEGIN{printf "nystrom: numpy with OPENBLAS_CORETYPE=%s: %.3f s; ratio numpy/kef = %.2fx\n", c, a, a/b}'
  fi
  # 10x needs kef below a tenth of NumPy's time; the (n·D) x M rank-k update alone at the DGEMM peak is a
  # floor no implementation of this basis passes.
  awk -v a="$best" -v s="$(val syrk_flops "$work/ny.txt")" -v g="$gemm" \
    'BEGIN{printf "nystrom: 10x NumPy needs %.3f s; the rank-k update alone at the DGEMM peak takes %.3f s\n", a/10, s/(g*1e9)}'
else
  echo "Nyström anchor not available (needs /usr/bin/python3 with numpy and scipy, and ../shared/anchors)"
fi
awk -v f="$(val bound_flops "$work/ny.txt")" -v s="$(val syrk_flops "$work/ny.txt")" -v g="$gemm" -v t="$ny_s" \
  'BEGIN{printf "nystrom: n·M² multiply-adds at DGEMM rate = %.4f s, kef / that bound = %.2f; the (n·D) x M syrk kef does = %.4f s, kef / it = %.2f\n", f/(g*1e9), t/(f/(g*1e9)), s/(g*1e9), t/(s/(g*1e9))}'
echo "== Nyström peak memory N=1000000 D=5 m=100"
"$build/bin/bench_nystrom" memory 1000000 5 100 | tee "$work/nymem.txt"
awk -v d="$(val data_mb "$work/nymem.txt")" -v p="$(val peak_rss_mb "$work/nymem.txt")" \
  'BEGIN{printf "nystrom peak RSS - data = %.1f MB\n", p-d}'

echo "== Nyström fit scaling, D=5 (kef best of 3): time against n at m=100, and against m at n=10000; exponents by least squares on log-log"
scale_dir="${KEF_BENCH_OUT:-$work}/nystrom-scaling"
mkdir -p "$scale_dir"
echo "x,y" > "$scale_dir/time_vs_n.csv"
for n in 1250 2500 5000 10000 20000 40000; do
  "$build/bin/bench_nystrom" fit $n 5 100 "$work/nys" > "$work/nys.txt"
  echo "$n,$(val fit_seconds "$work/nys.txt")" | tee -a "$scale_dir/time_vs_n.csv"
done
echo "x,y" > "$scale_dir/time_vs_m.csv"
for m in 25 50 100 200 400; do
  "$build/bin/bench_nystrom" fit 10000 5 $m "$work/nys" > "$work/nys.txt"
  echo "$m,$(val fit_seconds "$work/nys.txt")" | tee -a "$scale_dir/time_vs_m.csv"
done
slope() {  # least-squares slope of log y on log x over the rows of a CSV x,y whose x >= $2
  awk -F, -v lo="$2" 'NR > 1 && $1 >= lo { x = log($1); y = log($2); n++; sx += x; sy += y; sxx += x*x; sxy += x*y }
    END { printf "%.2f", (n*sxy - sx*sy) / (n*sxx - sx*sx) }' "$1"
}
echo "nystrom time ~ n^$(slope "$scale_dir/time_vs_n.csv" 0) (theory: 1, the n·D x M rank-k update and the n·m·D² kernel derivatives)"
echo "nystrom time ~ m^$(slope "$scale_dir/time_vs_m.csv" 0) over m = 25..400, m^$(slope "$scale_dir/time_vs_m.csv" 100) over m = 100..400 (theory: 2 while n·D·M² dominates, 3 once the M³ solve does, M = m·D)"
"$build/bin/kef" lineplot "n (m = 100)=$scale_dir/time_vs_n.csv" --out "$scale_dir/time_vs_n.png" --log-x --log-y \
  --title "Nystrom fit time against n (D = 5, m = 100)" --x-label n --y-label "seconds" >/dev/null &&
  "$build/bin/kef" lineplot "m (n = 10000)=$scale_dir/time_vs_m.csv" --out "$scale_dir/time_vs_m.png" --log-x --log-y \
    --title "Nystrom fit time against m (D = 5, n = 10000)" --x-label m --y-label "seconds" >/dev/null &&
  echo "figures: $scale_dir/time_vs_n.png, $scale_dir/time_vs_m.png"

echo "== MADE / MAF (plugins/flows) against ../shared/anchors/maf_torch.py: D=11, 10^4 training rows, [100, 100] tanh, minibatch 100, float64, Adam (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
"$build/bin/bench_flows" data "$work/flows" --n 10000 --D 11 --points 1000000 > /dev/null
if [ -f "$anchors/maf_torch.py" ] && $py -c "import torch" 2>/dev/null; then
  best_of3() {  # best seconds_per_epoch over 3 runs of a command
    local best="" s
    for rep in 1 2 3; do
      s=$(val seconds_per_epoch <("$@"))
      if [ -z "$best" ] || awk -v a="$s" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$s; fi
    done
    echo "$best"
  }
  for model in maf made; do
    # Minibatch after minibatch; a minibatch's two row groups on 1 or 2 threads (the same bits); each run
    # reports the median of 3 epochs. Both sides' faster thread count is the ratio's.
    k1=$(best_of3 "$build/bin/bench_flows" epoch $model "$work/flows" --epochs 3 --threads 1)
    k2=$(best_of3 "$build/bin/bench_flows" epoch $model "$work/flows" --epochs 3 --threads 2)
    a1=$(best_of3 $py "$anchors/maf_torch.py" "$work/flows/train.npy" --valid "$work/flows/valid.npy" \
      --test "$work/flows/test.npy" --model $model --max-epochs 3 --threads 1)
    a2=$(best_of3 $py "$anchors/maf_torch.py" "$work/flows/train.npy" --valid "$work/flows/valid.npy" \
      --test "$work/flows/test.npy" --model $model --max-epochs 3 --threads 2)
    awk -v k1="$k1" -v k2="$k2" -v a="$a1" -v b="$a2" -v m=$model 'BEGIN{f = a < b ? a : b; k = k1 < k2 ? k1 : k2;
      printf "%s epoch: kef %.3f / %.3f s, pytorch %.3f / %.3f s (1 / 2 threads); ratio pytorch(faster)/kef(faster) = %.2fx, 1 thread each %.2fx (target >= 3x)\n", m, k1, k2, a, b, f/k, a/k1}'
  done
  echo "== MAF log density and score at 10^6 points (randomly initialised, same architecture: 5 MADEs [100, 100] tanh; best of 3; anchor via bench/maf_torch_density.py)"
  for t in 1 2; do
    "$build/bin/bench_flows" density "$work/flows" --threads $t > "$work/flows_d$t.txt"
    $py "$here/maf_torch_density.py" "$anchors" "$work/flows/train.npy" "$work/flows/points.npy" --threads $t \
      > "$work/flows_t$t.txt"
  done
  for q in logp score; do
    awk -v k1="$(val ${q}_points_per_second "$work/flows_d1.txt")" -v k2="$(val ${q}_points_per_second "$work/flows_d2.txt")" \
        -v t1="$(val ${q}_points_per_second "$work/flows_t1.txt")" -v t2="$(val ${q}_points_per_second "$work/flows_t2.txt")" -v q=$q \
      'BEGIN{k = k1 > k2 ? k1 : k2; t = t1 > t2 ? t1 : t2;
        printf "maf %s: kef %.3g / %.3g points/s (1 / 2 threads), pytorch %.3g / %.3g; ratio kef(faster)/pytorch(faster) = %.2fx\n", q, k1, k2, t1, t2, k/t}'
  done
else
  echo "PyTorch anchor not available (needs /usr/bin/python3 with torch and ../shared/anchors/maf_torch.py)"
fi

echo "== DDE (plugins/dde) against ../shared/anchors/dde_torch.py: one iteration (f step + 5 x (3 dual steps + 1 sampler step)), n = 1000, D = 2, batch 100, widths 128, float64; and 10^4 sampler draws (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
if [ -f "$anchors/dde_torch.py" ] && $py -c "import torch" 2>/dev/null; then
  # kef's iteration runs on one thread; the anchor is timed with 1 and 2 and its faster time is the baseline.
  KEF_THREADS=1 "$build/bin/bench_dde" 1000 50 > "$work/dde.txt"
  for t in 1 2; do $py "$anchors/dde_torch.py" --n 1000 --steps 50 --threads $t > "$work/dde_t$t.txt"; done
  for q in seconds_per_step sample_seconds_1e4; do
    awk -v k="$(val $q "$work/dde.txt")" -v a="$(val $q "$work/dde_t1.txt")" -v b="$(val $q "$work/dde_t2.txt")" -v q=$q \
      'BEGIN{f = a < b ? a : b; printf "dde %s: kef %.4f s, pytorch %.4f s (1 thread) / %.4f s (2 threads); ratio pytorch(faster)/kef = %.2fx%s\n", q, k, a, b, f/k, q == "seconds_per_step" ? " (target >= 5x)" : ""}'
  done
  echo "dde: Eigen's one-thread GEMM at the networks' block shape (100 x 128 times 128 x 128) $(val gemm_gflops_100x128x128 "$work/dde.txt") GFLOP/s, on 512 x 512 matrices $(val gemm_gflops_512 "$work/dde.txt") GFLOP/s"
else
  echo "PyTorch anchor not available (needs /usr/bin/python3 with torch and ../shared/anchors/dde_torch.py)"
fi
