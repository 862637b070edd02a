// Publishing a run's output directory (see kef/output_dir.hpp).
#include "kef/output_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>

#include "kef/config.hpp"
#include "kef/error.hpp"

namespace fs = std::filesystem;

namespace kef {

namespace {

// "runs/x/" names the directory runs/x; "." and ".." name no directory kef could replace.
fs::path target_path(const fs::path& p) {
  fs::path t = p.has_filename() ? p : p.parent_path();
  const std::string name = t.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw ConfigError(p.string() + ": the output directory must be named (got `" + p.string() +
                      "`); give a path such as runs/NAME");
  return t;
}

fs::path parent_of(const fs::path& target) {
  return target.parent_path().empty() ? fs::path(".") : target.parent_path();
}

// Built with append: for "." + std::string&&, GCC 12 reports a false -Wrestrict inside libstdc++.
std::string staging_prefix(const fs::path& target) {
  return std::string(".").append(target.filename().string()).append(".kef-tmp-");
}

bool exists_no_follow(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type() != fs::file_type::not_found && !ec;
}

// A saved model's model.toml: a regular file whose top level has the keys ModelWriter writes first. A
// user's own model.toml (a pipeline, notes) lacks kef_version, and one that does not parse is not ours.
bool is_saved_model(const fs::path& dir) {
  std::error_code ec;
  const fs::path manifest = dir / "model.toml";
  if (!fs::is_regular_file(fs::symlink_status(manifest, ec))) return false;
  try {
    const Config c = Config::parse_file(manifest);
    return c.has("type") && c.has("kef_version");
  } catch (const std::exception&) {
    return false;
  }
}

// What publishing `kind` may replace besides an empty directory, named for messages.
const char* kind_text(OutputKind kind) {
  return kind == OutputKind::Run ? "a kef run (no results.json)" : "a saved kef model (no kef model.toml)";
}

// An empty directory or a directory of `kind`: what publishing may replace. Symbolic links are neither.
bool is_replaceable(const fs::path& dir, OutputKind kind) {
  std::error_code ec;
  if (!fs::is_directory(fs::symlink_status(dir, ec))) return false;
  if (fs::is_empty(dir, ec) && !ec) return true;
  if (kind == OutputKind::SavedModel) return is_saved_model(dir);
  return fs::is_regular_file(fs::symlink_status(dir / "results.json", ec));
}

int rename_flags(const fs::path& from, const fs::path& to, unsigned flags) {
  return ::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), flags);
}

// The pid in `.NAME.kef-tmp-PID-XXXXXX[.old]`, or -1 when the name carries none (kef 0.2).
long staging_pid(const std::string& rest) {
  std::size_t i = 0;
  while (i < rest.size() && rest[i] >= '0' && rest[i] <= '9') ++i;
  if (i == 0 || i > 9 || i >= rest.size() || rest[i] != '-') return -1;
  return std::stol(rest.substr(0, i));
}

bool process_alive(long pid) {
  if (pid == static_cast<long>(::getpid())) return true;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH;  // EPERM: alive, another user's
}

// Moves this run's results out of the way of a directory that is not ours, and says where they are.
[[noreturn]] void keep_unpublished(const fs::path& staging, const fs::path& target, OutputKind kind) {
  const std::string base = target.filename().string() + ".kef-unpublished-" + std::to_string(::getpid());
  fs::path kept;
  for (int n = 0; n < 1000; ++n) {
    fs::path candidate = parent_of(target) / (n == 0 ? base : base + "-" + std::to_string(n));
    if (rename_flags(staging, candidate, RENAME_NOREPLACE) == 0 ||
        (errno == EINVAL && !exists_no_follow(candidate) &&
         ::rename(staging.c_str(), candidate.c_str()) == 0)) {
      kept = candidate;
      break;
    }
    if (errno != EEXIST && errno != ENOTEMPTY) break;
  }
  const std::string where = kept.empty() ? staging.string() : kept.string();
  throw ConfigError(
      target.string() +
      ": a directory that is not " + kind_text(kind) + " appeared at the output path while this "
      "run worked; it was left untouched. This run's results are in " +
      where + "; move them, or choose another " +
      (kind == OutputKind::Run ? "[output] dir or --output" : "directory"));
}

[[noreturn]] void publish_failed(const fs::path& staging, const fs::path& target, const std::string& what,
                                 int err) {
  throw Error(target.string() + ": cannot publish the run's output (" + what + ": " + std::strerror(err) +
              "); the results are in " + staging.string());
}

// The fallback: the previous run is renamed aside, checked, and replaced; between the two renames the
// target is briefly absent.
void publish_with_two_renames(const fs::path& staging, const fs::path& target, OutputKind kind) {
  if (!exists_no_follow(target)) {
    if (::rename(staging.c_str(), target.c_str()) == 0) return;
    if (errno != EEXIST && errno != ENOTEMPTY && errno != ENOTDIR && errno != EISDIR)
      publish_failed(staging, target, "rename", errno);
  }
  fs::path old = staging;
  old += ".old";
  if (::rename(target.c_str(), old.c_str()) != 0)
    publish_failed(staging, target, "rename the previous run", errno);
  if (!is_replaceable(old, kind)) {
    if (::rename(old.c_str(), target.c_str()) != 0)
      publish_failed(staging, target, "restore " + target.string() + " from " + old.string(), errno);
    keep_unpublished(staging, target, kind);
  }
  if (::rename(staging.c_str(), target.c_str()) != 0) {
    const int err = errno;
    (void)::rename(old.c_str(), target.c_str());
    publish_failed(staging, target, "rename", err);
  }
  std::error_code ec;
  fs::remove_all(old, ec);
}

}  // namespace

void check_output_target(const fs::path& dir_in, OutputKind kind) {
  const fs::path dir = target_path(dir_in);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(dir, ec);
  if (st.type() == fs::file_type::not_found) return;
  if (fs::is_symlink(st))
    throw ConfigError(dir.string() +
                      ": output path is a symbolic link; kef replaces the output directory as a whole and "
                      "would replace the link, not what it points to. Give the real path");
  if (!fs::is_directory(st)) throw ConfigError(dir.string() + ": output path exists and is not a directory");
  if (fs::is_empty(dir, ec)) return;
  if (!is_replaceable(dir, kind))
    throw ConfigError(dir.string() + ": output directory exists and is not " + kind_text(kind) +
                      "; refusing to replace it. Choose another " +
                      (kind == OutputKind::Run ? "[output] dir or --output" : "directory"));
}

StaleStaging clean_stale_staging(const fs::path& target_in) {
  const fs::path target = target_path(target_in);
  StaleStaging found;
  const std::string prefix = staging_prefix(target);
  std::error_code ec;
  fs::directory_iterator it(parent_of(target), ec);
  if (ec) return found;
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    std::error_code type_ec;
    if (!fs::is_directory(entry.symlink_status(type_ec))) continue;
    const long pid = staging_pid(name.substr(prefix.size()));
    if (pid < 0) {
      found.kept_unknown.push_back(entry.path());
      continue;
    }
    if (process_alive(pid)) continue;  // a run still working (or a recycled pid: left alone)
    std::error_code rm_ec;
    fs::remove_all(entry.path(), rm_ec);
    if (!rm_ec) found.removed.push_back(entry.path());
  }
  return found;
}

fs::path make_staging_dir(const fs::path& target_in) {
  const fs::path target = target_path(target_in);
  const fs::path parent = parent_of(target);
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw ConfigError(target.string() + ": cannot create the parent directory: " + ec.message());
  const StaleStaging stale = clean_stale_staging(target);
  for (const auto& p : stale.removed)
    std::cerr << "[kef] removed " << p.string() << ", the staging directory of a run that has ended\n";
  for (const auto& p : stale.kept_unknown)
    std::cerr << "[kef] warning: " << p.string()
              << " looks like the staging directory of an interrupted kef run (it records no process id); "
                 "remove it if no kef run is writing to "
              << target.string() << "\n";
  std::string pattern = (parent / (staging_prefix(target) + std::to_string(::getpid()) + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw ConfigError(pattern + ": cannot create a staging directory (" + std::strerror(errno) + ")");
  return fs::path(buf.data());
}

void publish_staging_dir(const fs::path& staging, const fs::path& target_in, PublishMethod method,
                         OutputKind kind) {
  const fs::path target = target_path(target_in);
  if (method == PublishMethod::TwoRenames) return publish_with_two_renames(staging, target, kind);
  // Absent target: moved into place, without replacing anything that appeared meanwhile.
  if (rename_flags(staging, target, RENAME_NOREPLACE) == 0) return;
  int err = errno;
  if (err == EEXIST || err == ENOTEMPTY) {
    if (rename_flags(staging, target, RENAME_EXCHANGE) == 0) {
      // `staging` now holds what was at the target: ours to remove only if it is a kef run.
      if (!is_replaceable(staging, kind)) {
        if (rename_flags(staging, target, RENAME_EXCHANGE) != 0)
          throw Error(target.string() + ": cannot restore the directory found at the output path (" +
                      std::strerror(errno) + "); it is now at " + staging.string() +
                      " and this run's results at " + target.string());
        keep_unpublished(staging, target, kind);
      }
      std::error_code ec;
      fs::remove_all(staging, ec);
      if (ec)
        std::cerr << "[kef] warning: " << staging.string()
                  << ": cannot remove the previous run: " << ec.message() << "\n";
      return;
    }
    err = errno;
  }
  if (err != EINVAL && err != ENOSYS && err != EOPNOTSUPP) publish_failed(staging, target, "rename", err);
  std::cerr << "[kef] note: " << target.string()
            << ": the file system cannot exchange directories atomically; publishing with two renames\n";
  publish_with_two_renames(staging, target, kind);
}

}  // namespace kef
