#include "tapeflow/nn/batch_normalization.h"

#include <cmath>

#include "core/check.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

namespace {

constexpr std::string_view kBatchNorm = "BatchNormalization";

}  // namespace

BatchNormalization::BatchNormalization(BatchNormalizationOptions options)
    : Layer(options.name), options_(std::move(options)) {
  TAPEFLOW_REQUIRE(options_.momentum >= 0.0 && options_.momentum <= 1.0, InvalidArgumentError,
                   "[{}] momentum must be in [0, 1], got {}", kBatchNorm, options_.momentum);
  TAPEFLOW_REQUIRE(std::isfinite(options_.epsilon) && options_.epsilon > 0.0, InvalidArgumentError,
                   "[{}] epsilon must be positive and finite, got {}", kBatchNorm, options_.epsilon);
}

void BatchNormalization::build(std::int64_t channels, DType dtype) {
  const Shape shape{channels};
  if (options_.scale) gamma_ = track(Variable(ones(shape, dtype), {.name = "gamma", .keras_style = true}));
  if (options_.center) beta_ = track(Variable(zeros(shape, dtype), {.name = "beta", .keras_style = true}));
  moving_mean_ =
      track(Variable(zeros(shape, dtype), {.name = "moving_mean", .trainable = false, .keras_style = true}));
  moving_variance_ = track(
      Variable(ones(shape, dtype), {.name = "moving_variance", .trainable = false, .keras_style = true}));
}

Tensor BatchNormalization::call(const Tensor& input, bool training) {
  TAPEFLOW_REQUIRE(input.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kBatchNorm,
                   name());
  // A bfloat16 input (a mixed-precision model) is normalised in float32, as Keras does: the
  // statistics keep float32's precision and the variables are float32; the output is bfloat16.
  const bool narrow = input.dtype() == DType::BFloat16;
  const Tensor x = narrow ? cast(input, DType::Float32) : input;
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[{}] layer '{}' needs float32 or float64 inputs, got shape {} and dtype {}", kBatchNorm,
                   name(), x.shape().to_string(), dtype_name(x.dtype()));
  const std::int64_t rank = x.rank();
  const std::int64_t axis = options_.axis < 0 ? options_.axis + rank : options_.axis;
  TAPEFLOW_REQUIRE(axis >= 0 && axis < rank, InvalidArgumentError,
                   "[{}] layer '{}' normalises axis {}, which an input of shape {} (rank {}) does not have",
                   kBatchNorm, name(), options_.axis, x.shape().to_string(), rank);
  const std::int64_t channels = x.shape()[axis];
  if (!built()) build(channels, x.dtype());
  TAPEFLOW_REQUIRE(
      channels == moving_mean_->shape()[0] && x.dtype() == moving_mean_->dtype(), InvalidArgumentError,
      "[{}] layer '{}' was built for {} {} channels on axis {}; got an input of shape {} and dtype {}",
      kBatchNorm, name(), moving_mean_->shape()[0], dtype_name(moving_mean_->dtype()), options_.axis,
      x.shape().to_string(), dtype_name(x.dtype()));

  Tensor y;
  // A layer that is not trainable runs in inference mode, as Keras's does (fine-tuning with a
  // frozen base keeps its moving statistics).
  if (training && trainable()) {
    TAPEFLOW_REQUIRE(x.num_elements() > 0, InvalidArgumentError,
                     "[{}] layer '{}' cannot compute batch statistics of an empty input of shape {}",
                     kBatchNorm, name(), x.shape().to_string());
    // One op (nn::fused_batch_norm): the statistics and the normalisation in two passes over x.
    const nn::FusedBatchNormResult r =
        nn::fused_batch_norm(x, gamma_ ? Tensor(*gamma_) : ones({channels}, x.dtype()),
                             beta_ ? Tensor(*beta_) : zeros({channels}, x.dtype()), options_.epsilon, axis);
    // Stateful updates of the moving statistics: not part of any gradient (Keras's assign ops).
    const NoRecordingScope not_recorded;
    const double m = options_.momentum;
    moving_mean_->assign(moving_mean_->value() * m + r.mean * (1.0 - m));
    moving_variance_->assign(moving_variance_->value() * m + r.variance * (1.0 - m));
    y = r.y;
  } else {
    // The moving statistics, read without a record: no gradient reaches them.
    y = nn::fused_batch_norm_inference(x, gamma_ ? Tensor(*gamma_) : ones({channels}, x.dtype()),
                                       beta_ ? Tensor(*beta_) : zeros({channels}, x.dtype()),
                                       moving_mean_->value(), moving_variance_->value(), options_.epsilon,
                                       axis);
  }
  return narrow ? cast(y, DType::BFloat16) : y;
}

namespace {

const Variable& built_variable(const std::optional<Variable>& v, bool built, std::string_view layer,
                               std::string_view which) {
  TAPEFLOW_REQUIRE(built, FailedPreconditionError,
                   "[{}] layer '{}' has no {} yet: it is built by its first call", kBatchNorm, layer, which);
  TAPEFLOW_REQUIRE(v.has_value(), FailedPreconditionError,
                   "[{}] layer '{}' has no {}: it was created with {} = false", kBatchNorm, layer, which,
                   which == "gamma" ? "scale" : "center");
  return *v;
}

}  // namespace

const Variable& BatchNormalization::gamma() const { return built_variable(gamma_, built(), name(), "gamma"); }
const Variable& BatchNormalization::beta() const { return built_variable(beta_, built(), name(), "beta"); }
const Variable& BatchNormalization::moving_mean() const {
  return built_variable(moving_mean_, built(), name(), "moving_mean");
}
const Variable& BatchNormalization::moving_variance() const {
  return built_variable(moving_variance_, built(), name(), "moving_variance");
}

}  // namespace tapeflow::layers
