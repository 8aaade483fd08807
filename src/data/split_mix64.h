#pragma once
// SplitMix64 (Steele, Lea, Flood 2014): the random numbers of tapeflow's shuffles. Tiny, fast, and
// its output is fully specified, so a seed gives the same order on every platform (std::shuffle's
// is implementation-defined).

#include <cstdint>

namespace tapeflow::data {

class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound), bound >= 1, without modulo bias: reject the lowest 2^64 mod bound values.
  std::uint64_t below(std::uint64_t bound) {
    const std::uint64_t threshold = (0 - bound) % bound;  // == 2^64 mod bound
    for (;;) {
      const std::uint64_t r = next();
      if (r >= threshold) return r % bound;
    }
  }

 private:
  std::uint64_t state_;
};

/// The generator's seed for iteration (epoch) `epoch` of a shuffle seeded with `seed`; part of
/// shuffled_indices' documented API (tapeflow/data.h).
inline std::uint64_t epoch_seed(std::uint64_t seed, std::uint64_t epoch) {
  return seed ^ (0x9E3779B97F4A7C15ull * (epoch + 1));
}

}  // namespace tapeflow::data
