#pragma once
// One exception hierarchy for the whole library. Messages follow "where: what (expected ..., got ...);
// hint". exit_status() is what the kef command returns: 2 for bad input, 1 for internal failures.
//
// Every class has its key function (the destructor) defined in libkef (src/error.cpp), so its vtable
// and type_info exist once, in libkef, and the classes are exported even from plugins compiled with
// hidden visibility. An exception thrown by plugin code therefore refers to no code or data of the
// plugin and stays valid after the plugin is unloaded (before this, each plugin had its own inline
// copy, and catching a plugin's error after its library was closed called through unmapped memory).
#include <stdexcept>
#include <string>

#define KEF_ERROR_API __attribute__((visibility("default")))

namespace kef {

class KEF_ERROR_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;
  ~Error() override;
  virtual int exit_status() const;
  virtual const char* kind() const;
};

// A pipeline file, a --set override or a component's keys are wrong.
class KEF_ERROR_API ConfigError : public Error {
 public:
  using Error::Error;
  ConfigError(const ConfigError&) = default;
  ConfigError& operator=(const ConfigError&) = default;
  ~ConfigError() override;
  int exit_status() const override;
  const char* kind() const override;
};

// A data file or data matrix is unusable (non-finite value, ragged row, wrong dimension, ...).
class KEF_ERROR_API DataError : public Error {
 public:
  using Error::Error;
  DataError(const DataError&) = default;
  DataError& operator=(const DataError&) = default;
  ~DataError() override;
  int exit_status() const override;
  const char* kind() const override;
};

// A plugin could not be loaded, was refused, or threw something that is not a kef::Error.
class KEF_ERROR_API PluginError : public Error {
 public:
  using Error::Error;
  PluginError(const PluginError&) = default;
  PluginError& operator=(const PluginError&) = default;
  ~PluginError() override;
  int exit_status() const override;
  const char* kind() const override;
};

// A saved model directory is missing, malformed or inconsistent.
class KEF_ERROR_API ModelFileError : public Error {
 public:
  using Error::Error;
  ModelFileError(const ModelFileError&) = default;
  ModelFileError& operator=(const ModelFileError&) = default;
  ~ModelFileError() override;
  int exit_status() const override;
  const char* kind() const override;
};

// A computation produced a non-finite number or an unsolvable system.
class KEF_ERROR_API NumericalError : public Error {
 public:
  using Error::Error;
  NumericalError(const NumericalError&) = default;
  NumericalError& operator=(const NumericalError&) = default;
  ~NumericalError() override;
  const char* kind() const override;
};

// Memory ran out (a std::bad_alloc, or an up-front estimate found it would): one kind and one exit
// status (2, as for a size asked for in the input) wherever it happens, in the host or in a plugin.
class KEF_ERROR_API OutOfMemoryError : public Error {
 public:
  using Error::Error;
  OutOfMemoryError(const OutOfMemoryError&) = default;
  OutOfMemoryError& operator=(const OutOfMemoryError&) = default;
  ~OutOfMemoryError() override;
  int exit_status() const override;
  const char* kind() const override;
};

// The OutOfMemoryError for a std::bad_alloc caught around `step` ("kef sample", "fit of model a"):
// names the step, and the size of the allocation that failed when `bytes` is given (> 0).
KEF_ERROR_API OutOfMemoryError out_of_memory_error(const std::string& step, double bytes = 0);

// Throws the error whose kind() is `kind` ("config error", ...; anything else: Error) with `message`:
// how a failure that crossed a process boundary as text (MPI ranks) is raised again with its exit status.
[[noreturn]] KEF_ERROR_API void throw_error_of_kind(const std::string& kind, const std::string& message);

}  // namespace kef
