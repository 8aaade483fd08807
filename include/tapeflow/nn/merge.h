#pragma once
/// \file nn/merge.h
/// The merge layers (Keras's Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate):
/// layers over a list of tensors, for models that are not a straight line (nn/functional.h).
///
///   auto a = tf::layers::Input({16}), b = tf::layers::Input({16});
///   auto sum = tf::layers::add()->apply({a, b});                    // (None, 16)
///   auto both = tf::layers::concatenate()->apply({a, b});           // (None, 32)
///   tf::Tensor eager = (*tf::layers::add())({x, y});                // on tensors, as x + y
///
/// The elementwise merges broadcast as their ops do (Keras's merge layers broadcast too) and
/// need one dtype; Concatenate needs one rank and one dtype and the same dims off its axis.
/// Called on a single tensor, a merge layer throws InvalidArgumentError, as Keras's "A merge
/// layer should be called on a list of inputs": inside a Sequential it has one input only.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tapeflow/nn/keras_tensor.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// What the merge layers share: a call over a list of tensors, checked for its count, dtypes
/// and shapes before the merge.
class Merge : public Layer {
 public:
  using Layer::apply;
  /// The layer applied to symbolic inputs (functional API): the merged KerasTensor. Throws as
  /// call() does, for the inputs' shapes and dtypes.
  KerasTensor apply(const std::vector<KerasTensor>& inputs);
  /// The merge of `inputs`. Throws InvalidArgumentError naming the layer, the shapes and the
  /// dtypes for a count the layer does not take, mixed dtypes or shapes that do not merge.
  Tensor call(const std::vector<Tensor>& inputs, bool training);
  /// call(inputs, false).
  Tensor operator()(const std::vector<Tensor>& inputs) { return call(inputs, false); }
  /// Throws InvalidArgumentError: a merge layer takes a list of tensors.
  Tensor call(const Tensor& x, bool training) override;

 protected:
  /// A merge layer named `name` taking from `min_inputs` to `max_inputs` tensors.
  Merge(std::string name, std::size_t min_inputs, std::size_t max_inputs);
  /// The merge of checked inputs (at least min_inputs, one dtype).
  virtual Tensor merge(const std::vector<Tensor>& inputs) const = 0;
  /// Throws InvalidArgumentError unless the shapes merge; the elementwise merges' check: they
  /// broadcast.
  virtual void check_shapes(const std::vector<Tensor>& inputs) const;

 private:
  std::size_t min_inputs_, max_inputs_;
};

/// The sum of the inputs (keras.layers.Add).
class Add : public Merge {
 public:
  /// A layer named `name` that merges its inputs into their sum.
  explicit Add(std::string name = "add");

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The first input less the second; exactly two inputs (keras.layers.Subtract).
class Subtract : public Merge {
 public:
  /// A layer named `name` that merges its inputs into their difference.
  explicit Subtract(std::string name = "subtract");

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The product of the inputs (keras.layers.Multiply).
class Multiply : public Merge {
 public:
  /// A layer named `name` that merges its inputs into their product.
  explicit Multiply(std::string name = "multiply");

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The mean of the inputs (keras.layers.Average).
class Average : public Merge {
 public:
  /// A layer named `name` that merges its inputs into their mean.
  explicit Average(std::string name = "average");

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The elementwise maximum of the inputs (keras.layers.Maximum); NaN propagates.
class Maximum : public Merge {
 public:
  /// A layer named `name` that merges its inputs into their maximum.
  explicit Maximum(std::string name = "maximum");

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The elementwise minimum of the inputs (keras.layers.Minimum); NaN propagates.
class Minimum : public Merge {
 public:
  /// A layer named `name` that merges its inputs into their minimum.
  explicit Minimum(std::string name = "minimum");

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
};

/// The inputs joined along `axis` (keras.layers.Concatenate, default the last axis).
class Concatenate : public Merge {
 public:
  /// A layer named `name` that joins its inputs along `axis` (negative counts from the end).
  explicit Concatenate(std::int64_t axis = -1, std::string name = "concatenate");
  /// The axis given at construction (negative counts from the end).
  std::int64_t axis() const { return axis_; }

 protected:
  Tensor merge(const std::vector<Tensor>& inputs) const override;
  void check_shapes(const std::vector<Tensor>& inputs) const override;

 private:
  std::int64_t axis_;
};

/// The merge layers in a std::shared_ptr, as the other layer factories:
/// tf::layers::add()->apply({a, b}), tf::layers::concatenate(1)->apply({a, b}).
///@{
inline std::shared_ptr<Add> add(std::string name = "add") { return std::make_shared<Add>(std::move(name)); }
inline std::shared_ptr<Subtract> subtract(std::string name = "subtract") {
  return std::make_shared<Subtract>(std::move(name));
}
inline std::shared_ptr<Multiply> multiply(std::string name = "multiply") {
  return std::make_shared<Multiply>(std::move(name));
}
inline std::shared_ptr<Average> average(std::string name = "average") {
  return std::make_shared<Average>(std::move(name));
}
inline std::shared_ptr<Maximum> maximum(std::string name = "maximum") {
  return std::make_shared<Maximum>(std::move(name));
}
inline std::shared_ptr<Minimum> minimum(std::string name = "minimum") {
  return std::make_shared<Minimum>(std::move(name));
}
inline std::shared_ptr<Concatenate> concatenate(std::int64_t axis = -1, std::string name = "concatenate") {
  return std::make_shared<Concatenate>(axis, std::move(name));
}
///@}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
