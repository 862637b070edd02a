#pragma once
// Shared by the fuzz targets: the readers take paths, so each input is written to a file in a
// directory of this process (on /dev/shm when there is one: no disk traffic per execution).
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

}  // namespace kef::fuzz
