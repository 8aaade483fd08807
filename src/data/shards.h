#pragma once
// How data-parallel ranks split a global batch (data.h's BatchOptions::num_shards, Model::fit
// under mpirun): into `shards` consecutive parts that differ by at most one example, the first
// global % shards parts one larger. Every rank computes the same cut from the same global batch.

#include <algorithm>
#include <cstdint>
#include <utility>

namespace tapeflow::data {

/// Part `shard` (0 <= shard < shards) of a global batch of `global` examples: (first, count).
inline std::pair<std::int64_t, std::int64_t> shard_of(std::int64_t global, std::int64_t shards,
                                                      std::int64_t shard) {
  const std::int64_t q = global / shards, r = global % shards;
  return {shard * q + std::min(shard, r), q + (shard < r ? 1 : 0)};
}

/// Global batches of `shards * batch_size` examples an epoch of `n` examples makes, the last one
/// counted only if every shard gets an example of it (a smaller one is dropped).
inline std::int64_t global_batches(std::int64_t n, std::int64_t shards, std::int64_t batch_size) {
  const std::int64_t b = shards * batch_size, rest = n % b;
  return n / b + (rest != 0 && rest >= shards ? 1 : 0);
}

}  // namespace tapeflow::data
