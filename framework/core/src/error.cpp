// The key functions of the error classes: their vtables and type_info live here, in libkef only
// (see error.hpp).
#include "kef/error.hpp"

#include "kef/allocator.hpp"
#include "kef/memory_budget.hpp"

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

OutOfMemoryError::~OutOfMemoryError() = default;
int OutOfMemoryError::exit_status() const { return 2; }
const char* OutOfMemoryError::kind() const { return "out of memory"; }

OutOfMemoryError out_of_memory_error(const std::string& step, double bytes) {
  // The failed request the allocation wrappers recorded (kef/allocator.hpp), read even when `bytes` is
  // given so that it is not reported again with a later failure.
  const double recorded = take_failed_allocation_bytes();
  if (bytes <= 0) bytes = recorded;
  const std::string size = bytes > 0 ? " of " + memory_text(bytes) : "";
  return OutOfMemoryError(step + ": an allocation" + size +
                          " failed: the machine has not the memory this step asked for; ask for less (fewer "
                          "rows, samples or a smaller model) or free memory");
}

void throw_error_of_kind(const std::string& kind, const std::string& message) {
  if (kind == ConfigError("").kind()) throw ConfigError(message);
  if (kind == DataError("").kind()) throw DataError(message);
  if (kind == PluginError("").kind()) throw PluginError(message);
  if (kind == ModelFileError("").kind()) throw ModelFileError(message);
  if (kind == NumericalError("").kind()) throw NumericalError(message);
  if (kind == OutOfMemoryError("").kind()) throw OutOfMemoryError(message);
  throw Error(message);
}

}  // namespace kef
