// The MPI side of the kef command: compiled only when CMake finds MPI (KEF_WITH_MPI), so libkef and a
// build without MPI never see an MPI header.
#include "distributed_run.hpp"

#include <exception>
#include <iostream>
#include <string>
#include <utility>

#include "kef/communicator.hpp"
#include "kef/error.hpp"
#include "kef/parallel.hpp"
#include "mpi_communicator.hpp"

namespace kef_cli {

namespace {

// MPI_Init on construction, MPI_Finalize on destruction.
class MpiSession {
 public:
  MpiSession() { MPI_Init(nullptr, nullptr); }
  ~MpiSession() { MPI_Finalize(); }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
};

}  // namespace

bool built_with_mpi() { return true; }

int run_distributed(const std::string& file, kef::RunOptions options) {
  MpiSession session;
  int status = 0;
  {
    kef_mpi::MpiCommunicator world(MPI_COMM_WORLD);
    options.communicator = &world;
    if (world.rank() != 0) options.quiet = true;
    std::exception_ptr error;
    kef::RunSummary summary;
    try {
      if (options.threads > 0) kef::set_default_threads(options.threads);
      summary = kef::run_pipeline(file, options);
    } catch (...) {
      error = std::current_exception();
      world.set_failure(error);
    }
    const kef::AgreedStatus agreed = kef::agree_status(world, error);
    if (agreed.failed_rank < 0) {
      if (world.rank() == 0) {
        std::cout << summary.table << "results: " << (summary.output_dir / "results.json").string() << "\n";
        std::cout.flush();
        if (!options.quiet)
          std::cerr << "[kef] distributed run: " << world.size() << " processes; rank 0 received "
                    << world.bytes_received() << " bytes of partial results\n";
      }
    } else {
      if (agreed.failed_rank == world.rank()) {
        std::cerr << "kef: " << agreed.kind << ": " << agreed.message;
        if (world.rank() != 0) std::cerr << " (on rank " << world.rank() << " of " << world.size() << ")";
        std::cerr << "\n";
      }
      status = agreed.status;
    }
  }
  return status;
}

}  // namespace kef_cli
