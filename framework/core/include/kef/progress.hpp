#pragma once
// Progress of long work, on stderr. Components report; the host decides how (and whether) to show it.
#include <memory>
#include <string>
#include <string_view>

namespace kef {

class Progress {
 public:
  virtual ~Progress() = default;
  // fraction in [0, 1] or negative when unknown; message is a short free-form status.
  virtual void update(std::string_view task, double fraction, std::string_view message) = 0;
  virtual void done(std::string_view task, std::string_view message) = 0;
};

// Writes rate-limited lines to stderr ("[kef] task 42% message").
std::unique_ptr<Progress> make_stderr_progress(double min_interval_seconds = 1.0);
std::unique_ptr<Progress> make_silent_progress();
// Passes every report on to `inner` with `prefix` before its task ("model dkef: dkef stage 1 42% ..."),
// so that a run's progress lines say which model (and evaluator) they are about.
std::unique_ptr<Progress> make_prefixed_progress(Progress& inner, std::string prefix);

}  // namespace kef
