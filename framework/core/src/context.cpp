#include "kef/context.hpp"

#include <string>
#include <utility>

#include "kef/error.hpp"
#include "kef/parallel.hpp"

namespace kef {

namespace {

class SilentSink final : public Progress {
 public:
  void update(std::string_view, double, std::string_view) override {}
  void done(std::string_view, std::string_view) override {}
};

// Stateless, so one instance serves every context without a sink, on any thread.
Progress* silent_sink() {
  static SilentSink sink;
  return &sink;
}

std::string joined(const std::string& parent, std::string_view label) {
  if (label.empty()) return parent;
  if (parent.empty()) return std::string(label);
  return parent + " / " + std::string(label);
}

}  // namespace

int Context::resolve_threads(int requested, std::string_view key) {
  if (requested < 0)
    throw ConfigError(std::string(key) +
                      ": invalid thread count (expected 0 for one per core, or a positive integer, got " +
                      std::to_string(requested) + ")");
  return requested == 0 ? default_threads() : requested;
}

Context::Context(std::uint64_t seed, int threads, Progress* progress, std::string_view threads_key)
    : Context(seed, resolve_threads(threads, threads_key), RandomStream(seed, ""),
              progress ? progress : silent_sink(), std::string(), &single_process()) {
  root_ = true;
}

Context::Context(std::uint64_t seed, int threads, RandomStream rng, Progress* sink, std::string label,
                 const Communicator* communicator)
    : seed_(seed),
      threads_(threads),
      root_(false),
      rng_(std::move(rng)),
      progress_(sink, std::move(label)),
      communicator_(communicator) {}

Context Context::make_child(RandomStream rng, std::string_view label) const {
  return Context(seed_, threads_, std::move(rng), progress_.sink_, joined(progress_.label_, label),
                 communicator_);
}

Context Context::child(std::string_view name, std::string_view label) const {
  // The root keys a child by its whole path, as kef 0.2 keyed every component's stream.
  return make_child(root_ ? RandomStream(seed_, name) : rng_.derive(name), label);
}

Context Context::child(std::uint64_t index, std::string_view label) const {
  return make_child(rng_.derive(index), label);
}

std::string Context::LabelledProgress::prefixed(std::string_view task) const {
  if (label_.empty()) return std::string(task);
  if (task.empty()) return label_;
  return label_ + " / " + std::string(task);
}

void Context::LabelledProgress::update(std::string_view task, double fraction, std::string_view message) {
  sink_->update(prefixed(task), fraction, message);
}

void Context::LabelledProgress::done(std::string_view task, std::string_view message) {
  sink_->done(prefixed(task), message);
}

}  // namespace kef
