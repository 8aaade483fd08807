// Dataset.shuffle with TensorFlow's buffer: fill it with the first buffer_size elements, then
// each step yields a uniformly drawn buffer element and puts the next input element in its place
// (once the input is exhausted, the last buffer element takes it, and the buffer shrinks).

#include <random>

#include "core/check.h"
#include "data/node.h"
#include "data/split_mix64.h"

namespace tapeflow::data {
namespace {

class ShuffleIterator final : public detail::NodeIterator {
 public:
  ShuffleIterator(std::unique_ptr<detail::NodeIterator> input, std::size_t buffer_size, std::uint64_t seed)
      : input_(std::move(input)), buffer_size_(buffer_size), rng_(seed) {}

  std::optional<Element> next() override {
    while (!input_done_ && buffer_.size() < buffer_size_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_done_ = true;
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    if (buffer_.empty()) return std::nullopt;
    const auto i = static_cast<std::size_t>(rng_.below(buffer_.size()));
    Element chosen = std::move(buffer_[i]);
    buffer_[i] = std::move(buffer_.back());
    buffer_.pop_back();
    return chosen;
  }

 private:
  std::unique_ptr<detail::NodeIterator> input_;
  std::size_t buffer_size_;
  SplitMix64 rng_;
  std::vector<Element> buffer_;
  bool input_done_ = false;
};

class Shuffle final : public detail::DatasetNode {
 public:
  Shuffle(detail::NodePtr input, std::int64_t buffer_size, std::uint64_t seed, bool reshuffle)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<ShuffleIterator>(input_->iterate(iteration),
                                             static_cast<std::size_t>(buffer_size_),
                                             epoch_seed(seed_, reshuffle_ ? iteration : 0));
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  detail::NodePtr input_;
  std::int64_t buffer_size_;
  std::uint64_t seed_;
  bool reshuffle_;
};

}  // namespace

Dataset Dataset::shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed,
                         bool reshuffle_each_iteration) const {
  TAPEFLOW_REQUIRE(buffer_size >= 1, InvalidArgumentError,
                   "[Dataset.shuffle] buffer_size must be >= 1, got {}", buffer_size);
  // NOTE: without a seed the order differs from run to run, so a checkpointed position resumes
  // exactly only within the process that drew the seed.
  const std::uint64_t s =
      seed ? *seed : (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return Dataset(std::make_shared<Shuffle>(node_, buffer_size, s, reshuffle_each_iteration));
}

}  // namespace tapeflow::data
