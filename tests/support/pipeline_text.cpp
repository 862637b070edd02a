#include "pipeline_text.hpp"

#include <charconv>
#include <stdexcept>

namespace kef::test {

std::string toml_number(double value) {
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value);
  if (error != std::errc()) throw std::logic_error("toml_number: no room for the value");
  std::string text(buffer, end);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";
  return text;
}

std::string PipelineText::banana_body(Index n, Index test, Index validation) {
  return "type = \"synthetic/banana\"\nn = " + std::to_string(n) + "\nsplit = { test = " + std::to_string(test) +
         ", validation = " + std::to_string(validation) + " }\n";
}

PipelineText& PipelineText::seed(int seed) {
  has_seed_ = true;
  seed_ = seed;
  return *this;
}

PipelineText& PipelineText::no_seed() {
  has_seed_ = false;
  return *this;
}

PipelineText& PipelineText::banana(Index n, Index test, Index validation) {
  data_ = banana_body(n, test, validation);
  return *this;
}

PipelineText& PipelineText::data(const std::string& body) {
  data_ = body;
  if (!data_.empty() && data_.back() != '\n') data_ += '\n';
  return *this;
}

PipelineText& PipelineText::data_keys(const std::string& keys) {
  data_ += keys;
  if (!data_.empty() && data_.back() != '\n') data_ += '\n';
  return *this;
}

PipelineText& PipelineText::lite(const std::string& name, Index inducing_points, double sigma,
                                 const std::string& base_measure) {
  std::string body = "name = \"" + name + "\"\n[model.estimator]\ntype = \"lite\"\ninducing_points = " +
                     std::to_string(inducing_points) + "\n[model.kernel]\ntype = \"gaussian\"\nsigma = " +
                     toml_number(sigma) + "\n[model.base_measure]\n" + base_measure;
  return model(body);
}

PipelineText& PipelineText::lite(const std::string& name, Index inducing_points, double sigma, double base_std,
                                 const std::string& estimator_keys) {
  std::string body = "name = \"" + name + "\"\n[model.estimator]\ntype = \"lite\"\ninducing_points = " +
                     std::to_string(inducing_points) + "\n" + estimator_keys;
  if (!estimator_keys.empty() && estimator_keys.back() != '\n') body += '\n';
  body += "[model.kernel]\ntype = \"gaussian\"\nsigma = " + toml_number(sigma) +
          "\n[model.base_measure]\ntype = \"gaussian\"\nstd = " + toml_number(base_std) + "\n";
  models_.push_back(body);
  return *this;
}

PipelineText& PipelineText::model(const std::string& body) {
  models_.push_back(body.empty() || body.back() == '\n' ? body : body + "\n");
  return *this;
}

PipelineText& PipelineText::evaluate(const std::string& type, const std::string& keys) {
  std::string table = "type = \"" + type + "\"\n" + keys;
  if (!keys.empty() && keys.back() != '\n') table += '\n';
  evaluators_.push_back(table);
  return *this;
}

PipelineText& PipelineText::plugin_path(const std::string& dir) {
  plugin_paths_.push_back(dir);
  return *this;
}

PipelineText& PipelineText::append(const std::string& toml) {
  tail_ += toml;
  if (!tail_.empty() && tail_.back() != '\n') tail_ += '\n';
  return *this;
}

PipelineText& PipelineText::header(const std::string& toml) {
  header_ += toml;
  if (!header_.empty() && header_.back() != '\n') header_ += '\n';
  return *this;
}

std::string PipelineText::str() const {
  std::string text = "schema_version = 1\n";
  if (has_seed_) text += "seed = " + std::to_string(seed_) + "\n";
  text += header_ + "[data]\n" + data_;
  if (models_.empty()) {
    PipelineText fallback;
    fallback.lite("lite", 60);
    text += "[[model]]\n" + fallback.models_.front();
  }
  for (const std::string& m : models_) text += "[[model]]\n" + m;
  if (!plugin_paths_.empty()) {
    text += "[plugins]\npaths = [";
    for (std::size_t i = 0; i < plugin_paths_.size(); ++i) text += (i ? ", \"" : "\"") + plugin_paths_[i] + "\"";
    text += "]\n";
  }
  for (const std::string& e : evaluators_) text += "[[evaluate]]\n" + e;
  return text + tail_;
}

}  // namespace kef::test
