#pragma once
// Reduction loops: sum, product, max, min over any set of axes; argmax/argmin along one axis; and
// the softmax family (a max and a sum along one axis, then an elementwise pass). Loops only: no
// autodiff, no validation (the op's shape rule has validated).
//
// The one idea: after dropping size-1 dimensions and merging neighbours of the same kind, a
// reduction whose reduced axes are contiguous sees its input as a 3-d block (outer, reduced,
// inner) — all axes: (1, n, 1); trailing axes: (rows, n, 1); leading axes (column sums): (1, n,
// cols). Two loops cover it:
//   - inner == 1: each output reduces a contiguous run of `reduced` elements: reduce_run keeps
//     kLanes independent accumulators, so the compiler vectorises the loop without reassociating;
//   - inner > 1: rows are streamed front to back into a row of accumulators (reduce_columns, in
//     tiles of up to kTile columns), vectorised along the contiguous columns.
// A reduction over non-contiguous axes (e.g. axes {0, 2} of a 3-d tensor) runs these blocks once
// per group of reduced axes, innermost group first, through an accumulator buffer.
//
// Accuracy (sums). float32 sums accumulate in double: the rounding error of a double sum of n
// float32 values stays below float32 resolution for any n < 2^29. Measured on this project's
// 2-core AMD EPYC (AVX-512): a 16M-element sum from memory takes the same time with a float or a
// double accumulator (~2.2 ms, memory-bound), a 16K-element sum already in cache 1.1 us instead
// of 0.7 us. A reduction large enough to matter streams from memory, so double it is. On top of
// that, runs longer than kPairwiseBlock are summed pairwise (NumPy's scheme: blocks of
// kPairwiseBlock with kLanes accumulators, merged as a balanced tree) and column sums are blocked
// by kRowBlock rows, so float64 sums get an O(log n) / O(n / kRowBlock + kRowBlock) error bound
// instead of O(n).
//
// Threads. Outputs are independent: parallel_for splits them (or tiles of them) across threads.
// When a large input has only a few outputs (a full reduction), the reduced axis is cut into
// chunks of fixed size whose partial results are combined in order. Chunk sizes depend only on
// the shape, never on the thread count, so a result is bitwise the same with 1 or 16 threads.

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "kernels/cpu/vmath.h"
#include "tapeflow/shape.h"

namespace tapeflow::cpu {

// ---- reducers ------------------------------------------------------------------------------------
// A reducer says how to combine: `Acc` (the accumulator type), `identity()` (the result of an
// empty reduction), `load(v)` (an element of the input, or of an accumulator buffer, as Acc) and
// an associative `combine(a, b)`.

/// Sum. Floats accumulate in double (see the header comment); integers in the unsigned type of
/// the same width, so overflow wraps (two's complement) like TensorFlow's kernels instead of being
/// undefined behaviour.
/// The accumulator of sums and products: double for floats, the unsigned type for integers.
template <class T>
struct WideAcc {
  using type = double;
};
template <class T>
requires std::is_integral_v<T>
struct WideAcc<T> {
  using type = std::make_unsigned_t<T>;
};

template <class T>
struct SumReducer {
  using Acc = typename WideAcc<T>::type;
  static constexpr Acc identity() { return Acc(0); }
  template <class U>
  static Acc load(U v) {
    return static_cast<Acc>(v);
  }
  static Acc combine(Acc a, Acc b) { return a + b; }
};

/// Sum of bfloat16 elements read as their bits (std::uint16_t: GCC vectorises the widening load
/// of a plain integer, as for max pooling's compared() in im2col.h), in double like
/// SumReducer<float>: the same accumulators in the same order as the float32 sum of the widened
/// elements, so the result is that sum bit for bit, without a widened copy of the input.
struct BFloat16SumReducer {
  using Acc = double;
  static constexpr Acc identity() { return 0.0; }
  static Acc load(std::uint16_t bits) { return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16); }
  static Acc load(Acc partial) { return partial; }  // an accumulator buffer (reduce's later groups)
  static Acc combine(Acc a, Acc b) { return a + b; }
};

/// Product; floats in double (no intermediate float32 overflow), integers wrap like SumReducer.
template <class T>
struct ProdReducer {
  using Acc = typename SumReducer<T>::Acc;
  static constexpr Acc identity() { return Acc(1); }
  template <class U>
  static Acc load(U v) {
    return static_cast<Acc>(v);
  }
  static Acc combine(Acc a, Acc b) { return a * b; }
};

/// Maximum; NaN propagates (like NumPy's max): a NaN anywhere gives NaN. Identity: -inf for
/// floats, the lowest value for integers (TensorFlow's result for an empty reduction).
template <class T>
struct MaxReducer {
  using Acc = T;
  static constexpr Acc identity() {
    if constexpr (std::is_floating_point_v<T>)
      return -std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::lowest();
  }
  static Acc load(T v) { return v; }
  // b wins if larger or NaN; a NaN `a` is kept because no comparison with it is true.
  static Acc combine(Acc a, Acc b) { return (b > a || b != b) ? b : a; }
};

/// Minimum; NaN propagates. Identity: +inf for floats, the largest value for integers.
template <class T>
struct MinReducer {
  using Acc = T;
  static constexpr Acc identity() {
    if constexpr (std::is_floating_point_v<T>)
      return std::numeric_limits<T>::infinity();
    else
      return std::numeric_limits<T>::max();
  }
  static Acc load(T v) { return v; }
  static Acc combine(Acc a, Acc b) { return (b < a || b != b) ? b : a; }
};

/// A tensor seen as (outer, n, inner) around one axis: the dimensions before it, the axis, after.
struct AxisBlocks {
  std::int64_t outer = 1, n = 1, inner = 1;
};
inline AxisBlocks axis_blocks(const Shape& s, int axis) {
  AxisBlocks b;
  for (int d = 0; d < s.rank(); ++d) {
    if (d < axis)
      b.outer *= s[d];
    else if (d == axis)
      b.n = s[d];
    else
      b.inner *= s[d];
  }
  return b;
}

// ---- block loops ---------------------------------------------------------------------------------

/// Independent accumulators in reduce_run: enough to fill several vector registers.
inline constexpr std::int64_t kLanes = 16;
/// Runs longer than this are split in halves (pairwise summation); a multiple of kLanes.
inline constexpr std::int64_t kPairwiseBlock = 256;
/// Columns per task in reduce_columns: wide, so that reads stay long and sequential (what the
/// hardware prefetcher needs); the accumulator row of a tile (128 KiB of double) stays in L2.
inline constexpr std::int64_t kTile = 16384;
/// Columns per task where a task keeps per-column state on the stack (argmax, softmax).
inline constexpr std::int64_t kScratchTile = 512;
/// Rows narrower than this are folded into wide rows in reduce_columns.
inline constexpr std::int64_t kNarrow = 32;
/// Rows accumulated in a scratch tile before it is folded into the result (blocked summation).
inline constexpr std::int64_t kRowBlock = 128;
/// Elements per chunk when one output's reduction is split across threads.
inline constexpr std::int64_t kChunk = std::int64_t{1} << 15;

/// combine over x[0..n) with kLanes independent accumulators (n <= kPairwiseBlock in practice).
template <class R, class In>
typename R::Acc reduce_leaf(const In* x, std::int64_t n) {
  using Acc = typename R::Acc;
  std::array<Acc, kLanes> lanes;
  lanes.fill(R::identity());
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    // NOTE: kept as a loop so that GCC's loop vectoriser takes it; fully unrolled, the
    // NaN-propagating max/min selects defeat the SLP vectoriser (scalar code, 3x slower).
#pragma GCC unroll 1
    for (std::int64_t j = 0; j < kLanes; ++j)
      lanes[static_cast<std::size_t>(j)] = R::combine(lanes[static_cast<std::size_t>(j)], R::load(x[i + j]));
  }
  Acc tail = R::identity();
  for (; i < n; ++i) tail = R::combine(tail, R::load(x[i]));
  for (std::int64_t w = kLanes / 2; w > 0; w /= 2)
    for (std::int64_t j = 0; j < w; ++j)
      lanes[static_cast<std::size_t>(j)] =
          R::combine(lanes[static_cast<std::size_t>(j)], lanes[static_cast<std::size_t>(j + w)]);
  return R::combine(lanes[0], tail);
}

/// combine over x[0..n) (n >= 0), pairwise above kPairwiseBlock: blocks of kPairwiseBlock are
/// merged like the digits of a binary counter, which builds the same balanced tree as recursive
/// halving (O(log n) error growth for sums) without recursion. (A recursive version measured 4x
/// slower on rows of 512 floats: the calls cost more than the 256-element leaves.)
template <class R, class In>
typename R::Acc reduce_run(const In* x, std::int64_t n) {
  using Acc = typename R::Acc;
  if (n <= kPairwiseBlock) return reduce_leaf<R>(x, n);
  std::array<Acc, 64> stack;  // partial sums of 2^k blocks; 64 levels cover any int64 n
  int depth = 0;
  std::int64_t count = 0;
  for (std::int64_t b = 0; b < n; b += kPairwiseBlock) {
    Acc v = reduce_leaf<R>(x + b, std::min(kPairwiseBlock, n - b));
    ++count;
    for (std::int64_t c = count; (c & 1) == 0; c >>= 1)
      v = R::combine(stack[static_cast<std::size_t>(--depth)], v);
    stack[static_cast<std::size_t>(depth++)] = v;
  }
  Acc r = stack[static_cast<std::size_t>(--depth)];
  while (depth > 0) r = R::combine(stack[static_cast<std::size_t>(--depth)], r);
  return r;
}

/// acc[i] = combine(acc[i], x[r * stride + i]) for rows r in [r0, r1), i in [0, w). Four rows per
/// pass: one load and store of `acc` per four input elements.
template <class R, class In>
void accumulate_rows(const In* x, std::int64_t stride, std::int64_t r0, std::int64_t r1, std::int64_t w,
                     typename R::Acc* acc) {
  std::int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const In* p0 = x + r * stride;
    const In* p1 = p0 + stride;
    const In* p2 = p1 + stride;
    const In* p3 = p2 + stride;
    for (std::int64_t i = 0; i < w; ++i)
      acc[i] = R::combine(acc[i], R::combine(R::combine(R::load(p0[i]), R::load(p1[i])),
                                             R::combine(R::load(p2[i]), R::load(p3[i]))));
  }
  for (; r < r1; ++r) {
    const In* row = x + r * stride;
    for (std::int64_t i = 0; i < w; ++i) acc[i] = R::combine(acc[i], R::load(row[i]));
  }
}

/// out[i] = combine over rows r in [r0, r1) of x[r * stride + i], for i in [0, w). Rows are
/// streamed front to back; the first kRowBlock rows accumulate straight into `out`, each later
/// block of kRowBlock rows into a scratch row folded into `out` (blocked summation). Narrow full
/// rows (w == stride < kNarrow: e.g. the 3 columns of an (n, 3) matrix) are read as wide rows of
/// m * w contiguous elements whose columns are folded back into w at the end, so the inner loop
/// stays long enough to vectorise.
template <class R, class In>
void reduce_columns(const In* x, std::int64_t stride, std::int64_t r0, std::int64_t r1, std::int64_t w,
                    typename R::Acc* out) {
  using Acc = typename R::Acc;
  if (w == stride && w < kNarrow) {
    const std::int64_t m = 2 * kNarrow / w, wide = m * w, wide_rows = (r1 - r0) / m;
    std::array<Acc, 2 * kNarrow> folded;
    reduce_columns<R>(x + r0 * stride, wide, 0, wide_rows, wide, folded.data());
    for (std::int64_t i = 0; i < w; ++i) {
      Acc a = folded[static_cast<std::size_t>(i)];
      for (std::int64_t k = 1; k < m; ++k) a = R::combine(a, folded[static_cast<std::size_t>(k * w + i)]);
      for (std::int64_t r = r0 + wide_rows * m; r < r1; ++r) a = R::combine(a, R::load(x[r * stride + i]));
      out[i] = a;
    }
    return;
  }
  std::fill_n(out, w, R::identity());
  accumulate_rows<R>(x, stride, r0, std::min(r1, r0 + kRowBlock), w, out);
  if (r1 - r0 <= kRowBlock) return;
  std::vector<Acc> blk(static_cast<std::size_t>(w));
  for (std::int64_t b = r0 + kRowBlock; b < r1; b += kRowBlock) {
    std::fill(blk.begin(), blk.end(), R::identity());
    accumulate_rows<R>(x, stride, b, std::min(r1, b + kRowBlock), w, blk.data());
    for (std::int64_t i = 0; i < w; ++i) out[i] = R::combine(out[i], blk[static_cast<std::size_t>(i)]);
  }
}

/// Reduces the middle axis of x viewed as (outer, n, inner): out[o * inner + i] = combine over r
/// of x[(o * n + r) * inner + i]. With n == 0 every output is the identity.
template <class R, class In>
void reduce_blocks(const In* x, std::int64_t outer, std::int64_t n, std::int64_t inner,
                   typename R::Acc* out) {
  using Acc = typename R::Acc;
  const std::int64_t n_out = outer * inner;
  if (n_out == 0) return;
  if (n == 0) {
    std::fill_n(out, n_out, R::identity());
    return;
  }
  // A task: rows [r0, r1) of block o, columns [i0, i0 + w) (inner == 1: one contiguous run).
  const std::int64_t tiles = (inner + kTile - 1) / kTile;
  const std::int64_t tasks = outer * tiles;
  const auto task = [&](std::int64_t t, std::int64_t r0, std::int64_t r1, Acc* dst) {
    const std::int64_t o = t / tiles, i0 = t % tiles * kTile;
    const In* base = x + o * n * inner;
    if (inner == 1)
      *dst = reduce_run<R>(base + r0, r1 - r0);
    else
      reduce_columns<R>(base + i0, inner, r0, r1, std::min(kTile, inner - i0), dst);
  };
  const auto dst_of = [&](Acc* buf, std::int64_t t) { return buf + t / tiles * inner + t % tiles * kTile; };
  // Only a few tasks and much work: also split the reduced axis into chunks, combined in order
  // afterwards (a shape-only decision, so results do not depend on the thread count).
  const std::int64_t chunk_rows = std::max<std::int64_t>(kRowBlock, kChunk / inner / kRowBlock * kRowBlock);
  if (tasks < 16 && n > 2 * chunk_rows && outer * n * inner >= 4 * kParallelGrain) {
    const std::int64_t chunks = (n + chunk_rows - 1) / chunk_rows;
    std::vector<Acc> partial(static_cast<std::size_t>(chunks * n_out));
    parallel_for(chunks * tasks, 1, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t k = b; k < e; ++k) {
        const std::int64_t c = k / tasks, t = k % tasks;
        task(t, c * chunk_rows, std::min(n, (c + 1) * chunk_rows), dst_of(partial.data() + c * n_out, t));
      }
    });
    std::copy_n(partial.begin(), n_out, out);
    for (std::int64_t c = 1; c < chunks; ++c) {
      const Acc* p = partial.data() + c * n_out;
      for (std::int64_t j = 0; j < n_out; ++j) out[j] = R::combine(out[j], p[j]);
    }
    return;
  }
  const std::int64_t cost = n * std::min(inner, kTile);
  parallel_for(tasks, std::max<std::int64_t>(1, kParallelGrain / cost), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t t = b; t < e; ++t) task(t, 0, n, dst_of(out, t));
  });
}

/// Reduces `x` of shape `s` over the axes flagged in `reduced` (one flag per axis), writing the
/// accumulators of the outputs in row-major order of the kept axes. Any axis set works: groups of
/// reduced axes that are not adjacent are reduced one after another, innermost first.
template <class R, class T>
void reduce(const T* x, const Shape& s, const std::array<bool, kMaxRank>& reduced, typename R::Acc* out) {
  using Acc = typename R::Acc;
  std::int64_t n_out = 1;
  for (int d = 0; d < s.rank(); ++d)
    if (!reduced[static_cast<std::size_t>(d)]) n_out *= s[d];
  if (n_out == 0) return;
  if (s.num_elements() == 0) {
    std::fill_n(out, n_out, R::identity());
    return;
  }
  // Groups: maximal runs of axes of the same kind, size-1 axes dropped.
  struct Group {
    std::int64_t size;
    bool reduced;
  };
  std::vector<Group> groups;
  for (int d = 0; d < s.rank(); ++d) {
    if (s[d] == 1) continue;
    const bool r = reduced[static_cast<std::size_t>(d)];
    if (!groups.empty() && groups.back().reduced == r)
      groups.back().size *= s[d];
    else
      groups.push_back({s[d], r});
  }
  const auto last_reduced = [&] {
    for (int g = static_cast<int>(groups.size()) - 1; g >= 0; --g)
      if (groups[static_cast<std::size_t>(g)].reduced) return g;
    return -1;
  };
  int g = last_reduced();
  if (g < 0) {  // only size-1 axes are reduced: a copy
    for (std::int64_t i = 0; i < n_out; ++i) out[i] = R::load(x[i]);
    return;
  }
  std::vector<Acc> buf, next;
  bool first = true;
  while (g >= 0) {
    std::int64_t outer = 1, inner = 1;
    for (int k = 0; k < g; ++k) outer *= groups[static_cast<std::size_t>(k)].size;
    for (std::size_t k = static_cast<std::size_t>(g) + 1; k < groups.size(); ++k) inner *= groups[k].size;
    const std::int64_t n = groups[static_cast<std::size_t>(g)].size;
    groups.erase(groups.begin() + g);
    const int next_g = last_reduced();
    Acc* dst = out;
    if (next_g >= 0) {
      next.resize(static_cast<std::size_t>(outer * inner));
      dst = next.data();
    }
    if (first)
      reduce_blocks<R>(x, outer, n, inner, dst);
    else
      reduce_blocks<R>(buf.data(), outer, n, inner, dst);
    first = false;
    buf.swap(next);
    g = next_g;
  }
}

// ---- argmax / argmin -----------------------------------------------------------------------------

/// For x viewed as (outer, n, inner) with n >= 1: the index along the middle axis of the largest
/// (kMax) or smallest value, the first one on ties. NaN counts as the extreme value (NumPy's
/// rule): the index of the first NaN is returned.
template <bool kMax, class T>
void arg_reduce(const T* x, std::int64_t outer, std::int64_t n, std::int64_t inner, std::int64_t* out) {
  using R = std::conditional_t<kMax, MaxReducer<T>, MinReducer<T>>;
  if (outer * inner == 0) return;
  if (inner == 1) {
    // Two passes: the extreme value (vectorised), then the first position holding it.
    std::vector<T> best(static_cast<std::size_t>(outer));
    reduce_blocks<R>(x, outer, n, 1, best.data());
    parallel_for(outer, std::max<std::int64_t>(1, kParallelGrain / n), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t o = b; o < e; ++o) {
        const T* row = x + o * n;
        const T v = best[static_cast<std::size_t>(o)];
        std::int64_t i = 0;
        if (v != v) {
          while (i < n - 1 && row[i] == row[i]) ++i;
        } else {
          while (i < n - 1 && row[i] != v) ++i;
        }
        out[o] = i;
      }
    });
    return;
  }
  const std::int64_t tiles = (inner + kScratchTile - 1) / kScratchTile;
  const std::int64_t cost = n * std::min(inner, kScratchTile);
  parallel_for(outer * tiles, std::max<std::int64_t>(1, kParallelGrain / cost),
               [&](std::int64_t b, std::int64_t e) {
                 std::array<T, kScratchTile> best;
                 std::array<std::int64_t, kScratchTile> idx;
                 for (std::int64_t t = b; t < e; ++t) {
                   const std::int64_t o = t / tiles, i0 = t % tiles * kScratchTile,
                                      w = std::min(kScratchTile, inner - i0);
                   const T* base = x + o * n * inner + i0;
                   std::copy_n(base, w, best.begin());
                   std::fill_n(idx.begin(), w, 0);
                   for (std::int64_t r = 1; r < n; ++r) {
                     const T* row = base + r * inner;
                     for (std::int64_t i = 0; i < w; ++i) {
                       const T v = row[i], cur = best[static_cast<std::size_t>(i)];
                       const bool better = (kMax ? v > cur : v < cur) || (v != v && cur == cur);
                       if (better) {
                         best[static_cast<std::size_t>(i)] = v;
                         idx[static_cast<std::size_t>(i)] = r;
                       }
                     }
                   }
                   std::copy_n(idx.begin(), w, out + o * inner + i0);
                 }
               });
}

// ---- softmax family ------------------------------------------------------------------------------

/// Which function softmax_blocks computes along the axis.
enum class SoftmaxKind { kSoftmax, kLogSoftmax };

/// Softmax (exp(x - max) / sum) or log-softmax ((x - max) - log(sum exp(x - max))) along the
/// middle axis of x viewed as (outer, n, inner). The max is subtracted first, so no exp overflows;
/// sums accumulate in double. NaN in a slice makes the whole slice NaN.
template <SoftmaxKind kKind, class T>
void softmax_blocks(const T* x, std::int64_t outer, std::int64_t n, std::int64_t inner, T* y) {
  if (outer * n * inner == 0) return;
  constexpr bool kSoftmax = kKind == SoftmaxKind::kSoftmax;
  if (inner == 1) {
    parallel_for(outer, std::max<std::int64_t>(1, kParallelGrain / (4 * n)),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t o = b; o < e; ++o) {
                     const T* xr = x + o * n;
                     T* yr = y + o * n;
                     const T m = reduce_run<MaxReducer<T>>(xr, n);
                     // exp(x - m) into y with vectorised exp, then sum y.
                     for (std::int64_t i = 0; i < n; ++i) yr[i] = xr[i] - m;
                     vmath::exp(yr, yr, n);
                     const double s = reduce_run<SumReducer<T>>(yr, n);
                     if constexpr (kSoftmax) {
                       const auto inv = static_cast<T>(1.0 / s);
                       for (std::int64_t i = 0; i < n; ++i) yr[i] *= inv;
                     } else {
                       const auto log_s = static_cast<T>(std::log(s));
                       for (std::int64_t i = 0; i < n; ++i) yr[i] = (xr[i] - m) - log_s;
                     }
                   }
                 });
    return;
  }
  const std::int64_t tiles = (inner + kScratchTile - 1) / kScratchTile;
  const std::int64_t w_max = std::min(inner, kScratchTile);
  parallel_for(outer * tiles, std::max<std::int64_t>(1, kParallelGrain / (4 * n * w_max)),
               [&](std::int64_t b, std::int64_t e) {
                 std::array<T, kScratchTile> m, f;  // f: 1 / sum (softmax) or log(sum) (log-softmax)
                 std::array<double, kScratchTile> s;
                 for (std::int64_t t = b; t < e; ++t) {
                   const std::int64_t o = t / tiles, i0 = t % tiles * kScratchTile,
                                      w = std::min(kScratchTile, inner - i0);
                   const T* xb = x + o * n * inner + i0;
                   T* yb = y + o * n * inner + i0;
                   std::fill_n(m.begin(), w, MaxReducer<T>::identity());
                   std::fill_n(s.begin(), w, 0.0);
                   for (std::int64_t r = 0; r < n; ++r)
                     for (std::int64_t i = 0; i < w; ++i) {
                       const auto k = static_cast<std::size_t>(i);
                       m[k] = MaxReducer<T>::combine(m[k], xb[r * inner + i]);
                     }
                   for (std::int64_t r = 0; r < n; ++r) {
                     T* yr = yb + r * inner;
                     for (std::int64_t i = 0; i < w; ++i)
                       yr[i] = xb[r * inner + i] - m[static_cast<std::size_t>(i)];
                     vmath::exp(yr, yr, w);
                     for (std::int64_t i = 0; i < w; ++i)
                       s[static_cast<std::size_t>(i)] += static_cast<double>(yr[i]);
                   }
                   for (std::int64_t i = 0; i < w; ++i) {
                     const auto k = static_cast<std::size_t>(i);
                     f[k] = static_cast<T>(kSoftmax ? 1.0 / s[k] : std::log(s[k]));
                   }
                   for (std::int64_t r = 0; r < n; ++r)
                     for (std::int64_t i = 0; i < w; ++i) {
                       const auto k = static_cast<std::size_t>(i);
                       if constexpr (kSoftmax)
                         yb[r * inner + i] *= f[k];
                       else
                         yb[r * inner + i] = (xb[r * inner + i] - m[k]) - f[k];
                     }
                 }
               });
}

}  // namespace tapeflow::cpu
