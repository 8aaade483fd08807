// The transformations that choose elements by counting: repeat, take, skip, shard. Each skips by
// asking its input to skip, so a restored position costs no element of theirs.

#include <limits>

#include "core/check.h"
#include "data/node.h"
#include "data/split_mix64.h"

namespace tapeflow::data {
namespace {

// TensorFlow's count arguments: -1 means "all" (or "forever" for repeat); below that is an error.
void check_count(std::int64_t count, std::string_view op) {
  TAPEFLOW_REQUIRE(count >= -1, InvalidArgumentError, "[{}] count must be >= 0, or -1 for all; got {}", op,
                   count);
}

class RepeatIterator final : public detail::NodeIterator {
 public:
  RepeatIterator(const detail::DatasetNode& input, std::uint64_t iteration, std::int64_t count)
      : input_(input), iteration_(iteration), count_(count) {
    // Repetition 0 runs the iteration itself: ds.repeat() starts as ds does.
    if (count_ != 0) current_ = input_.iterate(iteration_);
  }

  std::optional<Element> next() override {
    while (current_) {
      if (std::optional<Element> e = current_->next()) {
        produced_in_repetition_ = true;
        return e;
      }
      next_repetition();
    }
    return std::nullopt;
  }

  std::int64_t skip(std::int64_t n) override {
    std::int64_t skipped = 0;
    while (current_ && skipped < n) {
      const std::int64_t s = current_->skip(n - skipped);
      skipped += s;
      if (s > 0) produced_in_repetition_ = true;
      if (skipped < n) next_repetition();
    }
    return skipped;
  }

 private:
  // Starts the next repetition, a new iteration of the input (a shuffle in it draws a new order),
  // or ends: after the last one, or after one that produced nothing (an empty input would repeat
  // forever without producing).
  void next_repetition() {
    ++repetition_;
    if ((count_ != -1 && repetition_ >= count_) || !produced_in_repetition_) {
      current_.reset();
      return;
    }
    produced_in_repetition_ = false;
    const auto mixed = iteration_ ^ (0xD1B54A32D192ED03ull * static_cast<std::uint64_t>(repetition_));
    current_ = input_.iterate(SplitMix64(mixed).next());
  }

  const detail::DatasetNode& input_;
  std::uint64_t iteration_;
  std::int64_t count_;
  std::int64_t repetition_ = 0;
  bool produced_in_repetition_ = false;
  std::unique_ptr<detail::NodeIterator> current_;  // null at the end
};

class Repeat final : public detail::DatasetNode {
 public:
  Repeat(detail::NodePtr input, std::int64_t count) : input_(std::move(input)), count_(count) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<RepeatIterator>(*input_, iteration, count_);
  }
  // As TensorFlow's RepeatDataset.
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (count_ == -1) return n == 0 ? 0 : kInfiniteCardinality;
    if (count_ == 0) return 0;
    if (n < 0) return n;
    std::int64_t total = 0;
    return __builtin_mul_overflow(n, count_, &total) ? kInfiniteCardinality : total;
  }

 private:
  detail::NodePtr input_;
  std::int64_t count_;
};

class TakeIterator final : public detail::NodeIterator {
 public:
  TakeIterator(std::unique_ptr<detail::NodeIterator> input, std::int64_t count)
      : input_(std::move(input)), left_(count) {}
  std::optional<Element> next() override {
    if (left_ == 0) return std::nullopt;
    // An error takes an element's place (a position, as Iterator counts them), so it counts too.
    const bool limited = left_ > 0;
    if (limited) --left_;
    std::optional<Element> e = input_->next();
    if (!e && limited) left_ = 0;
    return e;
  }
  std::int64_t skip(std::int64_t n) override {
    const std::int64_t skipped = input_->skip(left_ < 0 ? n : std::min(n, left_));
    if (left_ > 0) left_ -= skipped;
    return skipped;
  }

 private:
  std::unique_ptr<detail::NodeIterator> input_;
  std::int64_t left_;  // -1: no limit
};

class Take final : public detail::DatasetNode {
 public:
  Take(detail::NodePtr input, std::int64_t count) : input_(std::move(input)), count_(count) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<TakeIterator>(input_->iterate(iteration), count_);
  }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (count_ == -1) return n;
    if (n == kInfiniteCardinality) return count_;
    if (n == kUnknownCardinality) return n;
    return std::min(n, count_);
  }

 private:
  detail::NodePtr input_;
  std::int64_t count_;
};

class SkipIterator final : public detail::NodeIterator {
 public:
  SkipIterator(std::unique_ptr<detail::NodeIterator> input, std::int64_t count)
      : input_(std::move(input)), to_skip_(count) {}
  std::optional<Element> next() override {
    skip_leading();
    return input_->next();
  }
  std::int64_t skip(std::int64_t n) override {
    skip_leading();
    return input_->skip(n);
  }

 private:
  void skip_leading() {
    if (to_skip_ != 0) input_->skip(to_skip_ == -1 ? std::numeric_limits<std::int64_t>::max() : to_skip_);
    to_skip_ = 0;
  }

  std::unique_ptr<detail::NodeIterator> input_;
  std::int64_t to_skip_;  // -1: everything
};

class Skip final : public detail::DatasetNode {
 public:
  Skip(detail::NodePtr input, std::int64_t count) : input_(std::move(input)), count_(count) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<SkipIterator>(input_->iterate(iteration), count_);
  }
  // As TensorFlow's SkipDataset.
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (n < 0) return n;
    if (count_ == -1) return 0;
    return std::max<std::int64_t>(0, n - count_);
  }

 private:
  detail::NodePtr input_;
  std::int64_t count_;
};

class ShardIterator final : public detail::NodeIterator {
 public:
  ShardIterator(std::unique_ptr<detail::NodeIterator> input, std::int64_t num_shards, std::int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::optional<Element> next() override {
    if (!skip_gap()) return std::nullopt;
    return input_->next();
  }
  std::int64_t skip(std::int64_t n) override {
    std::int64_t skipped = 0;
    while (skipped < n && skip_gap() && input_->skip(1) == 1) ++skipped;
    return skipped;
  }

 private:
  // Passes over the input elements before this shard's next one: the first index of them, then
  // num_shards - 1 after each. False when the input ends first.
  bool skip_gap() {
    const std::int64_t gap = started_ ? num_shards_ - 1 : index_;
    started_ = true;
    return input_->skip(gap) == gap;
  }

  std::unique_ptr<detail::NodeIterator> input_;
  std::int64_t num_shards_, index_;
  bool started_ = false;
};

class Shard final : public detail::DatasetNode {
 public:
  Shard(detail::NodePtr input, std::int64_t num_shards, std::int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<ShardIterator>(input_->iterate(iteration), num_shards_, index_);
  }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }

 private:
  detail::NodePtr input_;
  std::int64_t num_shards_, index_;
};

}  // namespace

Dataset Dataset::repeat(std::int64_t count) const {
  check_count(count, "Dataset.repeat");
  return Dataset(std::make_shared<Repeat>(node_, count));
}

Dataset Dataset::take(std::int64_t count) const {
  check_count(count, "Dataset.take");
  return Dataset(std::make_shared<Take>(node_, count));
}

Dataset Dataset::skip(std::int64_t count) const {
  check_count(count, "Dataset.skip");
  return Dataset(std::make_shared<Skip>(node_, count));
}

Dataset Dataset::shard(std::int64_t num_shards, std::int64_t index) const {
  TAPEFLOW_REQUIRE(
      num_shards >= 1 && index >= 0 && index < num_shards, InvalidArgumentError,
      "[Dataset.shard] index must be in 0..num_shards - 1 and num_shards >= 1; got num_shards {}, "
      "index {}",
      num_shards, index);
  return Dataset(std::make_shared<Shard>(node_, num_shards, index));
}

}  // namespace tapeflow::data
