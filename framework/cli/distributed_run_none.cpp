// The kef command built without MPI (KEF_WITH_MPI off or MPI not found): no distributed runs.
#include "distributed_run.hpp"
#include "kef/error.hpp"

namespace kef_cli {

bool built_with_mpi() { return false; }

int run_distributed(const std::string&, kef::RunOptions) {
  throw kef::Error("kef was built without MPI: no distributed run");
}

}  // namespace kef_cli
