#pragma once
/// \file registry.h
/// The gradient registry: how the tape finds the gradient of each recorded op.
///
/// Every differentiable op registers its gradient where it is defined. Users can add or replace
/// one, or declare an op non-differentiable:
///
///   tf::register_gradient("Exp", [](const tf::GradContext& c) -> tf::Grads {
///     return {c.dy() * c.output(0)};        // dx = dy * exp(x)
///   });
///   tf::no_gradient("MyCounter");            // paths through MyCounter give no gradient
///
/// An op on a float path with neither raises, at gradient() time,
///   LookupError: gradient registry has no entry for: AdjustContrastv2

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/indexed_slices.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

namespace autodiff {
struct OpRecord;
class OpDef;
}  // namespace autodiff

/// One gradient per op input; std::nullopt means "no gradient flows to this input".
using Grads = std::vector<std::optional<Tensor>>;

/// What a gradient function sees of one recorded op. Only what the op declared as saved can be
/// read (the tape keeps nothing else); shapes and dtypes of all inputs and outputs are always there.
class GradContext {
 public:
  /// Made by the tape for each op of a backward pass; gradient functions receive it.
  /// `dy_reached` says which outputs a gradient reached (empty: all of them).
  /// `row_sparse`, one entry per input, is where a pass that takes row-sparse gradients collects
  /// them (nullptr: it takes none).
  GradContext(const autodiff::OpRecord& record, std::span<const Tensor> dys,
              std::span<const bool> input_needed, std::span<const bool> dy_reached = {},
              std::vector<std::optional<IndexedSlices>>* row_sparse = nullptr)
      : record_(record),
        dys_(dys),
        input_needed_(input_needed),
        dy_reached_(dy_reached),
        row_sparse_(row_sparse) {}

  /// The op's registry name ("Mul").
  std::string_view op_name() const;
  /// The op's number of inputs / outputs.
  ///@{
  int num_inputs() const;
  int num_outputs() const;
  ///@}
  /// Cotangent of output `i`: dL/d(output i). Zeros if no gradient reached this output.
  const Tensor& dy(int i = 0) const;
  /// False when no gradient reached output `i` (dy(i) is then zeros made by the backward pass), so
  /// a gradient function may skip that output's terms. It depends on which outputs the targets
  /// use, never on values, so it holds for every run of a traced gradient graph too.
  bool has_dy(int i) const { return dy_reached_.empty() || dy_reached_[static_cast<std::size_t>(i)]; }
  /// Forward input `i`; throws InternalError if the op did not declare it in its Saves.
  const Tensor& input(int i) const;
  /// Forward output `i`; throws InternalError if the op did not declare it in its Saves.
  const Tensor& output(int i = 0) const;
  /// Shape and dtype of input `i`, shape of output `i`: always available, saved or not.
  ///@{
  const Shape& input_shape(int i) const;
  DType input_dtype(int i) const;
  const Shape& output_shape(int i = 0) const;
  ///@}
  /// False when the gradient of input `i` will be discarded (not connected to any source), so a
  /// gradient function may return std::nullopt for it and skip the work.
  bool needs_input_grad(int i) const { return input_needed_[static_cast<std::size_t>(i)]; }
  /// Whether input `i`'s gradient may be given row-sparse through set_indexed_slices(): true in
  /// gradient() (an op that reads it gets the dense form), false in a Jacobian.
  bool accepts_indexed_slices(int i) const { return row_sparse_ != nullptr && needs_input_grad(i); }
  /// Gives input `i`'s gradient as rows (TensorFlow's IndexedSlices) of the input's shape and
  /// dtype; the function then returns std::nullopt for `i`. Throws InternalError naming the op
  /// when !accepts_indexed_slices(i) or the rows do not match the input.
  void set_indexed_slices(int i, IndexedSlices slices) const;
  /// Number of leading batch dimensions on the cotangents (0 in an ordinary gradient() call).
  /// A vectorised Jacobian runs the backward pass once with a stack of cotangents: dy(i) then
  /// has shape batch_shape + output_shape(i), and the gradient must return batch_shape +
  /// input_shape(j). Only ops that declare `kBatchable` are run this way.
  int batch_rank() const;
  /// `s` with the cotangents' batch dimensions in front (just `s` when batch_rank() == 0).
  Shape batched(const Shape& s) const;
  /// The op's attributes (axes, strides, ...), of the type the op recorded.
  template <class A>
  const A& attrs() const {
    return *static_cast<const A*>(attrs_ptr());
  }

 private:
  const void* attrs_ptr() const;
  const autodiff::OpRecord& record_;
  std::span<const Tensor> dys_;
  std::span<const bool> input_needed_;
  std::span<const bool> dy_reached_;
  std::vector<std::optional<IndexedSlices>>* row_sparse_;
};

/// A gradient function: one op's context in, one gradient per input out.
using GradientFunction = std::function<Grads(const GradContext&)>;

/// Registers `fn` as the gradient of `op` (TensorFlow's tf.RegisterGradient), replacing any
/// previous one. Takes effect for every later gradient() call, including on recorded ops.
void register_gradient(std::string_view op, GradientFunction fn);

/// Declares `op` non-differentiable (TensorFlow's tf.no_gradient): paths through it give no
/// gradient and no error.
void no_gradient(std::string_view op);

/// How the registry answers for one op name.
enum class GradientStatus { Registered, NotDifferentiable, Missing };
/// What the registry has for `op`: a gradient, a no_gradient declaration, or neither.
GradientStatus gradient_status(std::string_view op);

/// Every op of the library's op families, with its gradient status: used by the coverage tests.
/// The ops of tf::function's graphs (PartitionedCall, If, While, ...) are not listed.
std::vector<std::pair<std::string, GradientStatus>> registered_ops();

}  // namespace tapeflow
#pragma GCC visibility pop
