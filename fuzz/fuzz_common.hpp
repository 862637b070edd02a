#pragma once
// Shared by the fuzz targets: the readers take paths, so each input is written to a file in a
// directory of this process (on /dev/shm when there is one: no disk traffic per execution).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace kef::fuzz {

inline const std::filesystem::path& work_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path base =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    std::filesystem::path d = base / ("kef-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(work_dir(), ec);
    });
    return d;
  }();
  return dir;
}

inline std::filesystem::path write_input(const std::string& name, std::string_view bytes) {
  const std::filesystem::path p = work_dir() / name;
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

// An input "\0irregular:KIND" stands for a file at work_dir()/name that is not a regular file, KIND one
// of dir (a directory), fifo (a FIFO no process writes: opening it for reading would wait forever) and
// zero (a symbolic link to /dev/zero, which never ends): the readers must refuse each at once, never
// block or read without limit (a timeout or out-of-memory finding). Returns the path, or an empty path
// for any other input. Seeded by fuzz/corpus/*/irregular-*.
inline std::filesystem::path irregular_input(const std::string& name, std::string_view bytes) {
  constexpr std::string_view kPrefix("\0irregular:", 11);
  if (bytes.substr(0, kPrefix.size()) != kPrefix) return {};
  const std::string_view kind = bytes.substr(kPrefix.size());
  const std::filesystem::path p = work_dir() / name;
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
  if (kind == "dir") {
    std::filesystem::create_directories(p);
  } else if (kind == "fifo") {
    if (::mkfifo(p.c_str(), 0600) != 0) return {};
  } else if (kind == "zero") {
    std::filesystem::create_symlink("/dev/zero", p, ec);
    if (ec) return {};
  } else {
    return {};
  }
  return p;
}

}  // namespace kef::fuzz
