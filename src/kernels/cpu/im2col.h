#pragma once
// Sliding-window kernels on NHWC images: im2col / col2im for convolution (the GEMM does the
// arithmetic, see src/ops/nn_conv.cpp) and the pooling loops.
//
// Geometry (validated by the caller, every product fits int64): an image is (h, w, c); a window
// of (kh, kw) slides with strides (sh, sw) over the image padded by pad_top / pad_left zeros
// (a convolution's window may be dilated: its taps (dh, dw) apart, covering (kh - 1) * dh + 1 rows)
// (the bottom and right padding is implied by the output size (oh, ow)). Output position
// (oy, ox) reads input rows oy * sh - pad_top + [0, kh) and columns ox * sw - pad_left + [0, kw);
// positions outside [0, h) x [0, w) are padding.
//
// A pooling window may be far larger than the image (SAME padding accepts any window up to 2^31
// on a side): the pooling kernels never loop over, allocate for or multiply by the window itself,
// only by its part inside the image (window_rows() x window_cols()), so their time and memory
// depend on the input, not on the window.
//
// im2col writes one row per output position, (oh * ow) rows of kh * kw * c columns ordered
// (ky, kx, ci): the layout of an HWIO filter reshaped to (kh * kw * c, out_channels), so that
// conv = cols @ filters.

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "tapeflow/dtype.h"

namespace tapeflow::cpu {

struct WindowGeometry {
  std::int64_t n = 0, h = 0, w = 0, c = 0;  // input (batch, height, width, channels)
  std::int64_t kh = 1, kw = 1;              // window
  std::int64_t sh = 1, sw = 1;              // strides
  std::int64_t oh = 0, ow = 0;              // output height, width
  std::int64_t pad_top = 0, pad_left = 0;
  std::int64_t dh = 1, dw = 1;  // dilations (convolution only; pooling windows are dense)
  std::int64_t groups = 1;      // convolution only: c / groups input channels per group

  std::int64_t image_size() const { return h * w * c; }
  std::int64_t out_positions() const { return oh * ow; }
  std::int64_t patch_size() const { return kh * kw * c; }
  /// Input rows (columns) one window can cover: the window clamped to the image.
  std::int64_t window_rows() const { return std::min(kh, h); }
  std::int64_t window_cols() const { return std::min(kw, w); }
  /// Input positions one window can cover (at most h * w, so it fits int64).
  std::int64_t window_positions() const { return window_rows() * window_cols(); }
  /// The clipped input range [lo, hi) of output row oy (or column ox).
  std::int64_t row_lo(std::int64_t oy) const { return std::max<std::int64_t>(oy * sh - pad_top, 0); }
  std::int64_t row_hi(std::int64_t oy) const { return std::min<std::int64_t>(oy * sh - pad_top + kh, h); }
  std::int64_t col_lo(std::int64_t ox) const { return std::max<std::int64_t>(ox * sw - pad_left, 0); }
  std::int64_t col_hi(std::int64_t ox) const { return std::min<std::int64_t>(ox * sw - pad_left + kw, w); }
};

/// Rows per parallel_for task so that one task touches about kParallelGrain elements.
inline std::int64_t rows_grain(std::int64_t per_row) {
  return std::max<std::int64_t>(1, kParallelGrain / std::max<std::int64_t>(per_row, 1));
}

/// rows_grain for rows of `outputs` pooled outputs, each reading a window: outputs times the
/// window's positions inside the image, saturated (the product only has to exceed the grain; for
/// a huge image with a huge window it would overflow int64).
inline std::int64_t pool_rows_grain(const WindowGeometry& g, std::int64_t outputs) {
  std::int64_t work = 0;
  if (__builtin_mul_overflow(outputs, g.window_positions(), &work)) return 1;
  return rows_grain(work);
}

/// cols[(img * oh * ow + oy * ow + ox), (ky * kw + kx) * c + ci] = x[img][iy][ix][ci] (0 in the
/// padding) for `images` consecutive images starting at x.
template <class T>
void im2col(const T* x, std::int64_t images, const WindowGeometry& g, T* cols) {
  const std::int64_t patch = g.patch_size(), img = g.image_size();
  parallel_for(images * g.oh, rows_grain(g.ow * patch), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) {
      const std::int64_t i = r / g.oh, oy = r % g.oh;
      const T* xi = x + i * img;
      T* out = cols + r * g.ow * patch;
      for (std::int64_t ox = 0; ox < g.ow; ++ox, out += patch) {
        T* o = out;
        for (std::int64_t ky = 0; ky < g.kh; ++ky) {
          const std::int64_t iy = oy * g.sh - g.pad_top + ky * g.dh;
          if (iy < 0 || iy >= g.h) {
            std::fill(o, o + g.kw * g.c, T(0));
            o += g.kw * g.c;
            continue;
          }
          const std::int64_t ix0 = ox * g.sw - g.pad_left;
          if (g.dw == 1 && ix0 >= 0 && ix0 + g.kw <= g.w) {  // the window row is inside: one contiguous span
            std::copy(xi + (iy * g.w + ix0) * g.c, xi + (iy * g.w + ix0 + g.kw) * g.c, o);
            o += g.kw * g.c;
            continue;
          }
          for (std::int64_t kx = 0; kx < g.kw; ++kx, o += g.c) {
            const std::int64_t ix = ix0 + kx * g.dw;
            if (ix < 0 || ix >= g.w)
              std::fill(o, o + g.c, T(0));
            else
              std::copy(xi + (iy * g.w + ix) * g.c, xi + (iy * g.w + ix + 1) * g.c, o);
          }
        }
      }
    }
  });
}

/// The adjoint of im2col: x[img][iy][ix][ci] += every cols entry im2col would read from it.
/// `x` must be zeroed (or hold values to add to). Images run in parallel (disjoint outputs).
template <class T>
void col2im_add(const T* cols, std::int64_t images, const WindowGeometry& g, T* x) {
  const std::int64_t patch = g.patch_size(), img = g.image_size();
  parallel_for(images, rows_grain(g.out_positions() * patch), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      T* xi = x + i * img;
      const T* in = cols + i * g.out_positions() * patch;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox, in += patch) {
          const T* p = in;
          for (std::int64_t ky = 0; ky < g.kh; ++ky) {
            const std::int64_t iy = oy * g.sh - g.pad_top + ky * g.dh;
            if (iy < 0 || iy >= g.h) {
              p += g.kw * g.c;
              continue;
            }
            const std::int64_t ix0 = ox * g.sw - g.pad_left;
            if (g.dw == 1 && ix0 >= 0 && ix0 + g.kw <= g.w) {  // one contiguous span
              T* dst = xi + (iy * g.w + ix0) * g.c;
              for (std::int64_t j = 0; j < g.kw * g.c; ++j) dst[j] += p[j];
              p += g.kw * g.c;
              continue;
            }
            for (std::int64_t kx = 0; kx < g.kw; ++kx, p += g.c) {
              const std::int64_t ix = ix0 + kx * g.dw;
              if (ix < 0 || ix >= g.w) continue;
              T* dst = xi + (iy * g.w + ix) * g.c;
              for (std::int64_t ci = 0; ci < g.c; ++ci) dst[ci] += p[ci];
            }
          }
        }
    }
  });
}

/// The value max pooling compares: a float or double as it is; bfloat16, which the pooling kernels
/// take as its bits (std::uint16_t: with the bfloat16_t struct itself GCC vectorised none of the
/// loops, 10x slower than widening to float32), as the float it holds.
template <class T>
inline T compared(T v) {
  return v;
}
inline float compared(std::uint16_t bfloat16_bits) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(bfloat16_bits) << 16);
}

/// a += b; for bfloat16's bits, float32 arithmetic rounded once to bfloat16.
template <class T>
inline void add_to(T& a, T b) {
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    a = bfloat16_t(compared(a) + compared(b)).bits;
  } else {
    a += b;
  }
}

/// Calls f(image, oy) for each output row of images, in parallel over output rows.
template <class F>
void for_each_output_row(const WindowGeometry& g, F f) {
  parallel_for(g.n * g.oh, pool_rows_grain(g, g.ow * g.c), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t r = b; r < e; ++r) f(r / g.oh, r % g.oh);
  });
}

/// Whether the pooling windows tile the image: window = stride, no padding, every window inside
/// the image (the usual 2x2 pooling; of an odd image with VALID padding the last row and column are
/// in no window). Then each input element is in at most one window. At least one window: the
/// tiled gradient writes dx from the windows' rows.
inline bool windows_tile(const WindowGeometry& g) {
  return g.kh == g.sh && g.kw == g.sw && g.pad_top == 0 && g.pad_left == 0 && g.oh > 0 && g.ow > 0 &&
         g.oh * g.sh <= g.h && g.ow * g.sw <= g.w;
}

/// For windows that tile the image: the flat index of the first element of input row ky of output
/// row r's windows, r counting the output rows of the images one after another.
inline std::int64_t tiled_input_row(const WindowGeometry& g, std::int64_t r, std::int64_t ky) {
  return ((r / g.oh) * g.h + (r % g.oh) * g.kh + ky) * g.w * g.c;
}

/// The tiled pooling kernels' registers: kLanes channels of T as GCC vectors, compared as the values
/// compared() gives (bfloat16's bits widened to float32). Written as vectors, not as loops left to
/// the auto-vectoriser: over a window's few channels GCC either set up a loop of unknown length per
/// window position (more than the arithmetic at the CNN's 32 channels) or, with the length a
/// constant, unrolled it into scalar branches (3-15x slower than copying the input). Vectors pass
/// by reference and results come back through reference parameters: a 64-byte vector passed or
/// returned by value has another ABI with AVX-512 than without, which a build for the x86-64
/// baseline (TAPEFLOW_NATIVE=OFF, a subproject, the package) reports as a -Wpsabi warning.
template <class T>
struct PoolVectors {
  static constexpr std::int64_t kLanes = 16;
  using Compared = decltype(compared(T{}));  // float or double
  using Index = std::conditional_t<sizeof(Compared) == 4, std::int32_t, std::int64_t>;
  typedef Compared Values __attribute__((vector_size(kLanes * sizeof(Compared))));
  typedef Index Mask __attribute__((vector_size(kLanes * sizeof(Compared))));  // also positions
  typedef T Stored __attribute__((vector_size(kLanes * sizeof(T))));

  /// v = the first `lanes` (at most kLanes) elements at p, the rest 0.
  [[gnu::always_inline]] static void load(Stored& v, const T* p, std::int64_t lanes) {
    v = Stored{};
    if (lanes == kLanes) {  // a constant size: one load, not a call to memcpy
      std::memcpy(&v, p, sizeof v);
    } else {
      std::memcpy(&v, p, static_cast<std::size_t>(lanes) * sizeof(T));
    }
  }
  /// out = v as compared() sees it.
  [[gnu::always_inline]] static void widen(Values& out, const Stored& v) {
    if constexpr (std::is_same_v<T, std::uint16_t>) {
      typedef std::uint32_t Bits __attribute__((vector_size(kLanes * 4)));
      const Bits bits = __builtin_convertvector(v, Bits) << 16;
      std::memcpy(&out, &bits, sizeof out);
    } else {
      out = v;
    }
  }
  /// out = lane by lane, `a` where `where` is set, else `b` (out may be `a` or `b`).
  [[gnu::always_inline]] static void select(Stored& out, const Mask& where, const Stored& a,
                                            const Stored& b) {
    if constexpr (sizeof(T) == sizeof(Compared)) {
      out = where ? a : b;
    } else {
      typedef std::int16_t Narrow __attribute__((vector_size(kLanes * sizeof(T))));
      out = __builtin_convertvector(where, Narrow) ? a : b;
    }
  }
  /// The first `lanes` elements at p = v's.
  [[gnu::always_inline]] static void store(T* p, const Stored& v, std::int64_t lanes) {
    if (lanes == kLanes) {
      std::memcpy(p, &v, sizeof v);
    } else {
      std::memcpy(p, &v, static_cast<std::size_t>(lanes) * sizeof(T));
    }
  }
  /// The first `lanes` elements at p += v's where `where` is set, += 0 elsewhere (as add_to adds:
  /// bfloat16 through float32, rounded once).
  [[gnu::always_inline]] static void add_where(T* p, const Mask& where, const Stored& v, std::int64_t lanes) {
    if constexpr (sizeof(T) == sizeof(Compared)) {
      Stored sum, added;
      load(sum, p, lanes);
      select(added, where, v, Stored{});
      sum += added;
      store(p, sum, lanes);
    } else {
      for (std::int64_t l = 0; l < lanes; ++l) add_to(p[l], where[l] ? v[l] : T(0));
    }
  }
  /// take = whether each lane of v replaces m as a window's maximum: larger, or the first NaN (NaN
  /// propagates, as in TensorFlow's CPU kernel).
  [[gnu::always_inline]] static void takes_max(Mask& take, const Values& v, const Values& m) {
    take = (v > m) | ((v != v) & (m == m));
  }
};

/// The maxima of one output row's windows: per slot (window ox, channels [cb, cb + kLanes)), the
/// maximum as compared() sees it, as stored, and its position k in the window (row-major over the
/// window's part inside the image: WindowGeometry's clipped ranges). scan() reads the window rows
/// one after another, each from start to end: read a window at a time (its rows in alternation),
/// max pooling ran 2.5x slower from memory (the prefetcher follows one stream, not several
/// interleaved). Each window still meets its positions in row-major order, so the maximum is its
/// first maximum, as TensorFlow's kernel picks it.
template <class T>
struct RowMaxima {
  using V = PoolVectors<T>;
  explicit RowMaxima(const WindowGeometry& g)
      : g(g),
        chunks((g.c + V::kLanes - 1) / V::kLanes),
        max(static_cast<std::size_t>(g.ow * chunks)),
        stored(max.size()),
        pos(max.size()) {}

  /// Fills max, stored and pos for output row oy of image i.
  void scan(const T* x, std::int64_t i, std::int64_t oy) {
    const std::int64_t c = g.c, y0 = g.row_lo(oy), y1 = g.row_hi(oy);
    for (std::int64_t iy = y0; iy < y1; ++iy) {
      const T* in = x + (i * g.h + iy) * g.w * c;
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        const std::int64_t x0 = g.col_lo(ox), width = g.col_hi(ox) - x0;
        if (width <= 0) continue;
        const auto first = static_cast<typename V::Index>((iy - y0) * width);  // position of (iy, x0)
        for (std::int64_t cb = 0, slot = ox * chunks; cb < c; cb += V::kLanes, ++slot) {
          const std::int64_t lanes = std::min(V::kLanes, c - cb);
          // This row's first maximum in the window, then against the rows above (which come
          // first: a tie keeps theirs).
          const T* at = in + x0 * c + cb;
          typename V::Stored o, s;
          typename V::Values m, v;
          V::load(o, at, lanes);
          V::widen(m, o);
          typename V::Mask p = typename V::Mask{} + first;
          for (std::int64_t kx = 1; kx < width; ++kx) {
            V::load(s, at + kx * c, lanes);
            V::widen(v, s);
            typename V::Mask take;
            V::takes_max(take, v, m);
            m = take ? v : m;
            V::select(o, take, s, o);
            p = take ? typename V::Mask{} + static_cast<typename V::Index>(first + kx) : p;
          }
          const auto k = static_cast<std::size_t>(slot);
          typename V::Mask take = ~typename V::Mask{};
          if (iy != y0) V::takes_max(take, m, max[k]);
          max[k] = take ? m : max[k];
          V::select(stored[k], take, o, stored[k]);
          pos[k] = take ? p : pos[k];
        }
      }
    }
  }
  /// Whether window (oy, ox) has no input element (never with TensorFlow's padding): its slots
  /// hold nothing.
  bool empty(std::int64_t oy, std::int64_t ox) const {
    return g.row_lo(oy) >= g.row_hi(oy) || g.col_lo(ox) >= g.col_hi(ox);
  }

  const WindowGeometry& g;
  const std::int64_t chunks;  // slots per window
  std::vector<typename V::Values> max;
  std::vector<typename V::Stored> stored;
  std::vector<typename V::Mask> pos;
};

/// Calls f(image, oy, maxima) for each output row, its maxima scanned (RowMaxima), output rows in
/// parallel with one RowMaxima per thread.
template <class T, class F>
void for_each_scanned_row(const T* x, const WindowGeometry& g, F f) {
  parallel_for(g.n * g.oh, pool_rows_grain(g, g.ow * g.c), [&](std::int64_t b, std::int64_t e) {
    RowMaxima<T> maxima(g);
    for (std::int64_t r = b; r < e; ++r) {
      maxima.scan(x, r / g.oh, r % g.oh);
      f(r / g.oh, r % g.oh, maxima);
    }
  });
}

/// max_pool_grad for windows that tile the image: every element of dx is written once (dy at its
/// window's first maximum, 0 elsewhere and in the rows and columns no window reaches), without
/// zeroing dx first or adding, input rows one after another.
template <class T>
void max_pool_grad_tiled(const T* x, const T* dy, const WindowGeometry& g, T* dx) {
  using V = PoolVectors<T>;
  const std::int64_t c = g.c, row = g.w * c, covered = g.ow * g.kw * c;  // of a row, in windows
  for_each_scanned_row(x, g, [&](std::int64_t i, std::int64_t oy, const RowMaxima<T>& maxima) {
    const std::int64_t r = i * g.oh + oy;
    for (std::int64_t ky = 0; ky < g.kh; ++ky) {
      T* out = dx + tiled_input_row(g, r, ky);
      std::fill(out + covered, out + row, T(0));
      for (std::int64_t ox = 0, slot = 0; ox < g.ow; ++ox)
        for (std::int64_t cb = 0; cb < c; cb += V::kLanes, ++slot) {
          const std::int64_t lanes = std::min(V::kLanes, c - cb);
          typename V::Stored d, at_k;
          V::load(d, dy + (r * g.ow + ox) * c + cb, lanes);
          const typename V::Mask& pos = maxima.pos[static_cast<std::size_t>(slot)];
          for (std::int64_t kx = 0; kx < g.kw; ++kx) {
            const auto k = static_cast<typename V::Index>(ky * g.kw + kx);
            V::select(at_k, pos == k, d, typename V::Stored{});
            V::store(out + (ox * g.kw + kx) * c + cb, at_k, lanes);
          }
        }
    }
    if (oy == g.oh - 1) {  // the image's last output row: then the rows below every window
      T* below = dx + tiled_input_row(g, r, g.kh);
      std::fill(below, below + (g.h - g.oh * g.kh) * row, T(0));
    }
  });
}

/// dx = 0, then dx[argmax of each window] += dy, images in parallel (windows of one image may
/// share an argmax), window rows one after another (RowMaxima); each element of dx receives its
/// windows' contributions in the order of the windows. Windows that tile the image go to
/// max_pool_grad_tiled.
template <class T>
void max_pool_grad(const T* x, const T* dy, const WindowGeometry& g, T* dx) {
  if (windows_tile(g)) return max_pool_grad_tiled(x, dy, g, dx);
  using V = PoolVectors<T>;
  const std::int64_t c = g.c;
  parallel_for(g.n, pool_rows_grain(g, g.out_positions() * g.c), [&](std::int64_t b, std::int64_t e) {
    RowMaxima<T> maxima(g);
    for (std::int64_t i = b; i < e; ++i) {
      T* dxi = dx + i * g.image_size();
      std::fill(dxi, dxi + g.image_size(), T(0));
      for (std::int64_t oy = 0; oy < g.oh; ++oy) {
        maxima.scan(x, i, oy);
        const T* dyr = dy + (i * g.oh + oy) * g.ow * c;
        for (std::int64_t iy = g.row_lo(oy), y0 = iy, y1 = g.row_hi(oy); iy < y1; ++iy) {
          T* out = dxi + iy * g.w * c;
          for (std::int64_t ox = 0; ox < g.ow; ++ox) {
            const std::int64_t x0 = g.col_lo(ox), width = g.col_hi(ox) - x0;
            if (width <= 0) continue;  // no input element (never with TensorFlow's padding)
            for (std::int64_t cb = 0, slot = ox * maxima.chunks; cb < c; cb += V::kLanes, ++slot) {
              const std::int64_t lanes = std::min(V::kLanes, c - cb);
              typename V::Stored d;
              V::load(d, dyr + ox * c + cb, lanes);
              const typename V::Mask& pos = maxima.pos[static_cast<std::size_t>(slot)];
              for (std::int64_t kx = 0; kx < width; ++kx) {
                const auto k = static_cast<typename V::Index>((iy - y0) * width + kx);
                V::add_where(out + (x0 + kx) * c + cb, pos == k, d, lanes);
              }
            }
          }
        }
      }
    }
  });
}

/// y[window] = ddx[argmax of the window]: the adjoint of max_pool_grad in dy.
template <class T>
void max_pool_grad_grad(const T* x, const T* ddx, const WindowGeometry& g, T* y) {
  using V = PoolVectors<T>;
  const std::int64_t c = g.c;
  for_each_scanned_row(x, g, [&](std::int64_t i, std::int64_t oy, const RowMaxima<T>& maxima) {
    const T* ddxi = ddx + i * g.image_size();
    T* yr = y + (i * g.oh + oy) * g.ow * c;
    for (std::int64_t ox = 0; ox < g.ow; ++ox) {
      const std::int64_t x0 = g.col_lo(ox), width = g.col_hi(ox) - x0;
      if (maxima.empty(oy, ox)) {
        std::fill(yr + ox * c, yr + (ox + 1) * c, T(0));
        continue;
      }
      for (std::int64_t cb = 0, slot = ox * maxima.chunks; cb < c; cb += V::kLanes, ++slot) {
        const typename V::Mask& pos = maxima.pos[static_cast<std::size_t>(slot)];
        for (std::int64_t l = 0; l < std::min(V::kLanes, c - cb); ++l) {
          const std::int64_t k = pos[l], iy = g.row_lo(oy) + k / width, ix = x0 + k % width;
          yr[ox * c + cb + l] = ddxi[(iy * g.w + ix) * c + cb + l];
        }
      }
    }
  });
}

/// y = max over each window (padding ignored; 0 for a window with no input element), values
/// stored as they were (bfloat16's bits).
template <class T>
void max_pool(const T* x, const WindowGeometry& g, T* y) {
  using V = PoolVectors<T>;
  for_each_scanned_row(x, g, [&](std::int64_t i, std::int64_t oy, const RowMaxima<T>& maxima) {
    T* yr = y + (i * g.oh + oy) * g.ow * g.c;
    for (std::int64_t ox = 0; ox < g.ow; ++ox) {
      const bool empty = maxima.empty(oy, ox);
      for (std::int64_t cb = 0, slot = ox * maxima.chunks; cb < g.c; cb += V::kLanes, ++slot)
        V::store(yr + ox * g.c + cb,
                 empty ? typename V::Stored{} : maxima.stored[static_cast<std::size_t>(slot)],
                 std::min(V::kLanes, g.c - cb));
    }
  });
}

/// y = mean over each window's input elements (the count excludes padding, like TensorFlow). The
/// window rows are read one after another (as RowMaxima reads them); each window still sums its
/// elements in row-major order.
template <class T>
void avg_pool(const T* x, const WindowGeometry& g, T* y) {
  const std::int64_t c = g.c;
  for_each_output_row(g, [&](std::int64_t i, std::int64_t oy) {
    T* yr = y + ((i * g.oh + oy) * g.ow) * c;
    std::fill(yr, yr + g.ow * c, T(0));
    const std::int64_t y0 = g.row_lo(oy), y1 = g.row_hi(oy);
    for (std::int64_t iy = y0; iy < y1; ++iy) {
      const T* in = x + (i * g.h + iy) * g.w * c;
      for (std::int64_t ox = 0; ox < g.ow; ++ox) {
        T* __restrict o = yr + ox * c;
        for (std::int64_t ix = g.col_lo(ox), x1 = g.col_hi(ox); ix < x1; ++ix) {
          const T* __restrict p = in + ix * c;
          for (std::int64_t ci = 0; ci < c; ++ci) o[ci] += p[ci];
        }
      }
    }
    for (std::int64_t ox = 0; ox < g.ow; ++ox) {
      const std::int64_t count = (y1 - y0) * (g.col_hi(ox) - g.col_lo(ox));
      T* o = yr + ox * c;
      if (count > 0)
        for (std::int64_t ci = 0; ci < c; ++ci) o[ci] /= static_cast<T>(count);
    }
  });
}

/// dx = 0, then each window's input elements += dy / count (the adjoint of avg_pool). A window at a
/// time: each image's dx stays in cache while its windows add to it, and reading the window rows
/// one after another (as avg_pool does) was 1.3x slower for overlapping windows (3x3, stride 2),
/// where the next window adds to the column just written.
template <class T>
void avg_pool_grad(const T* dy, const WindowGeometry& g, T* dx) {
  std::fill(dx, dx + g.n * g.image_size(), T(0));
  parallel_for(g.n, pool_rows_grain(g, g.out_positions() * g.c), [&](std::int64_t b, std::int64_t e) {
    for (std::int64_t i = b; i < e; ++i) {
      T* dxi = dx + i * g.image_size();
      const T* dyi = dy + i * g.out_positions() * g.c;
      for (std::int64_t oy = 0; oy < g.oh; ++oy)
        for (std::int64_t ox = 0; ox < g.ow; ++ox) {
          const std::int64_t y0 = g.row_lo(oy), y1 = g.row_hi(oy), x0 = g.col_lo(ox), x1 = g.col_hi(ox);
          const std::int64_t count = (y1 - y0) * (x1 - x0);
          if (count <= 0) continue;
          const T* d = dyi + (oy * g.ow + ox) * g.c;
          const T cnt = static_cast<T>(count);
          for (std::int64_t iy = y0; iy < y1; ++iy)
            for (std::int64_t ix = x0; ix < x1; ++ix) {
              T* p = dxi + (iy * g.w + ix) * g.c;
              for (std::int64_t ci = 0; ci < g.c; ++ci) p[ci] += d[ci] / cnt;
            }
        }
    }
  });
}

}  // namespace tapeflow::cpu
