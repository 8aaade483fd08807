// Seeded shuffling and batching of (features, labels) pairs.

#include <cstring>
#include <limits>
#include <new>

#include "core/check.h"
#include "data/shards.h"
#include "data/split_mix64.h"
#include "tapeflow/data.h"
#include "tapeflow/memory.h"

namespace tapeflow::data {
namespace {

// Copies rows `idx[0..count)` of `src` (rows of `row_bytes` bytes) into a new tensor whose first
// dimension is `count`; a run of consecutive indices is copied with one memcpy.
Tensor gather_rows(const Tensor& src, const std::int64_t* idx, std::int64_t count) {
  const Shape& s = src.shape();
  std::array<std::int64_t, kMaxRank> dims{};
  std::copy(s.dims().begin(), s.dims().end(), dims.begin());
  dims[0] = count;
  const std::size_t row_bytes = s[0] == 0 ? 0 : src.nbytes() / static_cast<std::size_t>(s[0]);
  const auto* from = static_cast<const std::byte*>(src.raw_data());
  auto copy_rows = [&](std::span<std::byte> to) {
    if (row_bytes == 0) return;
    std::int64_t i = 0;
    while (i < count) {
      std::int64_t j = i + 1;
      while (j < count && idx[j] == idx[j - 1] + 1) ++j;
      std::memcpy(to.data() + static_cast<std::size_t>(i) * row_bytes,
                  from + static_cast<std::size_t>(idx[i]) * row_bytes,
                  static_cast<std::size_t>(j - i) * row_bytes);
      i = j;
    }
  };
  return tensor_for_overwrite(
      Shape(std::span<const std::int64_t>(dims.data(), static_cast<std::size_t>(s.rank()))), src.dtype(),
      copy_rows, "BatchIterator");
}

/// 0, 1, ..., n - 1; ResourceExhaustedError naming `op` when n indices exceed the allocation
/// limit (a features tensor of shape (2^40, 0) has 2^40 examples and no bytes).
std::vector<std::int64_t> identity_order(std::int64_t n, std::string_view op) {
  check_allocation(n, sizeof(std::int64_t), op);
  std::vector<std::int64_t> order;
  try {
    order.resize(static_cast<std::size_t>(n));
  } catch (const std::bad_alloc&) {
    throw ResourceExhaustedError(fmt::format("[{}] out of memory allocating {} bytes", op,
                                             n * static_cast<std::int64_t>(sizeof(std::int64_t))));
  }
  for (std::int64_t i = 0; i < n; ++i) order[static_cast<std::size_t>(i)] = i;
  return order;
}

}  // namespace

std::vector<std::int64_t> shuffled_indices(std::int64_t n, std::uint64_t seed, std::int64_t epoch) {
  TAPEFLOW_REQUIRE(n >= 0, InvalidArgumentError, "[shuffled_indices] n must be >= 0, got {}", n);
  TAPEFLOW_REQUIRE(epoch >= 0, InvalidArgumentError, "[shuffled_indices] epoch must be >= 0, got {}", epoch);
  std::vector<std::int64_t> order = identity_order(n, "shuffled_indices");
  SplitMix64 rng(epoch_seed(seed, static_cast<std::uint64_t>(epoch)));
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(i) + 1));
    std::swap(order[static_cast<std::size_t>(i)], order[static_cast<std::size_t>(j)]);
  }
  return order;
}

BatchIterator::BatchIterator(Tensor features, Tensor labels, BatchOptions options)
    : features_(std::move(features)), labels_(std::move(labels)), options_(options) {
  constexpr std::string_view op = "BatchIterator";
  TAPEFLOW_REQUIRE(features_.defined() && labels_.defined(), InvalidArgumentError,
                   "[{}] features and labels must be defined tensors", op);
  TAPEFLOW_REQUIRE(
      features_.rank() >= 1 && labels_.rank() >= 1, InvalidArgumentError,
      "[{}] features and labels need a first (example) dimension; got features {} {} and labels {} {}", op,
      dtype_name(features_.dtype()), features_.shape().to_string(), dtype_name(labels_.dtype()),
      labels_.shape().to_string());
  TAPEFLOW_REQUIRE(features_.shape()[0] == labels_.shape()[0], InvalidArgumentError,
                   "[{}] features and labels must have the same number of examples (first dimension); got "
                   "features {} and labels {}",
                   op, features_.shape().to_string(), labels_.shape().to_string());
  TAPEFLOW_REQUIRE(options_.batch_size >= 1, InvalidArgumentError, "[{}] batch_size must be >= 1, got {}", op,
                   options_.batch_size);
  TAPEFLOW_REQUIRE(
      options_.num_shards >= 1 && options_.shard_index >= 0 && options_.shard_index < options_.num_shards,
      InvalidArgumentError, "[{}] shard_index {} must be in 0..num_shards - 1 (num_shards {})", op,
      options_.shard_index, options_.num_shards);
  TAPEFLOW_REQUIRE(!__builtin_mul_overflow(options_.batch_size, options_.num_shards, &global_batch_),
                   InvalidArgumentError, "[{}] batch_size {} times num_shards {} overflows int64", op,
                   options_.batch_size, options_.num_shards);
  n_ = features_.shape()[0];
  start_epoch(0);
}

void BatchIterator::start_epoch(std::int64_t epoch) {
  epoch_ = epoch;
  position_ = 0;
  if (options_.shuffle) {
    order_ = shuffled_indices(n_, options_.seed, epoch);
  } else if (static_cast<std::int64_t>(order_.size()) != n_) {
    order_ = identity_order(n_, "BatchIterator");
  }
}

void BatchIterator::reset(std::int64_t epoch) {
  TAPEFLOW_REQUIRE(epoch >= 0, InvalidArgumentError, "[BatchIterator] reset: epoch must be >= 0, got {}",
                   epoch);
  start_epoch(epoch);
}

std::int64_t BatchIterator::num_batches() const {
  if (options_.drop_remainder) return n_ / global_batch_;
  return global_batches(n_, options_.num_shards, options_.batch_size);
}

std::optional<Batch> BatchIterator::next() {
  const std::int64_t shards = options_.num_shards, shard = options_.shard_index;
  const std::int64_t global = std::min(n_ - position_, global_batch_);
  if (global <= 0 || global < shards || (options_.drop_remainder && global < global_batch_)) {
    // reset() may start any epoch; one more after the largest int64 would overflow (undefined).
    TAPEFLOW_REQUIRE(epoch_ < std::numeric_limits<std::int64_t>::max(), OutOfRangeError,
                     "[BatchIterator] epoch {} is the last an int64 can count; reset() to start again",
                     epoch_);
    start_epoch(epoch_ + 1);
    return std::nullopt;
  }
  // This shard's part of the global batch: batch_size examples of a full one (global = shards *
  // batch_size, so q = batch_size), or an even split of a last, smaller one.
  const auto [first, count] = shard_of(global, shards, shard);
  const std::int64_t* idx = order_.data() + position_ + first;
  position_ += global;
  return Batch{gather_rows(features_, idx, count), gather_rows(labels_, idx, count)};
}

}  // namespace tapeflow::data
