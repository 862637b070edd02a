#pragma once
// A data source produces samples (and, for synthetic sources, the exact density). Splitting,
// shuffling, standardisation and whitening are done by the host, identically for every source.
#include <memory>
#include <optional>
#include <string>
#include <vector>

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
  virtual SourceData load(RandomStream& rng) = 0;
};

using DataSourcePtr = std::shared_ptr<DataSource>;

}  // namespace kef
