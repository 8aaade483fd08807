// Optimizer update rules as single ops (TensorFlow's training ops). An optimizer's step written
// with elementwise ops reads and writes every slot a dozen times; one op reads var, its slots and
// the gradient once and writes the results once (SGD: 3 passes over the weights instead of 5).
//
// The results must equal those of the ops they replace, bit for bit (a traced and an eager step,
// N ranks against one process, checkpoints resumed), so this file is compiled without
// floating-point contraction (no fused multiply-add: CMakeLists.txt) and rounds every product,
// quotient and sum to the dtype in the order the optimizer's formula gives. sqrt is correctly
// rounded both here and in the Sqrt op (the hardware instruction); -fno-math-errno lets the loop
// use it vectorised.

#include "tapeflow/ops/training.h"

#include <algorithm>
#include <cmath>

#include "core/parallel.h"
#include "ops/families.h"
#include "ops/input_count.h"
#include "ops/op_util.h"
#include "ops/row_updates.h"

namespace tapeflow {
namespace ops {
namespace {

struct AdamAttrs {
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
};

/// Adam over n elements. The outputs are fresh buffers (an op's forward allocates them), so no
/// pointer aliases another; `__restrict` says so, or gcc leaves the loop scalar (its runtime alias
/// checks for seven arrays exceed its limit), and the scalar sqrt and division made Adam's update
/// a fifth of an MLP step. A function of its own: through a lambda's captures the qualifiers are lost.
template <class T>
void adam_block(T c1, T c2, T eps, T lr, std::int64_t n, const T* __restrict w, const T* __restrict m,
                const T* __restrict v, const T* __restrict g, T* __restrict w_out, T* __restrict m_out,
                T* __restrict v_out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T mi = m[i] + (g[i] - m[i]) * c1;
    const T vi = v[i] + (g[i] * g[i] - v[i]) * c2;
    m_out[i] = mi;
    v_out[i] = vi;
    w_out[i] = w[i] - mi * lr / (std::sqrt(vi) + eps);
  }
}

template <class T>
void adam_kernel(const AdamAttrs& a, const T* w, const T* m, const T* v, T lr, const T* g, std::int64_t n,
                 T* w_out, T* m_out, T* v_out) {
  // The scalars as the elementwise ops would see them: a double operand becomes the dtype's.
  const T c1 = static_cast<T>(1.0 - a.beta_1), c2 = static_cast<T>(1.0 - a.beta_2);
  const T eps = static_cast<T>(a.epsilon);
  cpu::parallel_for(n, cpu::kParallelGrain, [&](std::int64_t b, std::int64_t e) {
    adam_block(c1, c2, eps, lr, e - b, w + b, m + b, v + b, g + b, w_out + b, m_out + b, v_out + b);
  });
}

/// Checks the arguments of an update op: in[0] is var (floating); the others have its dtype, and
/// its shape but for in[scalar], a scalar (the learning rate).
void require_update_arguments(std::span<const Tensor> in, std::initializer_list<std::string_view> names,
                              std::size_t scalar, std::string_view op) {
  const Tensor& w = in[0];
  require_floating(w, op, "var");
  for (std::size_t i = 1; i < in.size(); ++i) {
    const std::string_view name = names.begin()[i];
    TAPEFLOW_REQUIRE(in[i].dtype() == w.dtype(), InvalidArgumentError,
                     "[{}] '{}' must have var's dtype: var is a {}, {} is a {}", op, name, describe(w), name,
                     describe(in[i]));
    TAPEFLOW_REQUIRE(i == scalar ? in[i].rank() == 0 : in[i].shape() == w.shape(), InvalidArgumentError,
                     "[{}] '{}' must have {}: var is a {}, {} is a {}", op, name,
                     i == scalar ? "shape () (a scalar)" : "var's shape", describe(w), name, describe(in[i]));
  }
}

}  // namespace

// var' = var - grad * lr: one SGD step (see tapeflow/ops/training.h); not differentiable.
struct ApplyGradientDescent {
  static constexpr std::string_view kName = "ApplyGradientDescent";
  static Tensor forward(const Tensor& w, const Tensor& lr, const Tensor& g) {
    const std::array<Tensor, 3> in{w, lr, g};
    require_update_arguments(in, {"var", "lr", "grad"}, /*scalar=*/1, kName);
    Tensor out = detail::empty(w.shape(), w.dtype(), kName);
    visit_floating(w.dtype(), [&]<class T>() {
      const T *pw = w.values<T>().data(), *pg = g.values<T>().data();
      const T rate = lr.values<T>()[0];
      T* po = detail::mutable_data<T>(out);
      // The product rounded, then the difference: Mul then Sub, as SGD's formula reads.
      cpu::parallel_for(w.num_elements(), cpu::kParallelGrain, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i) po[i] = pw[i] - pg[i] * rate;
      });
    });
    return out;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(3, {});
    return {raw_ops::apply_gradient_descent(a.in(0), a.in(1), a.in(2))};
  }
};
}  // namespace ops

Tensor raw_ops::apply_gradient_descent(const Tensor& var, const Tensor& lr, const Tensor& grad) {
  return autodiff::apply<ops::ApplyGradientDescent>(var, lr, grad);
}

void ops::gradient_descent_rows(void* table, std::int64_t width, std::span<const std::int64_t> rows,
                                const Tensor& grads, const Tensor& lr) {
  visit_floating(grads.dtype(), [&]<class T>() {
    T* w = static_cast<T*>(table);
    const T* g = grads.values<T>().data();
    const T rate = lr.values<T>()[0];
    const auto n = static_cast<std::int64_t>(rows.size());
    // ApplyGradientDescent's formula: the product rounded, then the difference.
    cpu::parallel_for(n, std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(width, 1)),
                      [&](std::int64_t b, std::int64_t e) {
                        for (std::int64_t k = b; k < e; ++k) {
                          T* row = w + rows[static_cast<std::size_t>(k)] * width;
                          const T* gk = g + k * width;
                          for (std::int64_t i = 0; i < width; ++i) row[i] = row[i] - gk[i] * rate;
                        }
                      });
  });
}

void ops::adagrad_rows(void* table, void* accumulator, std::int64_t width, std::span<const std::int64_t> rows,
                       const Tensor& grads, const Tensor& lr, double epsilon) {
  visit_floating(grads.dtype(), [&]<class T>() {
    T* w = static_cast<T*>(table);
    T* acc = static_cast<T*>(accumulator);
    const T* g = grads.values<T>().data();
    const T rate = lr.values<T>()[0];
    const T eps = static_cast<T>(epsilon);
    const auto n = static_cast<std::int64_t>(rows.size());
    // Square, Add; Mul, Add, Sqrt, Div; Sub: Adagrad::update_step's ops, each rounded.
    cpu::parallel_for(n, std::max<std::int64_t>(1, cpu::kParallelGrain / std::max<std::int64_t>(width, 1)),
                      [&](std::int64_t b, std::int64_t e) {
                        for (std::int64_t k = b; k < e; ++k) {
                          const std::int64_t at = rows[static_cast<std::size_t>(k)] * width;
                          const T* gk = g + k * width;
                          for (std::int64_t i = 0; i < width; ++i) {
                            const T a = acc[at + i] + gk[i] * gk[i];
                            acc[at + i] = a;
                            w[at + i] = w[at + i] - rate * gk[i] / std::sqrt(a + eps);
                          }
                        }
                      });
  });
}

namespace ops {

namespace {
struct MomentumAttrs {
  double momentum = 0.0;
  bool nesterov = false;
};

/// SGD with momentum over n elements; fresh outputs, `__restrict` as for adam_block.
template <class T>
void momentum_block(T mom, T rate, bool nesterov, std::int64_t n, const T* __restrict w,
                    const T* __restrict accum, const T* __restrict g, T* __restrict w_out,
                    T* __restrict accum_out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const T v = accum[i] * mom - g[i] * rate;
    accum_out[i] = v;
    w_out[i] = w[i] + (nesterov ? v * mom - g[i] * rate : v);
  }
}
}  // namespace

// {var', accum'} = one SGD step with momentum (see tapeflow/ops/training.h); not differentiable.
struct ApplyKerasMomentum {
  static constexpr std::string_view kName = "ApplyKerasMomentum";
  static constexpr std::size_t kOutputs = 2;
  using Attrs = MomentumAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 4);
    const Tensor &w = in[0], &accum = in[1], &lr = in[2], &g = in[3];
    require_update_arguments(in, {"var", "accum", "lr", "grad"}, /*scalar=*/2, kName);
    std::vector<Tensor> out;
    for (int i = 0; i < 2; ++i) out.push_back(detail::empty(w.shape(), w.dtype(), kName));
    visit_floating(w.dtype(), [&]<class T>() {
      const T *pw = w.values<T>().data(), *pa = accum.values<T>().data(), *pg = g.values<T>().data();
      const T rate = lr.values<T>()[0], mom = static_cast<T>(a.momentum);  // as Mul sees a double
      T *w_out = detail::mutable_data<T>(out[0]), *a_out = detail::mutable_data<T>(out[1]);
      cpu::parallel_for(w.num_elements(), cpu::kParallelGrain, [&](std::int64_t b, std::int64_t e) {
        momentum_block(mom, rate, a.nesterov, e - b, pw + b, pa + b, pg + b, w_out + b, a_out + b);
      });
    });
    return out;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(4, {"momentum", "use_nesterov"});
    const auto r = raw_ops::apply_keras_momentum(a.in(0), a.in(1), a.in(2), a.in(3), a.f("momentum", 0.0),
                                                 a.b("use_nesterov", false));
    return {r.begin(), r.end()};
  }
};
}  // namespace ops

std::array<Tensor, 2> raw_ops::apply_keras_momentum(const Tensor& var, const Tensor& accum, const Tensor& lr,
                                                    const Tensor& grad, double momentum, bool nesterov) {
  const std::array<Tensor, 4> in{var, accum, lr, grad};
  const std::vector<Tensor> r = autodiff::apply_list<ops::ApplyKerasMomentum>({momentum, nesterov}, in);
  return {r[0], r[1]};
}

namespace ops {

// {var', m', v'} = one Adam step (see tapeflow/ops/training.h); not differentiable.
struct ApplyAdam {
  static constexpr std::string_view kName = "ApplyAdam";
  static constexpr std::size_t kOutputs = 3;
  using Attrs = AdamAttrs;
  static std::vector<Tensor> forward(const Attrs& a, std::span<const Tensor> in) {
    require_inputs(kName, in, 5);
    const Tensor &w = in[0], &m = in[1], &v = in[2], &lr = in[3], &g = in[4];
    require_update_arguments(in, {"var", "m", "v", "lr_t", "grad"}, /*scalar=*/3, kName);
    std::vector<Tensor> out;
    for (int i = 0; i < 3; ++i) out.push_back(detail::empty(w.shape(), w.dtype(), kName));
    visit_floating(w.dtype(), [&]<class T>() {
      adam_kernel<T>(a, w.values<T>().data(), m.values<T>().data(), v.values<T>().data(), lr.values<T>()[0],
                     g.values<T>().data(), w.num_elements(), detail::mutable_data<T>(out[0]),
                     detail::mutable_data<T>(out[1]), detail::mutable_data<T>(out[2]));
    });
    return out;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(5, {"beta_1", "beta_2", "epsilon"});
    const auto r = raw_ops::apply_adam(a.in(0), a.in(1), a.in(2), a.in(3), a.in(4), a.f("beta_1", 0.9),
                                       a.f("beta_2", 0.999), a.f("epsilon", 1e-7));
    return {r.begin(), r.end()};
  }
};
}  // namespace ops

std::array<Tensor, 3> raw_ops::apply_adam(const Tensor& var, const Tensor& m, const Tensor& v,
                                          const Tensor& lr_t, const Tensor& grad, double beta_1,
                                          double beta_2, double epsilon) {
  const std::array<Tensor, 5> in{var, m, v, lr_t, grad};
  const std::vector<Tensor> r = autodiff::apply_list<ops::ApplyAdam>({beta_1, beta_2, epsilon}, in);
  return {r[0], r[1], r[2]};
}

namespace ops {
void register_training_ops(Registrar& r) {
  r.add_non_differentiable<ApplyGradientDescent>();
  r.add_non_differentiable<ApplyKerasMomentum>();
  r.add_non_differentiable<ApplyAdam>();
}
}  // namespace ops

}  // namespace tapeflow
