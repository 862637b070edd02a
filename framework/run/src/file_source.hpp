#pragma once
// The built-in `file` data source, and reading a data file's rows straight into the splits: all of
// them (each row to its place in the shuffled train, validation or test split, one copy), or, in a
// distributed run reading by rows, only those asked for (kef/training_rows.hpp). Internal to the run
// layer (prepare_dataset.cpp).
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kef/communicator.hpp"
#include "kef/config.hpp"
#include "kef/data_io.hpp"
#include "kef/data_source.hpp"
#include "kef/training_rows.hpp"
#include "kef/types.hpp"

namespace kef {

// A `file` source with one `path` is read by the splits: the host learns its row count and column
// names first, and reads each row straight into its split, so the file's rows are held once.
bool reads_by_split(const Config& data);

// The files a `file` source reads, by key (`path`, or `train`, `validation`, `test`), resolved as they
// are read (against the pipeline file's directory) and checked to exist (the reader's DataError citing
// the key otherwise); none for another source.
std::vector<std::pair<std::string, std::filesystem::path>> source_files(const Config& data);

struct FileRows {
  std::filesystem::path path;
  ColumnSelection columns;  // the `columns` (empty: all) and `header` keys, as the reader takes them
  Index rows = 0;
  // A distributed run reading by rows (kef/training_rows.hpp): its processes, or null.
  const Communicator* by_rows = nullptr;
};

// The [data] table's file, checked to exist (a DataError citing `path`), its columns and row count,
// and a SourceData with its column names and provenance only (no rows).
FileRows file_rows_of(const Config& data, SourceData& header);

// Reads the file rows `file_rows` (any order, repeats allowed) into the rows of a matrix, in one pass
// over the file in file order; `kept` are the columns kept of those read.
Matrix read_file_rows(const FileRows& file, const std::vector<Index>& kept, const std::vector<Index>& file_rows);

// The splits of a file read whole: each file row goes straight to its place in its split (`order[p]`
// is the file row at split position p, splits back to back), in one pass over the file.
void read_splits(const FileRows& file, const std::vector<Index>& order, const std::vector<Index>& kept,
                 std::initializer_list<Matrix*> splits);

// The training split left in the file: position p is file row file_row_of[p].
TrainingRowsPtr make_training_rows(FileRows file, std::vector<Index> kept, std::vector<Index> file_row_of);

std::unique_ptr<DataSource> make_file_source(const Config& cfg);

}  // namespace kef
