#pragma once
// The data a pipeline fits and evaluates on: train / validation / test splits of one source.
#include <memory>
#include <string>
#include <vector>

#include "kef/column_roles.hpp"
#include "kef/data_transform.hpp"
#include "kef/model.hpp"
#include "kef/training_rows.hpp"
#include "kef/types.hpp"

namespace kef {

// What the [data] table's preprocessing did (results.json "data.preprocessing"); an empty member is a
// step that was not asked for.
struct PreprocessingReport {
  std::string split_rule;              // "counts" (test/validation keys) or "dkef"
  std::vector<std::string> excluded;   // columns removed by `exclude`
  struct Dequantized {
    std::string column;
    double gap;  // median gap between the column's sorted unique training values
  };
  std::vector<Dequantized> dequantized;
  struct Dropped {
    std::string column, partner;  // the dropped column and the kept one it was correlated with
    double correlation;           // their correlation on the training split when it was dropped
  };
  std::vector<Dropped> dropped;
  Index statistics_rows = 0;  // training rows the standardize/whiten statistics came from (0: none)
  std::vector<std::string> targets;  // the target columns of [data] targets, by name
};

struct Dataset {
  // The training split; in a distributed run reading its data by rows (kef/training_rows.hpp) it has no
  // rows, only the columns, and `train_rows` reads them.
  Matrix train;
  TrainingRowsPtr train_rows;
  Matrix validation;  // may have 0 rows
  Matrix test;        // may have 0 rows
  std::vector<std::string> columns;
  ModelPtr truth;  // the exact density, for synthetic sources (in the transformed coordinates)
  std::string provenance;
  // Data units -> the coordinates of train/validation/test ([data] standardize or whiten), with the
  // column names; saved with every model so that saved models are used in data units.
  DataTransform transform;
  PreprocessingReport preprocessing;
  // Inputs x and targets y ([data] targets; kef/column_roles.hpp); splits move whole rows, so every
  // split has the same roles. transform.roles is the same record, saved with the models.
  ColumnRoles roles;
  Index dim() const { return train.cols(); }
  // The training split's row count, however it is held.
  Index train_count() const { return train_rows ? train_rows->rows() : train.rows(); }
  // The training split read by position, however it is held: `train_rows`, or a view of `train`
  // (valid while this Dataset lives). For consumers that read it by rows (ComponentInfo::
  // reads_training_rows), so that one code path serves both.
  TrainingRowsPtr training() const {
    return train_rows ? train_rows : std::make_shared<MatrixRows>(train);
  }
  // The x and y blocks of a split (e.g. inputs(train), targets(test)).
  Matrix inputs(const Matrix& split) const { return roles.inputs_of(split); }
  Matrix targets(const Matrix& split) const { return roles.targets_of(split); }
};

}  // namespace kef
