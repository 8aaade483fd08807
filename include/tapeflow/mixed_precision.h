#pragma once
/// \file mixed_precision.h
/// Mixed precision as Keras does it (tf.keras.mixed_precision): a dtype policy says which dtype a
/// layer computes in and which its variables are kept in.
///
///   tf::mixed_precision::set_global_policy("mixed_bfloat16");
///   tf::layers::Conv2D conv(32, {3, 3}, "relu");   // built after: computes in bfloat16,
///   tf::Tensor y = conv(images);                   // kernel and bias stay float32
///   // y.dtype() == tf::bfloat16; the loss casts it back (losses compute in float32)
///
/// Under "mixed_bfloat16" a layer casts its floating inputs to bfloat16 and reads its variables
/// through a Cast to bfloat16, so the gradients reaching the variables are float32 again and the
/// optimizer and its slots stay float32. Losses (tf::losses) compute in float32 whatever their
/// inputs. bfloat16 keeps float32's exponent range, so loss scaling is optional with it;
/// LossScaleOptimizer (optim/loss_scale_optimizer.h) provides it and reports skipped steps.
///
/// Without a global policy (the default) a layer creates its variables in the dtype of its first
/// input and computes in it, so float64 models need no policy; set_global_policy("float32")
/// makes layers cast float64 inputs to float32 instead, as Keras does.

#include <optional>
#include <string>
#include <string_view>

#include "tapeflow/dtype.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::mixed_precision {

/// A dtype policy (Keras's tf.keras.mixed_precision.Policy).
class Policy {
 public:
  /// The policy Keras calls `name`: "float32", "float64", "bfloat16" (variables and computation
  /// in bfloat16; optimizers update such variables in float32 and round the result, so updates
  /// below bfloat16's precision are lost) or "mixed_bfloat16" (computation in bfloat16, variables
  /// in float32: the policy to train with). Throws
  /// InvalidArgumentError for any other name, listing these ("mixed_float16": tapeflow has no
  /// float16 dtype).
  explicit Policy(std::string_view name);

  /// The name it was created with.
  const std::string& name() const { return name_; }
  /// The dtype layers compute in (Keras's compute_dtype).
  DType compute_dtype() const { return compute_; }
  /// The dtype of layers' variables (Keras's variable_dtype).
  DType variable_dtype() const { return variable_; }

 private:
  std::string name_;
  DType compute_;
  DType variable_;
};

/// Sets the policy that layers constructed from now on take (each keeps the one it was
/// constructed with), or with std::nullopt restores the default: no policy, layers take their
/// first input's dtype.
void set_global_policy(std::optional<Policy> policy);
/// set_global_policy(Policy(name)).
void set_global_policy(std::string_view name);
/// The global policy, std::nullopt by default.
std::optional<Policy> global_policy();

}  // namespace tapeflow::mixed_precision
#pragma GCC visibility pop
