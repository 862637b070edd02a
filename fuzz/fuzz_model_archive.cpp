// libFuzzer target: a saved model directory, as `kef score` reads it. The input is the files of the
// directory separated by lines "#@@ NAME" (model.toml first, then .npy files by name), e.g.
//   type = "lite"\n...#@@ alpha.npy\n<bytes>#@@ inducing_points.npy\n<bytes>
// The registry has the built-in components and the plugins of the fuzz build.
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/pipeline.hpp"
#include "kef/registry.hpp"

namespace {

kef::Registry& registry() {
  static kef::Registry* r = [] {
    auto* reg = new kef::Registry();  // never destroyed: the plugins stay loaded until exit
    kef::register_core_components(*reg);
    reg->load_plugins(kef::plugin_search_path({}));
    return reg;
  }();
  return *r;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  const fs::path dir = kef::fuzz::work_dir() / "model";
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir);
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::string name = "model.toml";
  constexpr std::string_view kMarker = "#@@ ";
  while (true) {
    const std::size_t at = rest.find(kMarker);
    const std::string_view body = rest.substr(0, at);
    // Names are plain file names: no directories, nothing hidden.
    if (!name.empty() && name.find('/') == std::string::npos && name[0] != '.' && name.size() < 64)
      kef::fuzz::write_input("model/" + name, body);
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + kMarker.size());
    const std::size_t eol = rest.find('\n');
    name = std::string(rest.substr(0, eol));
    if (eol == std::string_view::npos) break;
    rest.remove_prefix(eol + 1);
  }
  try {
    kef::ModelPtr model = kef::load_model(dir, registry());
    if (model->dim() < 1 || model->dim() > 64) return 0;
    kef::Matrix X = kef::Matrix::Zero(2, model->dim());
    X(1, 0) = 0.5;
    (void)model->log_unnormalized(X);
    (void)model->score(X);
  } catch (const kef::Error&) {
  }
  return 0;
}
