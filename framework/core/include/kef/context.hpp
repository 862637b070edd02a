#pragma once
// The run context: what a run hands to every component and building block besides the data. It holds
// the thread count (validated once, when the run starts), the progress sink, and the random stream of
// the work it is handed to. Components receive it in FitInput / EvalInput; numerical building blocks
// take `const Context&` where kef 0.2 took `int threads`.
//
// The processes of a distributed run: the root carries a Communicator (kef/communicator.hpp),
// set by the host with set_communicator() and copied unchanged into every child; the building blocks
// that reduce over rows or draws (kef/distributed_reduce.hpp) read it, so distributing them changed
// no signature. Without set_communicator() it is single_process(): the run is one process.
//
// Children. A component never draws from its caller's stream: it gets a child context. The root
// derives a child from a full dotted path, `child("model.NAME.fit")`, whose stream is
// RandomStream(seed, path), the stream kef 0.2 gave the same component; any other context derives by
// name or index, `child("cluster")`, whose stream is rng().derive(name) (an index child always derives,
// also from the root, whose own stream is RandomStream(seed, "") and is not drawn from). Either way a child's
// numbers depend only on the seed and the path, not on the order in which siblings run nor on the thread
// count. A child may carry a label ("model lite-gaussian"): progress reported through it is prefixed
// with the labels of its ancestors, so a line names what runs.
#include <cstdint>
#include <string>
#include <string_view>

#include "kef/communicator.hpp"
#include "kef/progress.hpp"
#include "kef/random.hpp"

namespace kef {

class Context {
 public:
  // The root of a run. threads: 0 means default_threads(); a negative count is a ConfigError naming
  // `threads_key` (the command-line flag or the API field it came from). progress: not owned, must
  // outlive every context derived from this one; null means silent.
  explicit Context(std::uint64_t seed, int threads = 0, Progress* progress = nullptr,
                   std::string_view threads_key = "threads");

  // The thread count a request means: 0 -> default_threads(), positive as given, negative refused
  // with a ConfigError naming `key`.
  static int resolve_threads(int requested, std::string_view key);

  // A child for a component or a piece of work, with an optional progress label (see above).
  Context child(std::string_view name, std::string_view label = {}) const;
  Context child(std::uint64_t index, std::string_view label = {}) const;

  int threads() const { return threads_; }
  // The processes this context's work is shared with; must outlive every context derived from this one.
  const Communicator& communicator() const { return *communicator_; }
  void set_communicator(const Communicator& communicator) { communicator_ = &communicator; }
  std::uint64_t seed() const { return seed_; }
  bool is_root() const { return root_; }
  // Labels from the root to here, joined by " / "; empty when none was given.
  const std::string& label() const { return progress_.label_; }

  // This context's stream. Draws advance it; child() does not depend on how far it has advanced.
  RandomStream& rng() { return rng_; }
  const RandomStream& rng() const { return rng_; }
  // Progress sink prefixed with label(). Reporting does not change results, hence const.
  Progress& progress() const { return progress_; }

 private:
  // Forwards to the root's sink with the task prefixed by the label.
  class LabelledProgress final : public Progress {
   public:
    LabelledProgress(Progress* sink, std::string label) : sink_(sink), label_(std::move(label)) {}
    void update(std::string_view task, double fraction, std::string_view message) override;
    void done(std::string_view task, std::string_view message) override;

    Progress* sink_;  // never null (the root substitutes a silent sink)
    std::string label_;

   private:
    std::string prefixed(std::string_view task) const;
  };

  Context(std::uint64_t seed, int threads, RandomStream rng, Progress* sink, std::string label,
          const Communicator* communicator);
  Context make_child(RandomStream rng, std::string_view label) const;

  std::uint64_t seed_;
  int threads_;
  bool root_;
  RandomStream rng_;
  mutable LabelledProgress progress_;
  const Communicator* communicator_;
};

}  // namespace kef
