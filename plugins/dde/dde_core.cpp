#include "dde_core.hpp"

#include <cmath>
#include <limits>
#include <numbers>
#include <sstream>
#include <utility>

#include "kef/error.hpp"
#include "kef/network/activation.hpp"
#include "kef/network/dense.hpp"
#include "kef/normal_fill.hpp"
#include "kef/vector_exp.hpp"

namespace kef::dde {

Matrix KernelExpansion::gram(const Matrix& Y) const {
  if (random_features()) {
    // √(2/m) cos(Y Ωᵀ + b)
    const double scale = std::sqrt(2.0 / static_cast<double>(omega.rows()));
    Matrix A = Y * omega.transpose();
    A.rowwise() += phase.transpose();
    return scale * A.array().cos().matrix();
  }
  const Index m = Y.rows(), n = points.rows(), D = points.cols();
  Matrix K(m, n);
  // Direct differences (not ‖y‖² − 2y·z + ‖z‖²): exact zeros at coinciding points, no cancellation.
  // Column by column, coordinates in order, so the loop over the rows of Y vectorises.
  Eigen::ArrayXd s(m);
  for (Index i = 0; i < n; ++i) {
    s.setZero();
    for (Index d = 0; d < D; ++d) s += (Y.col(d).array() - points(i, d)).square();
    K.col(i) = -gamma * s;
  }
  return exp_of(std::move(K));
}

Vector KernelExpansion::values(const Matrix& Y) const { return gram(Y) * alpha; }

Matrix KernelExpansion::gradient(const Matrix& Y, Matrix* laplacian, Vector* values) const {
  if (random_features()) {
    // ∇_y Σ_j α_j √(2/m) cos(ω_jᵀy + b_j) = −Σ_j α_j √(2/m) sin(ω_jᵀy + b_j) ω_j;
    // ∂²_d f = −Σ_j α_j √(2/m) cos(ω_jᵀy + b_j) ω_jd² = −Φ(Y) (α ∘ Ω²)_d.
    const double scale = std::sqrt(2.0 / static_cast<double>(omega.rows()));
    Matrix A = Y * omega.transpose();
    A.rowwise() += phase.transpose();
    const Matrix Phi = scale * A.array().cos().matrix();
    if (values) *values = Phi * alpha;
    const Matrix S = -scale * A.array().sin().matrix();
    if (laplacian) *laplacian = -(Phi * (omega.array().square().colwise() * alpha.array()).matrix());
    return S * (omega.array().colwise() * alpha.array()).matrix();
  }
  // ∇_y Σ α_i e^{−γ‖y − z_i‖²} = −2γ Σ α_i k_i (y − z_i) = −2γ [(Kα) y − K (α ∘ Z)];
  // ∂²_d f = Σ α_i k_i (4γ² (y_d − z_id)² − 2γ) (docs/math.md §16).
  const Matrix K = gram(Y);
  const Vector Ka = K * alpha;
  if (values) *values = Ka;
  const Matrix KaZ = K * (points.array().colwise() * alpha.array()).matrix();
  Matrix G = -2.0 * gamma * (Y.array().colwise() * Ka.array() - KaZ.array()).matrix();
  if (laplacian) {
    const Index D = dim();
    laplacian->resize(Y.rows(), D);
    const Matrix Z2a = (points.array().square().colwise() * alpha.array()).matrix();
    const Matrix KaZ2 = K * Z2a;
    for (Index d = 0; d < D; ++d) {
      // Σ α_i k_i (y_d − z_id)² = y_d² (Kα) − 2 y_d K(α z_d) + K(α z_d²)
      const Vector sq = Y.col(d).array().square() * Ka.array() - 2.0 * Y.col(d).array() * KaZ.col(d).array() +
                        KaZ2.col(d).array();
      laplacian->col(d) = 4.0 * gamma * gamma * sq - 2.0 * gamma * Ka;
    }
  }
  return G;
}

double KernelExpansion::rkhs_norm2() const {
  return random_features() ? alpha.squaredNorm() : alpha.dot(gram(points) * alpha);
}

Matrix KernelExpansion::rkhs_gram() const {
  return random_features() ? Matrix(Matrix::Identity(alpha.size(), alpha.size())) : gram(points);
}

namespace {

network::Network make_mlp(Index in, Index width, Index depth, Index out) {
  using namespace network;
  Network net(in);
  Index prev = in;
  for (Index l = 0; l < depth; ++l) {
    const Index next = l + 1 == depth ? out : width;
    net.add(std::make_unique<Dense>(prev, next, WeightInit::glorot_uniform(prev, next)));
    if (l + 1 < depth) net.add(std::make_unique<Activation>(ActivationKind::relu, next));
    prev = next;
  }
  return net;
}

double mean(const Vector& v) { return v.sum() / static_cast<double>(v.size()); }

}  // namespace

network::Network make_generator(const Architecture& a) {
  return make_mlp(a.noise_dim + a.cond_dim, a.width, a.generator_depth, a.dim);
}
network::Network make_dual(const Architecture& a) {
  return make_mlp(a.cond_dim + a.dim, a.dual_hidden(), a.dual_depth, 1);
}

Matrix BaseMeasure::points(const Matrix& raw) const {
  if (kind == Kind::box)
    return ((raw.array().rowwise() * (b - a).transpose().array()).rowwise() + a.transpose().array()).matrix();
  return ((raw.array().rowwise() * b.transpose().array()).rowwise() + a.transpose().array()).matrix();
}

Vector BaseMeasure::log_density(const Matrix& Y) const {
  Vector out(Y.rows());
  if (kind == Kind::box) {
    const double log_p0 = -(b - a).array().log().sum();
    for (Index i = 0; i < Y.rows(); ++i) {
      const bool in = (Y.row(i).transpose().array() >= a.array()).all() &&
                      (Y.row(i).transpose().array() <= b.array()).all();
      out[i] = in ? log_p0 : -std::numeric_limits<double>::infinity();
    }
    return out;
  }
  const double log_c =
      -0.5 * static_cast<double>(dim()) * std::log(2.0 * std::numbers::pi) - b.array().log().sum();
  for (Index i = 0; i < Y.rows(); ++i)
    out[i] = log_c - 0.5 * ((Y.row(i).transpose() - a).array() / b.array()).square().sum();
  return out;
}

void BaseMeasure::score_and_laplacian(const Matrix& Y, Matrix& score, Matrix& laplacian) const {
  if (kind == Kind::box) {
    score.setZero(Y.rows(), dim());
    laplacian.setZero(Y.rows(), dim());
    return;
  }
  const Eigen::RowVectorXd inv_var = b.array().square().inverse().matrix().transpose();
  score = -((Y.rowwise() - a.transpose()).array().rowwise() * inv_var.array()).matrix();
  laplacian = (-inv_var).replicate(Y.rows(), 1);
}

IterationDraws IterationDraws::draw(RandomStream& rng, Index batch, Index noise_dim, Index dim,
                                    const TrainerOptions& o) {
  IterationDraws d;
  // The ziggurat: 21 draws of batch x noise_dim (268800 at the defaults) per iteration made the polar
  // method's log half of a DDE iteration's time.
  d.xi_f = normal_rows(rng, batch, noise_dim);
  for (Index r = 0; r < o.rounds; ++r) {
    for (Index s = 0; s < o.dual_steps; ++s) {
      d.xi_dual.push_back(normal_rows(rng, batch, noise_dim));
      if (o.base == BaseMeasure::Kind::gaussian) {
        d.u_dual.push_back(normal_rows(rng, batch, dim));
      } else {
        Matrix u(batch, dim);
        for (Index j = 0; j < dim; ++j)
          for (Index i = 0; i < batch; ++i) u(i, j) = rng.uniform();
        d.u_dual.push_back(std::move(u));
      }
    }
    d.xi_generator.push_back(normal_rows(rng, batch, noise_dim));
  }
  return d;
}

Trainer::Trainer(KernelExpansion f, network::Network generator, network::Network dual, Vector lo, Vector hi,
                 TrainerOptions options, std::string where)
    : Trainer(std::move(f), std::move(generator), std::move(dual),
              BaseMeasure::box(std::move(lo), std::move(hi)), options, std::move(where)) {}

Trainer::Trainer(KernelExpansion f, network::Network generator, network::Network dual, BaseMeasure p0,
                 TrainerOptions options, std::string where)
    : f_(std::move(f)),
      generator_(std::move(generator)),
      dual_(std::move(dual)),
      p0_(std::move(p0)),
      o_(options),
      where_(std::move(where)),
      adam_f_(o_.adam, where_ + " (f step)"),
      adam_g_(o_.adam, where_ + " (sampler step)"),
      rms_nu_(o_.rmsprop, where_ + " (dual step)") {
  if (o_.eta > 0.0) rkhs_gram_ = f_.rkhs_gram();
}

namespace {

// The blocks side by side. Only the conditional case joins: the unconditional one (cond_dim = 0) keeps
// its rows as they are, so it computes exactly what it did before the conditional extension.
Matrix beside(const Matrix& left, const Matrix& right) {
  Matrix out(left.rows(), left.cols() + right.cols());
  out << left, right;
  return out;
}

}  // namespace

Matrix Trainer::sampler_rows(const Matrix& xi, const Matrix& cond) const {
  if (o_.cond_dim == 0) return generator_.value(xi);
  return beside(cond, generator_.value(beside(xi, cond)));
}

Matrix Trainer::base_rows(const Matrix& raw, const Matrix& cond) const {
  if (o_.cond_dim == 0) return p0_.points(raw);
  return beside(cond, p0_.points(raw));
}

double Trainer::f_loss(const Matrix& batch, const Matrix& xq, Vector* grad) const {
  // ∂/∂α [−mean K(X_b, Z)α + mean K(X_q, Z)α + (η/2) αᵀ K(Z, Z) α]
  const Matrix Kb = f_.gram(batch), Kq = f_.gram(xq);
  const Vector wb = Vector::Constant(batch.rows(), 1.0 / static_cast<double>(batch.rows()));
  const Vector wq = Vector::Constant(xq.rows(), 1.0 / static_cast<double>(xq.rows()));
  double loss = -wb.dot(Kb * f_.alpha) + wq.dot(Kq * f_.alpha);
  if (grad) *grad = Kq.transpose() * wq - Kb.transpose() * wb;
  if (o_.eta > 0.0) {
    const Vector Ga = rkhs_gram_ * f_.alpha;
    loss += 0.5 * o_.eta * f_.alpha.dot(Ga);
    if (grad) *grad += o_.eta * Ga;
  }
  return loss;
}

double Trainer::dual_loss(const Matrix& xq, const Matrix& xu, Vector* grad) const {
  // −(mean ν(X_q) − mean e^{ν(X_u)}), both batches in one pass.
  const Index nq = xq.rows(), nu = xu.rows();
  Matrix X(nq + nu, xq.cols());
  X << xq, xu;
  network::Network::Tape tape;
  Matrix out;
  dual_.forward(X, 0, out, grad ? &tape : nullptr);
  const Vector vq = out.col(0).head(nq);
  const Vector eu = out.col(0).tail(nu).array().exp();
  const double loss = -(mean(vq) - mean(eu));
  if (grad) {
    Matrix adj(nq + nu, 1);
    adj.col(0).head(nq).setConstant(-1.0 / static_cast<double>(nq));
    adj.col(0).tail(nu) = eu / static_cast<double>(nu);
    grad->setZero(dual_.parameter_count());
    dual_.backward(X, tape, adj, grad, nullptr);
  }
  return loss;
}

double Trainer::generator_loss(const Matrix& xi, Vector* grad, const Matrix& cond) const {
  // −mean f(g(ξ)) + (1/λ) mean ν(g(ξ)); the adjoint of g's output is (−∇f + (1/λ)∇ν)/B. Conditional:
  // f and ν at (x, g(ξ, x)), and the adjoint is the y block of their input gradients.
  const Index B = xi.rows();
  const Index C = o_.cond_dim;
  if (C > 0 && (cond.rows() != B || cond.cols() != C))
    throw Error(where_ + ": the sampler step's conditioning inputs are " + std::to_string(cond.rows()) +
                " x " + std::to_string(cond.cols()) + " (expected " + std::to_string(B) + " x " +
                std::to_string(C) + ")");
  network::Network::Tape gtape, ntape;
  Matrix x, v, input, y;
  if (C > 0) {
    input = beside(xi, cond);
    generator_.forward(input, 0, y, grad ? &gtape : nullptr);
    x = beside(cond, y);
  } else {
    generator_.forward(xi, 0, x, grad ? &gtape : nullptr);
  }
  dual_.forward(x, 0, v, grad ? &ntape : nullptr);
  const double inv_lambda = 1.0 / o_.lambda;
  Vector fx;
  Matrix grad_f;
  if (grad)
    grad_f = f_.gradient(x, nullptr, &fx);
  else
    fx = f_.values(x);
  const double loss = -mean(fx) + inv_lambda * mean(v.col(0));
  if (grad) {
    const double w = 1.0 / static_cast<double>(B);
    Matrix gx = Matrix::Zero(B, x.cols());
    dual_.backward(x, ntape, Matrix::Constant(B, 1, inv_lambda * w), nullptr, &gx);
    gx -= w * grad_f;
    grad->setZero(generator_.parameter_count());
    if (C > 0) {
      const Matrix gy = gx.rightCols(x.cols() - C);
      generator_.backward(input, gtape, gy, grad, nullptr);
    } else {
      generator_.backward(xi, gtape, gx, grad, nullptr);
    }
  }
  return loss;
}

double mmd2_unbiased(const Matrix& X, const Matrix& Y, double gamma) {
  const double n = static_cast<double>(X.rows()), m = static_cast<double>(Y.rows());
  if (X.rows() < 2 || Y.rows() < 2) throw DataError("dde: MMD² needs at least 2 rows in each sample");
  KernelExpansion kx{X, Vector(), gamma}, ky{Y, Vector(), gamma};
  // The diagonals are exp(0) = 1 exactly (direct differences), so the off-diagonal sums are the sums
  // minus n and m.
  const double xx = (kx.gram(X).sum() - n) / (n * (n - 1.0));
  const double yy = (ky.gram(Y).sum() - m) / (m * (m - 1.0));
  const double xy = ky.gram(X).sum() / (n * m);
  return xx + yy - 2.0 * xy;
}

void check_and_clip(Vector& gradient, double clip, const std::string& where, const char* step, long index) {
  if (!gradient.allFinite()) {
    Index bad = 0;
    while (std::isfinite(gradient[bad])) ++bad;
    std::ostringstream os;
    os << where << ": iteration " << index << ", " << step << ": the gradient is not finite (entry " << bad
       << " of " << gradient.size() << " is " << gradient[bad]
       << ") although the loss is; try a smaller learning_rate or a smaller clip";
    throw NumericalError(os.str());
  }
  if (clip <= 0.0) return;
  try {
    clip_global_norm(gradient, clip);
  } catch (const NumericalError&) {
    // Finite entries whose squares overflow: the norm is infinite although no entry is.
    std::ostringstream os;
    os << where << ": iteration " << index << ", " << step
       << ": the gradient's norm overflows (largest entry " << gradient.cwiseAbs().maxCoeff()
       << "); the fit has diverged: try a smaller learning_rate";
    throw NumericalError(os.str());
  }
}

void Trainer::check(double loss, const char* step, long index) const {
  if (std::isfinite(loss)) return;
  std::ostringstream os;
  os << where_ << ": iteration " << index << ", " << step << ": the loss is " << loss
     << " (not finite); try a smaller learning_rate or a larger clip";
  throw NumericalError(os.str());
}

IterationLosses Trainer::iteration(const Matrix& batch, const IterationDraws& d, long index) {
  IterationLosses L;
  // Conditional: the sampler and p0 draw y for the minibatch's own inputs x (the paper's x ~ D).
  const Matrix cond = o_.cond_dim > 0 ? Matrix(batch.leftCols(o_.cond_dim)) : Matrix();
  {  // f step (the sampler's rows are constants here)
    const Matrix xq = sampler_rows(d.xi_f, cond);
    Vector g;
    L.f = f_loss(batch, xq, &g);
    check(L.f, "f step (kernel expansion α)", index);
    check_and_clip(g, o_.clip, where_, "f step (kernel expansion α)", index);
    adam_f_.step_in_place(f_.alpha, g);
  }
  for (Index r = 0; r < o_.rounds; ++r) {
    for (Index s = 0; s < o_.dual_steps; ++s) {
      const std::size_t k = static_cast<std::size_t>(r * o_.dual_steps + s);
      const Matrix xq = sampler_rows(d.xi_dual[k], cond);
      Vector g;
      L.dual = dual_loss(xq, base_rows(d.u_dual[k], cond), &g);
      check(L.dual, "dual step (network ν)", index);
      check_and_clip(g, o_.clip, where_, "dual step (network ν)", index);
      dual_.set_parameters(rms_nu_.step(dual_.parameters(), g));
    }
    Vector g;
    L.generator = generator_loss(d.xi_generator[static_cast<std::size_t>(r)], &g, cond);
    check(L.generator, "sampler step (network g)", index);
    check_and_clip(g, o_.clip_generator ? o_.clip : 0.0, where_, "sampler step (network g)", index);
    generator_.set_parameters(adam_g_.step(generator_.parameters(), g));
  }
  return L;
}

}  // namespace kef::dde
