#pragma once
// Private to the io layer and the kef command: a file written under a temporary name next to its
// target and renamed into place when complete, so that a reader never sees a partial file and a failed
// write leaves nothing.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "kef/error.hpp"

namespace kef {

// `write` fills the stream; Error naming `path` when the file cannot be written or renamed.
template <class Write>
void write_atomically(const std::filesystem::path& path, Write&& write) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  auto discard = [&] {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      throw Error(path.string() + ": cannot write file (" + std::strerror(errno) +
                  "); check that the directory exists and is writable");
    }
    try {
      write(out);
    } catch (...) {
      out.close();
      discard();
      throw;
    }
    out.close();
    if (!out) {
      discard();
      throw Error(path.string() + ": write failed (disk full?)");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    discard();
    throw Error(path.string() + ": cannot rename temporary file into place (" + ec.message() + ")");
  }
}

}  // namespace kef
