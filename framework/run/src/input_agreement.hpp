#pragma once
// What the processes of a distributed run compare before any work: the pipeline each resolved (every
// key after --set, later with its defaults and the plugins' versions) and the data each reads (every
// data file's size and a hash of its bytes, or the caller's matrix, or the held splits). Processes
// that read a stale copy of the pipeline or a different data file of the same shape would otherwise
// mix different sums and finish with a model that is neither run's; a difference is one error, of exit
// status 2, on every process, naming the first key or file that differs. Internal to the run layer
// (pipeline.cpp).
#include <string>
#include <utility>
#include <vector>

#include "kef/communicator.hpp"
#include "kef/config.hpp"
#include "kef/dataset.hpp"
#include "kef/pipeline.hpp"
#include "kef/registry.hpp"

namespace kef::pipeline_detail {

// Entries in a fixed order, each a name and a short text of its value; two processes agree when their
// entries are equal.
struct InputFingerprint {
  std::vector<std::pair<std::string, std::string>> pipeline;  // dotted key -> value (JSON text)
  // "data.path" -> its size and hash, then (after a tab, shown in messages, not compared) the file
  std::vector<std::pair<std::string, std::string>> data;

  std::string encode() const;
  static InputFingerprint decode(const std::string& bytes);
};

// Every key of `root` as written (after --set), or with the declared defaults filled in.
void add_pipeline(InputFingerprint& print, const Config& root, bool with_defaults);
// The loaded plugins' versions ("plugin NAME"): different plugin builds resolve different defaults.
void add_plugins(InputFingerprint& print, const Registry& registry);
// The files the [data] table's `file` source reads (`path`, or `train`/`validation`/`test`): each
// one's size and a hash of all its bytes, read in blocks (memory bounded by a block). A missing file
// is the reader's DataError, so it is the error every process reports (before any difference in the
// pipelines); a file that is not regular (a directory, a FIFO) is skipped, for the reader to refuse.
void add_data_files(InputFingerprint& print, const Config& data);
// The rows a caller passed (values, shape and column names).
void add_matrix(InputFingerprint& print, const std::string& name, const InMemoryData& data);
// The splits the process holds after preparing its data (the training split unless it stays in the
// file), whatever the source: a plugin source's rows are compared too.
void add_held_splits(InputFingerprint& print, const Dataset& data);

// Every process's encoded fingerprint, in rank order (exchange()): throws, on every process alike, a
// ConfigError naming the first pipeline key whose value differs from rank 0's, else a DataError
// naming the first data file or matrix that differs.
void require_same_inputs(const std::vector<std::string>& encoded);

}  // namespace kef::pipeline_detail
