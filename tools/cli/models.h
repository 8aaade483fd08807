#pragma once
// The two Fashion-MNIST classifiers of `tapeflow train`: the MLP (784-256-128-10) and the CNN
// (two 3x3 conv + 2x2 max-pool blocks, a 128-unit dense layer, dropout, 10 logits).
//
// Everything a model draws at random comes from one seed: the kernel initialisers, and the
// dropout masks, which are drawn per epoch from (seed, epoch) so that a run resumed from a
// checkpoint at the start of epoch e draws the same masks as an uninterrupted run.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/nn/layer.h"
#include "tapeflow/nn/sequential.h"

namespace tapeflow::cli {

/// The model names `--model` accepts, in the order `tapeflow train --help` lists them.
const std::vector<std::string>& model_names();

/// Dropout whose mask sequence restarts, from a seed derived from (seed, epoch), at the start of
/// every epoch (layers::Dropout's generator only ever advances, so it cannot be restored from a
/// checkpoint; this can, from the epoch number alone).
class EpochSeededDropout : public layers::Layer {
 public:
  EpochSeededDropout(double rate, std::uint64_t seed);
  /// Restarts the mask sequence for epoch `epoch`.
  void start_epoch(std::int64_t epoch);
  Tensor call(const Tensor& x, bool training) override;

 private:
  double rate_;
  std::uint64_t seed_;
  std::shared_ptr<layers::Layer> dropout_;
};

/// A classifier of 28x28x1 images into 10 classes: `net(x, training)` gives logits (batch, 10).
struct Model {
  std::string kind;                                           // "mlp" or "cnn"
  std::shared_ptr<layers::Sequential> net;                    // the layers, in order
  std::vector<std::shared_ptr<EpochSeededDropout>> dropouts;  // to restart at each epoch

  /// Restarts every dropout layer's masks for epoch `epoch` (call before training it).
  void start_epoch(std::int64_t epoch);
};

/// The model named `kind` ("mlp" or "cnn"), built (its variables exist) for float32 NHWC images
/// of 28x28x1. Throws InvalidArgumentError naming the accepted names for another kind.
Model make_model(std::string_view kind, std::uint64_t seed);

}  // namespace tapeflow::cli
