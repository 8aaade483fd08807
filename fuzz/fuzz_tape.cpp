// Fuzzes the tape API with random programs: a small machine with a pool of tensors, three
// variables and a stack of tapes runs instructions decoded from the input — create tensors, run
// ops, read and assign variables, open (persistent or not, watching accessed variables or not)
// and close tapes in any order, watch, stop_gradient, pause recording, reset, and call gradient,
// jacobian, batch_jacobian, hessian, forward accumulators, custom_gradient and recompute_grad.
// Misuse (a consumed tape, shapes that do not match, ...) must end in a tapeflow::Error.

#include <memory>

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

struct Machine {
  tf::fuzz::FuzzInput& in;
  std::vector<tf::Tensor> pool;
  std::vector<tf::Variable> vars;
  std::vector<std::unique_ptr<tf::GradientTape>> tapes;

  const tf::Tensor& any() {
    return pool[static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(pool.size()) - 1))];
  }
  tf::Variable& var() {
    return vars[static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(vars.size()) - 1))];
  }
  tf::GradientTape* tape() {
    if (tapes.empty()) return nullptr;
    return tapes[static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(tapes.size()) - 1))].get();
  }
  void push(const tf::Tensor& t) {
    tf::fuzz::touch(t);
    if (pool.size() < 24)
      pool.push_back(t);
    else
      pool[static_cast<std::size_t>(in.range(0, 23))] = t;
  }
  void push_all(const std::vector<tf::Gradient>& ts) {
    for (const auto& t : ts)
      if (t) push(*t);
  }
  tf::Tensor small() {
    std::vector<std::int64_t> d = in.u8() < 220 ? in.dims(true) : in.dims();
    return in.tensor(d, in.u8() < 240 ? tf::DType::Float64 : in.dtype());
  }
  std::vector<tf::Source> sources() {
    std::vector<tf::Source> s;
    for (std::int64_t i = 0, n = in.range(1, 3); i < n; ++i) {
      if (in.boolean())
        s.emplace_back(var());
      else
        s.emplace_back(any());
    }
    return s;
  }
  tf::UnconnectedGradients unconnected() {
    return in.boolean() ? tf::UnconnectedGradients::Zero : tf::UnconnectedGradients::None;
  }

  tf::Tensor unary(const tf::Tensor& x) {
    switch (in.u8() % 8) {
      case 0:
        return tf::exp(x);
      case 1:
        return tf::tanh(x);
      case 2:
        return tf::square(x);
      case 3:
        return tf::sin(x);
      case 4:
        return tf::nn::relu(x);
      case 5:
        return tf::reduce_sum(x, in.axes(x.rank()), in.boolean());
      case 6:
        return tf::reshape(x, {-1});
      default:
        return tf::nn::softmax(x, in.axis(x.rank()));
    }
  }
  tf::Tensor binary(const tf::Tensor& a, const tf::Tensor& b) {
    switch (in.u8() % 5) {
      case 0:
        return a + b;
      case 1:
        return a * b;
      case 2:
        return a - b;
      case 3:
        return tf::matmul(a, b, in.boolean(), in.boolean());
      default:
        return tf::maximum(a, b);
    }
  }

  void step() {
    const int op = in.u8() % 24;
    switch (op) {
      case 0:
      case 1:
        push(small());
        break;
      case 2:
      case 3:
        push(unary(any()));
        break;
      case 4:
      case 5:
        push(binary(any(), any()));
        break;
      case 6:
        push(var().read_value());
        break;
      case 7: {
        tf::Variable& v = var();
        const tf::Tensor& x = any();
        const int k = in.u8() % 3;
        if (k == 0)
          v.assign(x);
        else if (k == 1)
          v.assign_add(x);
        else
          v.assign_sub(x);
        break;
      }
      case 8:
        if (tapes.size() < 4) {
          tf::TapeOptions o;
          o.persistent = in.boolean();
          o.watch_accessed_variables = in.u8() < 200;
          tapes.push_back(std::make_unique<tf::GradientTape>(o));
        }
        break;
      case 9:  // close a tape, not necessarily the innermost
        if (!tapes.empty())
          tapes.erase(tapes.begin() +
                      static_cast<std::ptrdiff_t>(in.range(0, static_cast<std::int64_t>(tapes.size()) - 1)));
        break;
      case 10:
        if (auto* t = tape()) {
          if (in.boolean())
            t->watch(var());
          else
            t->watch(any());
        }
        break;
      case 11:
        push(tf::stop_gradient(any()));
        break;
      case 12:
        if (auto* t = tape()) {
          auto pause = t->stop_recording();
          push(unary(any()));
        }
        break;
      case 13:
      case 14:
      case 15:
        if (auto* t = tape()) {
          const tf::Tensor& y = any();
          std::vector<tf::Tensor> upstream;
          if (in.u8() < 40) upstream.push_back(in.u8() < 128 ? tf::ones_like(y) : small());
          push_all(t->gradient_flat(y, sources(), upstream, unconnected()));
        }
        break;
      case 16:
        if (auto* t = tape()) {
          const tf::Tensor& y = any();
          if (y.num_elements() <= 64) push_all(t->jacobian_flat(y, sources(), unconnected(), in.boolean()));
        }
        break;
      case 17:
        if (auto* t = tape()) {
          const tf::Tensor& y = any();
          const tf::Tensor& x = any();
          if (y.num_elements() <= 64) {
            auto j = t->batch_jacobian(y, x, unconnected());
            if (j) push(*j);
          }
        }
        break;
      case 18:
        if (auto* t = tape()) t->reset();
        break;
      case 19: {
        const tf::Tensor& x = any();
        if (x.num_elements() <= 16)
          push(tf::hessian([&](const tf::Tensor& z) { return tf::reduce_sum(z * z * tf::sin(z)); }, x));
        break;
      }
      case 20: {
        tf::ForwardAccumulator acc;
        const tf::Tensor& x = any();
        acc.watch(x, in.boolean() ? tf::ones_like(x) : small());
        const tf::Tensor y = unary(binary(x, any()));
        auto j = acc.jvp(y, unconnected());
        if (j) push(*j);
        break;
      }
      case 21: {
        const auto outs = tf::custom_gradient({any()}, [&](const std::vector<tf::Tensor>& xs) {
          tf::CustomGradientResult r;
          r.outputs = {tf::exp(xs[0])};
          const tf::Tensor y = r.outputs[0];
          const bool wrong = in.u8() < 40;  // a gradient of the wrong shape must be refused
          r.grad = [y, wrong](const std::vector<tf::Tensor>& dys,
                              const std::vector<tf::Variable>&) -> tf::Grads {
            if (wrong) return {tf::reshape(dys[0] * y, {-1})};
            return {dys[0] * y};
          };
          return r;
        });
        for (const auto& o : outs) push(o);
        break;
      }
      case 22: {
        tf::Block block = tf::recompute_grad([](const std::vector<tf::Tensor>& xs) {
          return std::vector<tf::Tensor>{tf::tanh(xs[0]) * xs[0]};
        });
        for (const auto& o : block({any()})) push(o);
        break;
      }
      default: {
        tf::Tensor w = var().read_value();
        push(tf::reduce_sum(w * any()));
        break;
      }
    }
  }
};

}  // namespace

// A step that ends in a tapeflow::Error is skipped and the program goes on with the next one.
TAPEFLOW_FUZZ_TARGET(in) {
  Machine m{in, {}, {}, {}};
  m.pool = {tf::constant(1.5), tf::constant({1.0, -2.0, 3.0}), tf::constant({{0.5, 1.0}, {-1.0, 2.0}})};
  m.vars = {tf::Variable(tf::constant(2.0)), tf::Variable(tf::constant({1.0, 2.0})),
            tf::Variable(tf::constant(1.0f), {.name = "frozen", .trainable = false})};
  for (int steps = 0; steps < 64 && !in.empty(); ++steps) {
    tf::fuzz::expect_success_or_error([&] { m.step(); });
  }
}
