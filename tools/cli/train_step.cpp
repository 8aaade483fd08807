#include "train_step.h"

#include "tapeflow/debug.h"
#include "tapeflow/distributed.h"
#include "tapeflow/nn/losses.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"
#include "tapeflow/tape.h"

namespace tapeflow::cli {

std::pair<Tensor, Tensor> TrainStep::Body::run(const Tensor& features, const Tensor& labels,
                                               const Tensor& share, std::ostream* report) const {
  Tensor logits, loss;
  if (distributed) {
    distributed::DistributedGradientTape tape;
    logits = (*model->net)(features, /*training=*/true);
    loss = losses::sparse_categorical_crossentropy(labels, logits, /*from_logits=*/true);
    optimizer->apply_gradients(tape.gradient(multiply(loss, share), vars), vars);
  } else {
    // The report needs the records after it: the tape is persistent then.
    GradientTape tape(TapeOptions{.persistent = report != nullptr});
    logits = (*model->net)(features, /*training=*/true);
    loss = losses::sparse_categorical_crossentropy(labels, logits, /*from_logits=*/true);
    if (report)
      *report << "gradient report of the first step:\n"
              << debug::gradient_report(tape, loss, vars).to_string() << "\n";
    // The update is fused into the backward pass: each variable is updated as soon as its
    // gradient is final, so the step never holds every gradient at once; the variables end as
    // with apply_gradients, bit for bit.
    optimizer->minimize(loss, vars, tape);
  }
  // As metrics::SparseCategoricalAccuracy counts a match.
  const Tensor correct =
      reduce_sum(cast(equal(cast(labels, DType::Int64), argmax(logits, -1)), DType::Int64));
  return {loss, correct};
}

TrainStep::TrainStep(Model& model, optimizers::Optimizer& optimizer, bool eager, bool distributed)
    : body_{&model, &optimizer, model.net->trainable_variables(), distributed} {
  FunctionOptions options;
  options.name = "train_step";
  if (!eager) function_ = function(body_, std::move(options));
}

StepResult TrainStep::operator()(const data::Batch& batch, std::int64_t global_rows) {
  const Tensor& x = batch.features;
  const Tensor& y = batch.labels;
  if (!body_.distributed) {
    auto [loss, correct] = function_ ? (*function_)(x, y) : body_(x, y);
    return {std::move(loss), std::move(correct)};
  }
  const auto rows = static_cast<double>(y.shape()[0]);
  const double share = global_rows > 0 ? rows * distributed::size() / static_cast<double>(global_rows) : 1.0;
  const Tensor share_tensor = constant(static_cast<float>(share));
  auto [loss, correct] = function_ ? (*function_)(x, y, share_tensor) : body_(x, y, share_tensor);
  return {std::move(loss), std::move(correct)};
}

StepResult TrainStep::with_gradient_report(const data::Batch& batch, std::ostream& out) {
  auto [loss, correct] = body_.run(batch.features, batch.labels, Tensor(), &out);
  return {std::move(loss), std::move(correct)};
}

FunctionStats TrainStep::stats() const { return function_ ? function_->stats() : FunctionStats{}; }

}  // namespace tapeflow::cli
