// What the processes of a distributed run compare before any work (input_agreement.hpp).
#include "input_agreement.hpp"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <system_error>
#include <tuple>

#include "file_source.hpp"
#include "kef/byte_codec.hpp"
#include "kef/error.hpp"

namespace kef::pipeline_detail {

namespace {

namespace fs = std::filesystem;

// 64-bit words through a multiply-xorshift mix: it tells different inputs apart, it does not resist a
// deliberate collision (the processes are one user's job, not adversaries).
class Hash64 {
 public:
  explicit Hash64(std::uint64_t seed) : h_(0x9e3779b97f4a7c15ULL ^ seed) {}
  void add(std::uint64_t v) {
    h_ ^= v + 0x9e3779b97f4a7c15ULL + (h_ << 6) + (h_ >> 2);
    h_ *= 0xff51afd7ed558ccdULL;
    h_ ^= h_ >> 33;
  }
  // Whole words, then the tail packed into one word; the result depends only on the bytes when every
  // call but the last is given a multiple of 8 bytes.
  void add_bytes(const char* p, std::size_t n) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      add(w);
    }
    if (i < n) {
      std::uint64_t w = 0;
      std::memcpy(&w, p + i, n - i);
      add(w ^ (static_cast<std::uint64_t>(n - i) << 56));
    }
  }
  void add_text(const std::string& s) {
    add(s.size());
    add_bytes(s.data(), s.size());
  }
  std::string hex() const {
    std::ostringstream out;
    out << std::hex << h_;
    return out.str();
  }

 private:
  std::uint64_t h_;
};

// The values' bits and the shape (a column-major matrix).
std::string matrix_print(const double* values, Index rows, Index cols, const std::vector<std::string>& columns) {
  Hash64 h(static_cast<std::uint64_t>(rows));
  h.add(static_cast<std::uint64_t>(cols));
  h.add_bytes(reinterpret_cast<const char*>(values), static_cast<std::size_t>(rows * cols) * sizeof(double));
  for (const std::string& c : columns) h.add_text(c);
  return std::to_string(rows) + " x " + std::to_string(cols) + ", fingerprint " + h.hex();
}

// A value as the message shows it: long values (a list of many numbers) shortened, with a hash of the
// whole so that two long values still compare as the whole.
std::string shown(const std::string& text) {
  constexpr std::size_t kShown = 60;
  if (text.size() <= kShown + 20) return text;
  Hash64 h(text.size());
  h.add_bytes(text.data(), text.size());
  return text.substr(0, kShown) + "... (" + std::to_string(text.size()) + " characters, fingerprint " + h.hex() +
         ")";
}

void flatten(const nlohmann::ordered_json& v, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>& out) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.items()) flatten(x, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  // An array of tables ([[model]]) is keyed by position; an array of values is one value.
  if (v.is_array() && !v.empty() && v.front().is_object()) {
    for (std::size_t i = 0; i < v.size(); ++i) flatten(v[i], prefix + "[" + std::to_string(i) + "]", out);
    return;
  }
  out.emplace_back(prefix, shown(v.dump()));
}

// A value may carry, after this separator, the text a message shows for it; only what comes before
// it is compared.
constexpr char kShownAs = '\t';
std::string_view compared(const std::string& value) { return std::string_view(value).substr(0, value.find(kShownAs)); }
std::string_view displayed(const std::string& value) {
  const std::size_t tab = value.find(kShownAs);
  return tab == std::string::npos ? std::string_view(value) : std::string_view(value).substr(tab + 1);
}

const std::string* find(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& key) {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

// The first entry of rank q that differs from rank 0's, as "NAME is A on rank 0 and B on rank q".
std::string first_difference(const std::vector<std::pair<std::string, std::string>>& zero,
                             const std::vector<std::pair<std::string, std::string>>& other, int q,
                             bool quote_names) {
  const std::string rank = "rank " + std::to_string(q);
  const auto name = [&](const std::string& k) { return quote_names ? "`" + k + "`" : k; };
  const auto text = [](const std::string& v) { return std::string(displayed(v)); };
  for (const auto& [k, v] : zero) {
    const std::string* w = find(other, k);
    if (!w) return name(k) + " is " + text(v) + " on rank 0 and absent on " + rank;
    if (compared(*w) != compared(v)) return name(k) + " is " + text(v) + " on rank 0 and " + text(*w) + " on " + rank;
  }
  for (const auto& [k, w] : other)
    if (!find(zero, k)) return name(k) + " is absent on rank 0 and " + text(w) + " on " + rank;
  return {};
}

}  // namespace

std::string InputFingerprint::encode() const {
  std::vector<std::string> flat[4];
  for (const auto& [k, v] : pipeline) flat[0].push_back(k), flat[1].push_back(v);
  for (const auto& [k, v] : data) flat[2].push_back(k), flat[3].push_back(v);
  ByteWriter w;
  kef::encode(w, std::tie(flat[0], flat[1], flat[2], flat[3]));
  return w.take();
}

InputFingerprint InputFingerprint::decode(const std::string& bytes) {
  std::vector<std::string> flat[4];
  ByteReader r(bytes);
  kef::decode(r, std::tie(flat[0], flat[1], flat[2], flat[3]));
  if (flat[0].size() != flat[1].size() || flat[2].size() != flat[3].size() || !r.at_end())
    throw Error("distributed run: a process sent a malformed fingerprint of its inputs");
  InputFingerprint print;
  for (std::size_t i = 0; i < flat[0].size(); ++i) print.pipeline.emplace_back(flat[0][i], flat[1][i]);
  for (std::size_t i = 0; i < flat[2].size(); ++i) print.data.emplace_back(flat[2][i], flat[3][i]);
  return print;
}

void add_pipeline(InputFingerprint& print, const Config& root, bool with_defaults) {
  flatten(nlohmann::ordered_json::parse(root.to_json(with_defaults)), "", print.pipeline);
}

void add_plugins(InputFingerprint& print, const Registry& registry) {
  for (const PluginRecord& p : registry.plugins())
    if (p.status == PluginRecord::Status::Loaded) print.pipeline.emplace_back("plugin " + p.name, p.version);
}

void add_data_files(InputFingerprint& print, const Config& data) {
  for (const auto& [key, path] : source_files(data)) {
    std::error_code ec;
    // Only a regular file is hashed: anything else (a directory, a FIFO that would block) is for the
    // reader to refuse with its own message.
    if (!fs::is_regular_file(path, ec)) continue;
    std::ifstream in(path, std::ios::binary);
    if (!in) continue;
    Hash64 h(0);
    std::vector<char> block(std::size_t{1} << 20);  // a multiple of 8: only the last block has a tail
    std::uint64_t size = 0;
    while (in) {
      in.read(block.data(), static_cast<std::streamsize>(block.size()));
      const auto got = static_cast<std::size_t>(in.gcount());
      h.add_bytes(block.data(), got);
      size += got;
    }
    if (in.bad()) throw DataError(path.string() + ": read error while comparing the data between processes");
    // Keyed by the key alone: processes may resolve it to different places (each against its own copy
    // of the pipeline), and then the files are what differs.
    // The contents are compared, not the path: processes may read copies at different places.
    const fs::path shown_path = fs::absolute(path, ec);
    const std::string contents = std::to_string(size) + " bytes, fingerprint " + h.hex();
    print.data.emplace_back(data.dotted(key),
                            contents + kShownAs + (ec ? path : shown_path).string() + " (" + contents + ")");
  }
}

void add_matrix(InputFingerprint& print, const std::string& name, const InMemoryData& data) {
  const Eigen::Map<const Matrix> X = data.matrix();
  print.data.emplace_back(name, matrix_print(X.data(), X.rows(), X.cols(), data.columns));
}

void add_held_splits(InputFingerprint& print, const Dataset& data) {
  // Keyed by the split; where the rows came from (a path that may differ between copies) is shown only.
  const std::string from = data.provenance.empty() ? std::string() : " (" + data.provenance + ")";
  const auto add = [&](const std::string& split, const Matrix& rows) {
    const std::string contents = matrix_print(rows.data(), rows.rows(), rows.cols(), data.columns);
    print.data.emplace_back("the " + split + " split", contents + kShownAs + contents + from);
  };
  if (!data.train_rows) add("training", data.train);
  add("validation", data.validation);
  add("test", data.test);
}

void require_same_inputs(const std::vector<std::string>& encoded) {
  std::vector<InputFingerprint> prints;
  for (const std::string& e : encoded) prints.push_back(InputFingerprint::decode(e));
  for (std::size_t q = 1; q < prints.size(); ++q) {
    const std::string d = first_difference(prints[0].pipeline, prints[q].pipeline, static_cast<int>(q), true);
    if (!d.empty())
      throw ConfigError("distributed run: the processes resolved different pipelines: " + d +
                        "; every process must read the same pipeline (the same file and --set options, the "
                        "same plugins)");
  }
  for (std::size_t q = 1; q < prints.size(); ++q) {
    const std::string d = first_difference(prints[0].data, prints[q].data, static_cast<int>(q), false);
    if (!d.empty())
      throw DataError("distributed run: the processes were given different data: " + d +
                      "; every process must read the same rows");
  }
}

}  // namespace kef::pipeline_detail
