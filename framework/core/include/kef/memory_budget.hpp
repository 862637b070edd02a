#pragma once
// Up-front memory estimates. A component whose keys set how much it allocates (layers, widths, inducing
// points, samples, grid cells) estimates the memory it will need, from its keys and the data's shape,
// before it allocates any, and refuses a run that cannot fit: a key inside its documented range must
// not take the machine down one allocation at a time. The limit is the memory available to the process
// (MemAvailable in /proc/meminfo, or the cgroup's memory.max when lower) unless a pipeline's top-level
// `memory_limit_gb` sets it (a machine that will free memory, or a run that must not take it all).
#include <optional>
#include <string>

namespace kef {

// What a limit set by the user means: the text of the pipeline key `memory_limit_gb` and of the
// commands' --memory-limit-gb, which set it (GB: 1e9 bytes).
inline constexpr const char* kMemoryLimitDoc =
    "the memory (GB) the components' up-front estimates may reach; default: the memory available when the "
    "run starts";

// Bytes available to this process now; nullopt when the system does not say (then nothing is refused).
std::optional<double> available_memory_bytes();

// The limit require_memory applies: set_memory_limit_bytes's value, else the available memory.
// Process-wide: a pipeline sets it from its `memory_limit_gb` (nullopt: the available memory).
std::optional<double> memory_limit_bytes();
void set_memory_limit_bytes(std::optional<double> bytes);

// Throws a ConfigError "WHERE: needs an estimated X GB for WHAT, more than ..." when `bytes` exceeds the
// limit; `where` is Config::where / KeySites::where of the key that sets the size.
void require_memory(double bytes, const std::string& where, const std::string& what);

// "1.5 GB", "312 MB", "4.0 TB": a size for messages (decimal units).
std::string memory_text(double bytes);

}  // namespace kef
