#pragma once
// Files kef reads where a regular file is expected: a pipeline, a saved model's model.toml and arrays,
// a data file. A FIFO would block the read forever and a device such as /dev/zero never ends (its text
// grows without limit), so anything but a regular file (after symbolic links) is refused before it is
// opened, and a text file read whole is bounded in length.
#include <cstdint>
#include <filesystem>
#include <string>

namespace kef {

// What is wrong with `path` as a file to read: empty when it is a regular file, else a phrase such as
// "no such file", "is a directory", "is a named pipe (FIFO)" or "is a character device".
std::string irregular_file_problem(const std::filesystem::path& path);

// The whole text of the regular file `path`, of at most max_bytes bytes. `what` names the file in
// messages ("the pipeline file"); errors are thrown as the kef::Error whose kind() is `error_kind`
// (throw_error_of_kind), their message starting with the path.
std::string read_text_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                           const std::string& what, const std::string& error_kind);

}  // namespace kef
