#pragma once
// A data source produces samples (and, for synthetic sources, the exact density). Splitting,
// shuffling, standardisation and whitening are done by the host, identically for every source.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kef/clonable.hpp"
#include "kef/model.hpp"
#include "kef/random.hpp"
#include "kef/types.hpp"

namespace kef {

struct SourceData {
  Matrix samples;  // all rows, to be split by the host; empty when explicit splits are given
  std::optional<Matrix> train, validation, test;  // explicit splits (e.g. separate files)
  std::vector<std::string> columns;
  ModelPtr truth;
  std::string provenance;
};

class DataSource {
 public:
  static constexpr const char* kInterface = "data_source";

  virtual ~DataSource() = default;
  // A copy sharing no mutable state with this one (see kef/clonable.hpp).
  std::unique_ptr<DataSource> clone() const { return std::unique_ptr<DataSource>(clone_raw()); }

  virtual SourceData load(RandomStream& rng) = 0;

 protected:
  DataSource() = default;
  DataSource(const DataSource&) = default;
  DataSource& operator=(const DataSource&) = default;
  virtual DataSource* clone_raw() const = 0;
};

using DataSourcePtr = std::shared_ptr<DataSource>;

}  // namespace kef
