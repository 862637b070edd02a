// The key functions of the error classes: their vtables and type_info live here, in libkef only
// (see error.hpp).
#include "kef/error.hpp"

namespace kef {

Error::~Error() = default;
int Error::exit_status() const { return 1; }
const char* Error::kind() const { return "error"; }

ConfigError::~ConfigError() = default;
int ConfigError::exit_status() const { return 2; }
const char* ConfigError::kind() const { return "config error"; }

DataError::~DataError() = default;
int DataError::exit_status() const { return 2; }
const char* DataError::kind() const { return "data error"; }

PluginError::~PluginError() = default;
int PluginError::exit_status() const { return 2; }
const char* PluginError::kind() const { return "plugin error"; }

ModelFileError::~ModelFileError() = default;
int ModelFileError::exit_status() const { return 2; }
const char* ModelFileError::kind() const { return "model file error"; }

NumericalError::~NumericalError() = default;
const char* NumericalError::kind() const { return "numerical error"; }

void throw_error_of_kind(const std::string& kind, const std::string& message) {
  if (kind == ConfigError("").kind()) throw ConfigError(message);
  if (kind == DataError("").kind()) throw DataError(message);
  if (kind == PluginError("").kind()) throw PluginError(message);
  if (kind == ModelFileError("").kind()) throw ModelFileError(message);
  if (kind == NumericalError("").kind()) throw NumericalError(message);
  throw Error(message);
}

}  // namespace kef
