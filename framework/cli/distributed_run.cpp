// The MPI side of the kef command: compiled only when CMake finds MPI (KEF_WITH_MPI), so libkef and a
// build without MPI never see an MPI header.
#include "distributed_run.hpp"

// MPI's C API only: the deprecated C++ bindings mpi.h pulls into C++ would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "kef/communicator.hpp"
#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef_cli {

namespace {

const char* step_name(kef::CollectiveStep step) {
  switch (step) {
    case kef::CollectiveStep::reduce:
      return "a reduction";
    case kef::CollectiveStep::prepare:
      return "the input check";
    case kef::CollectiveStep::finish:
      return "the end of the run";
  }
  return "an unknown step";
}

// MPI_COMM_WORLD. all_gather is two collectives: a fixed-size header (step and payload size) from every
// process, then the payloads (MPI_Allgatherv). Processes whose headers name different steps are out of
// step: every one of them sees it in the header exchange and the job is aborted, never left waiting.
class WorldCommunicator final : public kef::Communicator {
 public:
  WorldCommunicator() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  std::vector<std::string> all_gather(kef::CollectiveStep step, const std::string& payload) const override {
    const std::uint64_t mine[2] = {static_cast<std::uint64_t>(step), payload.size()};
    std::vector<std::uint64_t> headers(2 * static_cast<std::size_t>(size_));
    MPI_Allgather(mine, 2, MPI_UINT64_T, headers.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
    std::uint64_t total = 0;
    for (int q = 0; q < size_; ++q) {
      const auto their = static_cast<kef::CollectiveStep>(headers[2 * static_cast<std::size_t>(q)]);
      if (their != step) {
        // A process that failed alone and came to the closing agreement prints its own error (the
        // others cannot learn it: they wait in another collective); the others say why they stop.
        if (!failure_.empty())
          std::fprintf(stderr, "%s (on rank %d of %d; the other processes were still working)\n",
                       failure_.c_str(), rank_, size_);
        else
          std::fprintf(stderr,
                       "kef: error: the processes of the distributed run are out of step (rank %d is at %s, "
                       "rank %d at %s): a process failed outside a shared reduction; ending the run\n",
                       rank_, step_name(step), q, step_name(their));
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
      total += headers[2 * static_cast<std::size_t>(q) + 1];
    }
    // MPI counts are int: every process sees the same sizes, so every one refuses alike.
    if (total > static_cast<std::uint64_t>(INT_MAX))
      throw kef::Error("distributed run: the partial results of one reduction total " +
                       std::to_string(total) + " bytes, more than one MPI message holds (2 GiB)");
    std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
    int offset = 0;
    for (int q = 0; q < size_; ++q) {
      counts[static_cast<std::size_t>(q)] = static_cast<int>(headers[2 * static_cast<std::size_t>(q) + 1]);
      displs[static_cast<std::size_t>(q)] = offset;
      offset += counts[static_cast<std::size_t>(q)];
    }
    std::string all(static_cast<std::size_t>(offset), '\0');
    MPI_Allgatherv(payload.data(), static_cast<int>(payload.size()), MPI_BYTE, all.data(), counts.data(),
                   displs.data(), MPI_BYTE, MPI_COMM_WORLD);
    std::vector<std::string> out;
    out.reserve(static_cast<std::size_t>(size_));
    for (int q = 0; q < size_; ++q)
      out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(q)]),
                               static_cast<std::size_t>(counts[static_cast<std::size_t>(q)])));
    bytes_ += static_cast<std::uint64_t>(offset) - payload.size();  // what came from the others
    return out;
  }

  std::uint64_t bytes_received() const { return bytes_; }
  // This process's error, printed if the processes turn out to be out of step at the closing agreement.
  void set_failure(std::string message) { failure_ = std::move(message); }

 private:
  int rank_ = 0, size_ = 1;
  mutable std::uint64_t bytes_ = 0;
  std::string failure_;
};

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
    WorldCommunicator world;
    options.communicator = &world;
    if (world.rank() != 0) options.quiet = true;
    std::exception_ptr error;
    kef::RunSummary summary;
    try {
      if (options.threads > 0) kef::set_default_threads(options.threads);
      summary = kef::run_pipeline(file, options);
    } catch (const kef::Error& e) {
      error = std::current_exception();
      world.set_failure(std::string("kef: ") + e.kind() + ": " + e.what());
    } catch (const std::exception& e) {
      error = std::current_exception();
      world.set_failure(std::string("kef: internal error: ") + e.what());
    } catch (...) {
      error = std::current_exception();
      world.set_failure("kef: internal error: unknown exception");
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
