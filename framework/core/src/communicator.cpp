#include "kef/communicator.hpp"

#include <cstdint>
#include <cstring>

#include "kef/byte_codec.hpp"
#include "kef/error.hpp"

namespace kef {

Communicator::~Communicator() = default;

void ByteReader::raw(void* data, std::size_t bytes) {
  if (bytes > bytes_.size() - pos_)
    throw Error("distributed run: a partial result is shorter than its layout (" +
                std::to_string(bytes_.size()) + " bytes, reading " + std::to_string(bytes) + " at " +
                std::to_string(pos_) + "); were the processes started from the same kef build?");
  if (bytes > 0) std::memcpy(data, bytes_.data() + pos_, bytes);
  pos_ += bytes;
}

namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::vector<std::string> all_gather(CollectiveStep, const std::string& payload) const override {
    return {payload};
  }
};

// A status message: failed flag, exit status, kind, message (or the payload when not failed).
struct Status {
  std::uint8_t failed = 0;
  std::int32_t status = 0;
  std::string kind, message;
};

std::string encode_failure(const std::exception_ptr& error) {
  Status s;
  s.failed = 1;
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    s.status = e.exit_status();
    s.kind = e.kind();
    s.message = e.what();
  } catch (const std::exception& e) {
    s.status = 1;
    s.kind = "internal error";
    s.message = e.what();
  } catch (...) {
    s.status = 1;
    s.kind = "internal error";
    s.message = "unknown exception";
  }
  ByteWriter w;
  w.raw(&s.failed, 1);
  w.raw(&s.status, sizeof s.status);
  const std::uint64_t kn = s.kind.size(), mn = s.message.size();
  w.raw(&kn, sizeof kn);
  w.raw(s.kind.data(), kn);
  w.raw(&mn, sizeof mn);
  w.raw(s.message.data(), mn);
  return w.take();
}

Status decode_failure(const std::string& bytes) {
  ByteReader r(bytes);
  Status s;
  r.raw(&s.failed, 1);
  r.raw(&s.status, sizeof s.status);
  std::uint64_t n = 0;
  r.raw(&n, sizeof n);
  s.kind.resize(n);
  r.raw(s.kind.data(), n);
  r.raw(&n, sizeof n);
  s.message.resize(n);
  r.raw(s.message.data(), n);
  return s;
}

// One leading byte: 0 = the payload follows, 1 = a failure follows.
std::vector<std::string> gather_with_status(const Communicator& comm, CollectiveStep step,
                                            const std::string& payload, const std::exception_ptr& error,
                                            int* failed_rank, Status* failure) {
  std::string message = error ? encode_failure(error) : std::string(1, '\0') + payload;
  std::vector<std::string> all = comm.all_gather(step, message);
  *failed_rank = -1;
  for (std::size_t q = 0; q < all.size(); ++q) {
    if (all[q].empty()) throw Error("distributed run: rank " + std::to_string(q) + " sent an empty message");
    if (all[q][0] != 0) {
      *failed_rank = static_cast<int>(q);
      *failure = decode_failure(all[q]);
      break;
    }
    all[q].erase(0, 1);
  }
  return all;
}

}  // namespace

const Communicator& single_process() {
  static const SingleProcess one;
  return one;
}

std::vector<std::string> exchange(const Communicator& comm, CollectiveStep step, const std::string& payload,
                                  const std::exception_ptr& error) {
  if (comm.size() == 1) {
    if (error) std::rethrow_exception(error);
    return {payload};
  }
  int failed_rank = -1;
  Status failure;
  std::vector<std::string> all = gather_with_status(comm, step, payload, error, &failed_rank, &failure);
  if (failed_rank >= 0) {
    // This process's own error keeps its type and any plugin-defined class; the others' are rebuilt.
    if (failed_rank == comm.rank()) std::rethrow_exception(error);
    throw_error_of_kind(failure.kind, failure.message);
  }
  return all;
}

void agree(const Communicator& comm, CollectiveStep step, const std::exception_ptr& error) {
  (void)exchange(comm, step, std::string(), error);
}

AgreedStatus agree_status(const Communicator& comm, const std::exception_ptr& error) {
  AgreedStatus out;
  Status failure;
  if (comm.size() == 1) {
    if (!error) return out;
    failure = decode_failure(encode_failure(error));
    out.failed_rank = 0;
  } else {
    (void)gather_with_status(comm, CollectiveStep::finish, std::string(), error, &out.failed_rank, &failure);
    if (out.failed_rank < 0) return out;
  }
  out.status = failure.status;
  out.kind = failure.kind;
  out.message = failure.message;
  return out;
}

}  // namespace kef
