#include "test_support.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <mutex>
#include <vector>

#include "kef/config.hpp"
#include "kef/pipeline.hpp"
#include "kef/random.hpp"

namespace kef::test {

Registry& plugin_registry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    register_core_components(*r);
    r->load_plugins({plugin_dir()});
    return r;
  }();
  return *registry;
}

std::filesystem::path source_dir() { return KEF_TEST_SOURCE_DIR; }
std::filesystem::path binary_dir() { return KEF_TEST_BINARY_DIR; }
std::filesystem::path plugin_dir() { return KEF_TEST_PLUGIN_DIR; }
std::string kef_executable() { return KEF_TEST_KEF_EXE; }

namespace {
struct TempDirs {
  std::mutex mutex;
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    for (const auto& d : dirs) {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  }
};
TempDirs& temp_dirs() {
  static TempDirs t;
  return t;
}
}  // namespace

std::filesystem::path temp_dir(const std::string& tag) {
  std::string pattern = (std::filesystem::temp_directory_path() / ("kef-test-" + tag + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  std::filesystem::path p(buf.data());
  std::lock_guard<std::mutex> lock(temp_dirs().mutex);
  temp_dirs().dirs.push_back(p);
  return p;
}

int run_command(const std::string& command, std::string* output) {
  std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");
  if (!pipe) return -1;
  std::array<char, 4096> buf{};
  std::string out;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  int status = pclose(pipe);
  if (output) *output = out;
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return -1;
}

CommandResult kef_cmd(const std::string& args, const std::string& env) {
  CommandResult r;
  r.status = run_command(env + (env.empty() ? "" : " ") + kef_executable() + " " + args, &r.output);
  return r;
}

std::filesystem::path write_file(const std::filesystem::path& dir, const std::string& name,
                                 const std::string& text) {
  const std::filesystem::path p = dir / name;
  std::ofstream(p, std::ios::binary) << text;
  return p;
}

KernelPtr gaussian_kernel(double sigma) {
  char text[64];
  std::snprintf(text, sizeof text, "type = \"gaussian\"\nsigma = %.17g", sigma);
  return plugin_registry().make_kernel(config_from(text), {});
}

Matrix from_rows(const std::vector<std::vector<double>>& rows) {
  Matrix A(static_cast<Index>(rows.size()), static_cast<Index>(rows[0].size()));
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < A.cols(); ++j)
      A(i, j) = rows[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
  return A;
}

nlohmann::json read_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

Config config_from(const std::string& toml_text) { return Config::parse_string(toml_text, "test"); }

PointPair random_points(Index n, Index m, Index d, std::uint64_t seed, const std::string& tag) {
  RandomStream rng(seed, tag);
  PointPair p;
  p.X = rng.normal_matrix(n, d);
  p.Y = rng.normal_matrix(m, d);
  return p;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

Vector numerical_gradient(const std::function<double(const Vector&)>& f, const Vector& x, double h) {
  Vector g(x.size());
  for (Index i = 0; i < x.size(); ++i) {
    Vector xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    g[i] = (f(xp) - f(xm)) / (2 * h);
  }
  return g;
}

double stack_adjoint_loss(const Kernel& kernel, const Matrix& X, const Matrix& Y,
                          const KernelStacks& adjoint) {
  KernelStacks st;
  kernel.derivatives(X, Y, 2, st);
  double v = 0;
  if (adjoint.value.size()) v += (adjoint.value.array() * st.value.array()).sum();
  if (adjoint.d1.size()) v += (adjoint.d1.array() * st.d1.array()).sum();
  if (adjoint.d2.size()) v += (adjoint.d2.array() * st.d2.array()).sum();
  return v;
}

Matrix stack_adjoint_loss_gradient_y(const Kernel& kernel, const Matrix& X, const Matrix& Y,
                                     const KernelStacks& adjoint, double h) {
  Eigen::Map<const Vector> y0(Y.data(), Y.size());
  const Vector g = numerical_gradient(
      [&](const Vector& yv) {
        return stack_adjoint_loss(kernel, X, Eigen::Map<const Matrix>(yv.data(), Y.rows(), Y.cols()),
                                  adjoint);
      },
      Vector(y0), h);
  return Eigen::Map<const Matrix>(g.data(), Y.rows(), Y.cols());
}

KernelDerivativeErrors kernel_derivative_errors(const Kernel& kernel, const Matrix& X, const Matrix& Y, double h) {
  const Index N = X.rows(), M = Y.rows(), D = X.cols();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  KernelStacks st;
  kernel.derivatives(X, Y, 2, st);
  if (st.d1.rows() != N * D || st.d1.cols() != M || st.d2.rows() != N * D || st.d2.cols() != M)
    return {kInf, kInf, kInf};
  KernelDerivativeErrors e{0.0, 0.0, 0.0};
  const Matrix G0 = kernel.gram(X, Y);
  for (Index d = 0; d < D; ++d) {
    Matrix Xp = X, Xm = X;
    Xp.col(d).array() += h;
    Xm.col(d).array() -= h;
    const Matrix Gp = kernel.gram(Xp, Y), Gm = kernel.gram(Xm, Y);
    e.d1 = std::max(e.d1, (st.d1.middleRows(d * N, N) - (Gp - Gm) / (2 * h)).cwiseAbs().maxCoeff());
    e.d2_from_gram =
        std::max(e.d2_from_gram, (st.d2.middleRows(d * N, N) - (Gp - 2 * G0 + Gm) / (h * h)).cwiseAbs().maxCoeff());
    KernelStacks sp, sm;
    kernel.derivatives(Xp, Y, 1, sp);
    kernel.derivatives(Xm, Y, 1, sm);
    const Matrix fd = (sp.d1.middleRows(d * N, N) - sm.d1.middleRows(d * N, N)) / (2 * h);
    e.d2_from_d1 = std::max(e.d2_from_d1, (st.d2.middleRows(d * N, N) - fd).cwiseAbs().maxCoeff());
  }
  return e;
}

double cross_derivative_error(const Kernel& kernel, const Matrix& X, const Matrix& Y, double h) {
  const Index M = Y.rows(), D = Y.cols();
  KernelCrossStacks cs;
  kernel.cross_derivatives(X, Y, cs);
  for (const Matrix* m : {&cs.dxdy, &cs.d2xdy})
    if (m->rows() != X.rows() * D || m->cols() != M * D) return std::numeric_limits<double>::infinity();
  KernelCrossStacks out;
  out.dxdy.resize(X.rows() * D, M * D);
  out.d2xdy.resize(X.rows() * D, M * D);
  for (Index j = 0; j < D; ++j) {
    Matrix Yp = Y, Ym = Y;
    Yp.col(j).array() += h;
    Ym.col(j).array() -= h;
    KernelStacks sp, sm;
    kernel.derivatives(X, Yp, 2, sp);
    kernel.derivatives(X, Ym, 2, sm);
    out.dxdy.middleCols(j * M, M) = (sp.d1 - sm.d1) / (2 * h);  // ∂_{y_j} of ∂_{x_i} k, all i stacked
    out.d2xdy.middleCols(j * M, M) = (sp.d2 - sm.d2) / (2 * h);
  }
  return std::max((cs.dxdy - out.dxdy).cwiseAbs().maxCoeff(), (cs.d2xdy - out.d2xdy).cwiseAbs().maxCoeff());
}

double cross_second_derivative_error(const Kernel& kernel, const Matrix& X, const Matrix& Y, double h) {
  const Index N = X.rows(), M = Y.rows(), D = Y.cols();
  Matrix d2xd2y;
  kernel.cross_second_derivatives(X, Y, d2xd2y);
  KernelCrossStacks swapped;
  kernel.cross_derivatives(Y, X, swapped);
  const Matrix dxd2y = swapped.d2xdy.transpose();
  for (const Matrix* m : std::initializer_list<const Matrix*>{&d2xd2y, &dxd2y})
    if (m->rows() != N * D || m->cols() != M * D) return std::numeric_limits<double>::infinity();
  Matrix fd22(N * D, M * D), fd12(N * D, M * D);
  for (Index j = 0; j < D; ++j) {
    Matrix Yp = Y, Ym = Y;
    Yp.col(j).array() += h;
    Ym.col(j).array() -= h;
    KernelCrossStacks sp, sm;
    kernel.cross_derivatives(X, Yp, sp);
    kernel.cross_derivatives(X, Ym, sm);
    // ∂_{y_j} of column block j, which already holds one ∂_{y_j}.
    fd22.middleCols(j * M, M) = (sp.d2xdy.middleCols(j * M, M) - sm.d2xdy.middleCols(j * M, M)) / (2 * h);
    fd12.middleCols(j * M, M) = (sp.dxdy.middleCols(j * M, M) - sm.dxdy.middleCols(j * M, M)) / (2 * h);
  }
  return std::max((d2xd2y - fd22).cwiseAbs().maxCoeff(), (dxd2y - fd12).cwiseAbs().maxCoeff());
}

MetaProblem make_meta_problem(const std::string& kernel_toml, const std::string& base_toml, Index dim,
                              Index train_rows, Index validation_rows, Index inducing_points,
                              std::uint64_t seed, const std::string& tag) {
  Registry& reg = plugin_registry();
  MetaProblem p;
  RandomStream rng(seed, tag);
  p.kernel = reg.make_kernel(config_from(kernel_toml), BuildContext{dim, &reg, &rng});
  Vector theta = p.kernel->parameters();
  theta += 0.1 * rng.normal_matrix(theta.size(), 1).col(0);
  p.kernel->set_parameters(theta);
  p.base = reg.make_base_measure(config_from(base_toml), BuildContext{dim, &reg});
  p.train = rng.normal_matrix(train_rows, dim);
  p.validation = rng.normal_matrix(validation_rows, dim);
  p.Z = rng.normal_matrix(inducing_points, dim);
  return p;
}

}  // namespace kef::test
