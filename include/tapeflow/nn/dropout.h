#pragma once
/// \file nn/dropout.h
/// Dropout: while training, zeroes each element with probability `rate` and scales the others
/// by 1 / (1 - rate), so the expected value is unchanged; at inference it is the identity. Like
/// tf.keras.layers.Dropout.
///
///   tf::layers::Dropout dropout(0.5, /*seed=*/42);
///   tf::Tensor y = dropout(x, /*training=*/true);   // about half zeroed, the rest doubled
///   tf::Tensor same = dropout(x);                   // training = false: x itself
///
/// Each training call draws a new mask from a generator seeded with `seed` that advances by one
/// step per call: two layers with the same seed give the same sequence of masks. Without a seed,
/// the layer takes the next seed of the process-wide sequence that Dense and Conv2D use.
///
/// The generator's state is a non-trainable int64 Variable of shape (2,), (seed, calls): a
/// training call reads it, draws the mask with random::stateless_uniform(x.shape(), state) and
/// adds (0, 1) to it, so a traced training step reads the state when it runs (Keras 3's
/// SeedGenerator keeps its state in a variable the same way). It is not tracked: variables()
/// stays empty and checkpoints of a model do not change with it. reset_seed() restarts it.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::layers {

/// Dropout (tf.keras.layers.Dropout): in training, zeroes each element with probability `rate`
/// and scales the others by 1 / (1 - rate); at inference, the identity.
class Dropout : public Layer {
 public:
  /// Throws InvalidArgumentError (naming Dropout) unless 0 <= rate < 1.
  explicit Dropout(double rate, std::optional<std::uint64_t> seed = std::nullopt,
                   std::string name = "dropout");

  /// x with dropout applied when `training`, else x. Throws InvalidArgumentError (naming
  /// Dropout, the shape and dtype) for a non-float input when training.
  Tensor operator()(const Tensor& x, bool training = false) { return call(x, training); }
  Tensor call(const Tensor& x, bool training) override;

  /// The probability of dropping an element in training.
  double rate() const { return rate_; }

  /// Restarts the generator as if the layer had just been built with `seed`: the next training
  /// call draws the mask a new Dropout(rate, seed) draws first. An assignment to the state
  /// variable, so a traced step that calls the layer sees it.
  void reset_seed(std::uint64_t seed);
  /// The generator's state: an int64 Variable of shape (2,) holding (seed, training calls so
  /// far), the seed stored as the int64 with its bits. Not trainable, not tracked.
  const Variable& seed_state() const { return state_; }

 private:
  double rate_;
  Variable state_;
};

/// A Dropout layer in a std::shared_ptr, ready for Sequential: tf::layers::dropout(0.25). The
/// arguments and errors are the constructor's.
inline std::shared_ptr<Dropout> dropout(double rate, std::optional<std::uint64_t> seed = std::nullopt,
                                        std::string name = "dropout") {
  return std::make_shared<Dropout>(rate, seed, std::move(name));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
