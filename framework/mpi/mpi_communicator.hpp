#pragma once
// kef::Communicator over an MPI communicator: shared by the kef command (`mpirun -np K kef run`, on
// MPI_COMM_WORLD) and the Python package (`kef.run(..., comm=mpi4py_comm)`). Internal to those two
// targets, compiled only when CMake finds MPI (KEF_HAVE_MPI), so libkef never sees an MPI header.

// MPI's C API only: the deprecated C++ bindings mpi.h pulls into C++ would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "kef/communicator.hpp"

namespace kef_mpi {

// all_gather is two collectives: a fixed-size header (step and payload size) from every process, then
// the payloads (MPI_Allgatherv). Processes whose headers name different steps are out of step: every
// one of them sees it in the header exchange and the job is aborted (MPI_Abort on `comm`), never left
// waiting.
class MpiCommunicator final : public kef::Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm);
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::vector<std::string> all_gather(kef::CollectiveStep step, const std::string& payload) const override;

  // Bytes this process received from the others, over all collectives so far.
  std::uint64_t bytes_received() const { return bytes_; }
  // This process's error, printed if the processes turn out to be out of step at the closing agreement
  // (the others cannot learn it: they wait in another collective).
  void set_failure(std::string message) { failure_ = std::move(message); }
  // The same for a caught exception: "kef: KIND: message" for a kef::Error, an internal error otherwise.
  void set_failure(const std::exception_ptr& error);

 private:
  MPI_Comm comm_;
  int rank_ = 0, size_ = 1;
  mutable std::uint64_t bytes_ = 0;
  std::string failure_;
};

// Whether MPI is initialised and not yet finalised in this process (by the kef command, or by mpi4py).
bool mpi_ready();

}  // namespace kef_mpi
