// MADE, MADE-MoG, MAF, MAF-MoG (plugins/flows, docs/math.md §15) value by value against the PyTorch
// anchor maf_torch.py: tests/plugins/flows/make_anchor_fixture.py ran it (trained briefly, --save-weights) and
// stored its parameters and, at 30 test rows, its log p, autograd score and diagonal Hessian; the same
// parameters loaded into kef's density must give the same numbers to 1e-10 relative. The masks, which kef
// builds from the degrees, must equal the anchor's.
#include <gtest/gtest.h>

#include <cstdio>

#include "flow_density.hpp"
#include "flow_model.hpp"
#include "kef/model_archive.hpp"
#include "kef/network/batch_norm.hpp"
#include "kef/network/dense.hpp"
#include "kef/npy.hpp"
#include "test_support.hpp"

namespace kef::flows {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = KEF_FLOWS_FIXTURES;

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", v);
  return buf;
}

struct AnchorCase {
  const char* name;
  Index layers, components;
  bool batch_norm;
};
const AnchorCase kCases[] = {{"made", 1, 0, false},
                             {"made_mog", 0, 3, false},
                             {"maf", 2, 0, false},
                             {"maf_mog", 2, 3, false},
                             {"maf_bn", 2, 0, true}};

Vector vec(const fs::path& p) {
  const Matrix m = read_npy(p);
  EXPECT_EQ(m.cols(), 1) << p;
  return m.col(0);
}

// Writes the anchor's parameters of one MADE (state-dict prefix) into kef's network, checking the masks.
void fill_made(Made& made, const fs::path& dir, const std::string& prefix, Index dim) {
  network::Network& net = made.net();
  Vector theta = net.parameters();
  const Index L = static_cast<Index>(made.degrees().hidden.size());
  for (Index l = 0; l < L; ++l) {
    const std::string s = std::to_string(l);
    const Matrix W = read_npy(dir / (prefix + ".W" + s + ".npy"));  // in x out, applied as h @ (W * mask)
    const Vector b = vec(dir / (prefix + ".b" + s + ".npy"));
    const auto& layer = dynamic_cast<const network::Dense&>(net.layer(2 * l));
    ASSERT_EQ(layer.input_width(), W.rows());
    ASSERT_EQ(layer.output_width(), W.cols());
    EXPECT_EQ(layer.mask(), Matrix(read_npy(dir / (prefix + ".mask" + s + ".npy")).transpose()))
        << prefix << " mask " << l;
    const Index off = net.parameter_offset(2 * l);
    Eigen::Map<Matrix>(theta.data() + off, W.cols(), W.rows()) = W.transpose();
    theta.segment(off + W.size(), b.size()) = b;
  }
  const auto& out = dynamic_cast<const network::Dense&>(net.layer(2 * L));
  const Index H = out.input_width(), cw = std::max<Index>(made.components(), 1), width = dim * cw;
  const char* heads[] = {"mu", "logprec", "logmix"};
  const Index nheads = made.components() > 0 ? 3 : 2;
  ASSERT_EQ(out.output_width(), nheads * width);
  const Index off = net.parameter_offset(2 * L);
  Eigen::Map<Matrix> Wk(theta.data() + off, nheads * width, H);
  const Matrix mask_out = read_npy(dir / (prefix + ".mask_out.npy"));  // H x D
  for (Index h = 0; h < nheads; ++h) {
    const Matrix A = read_npy(dir / (prefix + ".W_" + heads[h] + ".npy"));  // H x (D·C), column d·C + c
    const Vector b = vec(dir / (prefix + ".b_" + heads[h] + ".npy"));
    ASSERT_EQ(A.rows(), H);
    ASSERT_EQ(A.cols(), width);
    for (Index j = 0; j < width; ++j) {
      Wk.row(h * width + j) = A.col(j).transpose();
      theta[off + nheads * width * H + h * width + j] = b[j];
      EXPECT_EQ(out.mask().row(h * width + j), mask_out.col(j / cw).transpose()) << prefix << " output " << j;
    }
  }
  net.set_parameters(theta);
}

FlowDensity from_anchor(const AnchorCase& c) {
  const fs::path dir = kFixtures / c.name;
  FlowArchitecture a;
  a.dim = 3;
  a.hidden_units = {8, 8};
  a.layers = c.layers;
  a.components = c.components;
  a.batch_norm = c.batch_norm;
  FlowDensity d(a, vec(dir / "shift.npy"), vec(dir / "scale.npy"), flow_degrees(a, false, nullptr));
  for (Index k = 0; k < c.layers; ++k) {
    // The anchor's ModuleList holds MADE, batch norm, MADE, ... with batch norm, MADEs only without.
    const Index slot = c.batch_norm ? 2 * k : k;
    fill_made(d.made(k), dir, "flow." + std::to_string(slot), a.dim);
    if (c.batch_norm) {
      const std::string p = "flow." + std::to_string(slot + 1);
      Vector theta(2 * a.dim);
      theta << vec(dir / (p + ".log_gamma.npy")), vec(dir / (p + ".beta.npy"));
      d.batch_norm(k).set_parameters(theta);
      // The anchor records v with ε included; kef adds ε at use.
      const Vector v = vec(dir / (p + ".v.npy")).array() - a.batch_norm_epsilon;
      static_cast<network::BatchNorm&>(d.batch_norm(k).layer(0))
          .set_running_statistics(vec(dir / (p + ".m.npy")), v);
    }
  }
  if (c.components > 0) fill_made(d.base(), dir, "base", a.dim);
  return d;
}

double max_rel(const Vector& a, const Vector& b) {
  return ((a - b).array().abs() / b.array().abs()).maxCoeff();
}
double max_row_rel(const Matrix& a, const Matrix& b) {
  return ((a - b).rowwise().norm().array() / b.rowwise().norm().array()).maxCoeff();
}

TEST(FlowAnchor, LogDensityAndScoreMatchMafTorch) {
  for (const AnchorCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const fs::path dir = kFixtures / c.name;
    const FlowDensity d = from_anchor(c);
    const Matrix T = read_npy(dir / "test.npy");
    const Vector want_lp = vec(dir / "logp.npy");
    const Matrix want_score = read_npy(dir / "score.npy");
    Matrix score;
    const Vector lp = d.log_density_and_score(T, score);
    const double e_lp = max_rel(lp, want_lp), e_score = max_row_rel(score, want_score);
    RecordProperty(std::string(c.name) + "_logp_max_rel", sci(e_lp));
    RecordProperty(std::string(c.name) + "_score_max_rel", sci(e_score));
    std::printf("%-9s log p max rel %.2e, score max row rel %.2e\n", c.name, e_lp, e_score);
    EXPECT_LT(e_lp, 1e-10);
    EXPECT_LT(e_score, 1e-10);
    // Forward mode: the score again and the diagonal of the Hessian against the anchor's double backward.
    Matrix score_fwd, lap;
    const Vector lp_fwd = d.log_density_score_laplacian(T, score_fwd, lap);
    const Matrix want_lap = read_npy(dir / "laplacian.npy");
    const double e_lap = max_row_rel(lap, want_lap);
    RecordProperty(std::string(c.name) + "_laplacian_max_rel", sci(e_lap));
    std::printf("%-9s forward mode: log p %.2e, score %.2e, Laplacian max row rel %.2e\n", c.name,
                max_rel(lp_fwd, want_lp), max_row_rel(score_fwd, want_score), e_lap);
    EXPECT_LT(max_rel(lp_fwd, want_lp), 1e-10);
    EXPECT_LT(max_row_rel(score_fwd, want_score), 1e-10);
    EXPECT_LT(e_lap, 1e-10);
    // The model's chunked paths give the same values.
    const FlowModel model(c.name, d);
    EXPECT_LT(max_rel(model.log_unnormalized(T), want_lp), 1e-10);
    EXPECT_LT(max_row_rel(model.score(T), want_score), 1e-10);
    Matrix ms, ml;
    model.score_and_laplacian(T, ms, ml);
    EXPECT_LT(max_row_rel(ml, want_lap), 1e-10);
  }
}

// Real NVP against its PyTorch twin (tests/plugins/flows/real_nvp_torch.py, written beside the tests since the
// anchor has none): random parameters and recorded batch-norm statistics, loaded into kef's coupling
// layers; log p, score and Laplacian to 1e-10 relative, and the saved model reloads bitwise.
void fill_mlp(network::Network& net, const fs::path& dir, const std::string& prefix) {
  Vector theta = net.parameters();
  for (Index l = 0; 2 * l < net.layer_count(); ++l) {
    const Matrix W = read_npy(dir / (prefix + ".W" + std::to_string(l) + ".npy"));  // in x out
    const Vector b = vec(dir / (prefix + ".b" + std::to_string(l) + ".npy"));
    const Index off = net.parameter_offset(2 * l);
    ASSERT_EQ(net.layer(2 * l).input_width(), W.rows());
    ASSERT_EQ(net.layer(2 * l).output_width(), W.cols());
    Eigen::Map<Matrix>(theta.data() + off, W.cols(), W.rows()) = W.transpose();
    theta.segment(off + W.size(), b.size()) = b;
  }
  net.set_parameters(theta);
}

TEST(FlowAnchor, RealNvpMatchesItsTorchTwin) {
  const fs::path dir = kFixtures / "real_nvp";
  FlowArchitecture a;
  a.dim = 3;
  a.hidden_units = {8, 8};
  a.layers = 3;
  a.batch_norm = true;
  a.coupling = true;
  a.activation = network::ActivationKind::tanh;
  a.shift_activation = network::ActivationKind::relu;
  FlowDensity d(a, vec(dir / "shift.npy"), vec(dir / "scale.npy"), {});
  for (Index k = 0; k < a.layers; ++k) {
    const std::string s = std::to_string(k);
    fill_mlp(d.coupling(k).scale_net(), dir, "layer" + s + ".s");
    fill_mlp(d.coupling(k).shift_net(), dir, "layer" + s + ".t");
    const std::string p = "bn" + s;
    Vector theta(2 * a.dim);
    theta << vec(dir / (p + ".log_gamma.npy")), vec(dir / (p + ".beta.npy"));
    d.batch_norm(k).set_parameters(theta);
    const Vector v = vec(dir / (p + ".v.npy")).array() - a.batch_norm_epsilon;
    static_cast<network::BatchNorm&>(d.batch_norm(k).layer(0))
        .set_running_statistics(vec(dir / (p + ".m.npy")), v);
  }
  const Matrix T = read_npy(dir / "test.npy");
  Matrix score, fscore, lap;
  const Vector lp = d.log_density_and_score(T, score);
  const Vector flp = d.log_density_score_laplacian(T, fscore, lap);
  const double e_lp = max_rel(lp, vec(dir / "logp.npy")),
               e_s = max_row_rel(score, read_npy(dir / "score.npy"));
  const double e_l = max_row_rel(lap, read_npy(dir / "laplacian.npy"));
  std::printf("real_nvp  log p %.2e, score %.2e, Laplacian %.2e (max rel)\n", e_lp, e_s, e_l);
  RecordProperty("real_nvp_logp_max_rel", sci(e_lp));
  RecordProperty("real_nvp_score_max_rel", sci(e_s));
  RecordProperty("real_nvp_laplacian_max_rel", sci(e_l));
  EXPECT_LT(e_lp, 1e-10);
  EXPECT_LT(e_s, 1e-10);
  EXPECT_LT(e_l, 1e-10);
  EXPECT_LT(max_rel(flp, vec(dir / "logp.npy")), 1e-10);
  EXPECT_LT(max_row_rel(fscore, read_npy(dir / "score.npy")), 1e-10);
  const FlowModel model("real_nvp", d);
  const fs::path saved = test::temp_dir("flows-save-nvp") / "m";
  save_model(model, saved);
  const ModelPtr back = load_model(saved, test::plugin_registry());
  EXPECT_EQ(back->log_unnormalized(T), model.log_unnormalized(T));
  EXPECT_EQ(back->score(T), model.score(T));
  RandomStream r1(4, "draw"), r2(4, "draw");
  EXPECT_EQ(back->sample(50, r1), model.sample(50, r2));
}

// The saved model reloads through the plugin's loader with every value bitwise the same.
TEST(FlowAnchor, SavedModelsReloadBitwise) {
  for (const AnchorCase& c : kCases) {
    SCOPED_TRACE(c.name);
    const FlowModel model(c.name, from_anchor(c));
    const fs::path dir = test::temp_dir("flows-save") / c.name;
    save_model(model, dir);
    const ModelPtr back = load_model(dir, test::plugin_registry());
    const Matrix T = read_npy(kFixtures / c.name / "test.npy");
    EXPECT_EQ(back->type_name(), "flow");
    EXPECT_EQ(back->log_unnormalized(T), model.log_unnormalized(T));
    EXPECT_EQ(back->score(T), model.score(T));
    Matrix s1, l1, s2, l2;
    back->score_and_laplacian(T, s1, l1);
    model.score_and_laplacian(T, s2, l2);
    EXPECT_EQ(l1, l2);
    RandomStream r1(4, "draw"), r2(4, "draw");
    EXPECT_EQ(back->sample(50, r1), model.sample(50, r2));
    EXPECT_EQ(back->describe(), model.describe());
  }
}

}  // namespace
}  // namespace kef::flows
