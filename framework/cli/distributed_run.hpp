#pragma once
// `kef run` under an MPI launcher (mpirun -np K): internal to the kef command.
#include <cstdlib>
#include <string>

#include "kef/pipeline.hpp"

namespace kef_cli {

// The number of processes of the MPI job this process was started in, read from the launcher's
// environment (OpenMPI's OMPI_COMM_WORLD_SIZE, or PMI_SIZE / PMIX_SIZE of MPICH's and other launchers);
// 0 when not started by an MPI launcher. Read before MPI is initialised, so a plain `kef run` never
// initialises MPI.
inline int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name); v && *v) return std::atoi(v);
  return 0;
}

// Whether this kef was built with MPI (KEF_WITH_MPI and MPI found).
bool built_with_mpi();

// Runs the pipeline on every process of the MPI job (MPI initialised here, finalised on return) and
// returns this process's exit status. Progress and the summary table come from rank 0 only. Whatever
// fails, on any process, the processes agree on the outcome before returning: every one returns the
// exit status of the lowest failing rank, which alone prints its error, so there is one message and
// no process is left waiting. Only with built_with_mpi().
int run_distributed(const std::string& file, kef::RunOptions options);

}  // namespace kef_cli
