#pragma once
// A saved model is a directory: model.toml (type, scalars, component tables, provenance) and NumPy
// .npy arrays, so it reloads with kef and reads from Python with numpy.load.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "kef/base_measure.hpp"
#include "kef/config.hpp"
#include "kef/data_transform.hpp"
#include "kef/kernel.hpp"
#include "kef/model.hpp"

namespace kef {

class Registry;

// Models write their dimension as `dim` so that components needing it (deep kernels) rebuild.
class ModelWriter {
 public:
  ModelWriter(std::filesystem::path dir, std::string model_type);
  Config& manifest() { return manifest_; }                         // top-level keys of model.toml
  void write_array(const std::string& name, const Matrix& array);  // name.npy, 2-D
  void write_array(const std::string& name, const Vector& array);  // name.npy, 1-D
  // [section] = the component's resolved config; its parameters go to section_parameters.npy.
  void write_component(const std::string& section, const Component& component);
  void finish();  // writes model.toml
  const std::filesystem::path& dir() const { return dir_; }
  // An [origins] table naming, for the model type and every component written (and their parts), the
  // plugin that provides it and its file, so that loading without that plugin can say what to load.
  void record_origins(const Registry& registry);

 private:
  struct Written {
    std::string section, interface, type;
    Config config;
  };
  std::filesystem::path dir_;
  Config manifest_;
  std::vector<Written> components_;
};

class ModelReader {
 public:
  explicit ModelReader(std::filesystem::path dir);
  const Config& manifest() const { return manifest_; }
  std::string model_type() const;
  // The model's dimension (`dim` in model.toml), passed to rebuilt components; −1 when absent.
  Index dim() const;
  Matrix read_array(const std::string& name) const;
  // The checked reads every model's load needs: a finite column vector of `size` entries (name.npy),
  // and a manifest key that must exist and be an integer ≥ 1 or a finite number > 0. Failures are
  // ModelFileErrors naming model.toml or the array, its shape and what was expected.
  Vector read_vector(const std::string& name, Index size) const;
  Index positive_integer(const char* key) const;
  double positive_number(const char* key) const;
  KernelPtr read_kernel(const std::string& section, Registry& registry) const;
  BaseMeasurePtr read_base_measure(const std::string& section, Registry& registry) const;
  const std::filesystem::path& dir() const { return dir_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void restore_parameters(const std::string& section, Component& component) const;
  std::filesystem::path dir_;
  Config manifest_;
};

// Writes a model into dir (created; must not exist).
void save_model(const Model& model, const std::filesystem::path& dir);
// Also records the data's columns and the map to model coordinates (a [preprocessing] table in
// model.toml: kind, columns, log_abs_det, and target_columns for conditional data ([data] targets);
// preprocessing_matrix.npy and preprocessing_offset.npy), and, given the registry that built the model,
// where its components came from (ModelWriter::record_origins).
void save_model(const Model& model, const std::filesystem::path& dir, const DataTransform& transform,
                const Registry* registry = nullptr);
// Reads model.toml's `type` and dispatches to the registered loader. The model is in the coordinates
// it was fitted in (bitwise as saved). A component recorded in [origins] whose plugin is not loaded is a
// ModelFileError naming the plugin, its file and how to load it (--path, KEF_PLUGIN_PATH).
ModelPtr load_model(const std::filesystem::path& dir, Registry& registry);

// A saved model and the transform from data units to its coordinates (identity, with no columns,
// for models saved without one, e.g. by kef 0.2). ModelFileError when the record is inconsistent
// (shapes, non-finite values, log_abs_det disagreeing with the matrix, column count).
struct SavedModel {
  ModelPtr model;  // in model coordinates
  DataTransform
      transform;  // data units -> model coordinates (make_data_units_model)
};
SavedModel load_saved_model(const std::filesystem::path& dir, Registry& registry);
DataTransform read_data_transform(const ModelReader& reader, Index dim);

}  // namespace kef
