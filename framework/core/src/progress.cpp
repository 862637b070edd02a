#include "kef/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>

namespace kef {

namespace {

class StderrProgress final : public Progress {
 public:
  explicit StderrProgress(double interval) : interval_(interval), tty_(isatty(2) != 0) {}

  void update(std::string_view task, double fraction, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto now = std::chrono::steady_clock::now();
    double since = std::chrono::duration<double>(now - last_).count();
    if (since < interval_ && task == last_task_) return;
    last_ = now;
    last_task_ = std::string(task);
    std::string line = "[kef] " + std::string(task);
    if (fraction >= 0) line += " " + std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "%";
    if (!message.empty()) line += " " + std::string(message);
    // On a terminal the line is redrawn in place; in logs each update is its own line.
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      open_line_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }

  void done(std::string_view task, std::string_view message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (tty_ && open_line_) std::fprintf(stderr, "\r\033[K");
    open_line_ = false;
    std::fprintf(stderr, "[kef] %.*s: %.*s\n", static_cast<int>(task.size()), task.data(),
                 static_cast<int>(message.size()), message.data());
    std::fflush(stderr);
    last_task_.clear();
  }

 private:
  double interval_;
  bool tty_;
  bool open_line_ = false;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point last_{};
  std::string last_task_;
};

class SilentProgress final : public Progress {
 public:
  void update(std::string_view, double, std::string_view) override {}
  void done(std::string_view, std::string_view) override {}
};

class PrefixedProgress final : public Progress {
 public:
  PrefixedProgress(Progress& inner, std::string prefix) : inner_(inner), prefix_(std::move(prefix)) {}
  void update(std::string_view task, double fraction, std::string_view message) override {
    inner_.update(prefix_ + std::string(task), fraction, message);
  }
  void done(std::string_view task, std::string_view message) override {
    inner_.done(prefix_ + std::string(task), message);
  }

 private:
  Progress& inner_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<Progress> make_prefixed_progress(Progress& inner, std::string prefix) {
  return std::make_unique<PrefixedProgress>(inner, std::move(prefix));
}

std::unique_ptr<Progress> make_stderr_progress(double min_interval_seconds) {
  return std::make_unique<StderrProgress>(min_interval_seconds);
}
std::unique_ptr<Progress> make_silent_progress() { return std::make_unique<SilentProgress>(); }

}  // namespace kef
