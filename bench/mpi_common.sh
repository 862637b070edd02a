# Sourced by bench/mpi_*.sh: `mpi_bench_setup BUILD_DIR` sets $kef to that build's kef command, moves
# into a temporary working directory (removed on exit), and sets OpenMPI up for one machine (shared
# memory only; as root, the two variables OpenMPI asks for).
mpi_bench_setup() {
  kef=$(cd "$1" && pwd)/bin/kef
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cd "$work"
  if [ "$(id -u)" -eq 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
  export OMPI_MCA_btl=self,vader
}

# `fit_seconds RESULTS MODEL`: fit.seconds of model MODEL in a results.json.
fit_seconds() {
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['models'][sys.argv[2]]['fit']['seconds'])" "$1" "$2"
}
