#include "mpi_communicator.hpp"

#include <climits>
#include <cstdio>
#include <utility>

#include "kef/error.hpp"

namespace kef_mpi {

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

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

std::vector<std::string> MpiCommunicator::all_gather(kef::CollectiveStep step,
                                                     const std::string& payload) const {
  const std::uint64_t mine[2] = {static_cast<std::uint64_t>(step), payload.size()};
  std::vector<std::uint64_t> headers(2 * static_cast<std::size_t>(size_));
  MPI_Allgather(mine, 2, MPI_UINT64_T, headers.data(), 2, MPI_UINT64_T, comm_);
  std::uint64_t total = 0;
  for (int q = 0; q < size_; ++q) {
    const auto their = static_cast<kef::CollectiveStep>(headers[2 * static_cast<std::size_t>(q)]);
    if (their != step) {
      if (!failure_.empty())
        std::fprintf(stderr, "%s (on rank %d of %d; the other processes were still working)\n",
                     failure_.c_str(), rank_, size_);
      else
        std::fprintf(stderr,
                     "kef: error: the processes of the distributed run are out of step (rank %d is at %s, "
                     "rank %d at %s): a process failed outside a shared reduction; ending the run\n",
                     rank_, step_name(step), q, step_name(their));
      std::fflush(stderr);
      MPI_Abort(comm_, 1);
    }
    total += headers[2 * static_cast<std::size_t>(q) + 1];
  }
  // MPI counts are int: every process sees the same sizes, so every one refuses alike.
  if (total > static_cast<std::uint64_t>(INT_MAX))
    throw kef::Error("distributed run: the partial results of one reduction total " + std::to_string(total) +
                     " bytes, more than one MPI message holds (2 GiB)");
  std::vector<int> counts(static_cast<std::size_t>(size_)), displs(static_cast<std::size_t>(size_));
  int offset = 0;
  for (int q = 0; q < size_; ++q) {
    counts[static_cast<std::size_t>(q)] = static_cast<int>(headers[2 * static_cast<std::size_t>(q) + 1]);
    displs[static_cast<std::size_t>(q)] = offset;
    offset += counts[static_cast<std::size_t>(q)];
  }
  std::string all(static_cast<std::size_t>(offset), '\0');
  MPI_Allgatherv(payload.data(), static_cast<int>(payload.size()), MPI_BYTE, all.data(), counts.data(),
                 displs.data(), MPI_BYTE, comm_);
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(size_));
  for (int q = 0; q < size_; ++q)
    out.push_back(all.substr(static_cast<std::size_t>(displs[static_cast<std::size_t>(q)]),
                             static_cast<std::size_t>(counts[static_cast<std::size_t>(q)])));
  bytes_ += static_cast<std::uint64_t>(offset) - payload.size();  // what came from the others
  return out;
}

void MpiCommunicator::set_failure(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const kef::Error& e) {
    set_failure(std::string("kef: ") + e.kind() + ": " + e.what());
  } catch (const std::exception& e) {
    set_failure(std::string("kef: internal error: ") + e.what());
  } catch (...) {
    set_failure(std::string("kef: internal error: unknown exception"));
  }
}

bool mpi_ready() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace kef_mpi
