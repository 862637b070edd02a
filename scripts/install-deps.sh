#!/usr/bin/env bash
# Installs the Debian packages kef needs to build, test and benchmark, and only the missing ones.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libeigen3-dev          # dense linear algebra
  libspectra-dev         # Lanczos eigensolver (header-only) for spectral clustering
  libceres-dev           # L-BFGS / first-order solvers (wrapped in the framework)
  libboost1.74-dev       # Boost.DLL (header-only, used with BOOST_DLL_USE_STD_FS)
  libtomlplusplus-dev    # TOML++ 3.3, pipeline files with source positions
  nlohmann-json3-dev     # results.json
  libcli11-dev           # the kef command line
  libcairo2-dev          # density plots and `kef montage` (PNG)
  fonts-dejavu-core      # the font of the plot titles (plots are drawn without text if missing)
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev       # bench/
  libopenblas-dev        # dsyrk for the lite system (faster than Eigen's rank update)
  libopenblas0-pthread   # the OpenBLAS kef links and the NumPy anchors use
  python3-numpy          # anchors and the .npy round-trip test
  python3-scipy          # the Nyström anchor (Cholesky and pinvh) the nystrom tests run
  pybind11-dev python3-dev  # the Python package (`import kef`), built by the project's CMake
  python3-pytest         # the Python package's tests, run by ctest
  python3-sklearn        # the scikit-learn estimator classes (kef.sklearn) and their checks
  python3-setuptools python3-wheel  # `pip install .` / the wheel (pyproject.toml, setup.py)
  python3-build python3-venv python3-pip  # `python3 -m build --wheel`, the venv the wheel test installs into
  python3-mpi4py         # the Python package under mpirun (kef.run/kef.fit with comm=), its ctest
  libopenmpi-dev openmpi-bin  # `mpirun -np K kef run`: distributed fits and evaluations (tests/mpi)
  python3-sphinx python3-myst-parser furo  # the manual (`make docs`, docs/build_docs.py): Sphinx, MyST Markdown, its theme
  clang libclang-rt-14-dev  # scripts/fuzz.sh: libFuzzer, ASan and UBSan (the main build uses g++)
)
# `--bench` (from `make bench`): also the baselines the benchmarks run against.
if [ "${1:-}" = "--bench" ]; then
  packages+=(python3-torch)  # the PyTorch anchor programs bench/run.sh times kef against
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 update -qq
"${sudo_cmd[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}"
