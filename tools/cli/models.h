#pragma once
// The two Fashion-MNIST classifiers of `tapeflow train`: the MLP (784-256-128-10) and the CNN
// (two 3x3 conv + 2x2 max-pool blocks, a 128-unit dense layer, dropout, 10 logits).
//
// Everything a model draws at random comes from one seed: the kernel initialisers, and the
// dropout masks, which are drawn per step from (seed, epoch, step) so that a run resumed from a
// checkpoint at any step draws the same masks as an uninterrupted run.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/nn/dropout.h"
#include "tapeflow/nn/layer.h"
#include "tapeflow/nn/sequential.h"

namespace tapeflow::cli {

/// SplitMix64's finaliser: well-mixed, distinct seeds for the layers of one model.
std::uint64_t mix(std::uint64_t x);

/// The image model names `--model` accepts, in the order `tapeflow train --help` lists them.
const std::vector<std::string>& model_names();

/// Dropout whose masks are drawn, at every step, from a seed derived from (seed, epoch, step)
/// (layers::Dropout's generator only advances by itself, and its state is not in a checkpoint;
/// this is restored from the epoch and step numbers alone, also when a run stopped mid-epoch).
/// start_step reseeds the inner layer by assigning its state variable (reset_seed), so a traced
/// training step reads each step's seed when it runs.
class StepSeededDropout : public layers::Layer {
 public:
  StepSeededDropout(double rate, std::uint64_t seed);
  /// Draws the masks of step `step` (0-based) of epoch `epoch` from here on.
  void start_step(std::int64_t epoch, std::int64_t step);
  Tensor call(const Tensor& x, bool training) override;

 private:
  std::uint64_t seed_;
  layers::Dropout dropout_;
};

/// A classifier of 28x28x1 images into 10 classes: `net(x, training)` gives logits (batch, 10).
struct Model {
  std::string kind;                                          // "mlp" or "cnn"
  std::shared_ptr<layers::Sequential> net;                   // the layers, in order
  std::vector<std::shared_ptr<StepSeededDropout>> dropouts;  // to reseed at each step

  /// Reseeds every dropout layer for step `step` of epoch `epoch` (call before the step).
  void start_step(std::int64_t epoch, std::int64_t step);
};

/// The model named `kind` ("mlp" or "cnn"), built (its variables exist) for float32 NHWC images
/// of 28x28x1, its layers under the dtype policy `precision` ("float32" or "mixed_bfloat16",
/// mixed_precision.h) except the logits layer, which computes in float32. Throws
/// InvalidArgumentError naming the accepted names for another kind or precision.
Model make_model(std::string_view kind, std::uint64_t seed, std::string_view precision = "float32");

}  // namespace tapeflow::cli
