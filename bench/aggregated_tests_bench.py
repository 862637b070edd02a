#!/usr/bin/python3
"""Speed of MMDAgg: `kef test two-sample --aggregate` against the reference NumPy implementation
(antoninschrab/mmdagg, mmdagg/np.py; a local checkout, never part of kef) in the same run, on the
papers' default settings: n = m = 500 rows in d = 10 dimensions, the Laplace and Gaussian collections
of 10 bandwidths each, B1 = B2 = 2000, B3 = 50.

    aggregated_tests_bench.py KEF MMDAGG_CHECKOUT [REPS]

Prints "key value" lines: the best-of-REPS wall-clock and CPU seconds of each (kef's as a whole
command: reading the two .npy files, the bandwidths, the kernel matrices, the quadratic forms over the
draws and the decision; the reference's as the Python call), and their ratios. The reference's
simulated statistics are the products K·R of the pooled 2n x 2n kernel matrix with the 2n x (B1 + B2 + 1)
signs, 2 (2n)² (B1 + B2 + 1) flops per single test: their rate over the reference's whole time is
printed beside the machine's DGEMM rate (NumPy's 2048³ product, the same BLAS) to show it runs near it.
kef forms no such product (kef/aggregated_test.hpp: pattern tables); bench_aggregated_tests reports its
rate against DGEMM. On a loaded machine compare the CPU times.
"""
import importlib.util
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: aggregated_tests_bench.py KEF MMDAGG_CHECKOUT [REPS]")
    kef, checkout = sys.argv[1], sys.argv[2]
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    spec = importlib.util.spec_from_file_location("mmdagg_np", os.path.join(checkout, "mmdagg", "np.py"))
    ref = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ref)
    n, d, B = 500, 10, 2000
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(n, d))
    Y = rng.uniform(size=(n, d)) + 0.02
    with tempfile.TemporaryDirectory() as work:
        np.save(os.path.join(work, "x.npy"), X)
        np.save(os.path.join(work, "y.npy"), Y)
        cmd = [kef, "test", "two-sample", os.path.join(work, "x.npy"), os.path.join(work, "y.npy"), "--aggregate",
               "--json", "--bootstrap-draws", str(B), "--level-draws", str(B)]
        kef_best = kef_cpu = float("inf")
        for _ in range(reps):
            c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            kef_best = min(kef_best, time.perf_counter() - t0)
            c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            kef_cpu = min(kef_cpu, c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime)
        report = json.loads(out.stdout)["aggregate"]
    ref_best = ref_cpu = float("inf")
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        ref_reject = ref.mmdagg(X, Y, B1=B, B2=B)
        ref_best = min(ref_best, time.perf_counter() - t0)
        ref_cpu = min(ref_cpu, time.process_time() - c0)
    A = rng.standard_normal((2048, 2048))
    A @ A
    t0 = time.perf_counter()
    A @ A
    gemm = 2 * 2048.0**3 / (time.perf_counter() - t0) / 1e9
    tests = len(report["single_tests"])
    reference_flops = tests * 2.0 * (2 * n) ** 2 * (2 * B + 1)
    print(f"cores {os.cpu_count()}")
    print(f"single_tests {tests}")
    print(f"kef_reject {int(report['reject'])}\nreference_reject {ref_reject}")
    print(f"kef_seconds {kef_best:.4g}\nreference_seconds {ref_best:.4g}\nspeedup {ref_best / kef_best:.3g}")
    print(f"kef_cpu_seconds {kef_cpu:.4g}\nreference_cpu_seconds {ref_cpu:.4g}\ncpu_ratio {ref_cpu / kef_cpu:.3g}")
    print(f"reference_product_flops {reference_flops:.4g}")
    print(f"reference_product_gflops_lower_bound {reference_flops / ref_best / 1e9:.4g}")
    print(f"numpy_dgemm_gflops {gemm:.4g}")

if __name__ == "__main__":
    main()
