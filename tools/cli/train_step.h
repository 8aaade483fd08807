#pragma once
// The training step of `tapeflow train`: forward, loss, and the optimizer update fused into the
// backward pass (Optimizer::minimize), plus the batch's number of correct predictions.
//
// By default the step runs through tf::function. The first batch of each shape traces it (the
// body runs once, eagerly, while its ops, variable reads and assignments become a graph); later
// batches of that shape run the graph. The last batch of an epoch is smaller when the batch size
// does not divide the examples, so a run traces twice: once per shape. (Padding that batch to the
// full size would trace once but change the mean loss and its gradient, so the results would no
// longer be the eager step's.) Everything that changes between steps is read inside from
// variables when the graph runs: the weights, the optimizer's slots, iteration count and
// learning rate, and the dropout layers' generator states, which StepSeededDropout::start_step
// assigns before each step, outside the function. So the traced step gives the eager step's
// results bit for bit: the graph runs the same kernels on the same values in the same order.
//
// With `eager`, the same body runs directly, op by op through the dispatch path (`--eager`).
// Either way the step returns tensors; the loop reads them on the host (item()) after the step.
//
// With `distributed` (a data-parallel run, tapeflow/distributed.h), the step computes its
// gradients with a DistributedGradientTape, which averages them over the ranks (traced: with
// Allreduce ops in the graph; eager: while the backward pass runs), and applies them with
// apply_gradients. The ranks' shards of a global batch differ in size when the batch does not
// divide evenly (an epoch's last one), and the average of the ranks' mean gradients would then
// weigh the examples of a smaller shard more: each rank scales its loss by its `share` of the
// global batch (its rows times the ranks over the global batch's rows), so the average is the
// gradient of one mean over the global batch, as one process with the whole batch computes it.
// The share is a tensor argument (another value does not trace again) and 1 for equal shards,
// where the scaling changes no bit.

#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "models.h"
#include "tapeflow/data.h"
#include "tapeflow/function.h"
#include "tapeflow/optim/optimizer.h"

namespace tapeflow::cli {

/// What one step gives back, as tensors.
struct StepResult {
  Tensor loss;     ///< float32 scalar: the batch's mean loss, before the update
  Tensor correct;  ///< int64 scalar: the batch's predictions (argmax of the logits) equal to the label
};

/// The training step of `model` with `optimizer`, traced (tf::function) or eager.
class TrainStep {
 public:
  /// `model` and `optimizer` must outlive the step; the optimizer must be built for the model's
  /// trainable variables. Nothing is traced before the first call.
  TrainStep(Model& model, optimizers::Optimizer& optimizer, bool eager, bool distributed = false);

  /// One optimizer step on `batch` (features float32 [b, 28, 28, 1], labels int32 [b]). With
  /// `distributed`, `global_rows` is the rows of the global batch this batch is a shard of (0:
  /// the shards are equal); without, it is ignored.
  StepResult operator()(const data::Batch& batch, std::int64_t global_rows = 0);
  /// The same step, run eagerly with a persistent tape so that the gradient report of the step
  /// (tf::debug::gradient_report) can be printed to `out` before the update.
  StepResult with_gradient_report(const data::Batch& batch, std::ostream& out);

  /// Whether calls run through tf::function.
  bool traced() const { return function_.has_value(); }
  /// The function's traces, graph calls and trace time (all zero for an eager step).
  FunctionStats stats() const;

 private:
  struct Body {
    Model* model;
    optimizers::Optimizer* optimizer;
    std::vector<Variable> vars;  // the model's trainable variables
    bool distributed = false;

    std::pair<Tensor, Tensor> operator()(const Tensor& features, const Tensor& labels) const {
      return run(features, labels, Tensor(), nullptr);
    }
    /// The distributed step, whose loss this rank's `share` (a float32 scalar) scales.
    std::pair<Tensor, Tensor> operator()(const Tensor& features, const Tensor& labels,
                                         const Tensor& share) const {
      return run(features, labels, share, nullptr);
    }
    /// The step; with `report`, prints the gradient report to it before the update.
    std::pair<Tensor, Tensor> run(const Tensor& features, const Tensor& labels, const Tensor& share,
                                  std::ostream* report) const;
  };

  Body body_;
  std::optional<Function<Body>> function_;
};

}  // namespace tapeflow::cli
