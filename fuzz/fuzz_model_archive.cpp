// libFuzzer target: a saved model directory, as `kef score` reads it. The input is the files of the
// directory separated by lines "#@@ NAME" (model.toml first, then .npy files by name; NAME may have one
// directory part, as a mixture's component0/model.toml), e.g.
//   type = "lite"\n...#@@ alpha.npy\n<bytes>#@@ inducing_points.npy\n<bytes>
// The registry has the built-in components and the plugins of the fuzz build. The model is loaded as
// `kef sample` loads it (with its preprocessing), evaluated, and sampled when it has a sampler; the
// seed corpus (fuzz/corpus/model_archive) holds a saved model of every model type to mutate.
#include <string>
#include <string_view>

#include "fuzz_common.hpp"
#include "kef/conditional_model.hpp"
#include "kef/error.hpp"
#include "kef/model_archive.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"
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
    // Names are plain file names, or one directory and a file name: nothing hidden, no "..".
    const std::size_t slash = name.find('/');
    const bool plain = !name.empty() && name[0] != '.' && name.size() < 64 && name.back() != '/' &&
                       (slash == std::string::npos || (slash > 0 && name[slash + 1] != '.' &&
                                                       name.find('/', slash + 1) == std::string::npos));
    if (plain) {
      if (slash != std::string::npos) fs::create_directories(dir / name.substr(0, slash), ec);
      if (!ec) kef::fuzz::write_input("model/" + name, body);
    }
    if (at == std::string_view::npos) break;
    rest.remove_prefix(at + kMarker.size());
    const std::size_t eol = rest.find('\n');
    name = std::string(rest.substr(0, eol));
    if (eol == std::string_view::npos) break;
    rest.remove_prefix(eol + 1);
  }
  try {
    const kef::SavedModel saved = kef::load_saved_model(dir, registry());
    const kef::ModelPtr& model = saved.model;
    if (model->dim() < 1 || model->dim() > 64) return 0;
    // A conditional model p(y | x) has no density of whole rows: its own calls, on two rows of x.
    if (const kef::ConditionalModel* c = model->conditional()) {
      if (c->input_dim() < 1 || c->target_dim() < 1 || c->input_dim() + c->target_dim() > 64) return 0;
      kef::Matrix X = kef::Matrix::Zero(2, c->input_dim()), Y = kef::Matrix::Zero(2, c->target_dim());
      X(1, 0) = 0.5;
      (void)c->log_unnormalized(X, Y);
      (void)c->score(X, Y);
      (void)c->log_normalizer(X);
      kef::RandomStream rng(1, "fuzz");
      (void)c->sample(X, rng);
      return 0;
    }
    kef::Matrix X = kef::Matrix::Zero(2, model->dim());
    X(1, 0) = 0.5;
    (void)model->log_unnormalized(X);
    (void)model->score(X);
    if (model->can_sample()) {
      kef::RandomStream rng(1, "fuzz");
      (void)saved.transform.to_data(model->sample(4, rng));
    }
  } catch (const kef::Error&) {
  }
  return 0;
}
