#pragma once
/// \file nn/dense.h
/// Dense: the fully connected layer, `activation(x @ kernel + bias)`, like Keras's
/// tf.keras.layers.Dense.
///
///   tf::layers::Dense layer(2, "relu");          // or Dense(2, tf::nn::relu), or a lambda
///   auto shared = tf::layers::dense(2, "relu");  // the same layer in a std::shared_ptr, for Sequential
///   tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}});
///   tf::GradientTape tape;
///   tf::Tensor loss = tf::reduce_mean(tf::pow(layer(x), 2));   // the first call builds the layer
///   auto grads = tape.gradient(loss, layer.trainable_variables());   // [d kernel, d bias]
///   // layer.trainable_variables()[0].name() == "kernel", shape (3, 2); [1] is "bias", shape (2,)
///
/// The layer is built lazily, as in Keras: the first call creates the kernel, of shape
/// (input's last dimension, units) and the input's dtype, drawn from the Glorot-uniform
/// distribution (uniform in [-l, l], l = sqrt(6 / (fan_in + units))), and the bias, zeros of
/// shape (units,). They are named "kernel" and "bias" as Keras 3 names them (no ":0" suffix).
/// Inputs of rank > 2 are multiplied on their last dimension: (batch, ..., in) -> (batch, ..., units).
/// Under a dtype policy (mixed_precision.h) the variables take its variable dtype and the layer
/// computes in its compute dtype.

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "tapeflow/module.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// An activation function: any callable from tensor to tensor (tf::nn::relu, tf::tanh, a lambda,
/// a std::function). An empty one (default-constructed) means no activation ("linear").
///
/// A class rather than a std::function alias: its converting constructor accepts only callables,
/// so a braced options struct such as Dense(2, {.name = "out"}) never considers converting to an
/// Activation (clang 14 fails hard on std::function's constructor there instead of discarding it).
class Activation {
 public:
  /// No activation.
  Activation() = default;
  /// Any callable `f` with f(const Tensor&) convertible to Tensor.
  template <class F>
  requires(!std::same_as<std::remove_cvref_t<F>, Activation> &&
           std::is_invocable_r_v<Tensor, F&, const Tensor&>) Activation(F f)
      : fn_(std::move(f)) {}
  /// The activation applied to `x`. Throws std::bad_function_call when empty.
  Tensor operator()(const Tensor& x) const { return fn_(x); }
  /// Whether there is a function (false: no activation).
  explicit operator bool() const { return static_cast<bool>(fn_); }

 private:
  std::function<Tensor(const Tensor&)> fn_;
};

/// The activation Keras calls `name`, as the tf::nn (or tf::) function of that name with Keras's
/// defaults: "relu", "relu6", "leaky_relu" (negative slope 0.2), "elu", "selu", "gelu" (exact),
/// "silu" and "swish" (one function), "mish", "sigmoid", "hard_sigmoid" (relu6(x + 3) / 6),
/// "tanh", "softplus", "softsign", "exponential" (tf::exp), "softmax" and "log_softmax" (over the
/// last axis), or "linear" (also "" and "none": no activation, an empty Activation).
/// Throws InvalidArgumentError listing the accepted names for any other name.
Activation activation(std::string_view name);

/// Options of Dense (Keras's constructor arguments).
struct DenseOptions {
  /// The layer's name (Module::name()).
  std::string name = "dense";
  /// Add the bias vector (Keras's use_bias).
  bool use_bias = true;
  /// Seed of the kernel initialiser. Without one, each layer takes the next seed of a
  /// process-wide sequence: layers differ from each other, and a program that builds its layers
  /// in the same order gets the same kernels on every run.
  std::optional<std::uint64_t> seed = std::nullopt;
  /// The kernel's initialiser, by its Keras name: "glorot_uniform" (the default), "glorot_normal",
  /// "he_uniform" (U[-l, l], l = sqrt(6 / fan_in)), "he_normal" (stddev sqrt(2 / fan_in), a
  /// plain, not truncated, normal) or "orthogonal" (Keras's Orthogonal(gain=1): orthonormal
  /// columns, or rows when the kernel is wider than tall). Another name throws
  /// InvalidArgumentError at construction.
  std::string kernel_initializer = "glorot_uniform";
  /// The dtype policy (Keras's dtype=): std::nullopt takes the global one (mixed_precision.h).
  std::optional<mixed_precision::Policy> dtype_policy = std::nullopt;
};

/// A fully connected layer (tf.keras.layers.Dense): activation(x @ kernel + bias).
class Dense : public Layer {
 public:
  /// A layer with `units` outputs. Throws InvalidArgumentError if units <= 0.
  explicit Dense(std::int64_t units, Activation activation = {}, DenseOptions options = {});
  /// No activation, with options: Dense(2, {.name = "out", .seed = 1}).
  Dense(std::int64_t units, DenseOptions options) : Dense(units, Activation{}, std::move(options)) {}
  /// The activation by its Keras name (see activation()): Dense(2, "relu").
  ///@{
  Dense(std::int64_t units, std::string_view activation, DenseOptions options = {});
  Dense(std::int64_t units, const char* activation, DenseOptions options = {})
      : Dense(units, std::string_view(activation), std::move(options)) {}
  ///@}

  /// activation(x @ kernel + bias) for x of shape (..., in) with rank >= 2; builds the layer
  /// on the first call. Throws InvalidArgumentError (naming Dense and the shapes) for a rank
  /// below 2, a non-float dtype, or, once built, an input whose last dimension or dtype differs
  /// from what the layer was built for.
  Tensor operator()(const Tensor& x);
  /// Layer::call: the same as operator() (Dense ignores `training`).
  Tensor call(const Tensor& x, bool /*training*/) override { return (*this)(x); }

  /// Creates the kernel and bias for inputs of `input_shape` (rank >= 2) and `dtype` (float32
  /// or float64). Called by the first operator(); throws FailedPreconditionError if already built.
  void build(const Shape& input_shape, DType dtype = DType::Float32);
  /// Whether kernel and bias exist: after the first call or build().
  bool built() const { return kernel_.has_value(); }

  /// The number of outputs.
  std::int64_t units() const { return units_; }
  /// The kernel, shape (in, units). Throws FailedPreconditionError before the layer is built.
  const Variable& kernel() const;
  /// The bias, shape (units,). Throws FailedPreconditionError before the layer is built or if
  /// it has no bias (use_bias = false).
  const Variable& bias() const;

 private:
  std::int64_t units_;
  Activation activation_;
  DenseOptions options_;
  std::optional<Variable> kernel_, bias_;
};

/// A Dense layer in a std::shared_ptr, ready for Sequential: tf::layers::dense(16, "relu"),
/// tf::layers::dense(10), tf::layers::dense(2, {.name = "out", .seed = 1}). The arguments and
/// errors are the constructors'.
///@{
inline std::shared_ptr<Dense> dense(std::int64_t units, Activation activation = {},
                                    DenseOptions options = {}) {
  return std::make_shared<Dense>(units, std::move(activation), std::move(options));
}
inline std::shared_ptr<Dense> dense(std::int64_t units, DenseOptions options) {
  return std::make_shared<Dense>(units, std::move(options));
}
inline std::shared_ptr<Dense> dense(std::int64_t units, std::string_view activation,
                                    DenseOptions options = {}) {
  return std::make_shared<Dense>(units, activation, std::move(options));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
