#pragma once
// Publishing a run's output directory. A run writes everything into a staging directory next to its
// target (`.NAME.kef-tmp-PID-XXXXXX`, same file system) and publishes it in one step, so that
//  - the target is never absent or half-written: an existing run is swapped out by one atomic
//    rename-exchange (Linux renameat2 RENAME_EXCHANGE), then removed;
//  - publishing never deletes what kef did not create: what it swaps out is checked, and anything
//    that is not a kef run (results.json) or an empty directory is swapped back, untouched;
//  - staging directories left by killed runs are found by the pid in their name and removed once that
//    process has ended.
#include <filesystem>
#include <string>
#include <vector>

namespace kef {

// What a published directory holds, and so what publishing may replace besides an empty directory:
// a kef run (results.json), or a saved model (model.toml whose top level has kef's `type` and
// `kef_version`, as ModelWriter writes it).
enum class OutputKind { Run, SavedModel };

// Throws ConfigError unless `dir` is absent, an empty directory or a directory of `kind`. A symbolic
// link is refused: publishing replaces the path, not what it points to.
void check_output_target(const std::filesystem::path& dir, OutputKind kind = OutputKind::Run);

// Staging directories of earlier runs for this target: removed (their process has ended) and kept
// (their process is alive, or they carry no pid: left by kef 0.2).
struct StaleStaging {
  std::vector<std::filesystem::path> removed;
  std::vector<std::filesystem::path> kept_unknown;
};
StaleStaging clean_stale_staging(const std::filesystem::path& target);

// Removes stale staging directories (reporting them on stderr), then creates a fresh one next to
// `target` (and the parent directories).
std::filesystem::path make_staging_dir(const std::filesystem::path& target);

// How publish_staging_dir replaces an existing target: by one exchange (Automatic, when the file system
// supports it) or by two renames, which leave the target absent for an instant (the fallback where
// renameat2 is missing; tests select it to check that it too never deletes a foreign directory).
enum class PublishMethod { Automatic, TwoRenames };

// Moves `staging` to `target`. If a directory that is neither empty nor of `kind` is at `target` at
// that moment, it is left untouched, the staging directory is moved to a visible sibling
// `NAME.kef-unpublished-PID[-N]`, and ConfigError says where the results are.
void publish_staging_dir(const std::filesystem::path& staging, const std::filesystem::path& target,
                         PublishMethod method = PublishMethod::Automatic, OutputKind kind = OutputKind::Run);

}  // namespace kef
