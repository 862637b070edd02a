#pragma once
// The processes of a distributed run: `mpirun -np K kef run FILE` starts K copies of the
// run, each holding the whole plan and data; the building blocks that sum over rows or draws
// (kef/distributed_reduce.hpp) split their fixed groups between the processes and exchange the
// partial sums through a Communicator, so every process ends each reduction with the same result and
// continues identically. One process is the default, and a run without MPI never exchanges anything.
//
// A Communicator has one collective, all_gather: every process contributes bytes, every process gets
// all contributions in rank order. Every collective carries a tag naming the step, so processes that
// fall out of step (one failed outside a collective and went on to the closing agreement while the
// others wait in a reduction) are detected and the run is ended instead of hanging. exchange() and
// agree() add error agreement on top: a process that failed contributes its error instead of its data,
// and every process then throws the error of the lowest failing rank (the error a single process would
// have thrown first, since ranks own consecutive groups).
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

namespace kef {

// What a collective is for: processes must call collectives with the same tags in the same order.
enum class CollectiveStep : std::uint32_t {
  reduce = 1,   // partial sums of a distributed reduction
  prepare = 2,  // the agreement that every process read and validated its inputs
  finish = 3,   // the closing agreement of a command (its status)
};

class Communicator {
 public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every process calls it with the same step; returns every process's payload in rank order. Processes
  // calling it with different steps are out of step: the implementation ends all of them (exit status
  // 1) with a message on standard error.
  virtual std::vector<std::string> all_gather(CollectiveStep step, const std::string& payload) const = 0;
};

// The communicator of a run that is one process: rank 0 of 1, all_gather returns the payload.
const Communicator& single_process();

// all_gather with errors: `error`, when set, is this process's failure (its payload is then ignored).
// If any process failed, every process throws the error of the lowest failing rank, as a kef::Error of
// the same kind (ConfigError, DataError, ...) with the same message, so every process exits with the
// same status; otherwise returns the payloads in rank order.
std::vector<std::string> exchange(const Communicator& comm, CollectiveStep step, const std::string& payload,
                                  const std::exception_ptr& error);
// exchange() without payload: every process learns whether any failed.
void agree(const Communicator& comm, CollectiveStep step, const std::exception_ptr& error);

// The closing agreement of a command: every process contributes its status (`error` or success);
// returns -1 when all succeeded, else the lowest failing rank, whose error is stored in `kind`,
// `message` and `status` (its exit status). Never throws a process's error.
struct AgreedStatus {
  int failed_rank = -1;
  int status = 0;
  std::string kind, message;
};
AgreedStatus agree_status(const Communicator& comm, const std::exception_ptr& error);

}  // namespace kef
