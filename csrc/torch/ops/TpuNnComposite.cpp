// Activations and losses of the nn family that are a few native tpu ops each: the shrinks and
// log_sigmoid (elementwise core ops), and, composed of native ops in PyTorch CPU's formulas,
// glu, prelu, rrelu, channel_shuffle, the smooth L1, Huber, binary cross-entropy and margin
// losses with their backward ops, pdist, cdist and _batch_norm_with_update. Checks and messages
// are PyTorch CPU's. Nothing here reads a tensor's values on the host.
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Reduction.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/hardshrink_backward_meta.h>
#include <ATen/ops/hardshrink_meta.h>
#include <ATen/ops/sigmoid_backward_meta.h>
#include <ATen/ops/sigmoid_meta.h>
#include <ATen/ops/softshrink_backward_meta.h>
#include <ATen/ops/softshrink_meta.h>
#include <torch/library.h>

#include <cmath>

#include "ops/TpuElementwise.h"
#include "ops/TpuStructured.h"

namespace torch_tpu {
namespace {

using at::Tensor;
using at::meta::structured_hardshrink;
using at::meta::structured_hardshrink_backward;
using at::meta::structured_softshrink;
using at::meta::structured_softshrink_backward;

// ---- shrinks and log_sigmoid: elementwise core ops ----------------------------------------

// softshrink reads lambd at float precision for float16/bfloat16; the others round it.
void softshrink(const at::TensorIteratorBase& it, const Tensor&, const at::Scalar& lambd) {
  ew::run(TPU_OP_SOFTSHRINK, it, {ew::opmath(lambd)});
}
void hardshrink(const at::TensorIteratorBase& it, const Tensor&, const at::Scalar& lambd) {
  ew::run(TPU_OP_HARDSHRINK, it, {{lambd}});
}
void shrink_backward(const at::TensorIteratorBase& it, const Tensor&, const Tensor&,
                     const at::Scalar& lambd) {
  ew::run(TPU_OP_SHRINK_BACKWARD, it, {{lambd}});
}

// log_sigmoid's iterator: a float unary op (CPU refuses other dtypes first).
struct LogSigmoidMeta : at::meta::structured_sigmoid {};
struct LogSigmoidBackwardMeta : at::meta::structured_sigmoid_backward {};

void check_log_sigmoid(const Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"log_sigmoid_cpu\" not implemented for '", self.scalar_type(),
                              "'");
}

// The buffer is CUDA's: empty, since the backward recomputes exp(-|x|).
std::tuple<Tensor&, Tensor&> log_sigmoid_forward_out(const Tensor& self, Tensor& output,
                                                     Tensor& buffer) {
  check_log_sigmoid(self);
  Out<LogSigmoidMeta> it(output);
  it.meta(self);
  ew::run(TPU_OP_LOG_SIGMOID, it);
  buffer.resize_({0});
  return {output, buffer};
}

std::tuple<Tensor, Tensor> log_sigmoid_forward(const Tensor& self) {
  check_log_sigmoid(self);
  Tensor output = at::empty_like(self, at::MemoryFormat::Contiguous);
  Tensor buffer = at::empty({0}, self.options());
  log_sigmoid_forward_out(self, output, buffer);
  return {output, buffer};
}

Tensor& log_sigmoid_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor&,
                                 Tensor& grad_input) {
  check_log_sigmoid(self);
  Out<LogSigmoidBackwardMeta> it(grad_input);
  it.meta(grad_output, self);
  ew::run(TPU_OP_LOG_SIGMOID_BACKWARD, it);
  return grad_input;
}

Tensor log_sigmoid_backward(const Tensor& grad_output, const Tensor& self, const Tensor& buffer) {
  check_log_sigmoid(self);
  Functional<LogSigmoidBackwardMeta> it;
  it.meta(grad_output, self);
  ew::run(TPU_OP_LOG_SIGMOID_BACKWARD, it);
  (void)buffer;
  return std::move(it.outputs_[0]);
}

// ---- glu -------------------------------------------------------------------------------------

int64_t glu_dim(const Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t wrap_dim = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = self.size(wrap_dim);
  TORCH_CHECK(n % 2 == 0, "Halving dimension must be even, but dimension ", wrap_dim,
              " is size ", n);
  return wrap_dim;
}

Tensor glu(const Tensor& self, int64_t dim) {
  const int64_t d = glu_dim(self, dim);
  const int64_t half = self.size(d) / 2;
  return at::mul(self.narrow(d, 0, half), at::sigmoid(self.narrow(d, half, half)));
}

Tensor& glu_out(const Tensor& self, int64_t dim, Tensor& out) {
  Tensor result = torch_tpu::glu(self, dim);
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// CPU: grad_a = sigmoid(b) * grad, grad_b = (1 - sigmoid(b)) * sigmoid(b) * a * grad.
Tensor glu_backward(const Tensor& grad_output, const Tensor& self, int64_t dim) {
  const int64_t d = glu_dim(self, dim);
  const int64_t half = self.size(d) / 2;
  Tensor a = self.narrow(d, 0, half), sig = at::sigmoid(self.narrow(d, half, half));
  Tensor grad_a = sig * grad_output;
  Tensor grad_b = (1 - sig) * sig * a * grad_output;
  return at::cat({grad_a, grad_b}, d);
}

Tensor& glu_backward_out(const Tensor& grad_output, const Tensor& self, int64_t dim,
                         Tensor& grad_input) {
  Tensor result = torch_tpu::glu_backward(grad_output, self, dim);
  at::native::resize_output(grad_input, result.sizes());
  grad_input.copy_(result);
  return grad_input;
}

// ---- prelu, rrelu, channel_shuffle ------------------------------------------------------------

void check_prelu(const Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"prelu_cpu\" not implemented for '", self.scalar_type(), "'");
}

Tensor prelu_kernel(const Tensor& self, const Tensor& weight) {
  check_prelu(self);
  return at::where(self > 0, self, weight * self);
}

std::tuple<Tensor, Tensor> prelu_kernel_backward(const Tensor& grad_output, const Tensor& self,
                                                 const Tensor& weight) {
  check_prelu(self);
  Tensor positive = self > 0;
  Tensor grad_input = at::where(positive, grad_output, weight * grad_output);
  Tensor grad_weight = at::where(positive, at::zeros_like(self), self * grad_output);
  return {grad_input, grad_weight};
}

// Training draws r ~ U(lower, upper) from the tpu generator for every x <= 0: out = x * r and
// noise = r there, out = x and noise = 1 elsewhere; evaluation is leaky_relu with the mean slope.
Tensor& rrelu_with_noise_out(const Tensor& self, Tensor& noise, const at::Scalar& lower,
                             const at::Scalar& upper, bool training,
                             std::optional<at::Generator> generator, Tensor& output) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"rrelu_with_noise_out_cpu\" not implemented for '",
                              self.scalar_type(), "'");
  if (!training) {
    const double slope = (lower.toDouble() + upper.toDouble()) / 2;
    return at::leaky_relu_out(output, self, slope);
  }
  TORCH_CHECK(noise.numel() == self.numel(), "rrelu_with_noise: noise has ", noise.numel(),
              " elements, input ", self.numel());
  Tensor r = at::empty_like(self, at::MemoryFormat::Contiguous);
  r.uniform_(lower.toDouble(), upper.toDouble(), generator);
  Tensor slope = at::where(self <= 0, r, at::ones_like(r));
  noise.copy_(slope.reshape(noise.sizes()));
  Tensor result = self * slope;
  if (!output.is_same(self)) {
    at::native::resize_output(output, self.sizes());
  }
  output.copy_(result);
  return output;
}

Tensor rrelu_with_noise(const Tensor& self, Tensor& noise, const at::Scalar& lower,
                        const at::Scalar& upper, bool training,
                        std::optional<at::Generator> generator) {
  Tensor output = at::empty_like(self, at::MemoryFormat::Contiguous);
  return rrelu_with_noise_out(self, noise, lower, upper, training, std::move(generator), output);
}

Tensor& rrelu_with_noise_(Tensor& self, Tensor& noise, const at::Scalar& lower,
                          const at::Scalar& upper, bool training,
                          std::optional<at::Generator> generator) {
  return rrelu_with_noise_out(self, noise, lower, upper, training, std::move(generator), self);
}

// math_channel_shuffle, with channel_shuffle's checks.
Tensor channel_shuffle(const Tensor& self, c10::SymInt sym_groups) {
  const int64_t groups = sym_groups.expect_int();
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input with > 2 dims, but got input with "
              "sizes ", self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  const int64_t c = self.size(1);
  TORCH_CHECK((c % groups) == 0, "Number of channels must be divisible by groups. Got ", c,
              " channels and ", groups, " groups.");
  if (self.numel() == 0) {
    return self.clone();
  }
  Tensor grouped = self.reshape({self.size(0), groups, c / groups, -1});
  Tensor out = grouped.permute({0, 2, 1, 3}).contiguous().reshape(self.sizes());
  return out.contiguous(self.suggest_memory_format());
}

// ---- smooth L1 and Huber ---------------------------------------------------------------------

Tensor reduce_loss(const Tensor& loss, int64_t reduction) {
  if (reduction == at::Reduction::Mean) {
    return loss.mean();
  }
  return reduction == at::Reduction::Sum ? loss.sum() : loss;
}

Tensor& into(const Tensor& result, Tensor& out) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// 1 / numel for mean, else 1: the scale of a loss's backward.
double loss_norm(const Tensor& self, int64_t reduction) {
  return reduction == at::Reduction::Mean ? 1.0 / static_cast<double>(self.numel()) : 1.0;
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, int64_t reduction, double beta) {
  TORCH_CHECK(beta >= 0, "smooth_l1_loss does not support negative values for beta.");
  Tensor z = (self - target).abs();
  Tensor loss = beta == 0 ? z : at::where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta);
  return reduce_loss(loss, reduction);
}

Tensor& smooth_l1_loss_out(const Tensor& self, const Tensor& target, int64_t reduction,
                           double beta, Tensor& out) {
  return into(torch_tpu::smooth_l1_loss(self, target, reduction, beta), out);
}

// CPU: x <= -beta ? -norm * grad : x >= beta ? norm * grad : norm * x * grad / beta.
Tensor smooth_l1_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                               int64_t reduction, double beta) {
  const double norm = loss_norm(self, reduction);
  Tensor x = self - target;
  const Tensor& g = grad_output;
  return at::where(x <= -beta, -norm * g,
                   at::where(x >= beta, norm * g, norm * x * g / beta));
}

Tensor& smooth_l1_loss_backward_out(const Tensor& grad_output, const Tensor& self,
                                    const Tensor& target, int64_t reduction, double beta,
                                    Tensor& grad_input) {
  Tensor grad = torch_tpu::smooth_l1_loss_backward(grad_output, self, target, reduction, beta);
  return into(grad, grad_input);
}

Tensor huber_loss(const Tensor& self, const Tensor& target, int64_t reduction, double delta) {
  TORCH_CHECK(delta > 0, "huber_loss does not support non-positive values for delta.");
  Tensor z = (self - target).abs();
  Tensor loss = at::where(z < delta, 0.5 * z * z, delta * (z - 0.5 * delta));
  return reduce_loss(loss, reduction);
}

Tensor& huber_loss_out(const Tensor& self, const Tensor& target, int64_t reduction, double delta,
                       Tensor& out) {
  return into(torch_tpu::huber_loss(self, target, reduction, delta), out);
}

// CPU: x <= -delta ? -norm * grad * delta : x >= delta ? norm * grad * delta : norm * x * grad.
Tensor huber_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                           int64_t reduction, double delta) {
  const double norm = loss_norm(self, reduction);
  Tensor x = self - target;
  const Tensor& g = grad_output;
  return at::where(x <= -delta, -norm * g * delta,
                   at::where(x >= delta, norm * g * delta, norm * x * g));
}

Tensor& huber_loss_backward_out(const Tensor& grad_output, const Tensor& self,
                                const Tensor& target, int64_t reduction, double delta,
                                Tensor& grad_input) {
  Tensor grad = torch_tpu::huber_loss_backward(grad_output, self, target, reduction, delta);
  return into(grad, grad_input);
}

// ---- binary cross-entropy --------------------------------------------------------------------

const Tensor* defined(const std::optional<Tensor>& t) {
  return t.has_value() && t->defined() ? &*t : nullptr;
}

// (target - 1) * max(log1p(-x), -100) - target * max(log(x), -100), times weight. CPU's check
// that input and target lie in [0, 1] reads values on the host; here such inputs give NaN.
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target,
                            const std::optional<Tensor>& weight, int64_t reduction) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()),
                              "\"binary_cross_entropy\" not implemented for '",
                              self.scalar_type(), "'");
  Tensor loss = (target - 1) * at::clamp_min(at::log1p(-self), -100) -
                target * at::clamp_min(at::log(self), -100);
  if (const Tensor* w = defined(weight)) {
    loss = loss * *w;
  }
  return reduce_loss(loss, reduction);
}

Tensor& binary_cross_entropy_out(const Tensor& self, const Tensor& target,
                                 const std::optional<Tensor>& weight, int64_t reduction,
                                 Tensor& out) {
  return into(torch_tpu::binary_cross_entropy(self, target, weight, reduction), out);
}

// CPU: grad * (x - t) / max((1 - x) * x, 1e-12), times weight, divided by numel for mean.
Tensor binary_cross_entropy_backward(const Tensor& grad_output, const Tensor& self,
                                     const Tensor& target, const std::optional<Tensor>& weight,
                                     int64_t reduction) {
  Tensor g = grad_output * (self - target) / at::clamp_min((1 - self) * self, 1e-12);
  if (const Tensor* w = defined(weight)) {
    g = g * *w;
  }
  if (reduction == at::Reduction::Mean) {
    g = g / static_cast<double>(self.numel());
  }
  return g.expand(self.sizes()).contiguous();
}

Tensor& binary_cross_entropy_backward_out(const Tensor& grad_output, const Tensor& self,
                                          const Tensor& target,
                                          const std::optional<Tensor>& weight, int64_t reduction,
                                          Tensor& grad_input) {
  Tensor grad =
      torch_tpu::binary_cross_entropy_backward(grad_output, self, target, weight, reduction);
  return into(grad, grad_input);
}

// ---- multi_margin_loss -------------------------------------------------------------------------

struct Frames {
  int64_t nframe, dim;
};

Frames multi_margin_check(const Tensor& self, const Tensor& target, const at::Scalar& p,
                          const std::optional<Tensor>& weight) {
  const int64_t ndims = self.dim();
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) ||
                  ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  Frames f{ndims <= 1 ? 1 : self.size(0), ndims == 0 ? 1 : self.size(ndims - 1)};
  TORCH_CHECK(target.dim() <= 1 && target.numel() == f.nframe,
              "multi_margin_loss: target tensor should be 1-D with size equal to the number of "
              "input samples (batch size). Expected target size [", f.nframe, "], but got ",
              target.sizes(), ". Input has shape ", self.sizes(), ".");
  if (const Tensor* w = defined(weight)) {
    TORCH_CHECK(w->dim() <= 1 && w->numel() == f.dim, "inconsistent weight size, expected ",
                f.dim, " but got ", w->sizes());
  }
  return f;
}

// The per-element margins z[i, j] = margin - x[i, y_i] + x[i, j], their [nframe, dim] input and
// the rows' targets [nframe, 1].
struct Margins {
  Tensor x, y, z;
};

Margins margins(const Tensor& self, const Tensor& target, const at::Scalar& margin, Frames f) {
  Margins m;
  m.x = self.reshape({f.nframe, f.dim});
  m.y = target.reshape({f.nframe, 1});
  m.z = margin.toDouble() - m.x.gather(1, m.y) + m.x;
  return m;
}

Tensor multi_margin_loss(const Tensor& self, const Tensor& target, const at::Scalar& p,
                         const at::Scalar& margin, const std::optional<Tensor>& weight,
                         int64_t reduction) {
  Frames f = multi_margin_check(self, target, p, weight);
  Margins m = margins(self, target, margin, f);
  Tensor h = at::clamp_min(m.z, 0);
  if (p.toLong() == 2) {
    h = h * h;
  }
  if (const Tensor* w = defined(weight)) {
    h = h * w->reshape({-1}).index_select(0, m.y.reshape({-1})).unsqueeze(1);
  }
  h = h.scatter(1, m.y, 0); // the target's own term
  Tensor loss = h.sum(1) / static_cast<double>(f.dim);
  if (reduction == at::Reduction::None) {
    return target.dim() > 0 ? loss : loss.reshape({});
  }
  return reduction == at::Reduction::Mean ? loss.mean() : loss.sum();
}

Tensor& multi_margin_loss_out(const Tensor& self, const Tensor& target, const at::Scalar& p,
                              const at::Scalar& margin, const std::optional<Tensor>& weight,
                              int64_t reduction, Tensor& out) {
  return into(torch_tpu::multi_margin_loss(self, target, p, margin, weight, reduction), out);
}

// CPU: each j != y with z > 0 gets h = g (p = 1) or 2 g z (p = 2), g = 1 / dim (/ nframe for
// mean), times weight[y]; x[y] gets minus their sum; then all times grad_output.
Tensor multi_margin_loss_backward(const Tensor& grad_output, const Tensor& self,
                                  const Tensor& target, const at::Scalar& p,
                                  const at::Scalar& margin, const std::optional<Tensor>& weight,
                                  int64_t reduction) {
  Frames f = multi_margin_check(self, target, p, weight);
  Margins m = margins(self, target, margin, f);
  const double g = reduction == at::Reduction::Mean
                       ? 1.0 / static_cast<double>(f.nframe * f.dim)
                       : 1.0 / static_cast<double>(f.dim);
  Tensor h = p.toLong() == 1 ? at::full_like(m.z, g) : 2 * g * m.z;
  h = at::where(m.z > 0, h, at::zeros_like(h)).scatter(1, m.y, 0);
  if (const Tensor* w = defined(weight)) {
    h = h * w->reshape({-1}).index_select(0, m.y.reshape({-1})).unsqueeze(1);
  }
  Tensor grad = h.scatter(1, m.y, -h.sum(1, true));
  if (reduction != at::Reduction::None || grad_output.dim() == 0) {
    grad = grad * grad_output.reshape({});
  } else {
    grad = grad * grad_output.reshape({f.nframe, 1});
  }
  return grad.reshape(self.sizes()).contiguous();
}

Tensor& multi_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self,
                                       const Tensor& target, const at::Scalar& p,
                                       const at::Scalar& margin,
                                       const std::optional<Tensor>& weight, int64_t reduction,
                                       Tensor& grad_input) {
  Tensor grad = torch_tpu::multi_margin_loss_backward(grad_output, self, target, p, margin,
                                                      weight, reduction);
  return into(grad, grad_input);
}

// ---- multilabel_margin_loss ------------------------------------------------------------------

Frames multilabel_check(const Tensor& self, const Tensor& target) {
  const int64_t ndims = self.dim();
  TORCH_CHECK((ndims == 2 && self.size(1) != 0) || (ndims == 1 && self.size(0) != 0) ||
                  ndims == 0,
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ",
              self.sizes());
  Frames f{ndims <= 1 ? 1 : self.size(0), ndims == 0 ? 1 : self.size(ndims - 1)};
  bool ok = ndims <= 1 ? target.dim() <= 1 && target.numel() == f.dim
                       : target.dim() == 2 && target.size(0) == f.nframe &&
                             target.size(1) == f.dim;
  TORCH_CHECK(ok, "inconsistent target size: ", target.sizes(), " for input of size: ",
              self.sizes());
  return f;
}

// A row's targets are its entries before the first -1. valid[i, k]: entry k is one of them;
// is_target[i, j]: class j is. z[i, k, j] = 1 - x[i, y_k] + x[i, j] counts where valid[i, k] and
// not is_target[i, j] and z > 0.
struct Multilabel {
  Tensor x, y, valid, is_target, z, counts;
};

Multilabel multilabel(const Tensor& self, const Tensor& target, Frames f) {
  Multilabel m;
  m.x = self.reshape({f.nframe, f.dim});
  Tensor t = target.reshape({f.nframe, f.dim});
  m.valid = (t == -1).cumsum(1) == 0;
  m.y = at::where(m.valid, t, at::zeros_like(t));
  m.is_target = at::zeros_like(m.x).scatter_add(1, m.y, m.valid.to(m.x.scalar_type())) > 0;
  m.z = 1 - m.x.gather(1, m.y).unsqueeze(2) + m.x.unsqueeze(1);
  m.counts = m.valid.unsqueeze(2).logical_and(m.is_target.logical_not().unsqueeze(1))
                 .logical_and(m.z > 0);
  return m;
}

std::tuple<Tensor, Tensor> multilabel_margin_loss_forward(const Tensor& self,
                                                          const Tensor& target,
                                                          int64_t reduction) {
  Frames f = multilabel_check(self, target);
  Multilabel m = multilabel(self, target, f);
  Tensor loss = at::where(m.counts, m.z, at::zeros_like(m.z)).sum({1, 2}) /
                static_cast<double>(f.dim);
  Tensor is_target = m.is_target.to(self.scalar_type()).reshape(target.sizes());
  if (reduction == at::Reduction::None) {
    return {self.dim() <= 1 ? loss.reshape({}) : loss, is_target};
  }
  return {reduction == at::Reduction::Mean ? loss.mean() : loss.sum(), is_target};
}

std::tuple<Tensor&, Tensor&> multilabel_margin_loss_forward_out(const Tensor& self,
                                                                const Tensor& target,
                                                                int64_t reduction, Tensor& output,
                                                                Tensor& is_target) {
  auto [loss, targets] = torch_tpu::multilabel_margin_loss_forward(self, target, reduction);
  into(loss, output);
  into(targets, is_target);
  return {output, is_target};
}

// CPU: each counted (k, j) adds g = 1 / dim (/ nframe for mean) to x[j] and takes it from
// x[y_k]; then all times grad_output.
Tensor multilabel_margin_loss_backward(const Tensor& grad_output, const Tensor& self,
                                       const Tensor& target, int64_t reduction,
                                       const Tensor& is_target) {
  (void)is_target;
  Frames f = multilabel_check(self, target);
  Multilabel m = multilabel(self, target, f);
  const double g = reduction == at::Reduction::Mean
                       ? 1.0 / static_cast<double>(f.nframe * f.dim)
                       : 1.0 / static_cast<double>(f.dim);
  Tensor h = m.counts.to(self.scalar_type()) * g;
  Tensor grad = h.sum(1).scatter_add(1, m.y, -h.sum(2));
  if (reduction != at::Reduction::None || grad_output.dim() == 0) {
    grad = grad * grad_output.reshape({});
  } else {
    grad = grad * grad_output.reshape({f.nframe, 1});
  }
  return grad.reshape(self.sizes()).contiguous();
}

Tensor& multilabel_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self,
                                            const Tensor& target, int64_t reduction,
                                            const Tensor& is_target, Tensor& grad_input) {
  Tensor grad = torch_tpu::multilabel_margin_loss_backward(grad_output, self, target, reduction,
                                                           is_target);
  return into(grad, grad_input);
}

// ---- pdist and cdist ---------------------------------------------------------------------------

// The p-norm of `diff` over its last dimension, as CPU's distance kernels compute it.
Tensor pnorm(const Tensor& diff, double p) {
  return at::linalg_vector_norm(diff, p, {-1}, false, std::nullopt);
}

// d(dist)/d(diff) for the p-norm, zero where dist is zero, as CPU's backward kernels.
Tensor pnorm_grad(const Tensor& diff, const Tensor& dist, double p) {
  Tensor d = dist.unsqueeze(-1);
  if (p == 0) {
    return at::zeros_like(diff);
  }
  if (p == 1) {
    return diff.sign();
  }
  Tensor zero = at::zeros_like(diff);
  if (std::isinf(p)) {
    return at::where(diff.abs() == d, diff.sign(), zero);
  }
  if (p == 2) {
    return at::where(d == 0, zero, diff / d);
  }
  Tensor g = diff.sign() * diff.abs().pow(p - 1) / d.pow(p - 1);
  if (p < 1) {
    g = at::where(diff == 0, zero, g);
  }
  return at::where(d == 0, zero, g);
}

// The pairs (i, j), i < j, in pdist's order.
std::pair<Tensor, Tensor> pdist_pairs(const Tensor& self) {
  Tensor ij = at::triu_indices(self.size(0), self.size(0), 1, at::TensorOptions(at::kLong));
  return {ij[0].to(self.device()), ij[1].to(self.device())};
}

Tensor pdist_forward(const Tensor& self, double p) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_forward requires contiguous input");
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "pdist only supports floating-point dtypes");
  TORCH_CHECK(p >= 0, "pdist only supports non-negative p values");
  const int64_t n = self.size(0);
  if (n <= 1) {
    return at::empty({0}, self.options());
  }
  if (self.size(1) == 0) {
    return at::zeros({n * (n - 1) / 2}, self.options());
  }
  auto [i, j] = pdist_pairs(self);
  return pnorm(self.index_select(0, i) - self.index_select(0, j), p);
}

Tensor pdist_backward(const Tensor& grad, const Tensor& self, double p, const Tensor& pdist) {
  TORCH_CHECK(self.is_contiguous(), "_pdist_backward requires self to be contiguous");
  TORCH_CHECK(pdist.is_contiguous(), "_pdist_backward requires pdist to be contiguous");
  Tensor result = at::zeros_like(self, at::MemoryFormat::Contiguous);
  if (self.size(0) <= 1 || self.size(1) == 0) {
    return result;
  }
  auto [i, j] = pdist_pairs(self);
  Tensor diff = self.index_select(0, i) - self.index_select(0, j);
  Tensor g = grad.unsqueeze(-1) * pnorm_grad(diff, pdist, p);
  return result.index_add(0, i, g).index_add(0, j, -g);
}

// cdist's mm form for p = 2 and many rows (or compute_mode 1), else the difference form.
bool cdist_mm(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> mode) {
  const int64_t m = mode.value_or(0), r1 = x1.size(-2), r2 = x2.size(-2);
  return p == 2 && (m == 1 || (m == 0 && (r1 > 25 || r2 > 25)));
}

// x1 and x2 broadcast over their batch dimensions.
std::pair<Tensor, Tensor> cdist_expand(const Tensor& x1, const Tensor& x2) {
  std::vector<int64_t> batch = at::infer_size(x1.sizes().slice(0, x1.dim() - 2),
                                              x2.sizes().slice(0, x2.dim() - 2));
  std::vector<int64_t> s1 = batch, s2 = batch;
  s1.insert(s1.end(), {x1.size(-2), x1.size(-1)});
  s2.insert(s2.end(), {x2.size(-2), x2.size(-1)});
  return {x1.expand(s1), x2.expand(s2)};
}

Tensor cdist_forward(const Tensor& x1, const Tensor& x2, double p,
                     std::optional<int64_t> compute_mode) {
  TORCH_CHECK(x1.dim() >= 2, "cdist only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  TORCH_CHECK(x2.dim() >= 2, "cdist only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  TORCH_CHECK(x1.size(-1) == x2.size(-1), "X1 and X2 must have the same number of columns. X1: ",
              x1.size(-1), " X2: ", x2.size(-1));
  TORCH_CHECK(at::isFloatingType(x1.scalar_type()),
              "cdist only supports floating-point dtypes, X1 got: ", x1.scalar_type());
  TORCH_CHECK(at::isFloatingType(x2.scalar_type()),
              "cdist only supports floating-point dtypes, X2 got: ", x2.scalar_type());
  TORCH_CHECK(p >= 0, "cdist only supports non-negative p values");
  TORCH_CHECK(!compute_mode || (*compute_mode >= 0 && *compute_mode <= 2),
              "possible modes: 0, 1, 2, but was: ", compute_mode.value_or(0));
  auto [a, b] = cdist_expand(x1, x2);
  if (a.size(-1) == 0) {
    std::vector<int64_t> shape(a.sizes().begin(), a.sizes().end() - 1);
    shape.push_back(b.size(-2));
    return at::zeros(shape, x1.options());
  }
  if (cdist_mm(x1, x2, p, compute_mode)) {
    return at::_euclidean_dist(a, b);
  }
  return pnorm(a.unsqueeze(-2) - b.unsqueeze(-3), p);
}

// Only x1's gradient: autograd gets x2's from the transposed call.
Tensor cdist_backward(const Tensor& grad, const Tensor& x1, const Tensor& x2, double p,
                      const Tensor& cdist) {
  if (x1.numel() == 0 || x2.numel() == 0 || p == 0) {
    return at::zeros_like(x1, at::MemoryFormat::Contiguous);
  }
  auto [a, b] = cdist_expand(x1, x2);
  Tensor diff = a.unsqueeze(-2) - b.unsqueeze(-3);
  Tensor g = (grad.unsqueeze(-1) * pnorm_grad(diff, cdist, p)).sum(-2);
  return at::sum_to(g, x1.sizes()).contiguous();
}

// ---- _batch_norm_with_update -----------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_with_update(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps) {
  auto [out, mean, invstd] =
      at::native_batch_norm(input, weight, bias, running_mean, running_var, true, momentum, eps);
  Tensor reserve = at::empty({0}, input.options().dtype(at::kByte));
  return {out, mean, invstd, reserve};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> batch_norm_with_update_out(
    const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    Tensor& running_mean, Tensor& running_var, double momentum, double eps, Tensor& out,
    Tensor& save_mean, Tensor& save_invstd, Tensor& reserve) {
  auto [o, m, v, r] =
      batch_norm_with_update(input, weight, bias, running_mean, running_var, momentum, eps);
  into(o, out);
  into(m, save_mean);
  into(v, save_invstd);
  reserve.resize_({0});
  return {out, save_mean, save_invstd, reserve};
}

std::tuple<Tensor, Tensor, Tensor> batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const Tensor& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_var, bool update,
    double eps, std::array<bool, 3> output_mask, const Tensor&) {
  return at::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var,
                                        save_mean, save_var, update, eps, output_mask);
}

} // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TPU_EW_OP(m, structured_softshrink, softshrink, "softshrink", "", "softshrink.out");
  TPU_EW_OP(m, structured_hardshrink, hardshrink, "hardshrink", "", "hardshrink.out");
  TPU_EW_OP(m, structured_softshrink_backward, shrink_backward, "softshrink_backward", "",
            "softshrink_backward.grad_input");
  TPU_EW_OP(m, structured_hardshrink_backward, shrink_backward, "hardshrink_backward", "",
            "hardshrink_backward.grad_input");
  m.impl("log_sigmoid_forward", TORCH_FN(log_sigmoid_forward));
  m.impl("log_sigmoid_forward.output", TORCH_FN(log_sigmoid_forward_out));
  m.impl("log_sigmoid_backward", TORCH_FN(log_sigmoid_backward));
  m.impl("log_sigmoid_backward.grad_input", TORCH_FN(log_sigmoid_backward_out));
  m.impl("glu", TORCH_FN(glu));
  m.impl("glu.out", TORCH_FN(glu_out));
  m.impl("glu_backward", TORCH_FN(glu_backward));
  m.impl("glu_backward.grad_input", TORCH_FN(glu_backward_out));
  m.impl("_prelu_kernel", TORCH_FN(prelu_kernel));
  m.impl("_prelu_kernel_backward", TORCH_FN(prelu_kernel_backward));
  m.impl("rrelu_with_noise", TORCH_FN(rrelu_with_noise));
  m.impl("rrelu_with_noise_", TORCH_FN(rrelu_with_noise_));
  m.impl("rrelu_with_noise.out", TORCH_FN(rrelu_with_noise_out));
  m.impl("channel_shuffle", TORCH_FN(channel_shuffle));
  m.impl("smooth_l1_loss", TORCH_FN(smooth_l1_loss));
  m.impl("smooth_l1_loss.out", TORCH_FN(smooth_l1_loss_out));
  m.impl("smooth_l1_loss_backward", TORCH_FN(smooth_l1_loss_backward));
  m.impl("smooth_l1_loss_backward.grad_input", TORCH_FN(smooth_l1_loss_backward_out));
  m.impl("huber_loss", TORCH_FN(huber_loss));
  m.impl("huber_loss.out", TORCH_FN(huber_loss_out));
  m.impl("huber_loss_backward", TORCH_FN(huber_loss_backward));
  m.impl("huber_loss_backward.out", TORCH_FN(huber_loss_backward_out));
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy));
  m.impl("binary_cross_entropy.out", TORCH_FN(binary_cross_entropy_out));
  m.impl("binary_cross_entropy_backward", TORCH_FN(binary_cross_entropy_backward));
  m.impl("binary_cross_entropy_backward.grad_input",
         TORCH_FN(binary_cross_entropy_backward_out));
  m.impl("multi_margin_loss", TORCH_FN(multi_margin_loss));
  m.impl("multi_margin_loss.out", TORCH_FN(multi_margin_loss_out));
  m.impl("multi_margin_loss_backward", TORCH_FN(multi_margin_loss_backward));
  m.impl("multi_margin_loss_backward.grad_input", TORCH_FN(multi_margin_loss_backward_out));
  m.impl("multilabel_margin_loss_forward", TORCH_FN(multilabel_margin_loss_forward));
  m.impl("multilabel_margin_loss_forward.output", TORCH_FN(multilabel_margin_loss_forward_out));
  m.impl("multilabel_margin_loss_backward", TORCH_FN(multilabel_margin_loss_backward));
  m.impl("multilabel_margin_loss_backward.grad_input",
         TORCH_FN(multilabel_margin_loss_backward_out));
  m.impl("_pdist_forward", TORCH_FN(pdist_forward));
  m.impl("_pdist_backward", TORCH_FN(pdist_backward));
  m.impl("_cdist_forward", TORCH_FN(cdist_forward));
  m.impl("_cdist_backward", TORCH_FN(cdist_backward));
  m.impl("_batch_norm_with_update", TORCH_FN(batch_norm_with_update));
  m.impl("_batch_norm_with_update.out", TORCH_FN(batch_norm_with_update_out));
  m.impl("batch_norm_backward", TORCH_FN(batch_norm_backward));
}

} // namespace torch_tpu
