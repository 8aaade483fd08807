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

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tapeflow/nn/layer.h"
#include "tapeflow/tensor.h"

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

 private:
  double rate_;
  std::uint64_t seed_;
  std::uint64_t calls_ = 0;  // training calls so far: the generator's position
};

/// A Dropout layer in a std::shared_ptr, ready for Sequential: tf::layers::dropout(0.25). The
/// arguments and errors are the constructor's.
inline std::shared_ptr<Dropout> dropout(double rate, std::optional<std::uint64_t> seed = std::nullopt,
                                        std::string name = "dropout") {
  return std::make_shared<Dropout>(rate, seed, std::move(name));
}

}  // namespace tapeflow::layers
#pragma GCC visibility pop
