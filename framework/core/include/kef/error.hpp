#pragma once
// One exception hierarchy for the whole library. Messages follow "where: what (expected ..., got ...);
// hint". exit_status() is what the kef command returns: 2 for bad input, 1 for internal failures.
#include <stdexcept>
#include <string>

namespace kef {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  virtual int exit_status() const { return 1; }
  virtual const char* kind() const { return "error"; }
};

// A pipeline file, a --set override or a component's keys are wrong.
class ConfigError : public Error {
 public:
  using Error::Error;
  int exit_status() const override { return 2; }
  const char* kind() const override { return "config error"; }
};

// A data file or data matrix is unusable (non-finite value, ragged row, wrong dimension, ...).
class DataError : public Error {
 public:
  using Error::Error;
  int exit_status() const override { return 2; }
  const char* kind() const override { return "data error"; }
};

// A plugin could not be loaded, was refused, or threw something that is not a kef::Error.
class PluginError : public Error {
 public:
  using Error::Error;
  int exit_status() const override { return 2; }
  const char* kind() const override { return "plugin error"; }
};

// A saved model directory is missing, malformed or inconsistent.
class ModelFileError : public Error {
 public:
  using Error::Error;
  int exit_status() const override { return 2; }
  const char* kind() const override { return "model file error"; }
};

// A computation produced a non-finite number or an unsolvable system.
class NumericalError : public Error {
 public:
  using Error::Error;
  const char* kind() const override { return "numerical error"; }
};

}  // namespace kef
