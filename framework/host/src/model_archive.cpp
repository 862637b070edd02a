#include "kef/model_archive.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <system_error>

#include "kef/error.hpp"
#include "kef/feature_map.hpp"
#include "kef/npy.hpp"
#include "kef/registry.hpp"

namespace kef {

namespace fs = std::filesystem;

ModelWriter::ModelWriter(fs::path dir, std::string model_type) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error(dir_.string() + ": cannot create model directory: " + ec.message());
  manifest_.set("type", model_type);
  manifest_.set("kef_version", std::string(version()));
}

namespace {

// A saved model is an output like any other: no non-finite parameter is written (the run then fails at
// "saving model NAME" and publishes nothing), naming the model directory, the array and the entry.
void require_finite_array(const fs::path& dir, const std::string& name, const Matrix& array) {
  for (Index i = 0; i < array.rows(); ++i)
    for (Index j = 0; j < array.cols(); ++j)
      if (!std::isfinite(array(i, j)))
        throw NumericalError(dir.string() + ": " + name + ".npy[" + std::to_string(i) + ", " + std::to_string(j) +
                             "] is not finite (" + std::to_string(array(i, j)) +
                             "); a model with a non-finite parameter is not saved");
}

}  // namespace

void ModelWriter::write_array(const std::string& name, const Matrix& array) {
  require_finite_array(dir_, name, array);
  write_npy(dir_ / (name + ".npy"), array);
}

void ModelWriter::write_array(const std::string& name, const Vector& array) {
  require_finite_array(dir_, name, array);
  write_npy(dir_ / (name + ".npy"), array);
}

void ModelWriter::write_component(const std::string& section, const Component& component) {
  const char* interface = dynamic_cast<const Kernel*>(&component)        ? Kernel::kInterface
                          : dynamic_cast<const BaseMeasure*>(&component) ? BaseMeasure::kInterface
                          : dynamic_cast<const FeatureMap*>(&component)  ? FeatureMap::kInterface
                                                                         : "";
  components_.push_back({section, interface, component.type_name(), component.config()});
  Config table = component.config();
  manifest_.set_table(section, table);
  Config written = manifest_.table(section);
  written.set("type", component.type_name());
  if (component.parameter_count() > 0) {
    Vector theta = component.parameters();
    write_npy(dir_ / (section + "_parameters.npy"), theta);
  }
}

void ModelWriter::finish() {
  const fs::path path = dir_ / "model.toml";
  std::ofstream out(path);
  out << "# kef saved model: reload with `kef score`, or read the .npy arrays with numpy.load\n";
  out << manifest_.to_toml(false) << "\n";
  out.close();  // checked after the data reaches the file, not only after buffering it
  if (!out) throw Error(path.string() + ": cannot write (disk full?)");
}

namespace {

constexpr const char* kOrigins = "origins";

std::string toml_quoted(const std::string& text);

// One [origins] entry: `key = { interface = ..., type = ..., plugin = ..., file = ... }`.
void add_origin(std::string& text, const Registry& registry, const std::string& key,
                const std::string& interface, const std::string& type) {
  const ComponentInfo* info = registry.find(interface, type);
  if (!info) return;  // built outside this registry: nothing to record
  text += toml_quoted(key) + " = { interface = " + toml_quoted(interface) + ", type = " + toml_quoted(type) +
          ", plugin = " + toml_quoted(info->plugin);
  for (const PluginRecord& p : registry.plugins())
    if (p.status == PluginRecord::Status::Loaded && p.name == info->plugin && !p.path.empty())
      text += ", file = " + toml_quoted(p.path.filename().string());
  text += " }\n";
}

// The component at `key` and the parts it declares (tables of its config with their own `type`).
void add_component_origins(std::string& text, const Registry& registry, const std::string& key,
                           const std::string& interface, const std::string& type, const Config& config) {
  add_origin(text, registry, key, interface, type);
  const ComponentInfo* info = registry.find(interface, type);
  if (!info) return;
  for (const PartSpec& part : info->all_parts()) {
    if (!config.has(part.name)) continue;
    const Config sub = config.table(part.name);
    if (const auto sub_type = sub.type())
      add_component_origins(text, registry, key + "." + part.name, part.interface, *sub_type, sub);
  }
}

}  // namespace

void ModelWriter::record_origins(const Registry& registry) {
  std::string text;
  add_origin(text, registry, "model", Model::kInterface, *manifest_.type());
  for (const Written& c : components_)
    if (!c.interface.empty()) add_component_origins(text, registry, c.section, c.interface, c.type, c.config);
  manifest_.set_table(kOrigins, Config::parse_string(text, "origins"));
}

ModelReader::ModelReader(fs::path dir) : dir_(std::move(dir)) {
  const fs::path path = dir_ / "model.toml";
  if (!fs::is_directory(dir_)) throw ModelFileError(dir_.string() + ": not a model directory");
  if (!fs::exists(path))
    throw ModelFileError(dir_.string() + ": no model.toml (is this a kef model directory?)");
  try {
    manifest_ = Config::parse_file(path.string());
  } catch (const ConfigError& e) {
    throw ModelFileError(e.what());
  }
  if (!manifest_.type()) fail("model.toml has no `type`");
}

std::string ModelReader::model_type() const { return *manifest_.type(); }

Matrix ModelReader::read_array(const std::string& name) const {
  const fs::path path = dir_ / (name + ".npy");
  if (!fs::exists(path)) fail("missing array " + path.filename().string());
  try {
    return read_npy(path);
  } catch (const DataError& e) {
    throw ModelFileError(e.what());
  }
}

Vector ModelReader::read_vector(const std::string& name, Index size) const {
  const Matrix a = read_array(name);
  if (a.cols() != 1 || a.rows() != size)
    fail(name + ".npy has shape " + std::to_string(a.rows()) + " x " + std::to_string(a.cols()) +
         ", expected a vector of " + std::to_string(size));
  if (!a.allFinite()) fail(name + ".npy has non-finite values");
  return a.col(0);
}

Index ModelReader::positive_integer(const char* key) const {
  if (!manifest_.has(key)) fail(std::string("model.toml has no `") + key + "`");
  const std::int64_t v = manifest_.integer(key);
  if (v < 1) fail(std::string("model.toml `") + key + "` must be at least 1 (got " + std::to_string(v) + ")");
  return static_cast<Index>(v);
}

double ModelReader::positive_number(const char* key) const {
  if (!manifest_.has(key)) fail(std::string("model.toml has no `") + key + "`");
  const double v = manifest_.number(key);
  if (!(v > 0.0) || !std::isfinite(v))
    fail(std::string("model.toml `") + key + "` must be a finite number > 0");
  return v;
}

void ModelReader::restore_parameters(const std::string& section, Component& component) const {
  if (component.parameter_count() == 0) return;
  Matrix theta = read_array(section + "_parameters");
  if (theta.size() != component.parameter_count())
    fail(section + "_parameters.npy has " + std::to_string(theta.size()) + " values, the " +
         component.type_name() + " " + section + " expects " + std::to_string(component.parameter_count()));
  component.set_parameters(Eigen::Map<const Vector>(theta.data(), theta.size()));
}

KernelPtr ModelReader::read_kernel(const std::string& section, Registry& registry) const {
  if (!manifest_.has(section)) fail("model.toml has no [" + section + "] table");
  KernelPtr k = registry.make_kernel(manifest_.table(section), BuildContext{dim(), &registry, nullptr});
  restore_parameters(section, *k);
  return k;
}

BaseMeasurePtr ModelReader::read_base_measure(const std::string& section, Registry& registry) const {
  if (!manifest_.has(section)) fail("model.toml has no [" + section + "] table");
  BaseMeasurePtr b =
      registry.make_base_measure(manifest_.table(section), BuildContext{dim(), &registry, nullptr});
  restore_parameters(section, *b);
  return b;
}

Index ModelReader::dim() const {
  if (!manifest_.has("dim")) return -1;
  if (!manifest_.holds_integer("dim") || manifest_.integer("dim") < 1)
    fail("`dim` must be a positive integer");
  return manifest_.integer("dim");
}

void ModelReader::fail(const std::string& what) const {
  throw ModelFileError((dir_ / "model.toml").string() + ": " + what);
}

void save_model(const Model& model, const fs::path& dir) {
  if (!model.can_save()) throw ModelFileError("model " + model.type_name() + " cannot be saved");
  ModelWriter writer(dir, model.type_name());
  model.save(writer);
  writer.finish();
}

namespace {

// Components recorded in [origins] must be registered before anything is built: the plugin that
// provides one may simply not be on the search path (a third-party kernel), and the registry's own
// "unknown type" error cannot say which plugin that was.
void check_origins(const ModelReader& reader, const Registry& registry) {
  if (!reader.manifest().has(kOrigins)) return;           // saved by kef 0.3.0 or earlier, or outside a run
  const_cast<Registry&>(registry).add_core_components();  // what Registry::load_model would add
  const Config origins = reader.manifest().table(kOrigins);
  for (const std::string& key : origins.keys()) {
    const Config o = origins.table(key);
    for (const char* field : {"interface", "type", "plugin"})
      if (!o.has(field)) reader.fail("[origins] " + key + " has no `" + field + "`");
    const std::string interface = o.string("interface"), type = o.string("type"), plugin = o.string("plugin");
    if (registry.find(interface, type)) continue;
    const std::string file = o.has("file") ? o.string("file") : std::string();
    std::string where_loaded;
    for (const PluginRecord& p : registry.plugins())
      if (p.name == plugin && p.status == PluginRecord::Status::Loaded) where_loaded = p.path.string();
    reader.fail(
        "the model's " + (key == "model" ? std::string("type") : "[" + key + "]") + " is " + interface + "/" +
        type + ", from plugin `" + plugin + "`" + (file.empty() ? std::string() : " (" + file + ")") +
        (where_loaded.empty()
             ? ", which is not loaded: give the directory that holds " + (file.empty() ? "it" : file) +
                   " with --path DIR (kef score, eval, sample), KEF_PLUGIN_PATH, or [plugins] paths in a "
                   "pipeline; `kef plugins --path DIR` lists what a directory provides"
             : ", which is loaded from " + where_loaded + " but does not provide it (another version?)"));
  }
}

std::string toml_quoted(const std::string& text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

constexpr const char* kPreprocessing = "preprocessing";

}  // namespace

void save_model(const Model& model, const fs::path& dir, const DataTransform& transform,
                const Registry* registry) {
  if (!model.can_save()) throw ModelFileError("model " + model.type_name() + " cannot be saved");
  ModelWriter writer(dir, model.type_name());
  model.save(writer);
  if (registry) writer.record_origins(*registry);
  std::string text = "kind = " + toml_quoted(transform.kind) + "\ncolumns = [";
  for (std::size_t i = 0; i < transform.columns.size(); ++i)
    text += (i ? ", " : "") + toml_quoted(transform.columns[i]);
  text += "]\n";
  if (transform.roles.conditional()) {
    // Column indices (0-based, into `columns`): names are not known for every source.
    text += "target_columns = [";
    for (std::size_t i = 0; i < transform.roles.targets.size(); ++i)
      text += (i ? ", " : "") + std::to_string(transform.roles.targets[i]);
    text += "]\n";
  }
  Config table = Config::parse_string(text, "preprocessing");
  if (!transform.identity()) {
    table.set("log_abs_det", transform.log_abs_det);
    writer.write_array("preprocessing_matrix", transform.matrix);
    writer.write_array("preprocessing_offset", transform.offset);
  }
  writer.manifest().set_table(kPreprocessing, table);
  writer.finish();
}

DataTransform read_data_transform(const ModelReader& reader, Index dim) {
  DataTransform t;
  if (!reader.manifest().has(kPreprocessing)) return t;
  Config table = reader.manifest().table(kPreprocessing);
  try {
    table.validate({KeySpec::string("kind", "none, standardize or whiten", "none")
                        .one_of({"none", "standardize", "whiten"}),
                    KeySpec::strings("columns", "the data's columns, in order"),
                    KeySpec::number("log_abs_det", "log|det A| of the map to model coordinates").optional(),
                    KeySpec::numbers("target_columns",
                                     "0-based indices of the target columns y ([data] targets); absent: "
                                     "unconditional data")
                        .optional()});
  } catch (const ConfigError& e) {
    throw ModelFileError(e.what());
  }
  const std::string kind = table.has("kind") ? table.string("kind") : "none";
  std::vector<std::string> columns =
      table.has("columns") ? table.strings("columns") : std::vector<std::string>{};
  if (!columns.empty() && static_cast<Index>(columns.size()) != dim)
    reader.fail("[preprocessing] columns lists " + std::to_string(columns.size()) +
                " names for a model of dimension " + std::to_string(dim));
  ColumnRoles roles;
  if (table.has("target_columns")) {
    std::vector<Index> targets;
    for (double v : table.numbers("target_columns")) {
      if (!(v == std::floor(v)) || v < 0 || v >= static_cast<double>(dim))
        reader.fail("[preprocessing] target_columns: " + std::to_string(v) +
                    " is not a column index of a model of dimension " + std::to_string(dim));
      targets.push_back(static_cast<Index>(v));
    }
    try {
      roles = make_column_roles(std::move(targets), dim);
    } catch (const Error& e) {
      reader.fail(std::string("[preprocessing] target_columns: ") + e.what());
    }
  }
  if (kind == "none") {
    t.columns = std::move(columns);
    t.roles = roles;
    return t;
  }
  const Matrix A = reader.read_array("preprocessing_matrix");
  const Matrix c = reader.read_array("preprocessing_offset");
  if (A.rows() != dim || A.cols() != dim || c.rows() != dim || c.cols() != 1)
    reader.fail("preprocessing_matrix.npy is " + std::to_string(A.rows()) + " x " + std::to_string(A.cols()) +
                " and preprocessing_offset.npy has " + std::to_string(c.size()) + " values; expected " +
                std::to_string(dim) + " x " + std::to_string(dim) + " and " + std::to_string(dim));
  try {
    t = make_data_transform(kind, A, c.col(0), std::move(columns));
  } catch (const Error& e) {
    reader.fail(std::string("[preprocessing]: ") + e.what());
  }
  try {
    set_column_roles(t, roles);  // a saved map that mixes inputs and targets is refused
  } catch (const Error& e) {
    reader.fail(std::string("[preprocessing]: ") + e.what());
  }
  if (!table.has("log_abs_det")) reader.fail("[preprocessing] has no `log_abs_det`");
  const double stored = table.number("log_abs_det");
  if (!(std::abs(stored - t.log_abs_det) <= 1e-9 * std::max(1.0, std::abs(stored))))
    reader.fail("[preprocessing] log_abs_det = " + std::to_string(stored) +
                " disagrees with preprocessing_matrix.npy (" + std::to_string(t.log_abs_det) + ")");
  return t;
}

SavedModel load_saved_model(const fs::path& dir, Registry& registry) {
  ModelReader reader(dir);
  check_origins(reader, registry);
  SavedModel saved;
  saved.model = registry.load_model(reader);
  saved.transform = read_data_transform(reader, saved.model->dim());
  return saved;
}

ModelPtr load_model(const fs::path& dir, Registry& registry) {
  ModelReader reader(dir);
  check_origins(reader, registry);
  return registry.load_model(reader);
}

}  // namespace kef
