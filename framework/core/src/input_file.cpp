#include "input_file.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "kef/error.hpp"

namespace kef {

std::string irregular_file_problem(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return errno == ENOENT || errno == ENOTDIR ? "no such file"
                                               : std::string("cannot open (") + std::strerror(errno) + ")";
  if (S_ISREG(st.st_mode)) return {};
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (S_ISFIFO(st.st_mode)) return "is a named pipe (FIFO)";
  if (S_ISCHR(st.st_mode)) return "is a character device";
  if (S_ISBLK(st.st_mode)) return "is a block device";
  if (S_ISSOCK(st.st_mode)) return "is a socket";
  return "is not a regular file";
}

namespace {

std::string size_text(std::uintmax_t bytes) {
  if (bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

std::string read_text_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                           const std::string& what, const std::string& error_kind) {
  const auto fail = [&](const std::string& problem) {
    throw_error_of_kind(error_kind, path.string() + ": " + problem);
  };
  if (const std::string problem = irregular_file_problem(path); !problem.empty())
    fail(problem + "; expected " + what + " (a regular file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(std::string("cannot open ") + what + " (" + std::strerror(errno) + ")");
  // Read in pieces up to the bound rather than trusting the size stat reported: the file may grow.
  std::string text;
  std::vector<char> piece(1 << 16);
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (text.size() + got > max_bytes)
      fail(what + " is longer than " + size_text(max_bytes) +
           " (expected a text file; is it the right file?)");
    text.append(piece.data(), got);
  }
  if (in.bad()) fail(std::string("cannot read ") + what);
  return text;
}

}  // namespace kef
