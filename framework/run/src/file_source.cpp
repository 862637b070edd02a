// The built-in `file` source and the reading of a file's rows into the splits (file_source.hpp).
#include "file_source.hpp"

#include <algorithm>
#include <utility>

#include "kef/clonable.hpp"
#include "kef/data_io.hpp"
#include "kef/error.hpp"

namespace kef {

namespace fs = std::filesystem;

namespace {

// Paths in a pipeline file are relative to the file's own directory.
fs::path resolve_path(const Config& cfg, const std::string& p) {
  fs::path path(p);
  if (path.is_absolute()) return path;
  fs::path base = fs::path(cfg.source()).parent_path();
  return base / path;
}

fs::path existing_file(const Config& cfg, const char* key) {
  fs::path p = resolve_path(cfg, cfg.string(key));
  if (!fs::exists(p)) throw DataError(cfg.where(key) + ": no such file " + p.string());
  return p;
}

// The `columns` and `header` keys of a `file` source.
ColumnSelection column_selection(const Config& cfg) {
  return {cfg.has("columns") ? cfg.strings("columns") : std::vector<std::string>{},
          cfg.has("header") ? cfg.boolean("header") : true};
}

// The training split of a distributed run reading by rows: positions map to file rows through the
// shuffle; nothing is held but that map (8 bytes a row).
class FileTrainingRows final : public TrainingRows {
 public:
  FileTrainingRows(FileRows file, std::vector<Index> kept, std::vector<Index> file_row_of)
      : file_(std::move(file)), kept_(std::move(kept)), file_row_of_(std::move(file_row_of)) {}
  Index rows() const override { return static_cast<Index>(file_row_of_.size()); }
  Index cols() const override { return static_cast<Index>(kept_.size()); }
  Matrix range(Index begin, Index end) const override {
    check(begin, end);
    return read_file_rows(file_, kept_, {file_row_of_.begin() + begin, file_row_of_.begin() + end});
  }
  Matrix pick(const std::vector<Index>& positions) const override {
    std::vector<Index> file_rows;
    file_rows.reserve(positions.size());
    for (Index p : positions) {
      check(p, p + 1);
      file_rows.push_back(file_row_of_[static_cast<std::size_t>(p)]);
    }
    return read_file_rows(file_, kept_, file_rows);
  }

 private:
  void check(Index begin, Index end) const {
    if (begin < 0 || end < begin || end > rows())
      throw Error("training rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") asked of a split of " +
                  std::to_string(rows()) + " rows");
  }
  FileRows file_;
  std::vector<Index> kept_;
  std::vector<Index> file_row_of_;
};

class FileSource final : public Clonable<FileSource, DataSource> {
 public:
  explicit FileSource(const Config& cfg) : cfg_(cfg) {
    columns_ = column_selection(cfg);
    if (cfg.has("path") == (cfg.has("train") || cfg.has("test") || cfg.has("validation")))
      cfg.fail(cfg.has("path") ? "path" : "",
               "give either `path` (split by `split`) or explicit `train` / `validation` / `test` files");
    if (cfg.has("train") && cfg.has("split"))
      cfg.fail("split", "`split` applies to `path`; explicit train/validation/test files are not split");
  }

  SourceData load(RandomStream&) override {
    SourceData out;
    auto read = [&](const char* key) {
      fs::path p = existing_file(cfg_, key);
      TableData t = read_table(p, columns_);
      if (out.columns.empty()) {
        out.columns = t.columns;
      } else if (t.columns.size() != out.columns.size()) {
        throw DataError(p.string() + ": has " + std::to_string(t.columns.size()) +
                        " columns, the training file has " + std::to_string(out.columns.size()));
      }
      out.provenance += (out.provenance.empty() ? "" : ", ") + p.string();
      return t.values;
    };
    if (cfg_.has("path")) {
      out.samples = read("path");
    } else {
      out.train = read("train");
      if (cfg_.has("validation")) out.validation = read("validation");
      if (cfg_.has("test")) out.test = read("test");
    }
    return out;
  }

 private:
  Config cfg_;
  ColumnSelection columns_;
};

}  // namespace

bool reads_by_split(const Config& data) { return data.type() && *data.type() == "file" && data.has("path"); }

std::vector<std::pair<std::string, fs::path>> source_files(const Config& data) {
  std::vector<std::pair<std::string, fs::path>> files;
  if (!data.type() || *data.type() != "file") return files;
  for (const char* key : {"path", "train", "validation", "test"})
    if (data.has(key)) files.emplace_back(key, existing_file(data, key));
  return files;
}

FileRows file_rows_of(const Config& data, SourceData& header) {
  FileRows file;
  file.path = existing_file(data, "path");
  file.columns = column_selection(data);
  // The names only (no row is read), then the row count; the rows come with the splits.
  header.columns = read_table_rows(file.path, file.columns, {}).columns;
  header.provenance = file.path.string();
  file.rows = count_table_rows(file.path, file.columns.header);
  return file;
}

Matrix read_file_rows(const FileRows& file, const std::vector<Index>& kept, const std::vector<Index>& file_rows) {
  std::vector<std::pair<Index, Index>> order;  // (file row, destination row)
  order.reserve(file_rows.size());
  for (std::size_t k = 0; k < file_rows.size(); ++k) order.emplace_back(file_rows[k], static_cast<Index>(k));
  std::sort(order.begin(), order.end());
  std::vector<Index> distinct;
  std::vector<std::size_t> starts;  // where each distinct file row's destinations begin in `order`
  for (std::size_t k = 0; k < order.size(); ++k)
    if (k == 0 || order[k].first != order[k - 1].first) {
      distinct.push_back(order[k].first);
      starts.push_back(k);
    }
  starts.push_back(order.size());
  Matrix out(static_cast<Index>(file_rows.size()), static_cast<Index>(kept.size()));
  visit_table_rows(file.path, file.columns, &distinct, [&](Index k, const double* row) {
    const auto u = static_cast<std::size_t>(k);
    for (std::size_t d = starts[u]; d < starts[u + 1]; ++d)
      for (std::size_t j = 0; j < kept.size(); ++j) out(order[d].second, static_cast<Index>(j)) = row[kept[j]];
  });
  return out;
}

void read_splits(const FileRows& file, const std::vector<Index>& order, const std::vector<Index>& kept,
                 std::initializer_list<Matrix*> splits) {
  const Index n = file.rows;
  std::vector<Index> position(static_cast<std::size_t>(n));
  for (Index p = 0; p < n; ++p) position[static_cast<std::size_t>(order[static_cast<std::size_t>(p)])] = p;
  std::vector<std::pair<Index, Matrix*>> starts;  // first position of each split
  Index begin = 0;
  for (Matrix* m : splits) {
    starts.emplace_back(begin, m);
    begin += m->rows();
  }
  visit_table_rows(file.path, file.columns, nullptr, [&](Index f, const double* row) {
    Index p = position[static_cast<std::size_t>(f)];
    std::size_t s = starts.size() - 1;
    while (p < starts[s].first) --s;
    Matrix& split = *starts[s].second;
    p -= starts[s].first;
    for (std::size_t j = 0; j < kept.size(); ++j) split(p, static_cast<Index>(j)) = row[kept[j]];
  });
}

TrainingRowsPtr make_training_rows(FileRows file, std::vector<Index> kept, std::vector<Index> file_row_of) {
  return std::make_shared<FileTrainingRows>(std::move(file), std::move(kept), std::move(file_row_of));
}

std::unique_ptr<DataSource> make_file_source(const Config& cfg) { return std::make_unique<FileSource>(cfg); }

}  // namespace kef
