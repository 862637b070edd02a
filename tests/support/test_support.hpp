#pragma once
// Helpers shared by the test suites.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "kef/kernel.hpp"
#include "kef/registry.hpp"
#include "kef/types.hpp"

namespace kef::test {

// Whether `text` (a command's output, a message) contains `part`.
inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Whether this test program is built with AddressSanitizer (make test-sanitize). ASan installs its own
// fatal-signal handlers and reserves terabytes of address space for its shadow memory, so a test of a
// crash's exit status or of `ulimit -v` must know.
constexpr bool built_with_address_sanitizer() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// A registry with every plugin of the build tree loaded (once per test program).
Registry& plugin_registry();

std::filesystem::path source_dir();  // repository root
std::filesystem::path binary_dir();  // build tree root
std::filesystem::path plugin_dir();  // build tree plugin directory
std::string kef_executable();        // path to the built kef command

// A fresh, empty temporary directory removed at process exit.
std::filesystem::path temp_dir(const std::string& tag);

// Runs a shell command, capturing stdout+stderr; returns the exit status.
int run_command(const std::string& command, std::string* output);

// The built kef command run with `args` (a shell fragment), with `env` ("VAR=value ...") before it.
struct CommandResult {
  int status;          // the exit status; -1 when killed by a signal
  std::string output;  // stdout and stderr
};
CommandResult kef_cmd(const std::string& args, const std::string& env = "");
// Writes `text` to dir/name (bytes as given) and returns the path.
std::filesystem::path write_file(const std::filesystem::path& dir, const std::string& name,
                                 const std::string& text);
// results.json and other JSON files of a run.
nlohmann::json read_json(const std::filesystem::path& path);

// The message of the E that f throws; a test failure (and "") when f throws nothing or another type.
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "unexpected exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no exception thrown";
  return {};
}

// `text` with the first occurrence of `from` replaced by `to` (a bad variant of a good config); a test
// failure, and `text` unchanged, when `from` does not occur.
std::string replaced(std::string text, const std::string& from, const std::string& to);

// Parses a TOML table given as text (source name "test") into a Config.
Config config_from(const std::string& toml_text);

// The registry's Gaussian kernel of bandwidth sigma (written with every digit, so the kernel's σ is
// the argument exactly).
KernelPtr gaussian_kernel(double sigma);

// A matrix from its rows, written as a braced list in a test.
Matrix from_rows(const std::vector<std::vector<double>>& rows);

// Two independent standard-normal point sets X (n x d) and Y (m x d), from stream (seed, tag).
struct PointPair {
  Matrix X, Y;
};
PointPair random_points(Index n, Index m, Index d, std::uint64_t seed, const std::string& tag);

// Central differences of a scalar function of a vector: gradient at x with step h.
Vector numerical_gradient(const std::function<double(const Vector&)>& f, const Vector& x, double h = 1e-5);

// The scalar Σ Ā ⊙ S over the stacks S of kernel.derivatives(X, Y, 2) (an empty adjoint counts as
// zero): Kernel::backward with adjoints Ā must return its gradient, which the kernel suites check
// against central differences of this function.
double stack_adjoint_loss(const Kernel& kernel, const Matrix& X, const Matrix& Y,
                          const KernelStacks& adjoint);

// Central differences of stack_adjoint_loss in Y, as an M x D matrix.
Matrix stack_adjoint_loss_gradient_y(const Kernel& kernel, const Matrix& X, const Matrix& Y,
                                     const KernelStacks& adjoint, double h = 1e-5);

// The largest deviations of Kernel::derivatives(X, Y, 2) from central differences (step h) in x, over
// every coordinate d: the d1 stacks from those of gram(), the d2 stacks from the second differences of
// gram() (which lose more digits: rounding ~ ε/h²) and from the differences of the analytic d1 stacks;
// +inf when a stack does not have the documented (N·D) x M shape.
struct KernelDerivativeErrors {
  double d1, d2_from_gram, d2_from_d1;
};
KernelDerivativeErrors kernel_derivative_errors(const Kernel& kernel, const Matrix& X, const Matrix& Y, double h);

// The largest deviation of Kernel::cross_derivatives(X, Y) from central differences (step h) in y_j of
// derivatives(X, Y, 2) (dxdy from the d1 stacks, d2xdy from the d2 stacks); +inf when the stacks do
// not have the documented (N·D) x (M·D) shape.
double cross_derivative_error(const Kernel& kernel, const Matrix& X, const Matrix& Y, double h);

// The largest deviation from central differences (step h) in y_j of cross_derivatives(X, Y) of
// (a) Kernel::cross_second_derivatives(X, Y) (∂²_{x_i}∂²_{y_j} k, from the d2xdy stacks) and (b) the
// transpose of cross_derivatives(Y, X).d2xdy (∂_{x_i}∂²_{y_j} k, from the dxdy stacks), the symmetry the
// Nyström basis relies on; +inf on a wrong shape.
double cross_second_derivative_error(const Kernel& kernel, const Matrix& X, const Matrix& Y, double h);

// A small DKEF meta-learning problem (docs/math.md §5) for the closed-form gradient suites: the kernel of
// `kernel_toml` with its parameters moved off their initial values by 0.1·N(0, 1) (so no test sits at
// a symmetric starting point), the base measure of `base_toml`, and standard normal training rows,
// validation rows and inducing points, all from the stream (seed, tag).
struct MetaProblem {
  KernelPtr kernel;
  BaseMeasurePtr base;
  Matrix train, validation, Z;
  double la = 0.05, lc = 0.02;
};
MetaProblem make_meta_problem(const std::string& kernel_toml, const std::string& base_toml, Index dim,
                              Index train_rows, Index validation_rows, Index inducing_points,
                              std::uint64_t seed, const std::string& tag);

}  // namespace kef::test
