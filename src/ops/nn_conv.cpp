// Convolution and pooling on NHWC images (TensorFlow's Conv2D, MaxPool, AvgPool).
//
// Conv2D and its two gradient ops run through oneDNN in float32 (src/kernels/cpu/conv_onednn.h),
// and as im2col + GEMM in float64, which oneDNN does not compute, and for the geometries oneDNN's
// 32-bit arithmetic cannot take (a stride or dilated window beyond 2^31 - 1, see
// onednn::supports): each batch chunk's patches
// become the rows of a (images * oh * ow, kh * kw * in_ch) matrix, multiplied by the HWIO filters
// viewed as a (kh * kw * in_ch, out_ch) matrix in one OpenBLAS call (src/kernels/cpu/gemm.h). A
// 1x1 filter with stride 1 skips im2col (the input already is that matrix).
//
// Like TensorFlow, the gradients are primitives of their own, each differentiable again (its
// gradient written with the public ops), following nn_grad.py:
//   Conv2D:               dx = Conv2DBackpropInput(shape(x), W, dy)   = col2im(dy @ W^T)
//                         dW = Conv2DBackpropFilter(x, shape(W), dy)  = im2col(x)^T @ dy
//   Conv2DBackpropInput:  d(W) = Conv2DBackpropFilter(ddx, shape(W), dy), d(dy) = conv2d(ddx, W)
//   Conv2DBackpropFilter: d(x) = Conv2DBackpropInput(shape(x), ddW, dy), d(dy) = conv2d(x, ddW)
//   MaxPool -> MaxPoolGrad (scatter dy to each window's first maximum) -> MaxPoolGradGrad
//   (gather at the same positions) -> MaxPoolGrad; AvgPool -> AvgPoolGrad -> AvgPool.
//
// Padding follows TensorFlow: VALID: out = ceil((in - k + 1) / stride); SAME: out =
// ceil(in / stride), pad_total = max((out - 1) * stride + k - in, 0), pad_before = pad_total / 2.

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <span>

#include "core/allocator.h"
#include "core/bfloat16.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/im2col.h"
#include "kernels/cpu/onednn.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {
/// Largest window or stride accepted (TensorFlow's are int32): keeps every index product in int64.
constexpr std::int64_t kMaxWindow = std::int64_t{1} << 31;
/// im2col buffer size (elements) a batch chunk aims for: large enough for one GEMM per chunk.
constexpr std::int64_t kChunkElements = std::int64_t{1} << 23;

using Pair = std::array<std::int64_t, 2>;

/// Padding as TensorFlow's ops take it: VALID (none), SAME (the output is ceil(input / stride),
/// the padding split evenly, the extra row or column at the end), or EXPLICIT amounts (Conv2D's
/// explicit_paddings; pooling takes VALID and SAME only).
struct Padding {
  enum class Mode : std::int8_t { kValid, kSame, kExplicit };
  Mode mode = Mode::kValid;
  std::array<std::int64_t, 4> amounts{};  // EXPLICIT: top, bottom, left, right
};

struct ConvAttrs {
  Pair strides{1, 1};
  Padding padding;
  /// Conv2DBackpropInput: the input's shape; Conv2DBackpropFilter: the filters' shape.
  Shape sizes;
  Pair dilations{1, 1};
};

/// FusedConv2D: Conv2D's attributes and whether a ReLU follows the bias.
struct FusedConvAttrs {
  ConvAttrs conv;
  bool relu = false;
};

struct PoolAttrs {
  Pair ksize{1, 1};
  Pair strides{1, 1};
  Padding padding;
  /// AvgPoolGrad: the pooled input's shape.
  Shape sizes;
};

std::string padding_name(const Padding& p) {
  if (p.mode == Padding::Mode::kExplicit)
    return fmt::format("EXPLICIT (top {}, bottom {}, left {}, right {})", p.amounts[0], p.amounts[1],
                       p.amounts[2], p.amounts[3]);
  return p.mode == Padding::Mode::kSame ? "SAME" : "VALID";
}
std::string pair_string(Pair p) { return fmt::format("({}, {})", p[0], p[1]); }

/// a * b, or -1 if it overflows int64 (both >= 0).
std::int64_t mul_or_neg(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

/// Output size and leading padding of spatial dimension `axis` (0: rows, 1: columns) under
/// TensorFlow's rule; false when a window is larger than a non-empty input (VALID) or than the
/// padded input (EXPLICIT).
bool spatial_dim(std::int64_t in, std::int64_t k, std::int64_t s, const Padding& p, int axis,
                 std::int64_t& out, std::int64_t& pad) {
  pad = 0;
  if (p.mode == Padding::Mode::kExplicit) {
    // Each amount is at most 2^31 (parse_padding) and `in` a dimension, so the sum fits int64.
    pad = p.amounts[static_cast<std::size_t>(2 * axis)];
    const std::int64_t padded = in + pad + p.amounts[static_cast<std::size_t>(2 * axis + 1)];
    if (k > padded) return false;
    out = (padded - k) / s + 1;
    return true;
  }
  if (p.mode == Padding::Mode::kSame) {
    out = in / s + (in % s != 0 ? 1 : 0);
    if (out > 0) pad = std::max<std::int64_t>((out - 1) * s + k - in, 0) / 2;
    return true;
  }
  if (in == 0) {
    out = 0;
    return true;
  }
  if (k > in) return false;
  out = (in - k) / s + 1;
  return true;
}

void require_rank4(std::string_view op, const Shape& s, std::string_view arg, std::string_view layout) {
  TAPEFLOW_REQUIRE(s.rank() == 4, InvalidArgumentError, "[{}] '{}' must have rank 4 ({}), got shape {}", op,
                   arg, layout, s.to_string());
}

/// The validated geometry of a (kh, kw) window over the NHWC shape `in`. `what()` describes the
/// operands for error messages (evaluated only on failure).
template <class What>
cpu::WindowGeometry window_geometry(std::string_view op, const Shape& in, Pair k, Pair strides,
                                    const Padding& padding, What what, Pair dilations = {1, 1}) {
  // parse_padding makes these; a graph node's (from a file) may hold any bytes.
  const auto mode = static_cast<int>(padding.mode);
  TAPEFLOW_REQUIRE(mode >= 0 && mode <= static_cast<int>(Padding::Mode::kExplicit), InvalidArgumentError,
                   "[{}] padding mode {} is none of VALID, SAME and EXPLICIT: {}", op, mode, what());
  for (std::int64_t amount : padding.amounts)
    TAPEFLOW_REQUIRE(padding.mode != Padding::Mode::kExplicit || (amount >= 0 && amount <= kMaxWindow),
                     InvalidArgumentError, "[{}] explicit padding amounts must be in [0, 2^31], got {}: {}",
                     op, padding_name(padding), what());
  TAPEFLOW_REQUIRE(strides[0] >= 1 && strides[1] >= 1 && strides[0] <= kMaxWindow && strides[1] <= kMaxWindow,
                   InvalidArgumentError, "[{}] strides must be >= 1 and <= 2^31, got strides {}: {}", op,
                   pair_string(strides), what());
  TAPEFLOW_REQUIRE(k[0] >= 1 && k[1] >= 1 && k[0] <= kMaxWindow && k[1] <= kMaxWindow, InvalidArgumentError,
                   "[{}] the window must be at least 1x1 and at most 2^31 on a side, got window {}: {}", op,
                   pair_string(k), what());
  cpu::WindowGeometry g;
  g.n = in[0];
  g.h = in[1];
  g.w = in[2];
  g.c = in[3];
  g.kh = k[0];
  g.kw = k[1];
  g.sh = strides[0];
  g.sw = strides[1];
  TAPEFLOW_REQUIRE(
      dilations[0] >= 1 && dilations[1] >= 1 && dilations[0] <= kMaxWindow && dilations[1] <= kMaxWindow,
      InvalidArgumentError, "[{}] dilations must be >= 1 and <= 2^31, got dilations {}: {}", op,
      pair_string(dilations), what());
  g.dh = dilations[0];
  g.dw = dilations[1];
  // The rows and columns a dilated window spans (at most 2^62).
  const Pair extent{(g.kh - 1) * g.dh + 1, (g.kw - 1) * g.dw + 1};
  const bool fits = spatial_dim(g.h, extent[0], g.sh, padding, 0, g.oh, g.pad_top) &&
                    spatial_dim(g.w, extent[1], g.sw, padding, 1, g.ow, g.pad_left);
  TAPEFLOW_REQUIRE(
      fits, InvalidArgumentError,
      "[{}] the window {} is larger than the input's spatial size ({}, {}) with padding {}: {}; use "
      "padding SAME, more padding or a smaller window",
      op,
      extent == k ? pair_string(k) : fmt::format("{} (dilated to {})", pair_string(k), pair_string(extent)),
      g.h, g.w, padding_name(padding), what());
  return g;
}

/// Conv2D's geometry for input shape `in` and filter shape `f`, with every check the kernels rely
/// on (ranks, channels, window, sizes BLAS accepts). `op` names the calling op.
cpu::WindowGeometry conv_geometry(std::string_view op, const Shape& in, const Shape& f, const ConvAttrs& at) {
  auto what = [&] {
    return fmt::format("input has shape {}, filters have shape {}, strides {}, padding {}{}", in.to_string(),
                       f.to_string(), pair_string(at.strides), padding_name(at.padding),
                       at.dilations == Pair{1, 1} ? "" : ", dilations " + pair_string(at.dilations));
  };
  require_rank4(op, in, "input", "NHWC: batch, height, width, channels");
  require_rank4(op, f, "filters", "HWIO: height, width, in_channels, out_channels");
  // Grouped convolution (TensorFlow's rule): the input's channels are `groups` times the filters'
  // in_channels, each group convolved with its share of the filters' out_channels.
  const bool grouped = f[2] > 0 ? in[3] % f[2] == 0 && in[3] > 0 : in[3] == 0;
  TAPEFLOW_REQUIRE(
      grouped, InvalidArgumentError,
      "[{}] input channels must equal the filters' in_channels, or be a multiple of them (grouped "
      "convolution): {} (input has {} channels, filters expect {})",
      op, what(), in[3], f[2]);
  const std::int64_t groups = f[2] > 0 ? in[3] / f[2] : 1;
  TAPEFLOW_REQUIRE(f[3] % groups == 0, InvalidArgumentError,
                   "[{}] a grouped convolution's out_channels must be a multiple of its {} groups: {}", op,
                   groups, what());
  cpu::WindowGeometry g = window_geometry(op, in, {f[0], f[1]}, at.strides, at.padding, what, at.dilations);
  g.groups = groups;
  const std::int64_t patch = mul_or_neg(mul_or_neg(g.kh, g.kw), g.c);
  const std::int64_t positions = mul_or_neg(g.oh, g.ow);
  const std::int64_t cols = patch < 0 || positions < 0 ? -1 : mul_or_neg(patch, positions);
  TAPEFLOW_REQUIRE(patch >= 0 && patch <= cpu::kMaxGemmDim && f[3] <= cpu::kMaxGemmDim && positions >= 0 &&
                       positions <= cpu::kMaxGemmDim && cols >= 0 && cols <= kMaxElements,
                   InvalidArgumentError,
                   "[{}] the convolution is too large (patch size {}, {} output positions): {}", op, patch,
                   positions, what());
  return g;
}

/// The (batch, oh, ow, channels) shape of a windowed op's output.
Shape output_shape(std::string_view op, const cpu::WindowGeometry& g, std::int64_t channels) {
  const std::array<std::int64_t, 4> dims{g.n, g.oh, g.ow, channels};
  return Shape::checked(dims, op);
}

/// Whether the input itself is the im2col matrix: a 1x1 window at stride 1 whose output has the
/// input's positions. NOTE: explicit padding below or right of the image adds output positions
/// (oh > h) that the input has no rows for, so padding on any side rules it out.
bool pointwise(const cpu::WindowGeometry& g) {
  return g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pad_top == 0 && g.pad_left == 0 &&
         g.oh == g.h && g.ow == g.w;
}

/// The bytes of a tensor this kernel has just created (a bfloat16 output as the oneDNN kernels
/// take it, a filter copied tap by tap).
void* bytes_of(const Tensor& t) { return const_cast<void*>(t.raw_data()); }

/// The taps [first, first + count) of a window of `k` taps, `d` apart, that meet an input of
/// `in` rows for some of the `out` output rows (stride `stride`, `pad` rows of padding before):
/// the others only ever read padding. `first` stays at most pad / d, so the padding before the
/// kept taps is never negative; count is 0 when no tap meets the input.
struct Taps {
  std::int64_t first = 0, count = 0;
};
Taps reaching_taps(std::int64_t in, std::int64_t out, std::int64_t stride, std::int64_t pad, std::int64_t k,
                   std::int64_t d) {
  std::int64_t first = -1, last = -1;
  for (std::int64_t t = 0; t < k; ++t) {
    const std::int64_t offset = t * d - pad;  // tap t reads row o * stride + offset
    const std::int64_t o = offset >= 0 ? 0 : (-offset + stride - 1) / stride;
    if (o < out && o * stride + offset < in) {
      if (first < 0) first = t;
      last = t;
    }
  }
  if (first < 0) return {};
  first = std::min(first, pad / d);
  return {first, last - first + 1};
}

/// A convolution's filters cut to the taps that meet the input. A window far larger than the
/// input (a dilation of 2^24, a 4096x4096 filter on a 4x4 image, padding SAME) reads padding
/// everywhere else, so the kernels convolve with these taps only: the work is bounded by the
/// input and the output, as the pooling kernels' is (im2col.h), not by the window.
struct FilterCrop {
  cpu::WindowGeometry whole, cut;  // the convolution with all taps, and with the kept ones
  Taps rows, cols;

  explicit FilterCrop(const cpu::WindowGeometry& g)
      : whole(g),
        cut(g),
        rows(reaching_taps(g.h, g.oh, g.sh, g.pad_top, g.kh, g.dh)),
        cols(reaching_taps(g.w, g.ow, g.sw, g.pad_left, g.kw, g.dw)) {
    cut.kh = rows.count;
    cut.kw = cols.count;
    cut.pad_top = g.pad_top - rows.first * g.dh;
    cut.pad_left = g.pad_left - cols.first * g.dw;
  }
  /// Whether every tap meets the input (the common case: nothing to cut).
  bool keeps_all() const { return rows.count == whole.kh && cols.count == whole.kw; }
  /// Whether no tap meets the input: the output is zeros.
  bool keeps_none() const { return rows.count == 0 || cols.count == 0; }

  /// The kept taps of HWIO filters `f` of the whole window.
  Tensor cut_filters(const Tensor& f) const {
    Tensor out =
        detail::empty(Shape{rows.count, cols.count, f.shape()[2], f.shape()[3]}, f.dtype(), "Conv2D");
    copy_taps(static_cast<const std::byte*>(f.raw_data()), static_cast<std::byte*>(bytes_of(out)), f, false);
    return out;
  }
  /// Filter gradients `df` of the kept taps placed in the whole window's shape `shape`, zeros
  /// for the taps that never meet the input.
  Tensor whole_filters(const Tensor& df, const Shape& shape) const {
    Tensor out = zeros(shape, df.dtype());
    copy_taps(static_cast<const std::byte*>(df.raw_data()), static_cast<std::byte*>(bytes_of(out)), df, true);
    return out;
  }

 private:
  /// Copies each kept tap's (in_channels, out_channels) block between the cut filters and the
  /// whole ones: from the whole into the cut, or back when `into_whole`.
  void copy_taps(const std::byte* src, std::byte* dst, const Tensor& t, bool into_whole) const {
    const std::int64_t block = t.shape()[2] * t.shape()[3] * static_cast<std::int64_t>(dtype_size(t.dtype()));
    for (std::int64_t r = 0; r < rows.count; ++r) {
      for (std::int64_t c = 0; c < cols.count; ++c) {
        const std::int64_t whole_tap = (rows.first + r) * whole.kw + cols.first + c,
                           cut_tap = r * cols.count + c;
        const std::int64_t from = into_whole ? cut_tap : whole_tap, to = into_whole ? whole_tap : cut_tap;
        std::memcpy(dst + to * block, src + from * block, static_cast<std::size_t>(block));
      }
    }
  }
};

/// Images per im2col chunk: as many as fill about kChunkElements, with the GEMM's row count
/// within BLAS's range.
std::int64_t chunk_images(const cpu::WindowGeometry& g) {
  const std::int64_t rows = std::max<std::int64_t>(g.out_positions(), 1);
  const std::int64_t per = std::max<std::int64_t>(rows * g.patch_size(), 1);
  std::int64_t chunk = std::clamp<std::int64_t>(kChunkElements / per, 1, std::max<std::int64_t>(g.n, 1));
  return std::min(chunk, std::max<std::int64_t>(cpu::kMaxGemmDim / rows, 1));
}

/// Calls f(b0, nb, cols) for each chunk of nb images starting at b0, where cols is the chunk's
/// im2col matrix (the input itself for a pointwise filter). `op` names the op in errors: one
/// image's im2col matrix can exceed the allocation limit (ResourceExhaustedError).
template <class T, class F>
void for_each_chunk(std::string_view op, const T* x, const cpu::WindowGeometry& g, F f) {
  const std::int64_t chunk = chunk_images(g);
  const bool direct = pointwise(g);
  std::unique_ptr<T[]> cols;
  if (!direct) cols = detail::scratch_array<T>(std::min(chunk, g.n) * g.out_positions() * g.patch_size(), op);
  for (std::int64_t b0 = 0; b0 < g.n; b0 += chunk) {
    const std::int64_t nb = std::min(chunk, g.n - b0);
    if (direct) {
      f(b0, nb, x + b0 * g.image_size());
    } else {
      cpu::im2col(x + b0 * g.image_size(), nb, g, cols.get());
      f(b0, nb, static_cast<const T*>(cols.get()));
    }
  }
}

/// dst (rows, n) = columns [c0, c0 + n) of src (rows, stride): one group's channels.
template <class T>
void gather_columns(const T* src, std::int64_t rows, std::int64_t stride, std::int64_t c0, std::int64_t n,
                    T* dst) {
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(src + r * stride + c0, n, dst + r * n);
}
/// Columns [c0, c0 + n) of dst (rows, stride) = src (rows, n).
template <class T>
void scatter_columns(const T* src, std::int64_t rows, std::int64_t n, T* dst, std::int64_t stride,
                     std::int64_t c0) {
  for (std::int64_t r = 0; r < rows; ++r) std::copy_n(src + r * n, n, dst + r * stride + c0);
}

/// A grouped convolution's pass as `groups` single-group passes (float64's path; oneDNN groups
/// itself): for each group, `pass(gg, group, oc_g)` on its geometry gg (c / groups channels).
template <class Pass>
void for_each_group(const cpu::WindowGeometry& g, std::int64_t oc, Pass pass) {
  cpu::WindowGeometry gg = g;
  gg.c = g.c / g.groups;
  gg.groups = 1;
  for (std::int64_t group = 0; group < g.groups; ++group) pass(gg, group, oc / g.groups);
}

/// y = im2col(x) @ f, f viewed as (patch, oc).
template <class T>
void conv_forward(const T* x, const T* f, const cpu::WindowGeometry& g, std::int64_t oc, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu::onednn::supports(g)) return cpu::onednn::conv_forward(x, f, g, oc, y);
  }
  if (g.groups > 1) {
    return for_each_group(g, oc, [&](const cpu::WindowGeometry& gg, std::int64_t group, std::int64_t og) {
      const std::int64_t pixels = g.n * g.h * g.w, positions = g.n * g.out_positions();
      auto xg = detail::scratch_array<T>(pixels * gg.c, "Conv2D");
      auto fg = detail::scratch_array<T>(gg.patch_size() * og, "Conv2D");
      auto yg = detail::scratch_array<T>(positions * og, "Conv2D");
      gather_columns(x, pixels, g.c, group * gg.c, gg.c, xg.get());
      gather_columns(f, gg.patch_size(), oc, group * og, og, fg.get());
      conv_forward(xg.get(), fg.get(), gg, og, yg.get());
      scatter_columns(yg.get(), positions, og, y, oc, group * og);
    });
  }
  const std::int64_t rows = g.out_positions();
  for_each_chunk("Conv2D", x, g, [&](std::int64_t b0, std::int64_t nb, const T* cols) {
    cpu::gemm<T>(false, false, nb * rows, oc, g.patch_size(), cols, f, y + b0 * rows * oc);
  });
}

/// dx = col2im(dy @ f^T).
template <class T>
void conv_backprop_input(const T* f, const T* dy, const cpu::WindowGeometry& g, std::int64_t oc, T* dx) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu::onednn::supports(g)) return cpu::onednn::conv_backprop_input(f, dy, g, oc, dx);
  }
  if (g.groups > 1) {
    return for_each_group(g, oc, [&](const cpu::WindowGeometry& gg, std::int64_t group, std::int64_t og) {
      const std::int64_t pixels = g.n * g.h * g.w, positions = g.n * g.out_positions();
      auto fg = detail::scratch_array<T>(gg.patch_size() * og, "Conv2DBackpropInput");
      auto dyg = detail::scratch_array<T>(positions * og, "Conv2DBackpropInput");
      auto dxg = detail::scratch_array<T>(pixels * gg.c, "Conv2DBackpropInput");
      gather_columns(f, gg.patch_size(), oc, group * og, og, fg.get());
      gather_columns(dy, positions, oc, group * og, og, dyg.get());
      conv_backprop_input(fg.get(), dyg.get(), gg, og, dxg.get());
      scatter_columns(dxg.get(), pixels, gg.c, dx, g.c, group * gg.c);
    });
  }
  const std::int64_t rows = g.out_positions(), patch = g.patch_size();
  const std::int64_t chunk = chunk_images(g);
  if (pointwise(g)) {
    for (std::int64_t b0 = 0; b0 < g.n; b0 += chunk) {
      const std::int64_t nb = std::min(chunk, g.n - b0);
      cpu::gemm<T>(false, true, nb * rows, patch, oc, dy + b0 * rows * oc, f, dx + b0 * g.image_size());
    }
    return;
  }
  std::fill(dx, dx + g.n * g.image_size(), T(0));
  const std::unique_ptr<T[]> cols =
      detail::scratch_array<T>(std::min(chunk, g.n) * rows * patch, "Conv2DBackpropInput");
  for (std::int64_t b0 = 0; b0 < g.n; b0 += chunk) {
    const std::int64_t nb = std::min(chunk, g.n - b0);
    cpu::gemm<T>(false, true, nb * rows, patch, oc, dy + b0 * rows * oc, f, cols.get());
    cpu::col2im_add(cols.get(), nb, g, dx + b0 * g.image_size());
  }
}

/// df = im2col(x)^T @ dy, summed over the batch chunks.
template <class T>
void conv_backprop_filter(const T* x, const T* dy, const cpu::WindowGeometry& g, std::int64_t oc, T* df) {
  if constexpr (std::is_same_v<T, float>) {
    if (cpu::onednn::supports(g)) return cpu::onednn::conv_backprop_filter(x, dy, g, oc, df);
  }
  if (g.groups > 1) {
    return for_each_group(g, oc, [&](const cpu::WindowGeometry& gg, std::int64_t group, std::int64_t og) {
      const std::int64_t pixels = g.n * g.h * g.w, positions = g.n * g.out_positions();
      auto xg = detail::scratch_array<T>(pixels * gg.c, "Conv2DBackpropFilter");
      auto dyg = detail::scratch_array<T>(positions * og, "Conv2DBackpropFilter");
      auto dfg = detail::scratch_array<T>(gg.patch_size() * og, "Conv2DBackpropFilter");
      gather_columns(x, pixels, g.c, group * gg.c, gg.c, xg.get());
      gather_columns(dy, positions, oc, group * og, og, dyg.get());
      conv_backprop_filter(xg.get(), dyg.get(), gg, og, dfg.get());
      scatter_columns(dfg.get(), gg.patch_size(), og, df, oc, group * og);
    });
  }
  const std::int64_t rows = g.out_positions(), patch = g.patch_size(), size = patch * oc;
  std::fill(df, df + size, T(0));
  std::unique_ptr<T[]> part;
  bool first = true;
  for_each_chunk("Conv2DBackpropFilter", x, g, [&](std::int64_t b0, std::int64_t nb, const T* cols) {
    if (first) {
      cpu::gemm<T>(true, false, patch, oc, nb * rows, cols, dy + b0 * rows * oc, df);
      first = false;
      return;
    }
    if (!part) part = detail::scratch_array<T>(size, "Conv2DBackpropFilter");
    cpu::gemm<T>(true, false, patch, oc, nb * rows, cols, dy + b0 * rows * oc, part.get());
    for (std::int64_t i = 0; i < size; ++i) df[i] += part[i];
  });
}

void require_same_float(std::string_view op, const Tensor& a, std::string_view an, const Tensor& b,
                        std::string_view bn) {
  // bfloat16 reaches here only in the ops that compute it (kBFloat16 below).
  if (a.dtype() != DType::BFloat16) require_floating(a, op, an);
  TAPEFLOW_REQUIRE(
      a.dtype() == b.dtype(), InvalidArgumentError,
      "[{}] '{}' and '{}' must have the same dtype (no implicit casting): {} is a {}, {} is a {}", op, an, bn,
      an, describe(a), bn, describe(b));
}

/// Throws unless `t` has exactly the shape `expected` that the forward op would produce.
void require_shape(std::string_view op, const Tensor& t, std::string_view arg, const Shape& expected,
                   std::string_view why) {
  TAPEFLOW_REQUIRE(t.shape() == expected, InvalidArgumentError, "[{}] '{}' must have shape {} ({}), got a {}",
                   op, arg, expected.to_string(), why, describe(t));
}

/// Conv2DBackpropInput's and Conv2DBackpropFilter's checks: `operand` (the filters or the input,
/// named `operand_name`) and `dy` share a float dtype, the conv2d of an input of shape `in` with
/// filters of shape `f` is valid, and `dy` has its output's shape. Returns that conv2d's geometry.
cpu::WindowGeometry conv_backprop_geometry(std::string_view op, const ConvAttrs& at, const Shape& in,
                                           const Shape& f, const Tensor& operand,
                                           std::string_view operand_name, const Tensor& dy) {
  require_same_float(op, operand, operand_name, dy, "out_backprop");
  const cpu::WindowGeometry g = conv_geometry(op, in, f, at);
  require_shape(op, dy, "out_backprop", output_shape(op, g, f[3]),
                fmt::format("conv2d's output for input shape {} and filters of shape {}", in.to_string(),
                            f.to_string()));
  return g;
}

Tensor backprop_input(const ConvAttrs& at, const Shape& input_sizes, const Tensor& f, const Tensor& dy);
Tensor backprop_filter(const ConvAttrs& at, const Tensor& x, const Shape& filter_sizes, const Tensor& dy);
Tensor conv(const ConvAttrs& at, const Tensor& x, const Tensor& f);

// ---- convolution ---------------------------------------------------------------------------------

/// TensorFlow's spatial list: one value for both dimensions, (h, w), or NHWC (1, h, w, 1).
Pair spatial_pair(std::string_view op, std::string_view arg, const std::vector<std::int64_t>& v) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return {v[0], v[1]};
  TAPEFLOW_REQUIRE(
      v.size() == 4 && v[0] == 1 && v[3] == 1, InvalidArgumentError,
      "[{}] '{}' must have 1, 2 or 4 elements (4: (1, h, w, 1), no batch or channel stride), got ({})", op,
      arg, fmt::join(v, ", "));
  return {v[1], v[2]};
}

/// TensorFlow's padding string, and for "EXPLICIT" (which pooling does not take) its
/// explicit_paddings: 8 values, (before, after) for batch, rows, columns and channels in NHWC
/// order, batch and channels 0, each at most 2^31.
Padding parse_padding(std::string_view op, std::string_view padding,
                      const std::vector<std::int64_t>& explicit_paddings = {}, bool takes_explicit = false) {
  const bool is_explicit = takes_explicit && padding == "EXPLICIT";
  TAPEFLOW_REQUIRE(padding == "VALID" || padding == "SAME" || is_explicit, InvalidArgumentError,
                   "[{}] padding must be {}, got \"{}\"", op,
                   takes_explicit ? "\"VALID\", \"SAME\" or \"EXPLICIT\"" : "\"VALID\" or \"SAME\"", padding);
  if (!is_explicit) {
    TAPEFLOW_REQUIRE(explicit_paddings.empty(), InvalidArgumentError,
                     "[{}] explicit_paddings must be empty unless padding is \"EXPLICIT\", got ({}) with "
                     "padding \"{}\"",
                     op, fmt::join(explicit_paddings, ", "), padding);
    return {padding == "SAME" ? Padding::Mode::kSame : Padding::Mode::kValid, {}};
  }
  const auto& e = explicit_paddings;
  TAPEFLOW_REQUIRE(e.size() == 8 && e[0] == 0 && e[1] == 0 && e[6] == 0 && e[7] == 0, InvalidArgumentError,
                   "[{}] explicit_paddings must hold 8 values, (before, after) for batch, rows, columns "
                   "and channels with batch and channels 0, got ({})",
                   op, fmt::join(e, ", "));
  TAPEFLOW_REQUIRE(std::all_of(e.begin(), e.end(), [](std::int64_t v) { return v >= 0 && v <= kMaxWindow; }),
                   InvalidArgumentError, "[{}] explicit_paddings must be >= 0 and <= 2^31, got ({})", op,
                   fmt::join(e, ", "));
  return {Padding::Mode::kExplicit, {e[2], e[3], e[4], e[5]}};
}

ConvAttrs conv_attrs(std::string_view op, const std::vector<std::int64_t>& strides, std::string_view padding,
                     const std::vector<std::int64_t>& dilations,
                     const std::vector<std::int64_t>& explicit_paddings) {
  return {spatial_pair(op, "strides", strides), parse_padding(op, padding, explicit_paddings, true), Shape(),
          spatial_pair(op, "dilations", dilations)};
}

/// Whether oneDNN computes this bfloat16 pass in its bfloat16 kernels: they are the faster ones on
/// this CPU (cpu::onednn::convolves_bfloat16) and the geometry fits its 32-bit arithmetic.
bool onednn_takes_bfloat16(const cpu::WindowGeometry& g) {
  return cpu::onednn::convolves_bfloat16() && cpu::onednn::supports(g);
}

/// A bfloat16 pass oneDNN's bfloat16 kernels do not take (onednn_takes_bfloat16): Op's float32
/// pass on the widened operands, rounded to bfloat16.
template <class Op, class... In>
Tensor through_float32(const typename Op::Attrs& at, const In&... in) {
  return detail::float32_to_bfloat16(Op::forward(at, detail::widen_if_bfloat16(in, Op::kName)...), Op::kName);
}

}  // namespace

namespace {
/// The batching rule (vectorized_map) of an op over NHWC images: each batched image input folded
/// into the images' own batch (B x N images), the op, and the results unfolded. `images` inputs
/// come first; the rest (filters, a bias) must be the same for every element, else the map's loop.
std::vector<Tensor> batch_images(const BatchContext& c, int images) {
  for (int i = images; i < c.num_inputs(); ++i)
    if (c.batched(i)) return {};
  std::vector<Tensor> in;
  for (int i = 0; i < c.num_inputs(); ++i) {
    if (i >= images) {
      in.push_back(c.input(i));
      continue;
    }
    const Tensor x = c.stacked(i);
    const auto d = x.shape().dims();
    std::vector<std::int64_t> folded{-1};
    folded.insert(folded.end(), d.begin() + 2, d.end());
    if (x.num_elements() == 0) return {};
    in.push_back(reshape(x, folded));
  }
  std::vector<Tensor> out = c.run(in);
  for (Tensor& y : out) {
    const auto d = y.shape().dims();
    std::vector<std::int64_t> unfolded{c.size(), -1};
    unfolded.insert(unfolded.end(), d.begin() + 1, d.end());
    y = reshape(y, unfolded);
  }
  return out;
}
}  // namespace

// y = im2col(x) @ W;  dx = Conv2DBackpropInput(shape(x), W, dy), dW = Conv2DBackpropFilter(x, shape(W), dy)
struct Conv2D {
  static constexpr std::string_view kName = "Conv2D";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  using Attrs = ConvAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_images(c, 1); }
  static Tensor forward(const Attrs& at, const Tensor& x, const Tensor& f) {
    require_same_float(kName, x, "input", f, "filters");
    const FilterCrop crop(conv_geometry(kName, x.shape(), f.shape(), at));
    const std::int64_t oc = f.shape()[3];
    Tensor y = detail::empty(output_shape(kName, crop.whole, oc), x.dtype(), kName);
    if (y.num_elements() == 0) return y;
    if (crop.keeps_none()) return zeros(y.shape(), y.dtype());
    const cpu::WindowGeometry& g = crop.cut;
    const Tensor taps = crop.keeps_all() ? f : crop.cut_filters(f);
    if (x.dtype() == DType::BFloat16) {
      if (!onednn_takes_bfloat16(g)) return through_float32<Conv2D>(at, x, f);
      cpu::onednn::conv_forward(x.raw_data(), taps.raw_data(), g, oc, bytes_of(y), {}, DType::BFloat16);
      return y;
    }
    visit_floating(x.dtype(), [&]<class T>() {
      conv_forward(x.values<T>().data(), taps.values<T>().data(), g, oc, detail::mutable_data<T>(y));
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = backprop_input(at, c.input_shape(0), c.input(1), c.dy());
    if (c.needs_input_grad(1)) g[1] = backprop_filter(at, c.input(0), c.input_shape(1), c.dy());
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"strides", "padding", "dilations", "explicit_paddings"});
    return {nn::conv2d(a.in(0), a.in(1), a.ints("strides", raw_ops::Ints{1, 1}), a.s("padding", "VALID"),
                       a.ints("dilations", raw_ops::Ints{1, 1}),
                       a.ints("explicit_paddings", raw_ops::Ints{}))};
  }
};
}  // namespace ops
Tensor nn::conv2d(const Tensor& input, const Tensor& filters, const std::vector<std::int64_t>& strides,
                  std::string_view padding, const std::vector<std::int64_t>& dilations,
                  const std::vector<std::int64_t>& explicit_paddings) {
  return autodiff::apply_with<ops::Conv2D>(
      ops::conv_attrs(ops::Conv2D::kName, strides, padding, dilations, explicit_paddings), input, filters);
}
namespace ops {

// dx = col2im(dy @ W^T);  dW = Conv2DBackpropFilter(ddx, shape(W), dy), d(dy) = conv2d(ddx, W)
struct Conv2DBackpropInput {
  static constexpr std::string_view kName = "Conv2DBackpropInput";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  using Attrs = ConvAttrs;
  static Tensor forward(const Attrs& at, const Tensor& f, const Tensor& dy) {
    const FilterCrop crop(conv_backprop_geometry(kName, at, at.sizes, f.shape(), f, "filters", dy));
    const std::int64_t oc = f.shape()[3];
    Tensor dx = detail::empty(at.sizes, f.dtype(), kName);
    if (dx.num_elements() == 0) return dx;
    if (crop.keeps_none()) return zeros(dx.shape(), dx.dtype());
    const cpu::WindowGeometry& g = crop.cut;
    const Tensor taps = crop.keeps_all() ? f : crop.cut_filters(f);
    if (f.dtype() == DType::BFloat16) {
      if (!onednn_takes_bfloat16(g)) return through_float32<Conv2DBackpropInput>(at, f, dy);
      cpu::onednn::conv_backprop_input(taps.raw_data(), dy.raw_data(), g, oc, bytes_of(dx), DType::BFloat16);
      return dx;
    }
    visit_floating(f.dtype(), [&]<class T>() {
      conv_backprop_input(taps.values<T>().data(), dy.values<T>().data(), g, oc, detail::mutable_data<T>(dx));
    });
    return dx;
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = backprop_filter(at, c.dy(), c.input_shape(0), c.input(1));
    if (c.needs_input_grad(1)) g[1] = conv(at, c.dy(), c.input(0));
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"input_sizes", "strides", "padding", "dilations", "explicit_paddings"});
    return {raw_ops::conv2d_backprop_input(a.shape("input_sizes"), a.in(0), a.in(1),
                                           a.ints("strides", raw_ops::Ints{1, 1}), a.s("padding", "VALID"),
                                           a.ints("dilations", raw_ops::Ints{1, 1}),
                                           a.ints("explicit_paddings", raw_ops::Ints{}))};
  }
};
}  // namespace ops
Tensor raw_ops::conv2d_backprop_input(const Shape& input_sizes, const Tensor& filters,
                                      const Tensor& out_backprop, const std::vector<std::int64_t>& strides,
                                      std::string_view padding, const std::vector<std::int64_t>& dilations,
                                      const std::vector<std::int64_t>& explicit_paddings) {
  ops::ConvAttrs at =
      ops::conv_attrs(ops::Conv2DBackpropInput::kName, strides, padding, dilations, explicit_paddings);
  at.sizes = input_sizes;
  return autodiff::apply_with<ops::Conv2DBackpropInput>(at, filters, out_backprop);
}
namespace ops {

// dW = im2col(x)^T @ dy;  dx = Conv2DBackpropInput(shape(x), ddW, dy), d(dy) = conv2d(x, ddW)
struct Conv2DBackpropFilter {
  static constexpr std::string_view kName = "Conv2DBackpropFilter";
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  using Attrs = ConvAttrs;
  static Tensor forward(const Attrs& at, const Tensor& x, const Tensor& dy) {
    const FilterCrop crop(conv_backprop_geometry(kName, at, x.shape(), at.sizes, x, "input", dy));
    const std::int64_t oc = at.sizes[3];
    if (at.sizes.num_elements() == 0 || crop.keeps_none()) return zeros(at.sizes, x.dtype());
    const cpu::WindowGeometry& g = crop.cut;
    Tensor df = detail::empty(Shape{g.kh, g.kw, at.sizes[2], oc}, x.dtype(), kName);
    if (x.dtype() == DType::BFloat16) {
      if (!onednn_takes_bfloat16(g)) return through_float32<Conv2DBackpropFilter>(at, x, dy);
      cpu::onednn::conv_backprop_filter(x.raw_data(), dy.raw_data(), g, oc, bytes_of(df), DType::BFloat16);
    } else {
      visit_floating(x.dtype(), [&]<class T>() {
        conv_backprop_filter(x.values<T>().data(), dy.values<T>().data(), g, oc, detail::mutable_data<T>(df));
      });
    }
    return crop.keeps_all() ? df : crop.whole_filters(df, at.sizes);
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = backprop_input(at, c.input_shape(0), c.dy(), c.input(1));
    if (c.needs_input_grad(1)) g[1] = conv(at, c.input(0), c.dy());
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"filter_sizes", "strides", "padding", "dilations", "explicit_paddings"});
    return {raw_ops::conv2d_backprop_filter(a.in(0), a.shape("filter_sizes"), a.in(1),
                                            a.ints("strides", raw_ops::Ints{1, 1}), a.s("padding", "VALID"),
                                            a.ints("dilations", raw_ops::Ints{1, 1}),
                                            a.ints("explicit_paddings", raw_ops::Ints{}))};
  }
};
}  // namespace ops
Tensor raw_ops::conv2d_backprop_filter(const Tensor& input, const Shape& filter_sizes,
                                       const Tensor& out_backprop, const std::vector<std::int64_t>& strides,
                                       std::string_view padding, const std::vector<std::int64_t>& dilations,
                                       const std::vector<std::int64_t>& explicit_paddings) {
  ops::ConvAttrs at =
      ops::conv_attrs(ops::Conv2DBackpropFilter::kName, strides, padding, dilations, explicit_paddings);
  at.sizes = filter_sizes;
  return autodiff::apply_with<ops::Conv2DBackpropFilter>(at, input, out_backprop);
}
namespace ops {

namespace {
bool parse_activation(std::string_view op, std::string_view activation) {
  TAPEFLOW_REQUIRE(activation == "relu" || activation == "linear", InvalidArgumentError,
                   "[{}] activation must be \"relu\" or \"linear\", got \"{}\"", op, activation);
  return activation == "relu";
}

/// max(y, 0) in place for the `count` values at `y`, NaN kept (as nn::relu keeps it; oneDNN's
/// ReLU post-op would turn it into 0). bfloat16 values are compared by their bits: sign set, not
/// -0 and not NaN (0x8001 to 0xff80) is negative.
void relu_in_place(void* y, std::int64_t count, DType dtype) {
  if (dtype == DType::BFloat16) {
    auto* bits = static_cast<std::uint16_t*>(y);
    for (std::int64_t i = 0; i < count; ++i) bits[i] = bits[i] > 0x8000u && bits[i] <= 0xff80u ? 0 : bits[i];
    return;
  }
  auto* v = static_cast<float*>(y);
  for (std::int64_t i = 0; i < count; ++i) v[i] = v[i] < 0 ? 0.f : v[i];
}

/// `y` with every position set to the bias, then max(y, 0) when `relu`: a convolution none of
/// whose taps meets the input (FilterCrop::keeps_none).
Tensor bias_only(const Tensor& bias, bool relu, Tensor y) {
  const std::size_t row = bias.nbytes();
  auto* out = static_cast<std::byte*>(bytes_of(y));
  const std::int64_t positions = y.num_elements() / bias.num_elements();
  for (std::int64_t i = 0; i < positions; ++i) std::memcpy(out + i * row, bias.raw_data(), row);
  if (!relu) return y;
  if (y.dtype() == DType::BFloat16) {
    relu_in_place(bytes_of(y), y.num_elements(), DType::BFloat16);
  } else {
    visit_floating(y.dtype(), [&]<class T>() {
      for (T& v : std::span<T>(detail::mutable_data<T>(y), static_cast<std::size_t>(y.num_elements()))) {
        v = v < 0 ? T(0) : v;
      }
    });
  }
  return y;
}

/// y = conv2d(x, f) + bias, then max(y, 0) when `relu`: in float32 oneDNN applies the bias as it
/// writes each output and the ReLU follows in place; otherwise (float64, or no input channels)
/// both follow the convolution as one pass.
template <class T>
void fused_conv_forward(const T* x, const T* f, const T* bias, bool relu, const cpu::WindowGeometry& g,
                        std::int64_t oc, T* y) {
  if constexpr (std::is_same_v<T, float>) {
    if (g.c > 0 && cpu::onednn::supports(g)) {
      cpu::onednn::conv_forward(x, f, g, oc, y, {bias});
      if (relu) relu_in_place(y, g.n * g.out_positions() * oc, DType::Float32);
      return;
    }
  }
  conv_forward(x, f, g, oc, y);
  const std::int64_t positions = g.n * g.out_positions();
  for (std::int64_t i = 0; i < positions; ++i) {
    T* row = y + i * oc;
    for (std::int64_t o = 0; o < oc; ++o) row[o] = relu ? std::max(row[o] + bias[o], T(0)) : row[o] + bias[o];
  }
}
}  // namespace

// y = act(conv2d(x, W) + b), act ReLU or none: what the Conv2D layer computes, as one op (TensorFlow's
// _FusedConv2D), so that the bias and the ReLU cost no pass of their own over the output.
// dz = ReluGrad(dy, y) (or dy); dx = Conv2DBackpropInput(shape(x), W, dz), dW = Conv2DBackpropFilter(x,
// shape(W), dz), db = sum of dz over batch, rows and columns.
struct FusedConv2D {
  static constexpr std::string_view kName = "FusedConv2D";
  static constexpr Saves kSaves{0b011u, 1u};  // input, filters; the output (for the ReLU's gradient)
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  using Attrs = FusedConvAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_images(c, 1); }
  static Tensor forward(const Attrs& at, const Tensor& x, const Tensor& f, const Tensor& b) {
    require_same_float(kName, x, "input", f, "filters");
    require_same_float(kName, x, "input", b, "bias");
    const FilterCrop crop(conv_geometry(kName, x.shape(), f.shape(), at.conv));
    const std::int64_t oc = f.shape()[3];
    require_shape(kName, b, "bias", Shape{oc},
                  fmt::format("one value per output channel of filters {}", f.shape().to_string()));
    Tensor y = detail::empty(output_shape(kName, crop.whole, oc), x.dtype(), kName);
    if (y.num_elements() == 0) return y;
    if (crop.keeps_none()) return bias_only(b, at.relu, std::move(y));
    const cpu::WindowGeometry& g = crop.cut;
    const Tensor taps = crop.keeps_all() ? f : crop.cut_filters(f);
    if (x.dtype() == DType::BFloat16) {
      if (g.c == 0 || !onednn_takes_bfloat16(g)) return through_float32<FusedConv2D>(at, x, f, b);
      cpu::onednn::conv_forward(x.raw_data(), taps.raw_data(), g, oc, bytes_of(y), {b.raw_data()},
                                DType::BFloat16);
      if (at.relu) relu_in_place(bytes_of(y), y.num_elements(), DType::BFloat16);
      return y;
    }
    visit_floating(x.dtype(), [&]<class T>() {
      fused_conv_forward(x.values<T>().data(), taps.values<T>().data(), b.values<T>().data(), at.relu, g, oc,
                         detail::mutable_data<T>(y));
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    const Tensor dz = at.relu ? raw_ops::relu_grad(c.dy(), c.output(0)) : c.dy();
    Grads g(3);
    if (c.needs_input_grad(0)) g[0] = backprop_input(at.conv, c.input_shape(0), c.input(1), dz);
    if (c.needs_input_grad(1)) g[1] = backprop_filter(at.conv, c.input(0), c.input_shape(1), dz);
    if (c.needs_input_grad(2)) g[2] = reduce_sum(dz, {0, 1, 2});
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(3, {"strides", "padding", "activation", "dilations", "explicit_paddings"});
    return {nn::conv2d_bias_activation(a.in(0), a.in(1), a.in(2), a.ints("strides", raw_ops::Ints{1, 1}),
                                       a.s("padding", "VALID"), a.s("activation", "linear"),
                                       a.ints("dilations", raw_ops::Ints{1, 1}),
                                       a.ints("explicit_paddings", raw_ops::Ints{}))};
  }
};
}  // namespace ops
Tensor nn::conv2d_bias_activation(const Tensor& input, const Tensor& filters, const Tensor& bias,
                                  const std::vector<std::int64_t>& strides, std::string_view padding,
                                  std::string_view activation, const std::vector<std::int64_t>& dilations,
                                  const std::vector<std::int64_t>& explicit_paddings) {
  constexpr std::string_view op = ops::FusedConv2D::kName;
  return autodiff::apply_with<ops::FusedConv2D>(
      {ops::conv_attrs(op, strides, padding, dilations, explicit_paddings),
       ops::parse_activation(op, activation)},
      input, filters, bias);
}
namespace ops {

namespace {
Tensor conv(const ConvAttrs& at, const Tensor& x, const Tensor& f) {
  ConvAttrs a = at;
  a.sizes = Shape();
  return apply_with<Conv2D>(a, x, f);
}
Tensor backprop_input(const ConvAttrs& at, const Shape& input_sizes, const Tensor& f, const Tensor& dy) {
  ConvAttrs a = at;
  a.sizes = input_sizes;
  return apply_with<Conv2DBackpropInput>(a, f, dy);
}
Tensor backprop_filter(const ConvAttrs& at, const Tensor& x, const Shape& filter_sizes, const Tensor& dy) {
  ConvAttrs a = at;
  a.sizes = filter_sizes;
  return apply_with<Conv2DBackpropFilter>(a, x, dy);
}

// ---- pooling -------------------------------------------------------------------------------------

/// Whether a pooling op records where each window's maximum is (max pooling and its gradients).
enum class Argmax : bool { kNo, kYes };

/// The validated geometry of pooling `in` (NHWC) with the window and strides of `at`. The window
/// may be far larger than the input (padding SAME): the kernels work on its part inside the
/// input (src/kernels/cpu/im2col.h), so a huge window costs no more than one covering the input.
cpu::WindowGeometry pool_geometry(std::string_view op, const Shape& in, const PoolAttrs& at,
                                  Argmax argmax = Argmax::kNo) {
  require_rank4(op, in, "input", "NHWC: batch, height, width, channels");
  auto what = [&] {
    return fmt::format("input has shape {}, ksize {}, strides {}, padding {}", in.to_string(),
                       pair_string(at.ksize), pair_string(at.strides), padding_name(at.padding));
  };
  const cpu::WindowGeometry g = window_geometry(op, in, at.ksize, at.strides, at.padding, what);
  // The argmax is an int32 position within the window (it vectorises with float32 lanes).
  TAPEFLOW_REQUIRE(argmax == Argmax::kNo || g.window_positions() <= INT32_MAX, InvalidArgumentError,
                   "[{}] a max-pooling window may cover at most 2^31 - 1 input positions, this one covers "
                   "{} x {}: {}",
                   op, g.window_rows(), g.window_cols(), what());
  return g;
}

/// Calls fn.template operator()<T>() for the element type of `d`: float32, float64, or with
/// `kBFloat16`, bfloat16 as its bits (T = std::uint16_t, cpu::compared), which max pooling and its
/// gradients take as they are: they pick and move values without arithmetic, and widening a CNN's
/// activations to float32 and back cost more than the pooling.
template <bool kBFloat16, class Fn>
void visit_pooled(DType d, Fn&& fn) {
  if constexpr (kBFloat16) {
    if (d == DType::BFloat16) return fn.template operator()<std::uint16_t>();
  }
  visit_floating(d, fn);
}

/// The elements of `t` as visit_pooled's kernels take them.
template <class T>
const T* pooled_in(const Tensor& t) {
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    return static_cast<const std::uint16_t*>(t.raw_data());
  } else {
    return t.values<T>().data();
  }
}
template <class T>
T* pooled_out(const Tensor& t) {
  if constexpr (std::is_same_v<T, std::uint16_t>) {
    return reinterpret_cast<std::uint16_t*>(detail::mutable_data<bfloat16_t>(t));
  } else {
    return detail::mutable_data<T>(t);
  }
}

/// MaxPool's (kArgmax: kYes) and AvgPool's forward: validates `x` and the window, then runs
/// `kernel(x, geometry, y)` on the (batch, oh, ow, channels) output `y`. Max pooling takes
/// bfloat16 as it is (visit_pooled); average pooling sums, so bfloat16 reaches it widened.
template <Argmax kArgmax, class Kernel>
Tensor pool_forward(std::string_view op, const PoolAttrs& at, const Tensor& x, Kernel kernel) {
  constexpr bool kBFloat16 = kArgmax == Argmax::kYes;
  if (!kBFloat16 || x.dtype() != DType::BFloat16) require_floating(x, op, "input");
  const cpu::WindowGeometry g = pool_geometry(op, x.shape(), at, kArgmax);
  Tensor y = detail::empty(output_shape(op, g, g.c), x.dtype(), op);
  if (y.num_elements() == 0) return y;
  visit_pooled<kBFloat16>(x.dtype(), [&]<class T>() { kernel(pooled_in<T>(x), g, pooled_out<T>(y)); });
  return y;
}

Tensor max_pool_grad(const PoolAttrs& at, const Tensor& x, const Tensor& dy);
Tensor max_pool_grad_grad(const PoolAttrs& at, const Tensor& x, const Tensor& ddx);
Tensor avg_pool(const PoolAttrs& at, const Tensor& x);
Tensor avg_pool_grad(const PoolAttrs& at, const Shape& input_shape, const Tensor& dy);

PoolAttrs pool_attrs(std::string_view op, const std::vector<std::int64_t>& ksize,
                     const std::vector<std::int64_t>& strides, std::string_view padding) {
  return {spatial_pair(op, "ksize", ksize), spatial_pair(op, "strides", strides), parse_padding(op, padding),
          Shape()};
}
}  // namespace

// y = max over each window;  dx = MaxPoolGrad(x, dy) (dy routed to each window's first maximum)
struct MaxPool {
  static constexpr std::string_view kName = "MaxPool";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  static constexpr Saves kSaves = kSavesInputs;
  using Attrs = PoolAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_images(c, 1); }
  static Tensor forward(const Attrs& at, const Tensor& x) {
    return pool_forward<Argmax::kYes>(
        kName, at, x, [](const auto* in, const auto& g, auto* out) { cpu::max_pool(in, g, out); });
  }
  static Grads backward(const GradContext& c) {
    return {max_pool_grad(c.attrs<Attrs>(), c.input(0), c.dy())};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"ksize", "strides", "padding"});
    return {nn::max_pool2d(a.in(0), a.ints("ksize"), a.ints("strides"), a.s("padding"))};
  }
};
}  // namespace ops
Tensor nn::max_pool2d(const Tensor& input, const std::vector<std::int64_t>& ksize,
                      const std::vector<std::int64_t>& strides, std::string_view padding) {
  return autodiff::apply_with<ops::MaxPool>(ops::pool_attrs(ops::MaxPool::kName, ksize, strides, padding),
                                            input);
}
namespace ops {

// dx = scatter of dy to the argmax of each window of x;  d(dy) = MaxPoolGradGrad(x, ddx),
// d(x) = 0 (piecewise constant in x, like TensorFlow's _MaxPoolGradGrad)
struct MaxPoolGrad {
  static constexpr std::string_view kName = "MaxPoolGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  static constexpr Saves kSaves{1u, 0u};  // orig_input
  using Attrs = PoolAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_images(c, 2); }
  static Tensor forward(const Attrs& at, const Tensor& x, const Tensor& dy) {
    require_same_float(kName, x, "orig_input", dy, "grad");
    const cpu::WindowGeometry g = pool_geometry(kName, x.shape(), at, Argmax::kYes);
    require_shape(kName, dy, "grad", output_shape(kName, g, g.c), "max_pool2d's output shape");
    Tensor dx = detail::empty(x.shape(), x.dtype(), kName);
    if (dx.num_elements() == 0) return dx;
    visit_pooled<true>(x.dtype(), [&]<class T>() {
      cpu::max_pool_grad(pooled_in<T>(x), pooled_in<T>(dy), g, pooled_out<T>(dx));
    });
    return dx;
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = zeros_like(c.input(0));
    if (c.needs_input_grad(1)) g[1] = max_pool_grad_grad(c.attrs<Attrs>(), c.input(0), c.dy());
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"ksize", "strides", "padding"});
    return {raw_ops::max_pool_grad(a.in(0), a.in(1), a.ints("ksize"), a.ints("strides"), a.s("padding"))};
  }
};
}  // namespace ops
Tensor raw_ops::max_pool_grad(const Tensor& orig_input, const Tensor& grad,
                              const std::vector<std::int64_t>& ksize,
                              const std::vector<std::int64_t>& strides, std::string_view padding) {
  return autodiff::apply_with<ops::MaxPoolGrad>(
      ops::pool_attrs(ops::MaxPoolGrad::kName, ksize, strides, padding), orig_input, grad);
}
namespace ops {

// y = ddx gathered at the argmax of each window of x;  d(ddx) = MaxPoolGrad(x, dy), d(x) = 0
struct MaxPoolGradGrad {
  static constexpr std::string_view kName = "MaxPoolGradGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  static constexpr Saves kSaves{1u, 0u};  // orig_input
  using Attrs = PoolAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_images(c, 2); }
  static Tensor forward(const Attrs& at, const Tensor& x, const Tensor& ddx) {
    require_same_float(kName, x, "orig_input", ddx, "grad");
    const cpu::WindowGeometry g = pool_geometry(kName, x.shape(), at, Argmax::kYes);
    require_shape(kName, ddx, "grad", x.shape(), "the shape of orig_input");
    Tensor y = detail::empty(output_shape(kName, g, g.c), x.dtype(), kName);
    if (y.num_elements() == 0) return y;
    visit_pooled<true>(x.dtype(), [&]<class T>() {
      cpu::max_pool_grad_grad(pooled_in<T>(x), pooled_in<T>(ddx), g, pooled_out<T>(y));
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    Grads g(2);
    if (c.needs_input_grad(0)) g[0] = zeros_like(c.input(0));
    if (c.needs_input_grad(1)) g[1] = max_pool_grad(c.attrs<Attrs>(), c.input(0), c.dy());
    return g;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"ksize", "strides", "padding"});
    return {
        raw_ops::max_pool_grad_grad(a.in(0), a.in(1), a.ints("ksize"), a.ints("strides"), a.s("padding"))};
  }
};
}  // namespace ops
Tensor raw_ops::max_pool_grad_grad(const Tensor& orig_input, const Tensor& grad,
                                   const std::vector<std::int64_t>& ksize,
                                   const std::vector<std::int64_t>& strides, std::string_view padding) {
  return autodiff::apply_with<ops::MaxPoolGradGrad>(
      ops::pool_attrs(ops::MaxPoolGradGrad::kName, ksize, strides, padding), orig_input, grad);
}
namespace ops {

// y = mean over each window (padding not counted);  dx = AvgPoolGrad(shape(x), dy)
struct AvgPool {
  static constexpr std::string_view kName = "AvgPool";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = PoolAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_images(c, 1); }
  static Tensor forward(const Attrs& at, const Tensor& x) {
    return pool_forward<Argmax::kNo>(
        kName, at, x, [](const auto* in, const auto& g, auto* out) { cpu::avg_pool(in, g, out); });
  }
  static Grads backward(const GradContext& c) {
    return {avg_pool_grad(c.attrs<Attrs>(), c.input_shape(0), c.dy())};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"ksize", "strides", "padding"});
    return {nn::avg_pool2d(a.in(0), a.ints("ksize"), a.ints("strides"), a.s("padding"))};
  }
};
}  // namespace ops
Tensor nn::avg_pool2d(const Tensor& input, const std::vector<std::int64_t>& ksize,
                      const std::vector<std::int64_t>& strides, std::string_view padding) {
  return autodiff::apply_with<ops::AvgPool>(ops::pool_attrs(ops::AvgPool::kName, ksize, strides, padding),
                                            input);
}
namespace ops {

// dx = dy / count spread over each window (the adjoint of avg_pool);  d(dy) = avg_pool(ddx)
struct AvgPoolGrad {
  static constexpr std::string_view kName = "AvgPoolGrad";
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = PoolAttrs;
  static Tensor forward(const Attrs& at, const Tensor& dy) {
    require_floating(dy, kName, "grad");
    const cpu::WindowGeometry g = pool_geometry(kName, at.sizes, at);
    require_shape(kName, dy, "grad", output_shape(kName, g, g.c),
                  fmt::format("avg_pool2d's output for input shape {}", at.sizes.to_string()));
    Tensor dx = detail::empty(at.sizes, dy.dtype(), kName);
    if (dx.num_elements() == 0) return dx;
    visit_floating(dy.dtype(), [&]<class T>() {
      cpu::avg_pool_grad(dy.values<T>().data(), g, detail::mutable_data<T>(dx));
    });
    return dx;
  }
  static Grads backward(const GradContext& c) { return {avg_pool(c.attrs<Attrs>(), c.dy())}; }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"orig_input_shape", "ksize", "strides", "padding"});
    return {raw_ops::avg_pool_grad(a.shape("orig_input_shape"), a.in(0), a.ints("ksize"), a.ints("strides"),
                                   a.s("padding"))};
  }
};
}  // namespace ops
Tensor raw_ops::avg_pool_grad(const Shape& orig_input_shape, const Tensor& grad,
                              const std::vector<std::int64_t>& ksize,
                              const std::vector<std::int64_t>& strides, std::string_view padding) {
  ops::PoolAttrs at = ops::pool_attrs(ops::AvgPoolGrad::kName, ksize, strides, padding);
  at.sizes = orig_input_shape;
  return autodiff::apply_with<ops::AvgPoolGrad>(at, grad);
}
namespace ops {

namespace {
Tensor max_pool_grad(const PoolAttrs& at, const Tensor& x, const Tensor& dy) {
  return apply_with<MaxPoolGrad>(at, x, dy);
}
Tensor max_pool_grad_grad(const PoolAttrs& at, const Tensor& x, const Tensor& ddx) {
  return apply_with<MaxPoolGradGrad>(at, x, ddx);
}
Tensor avg_pool(const PoolAttrs& at, const Tensor& x) {
  PoolAttrs a = at;
  a.sizes = Shape();
  return apply_with<AvgPool>(a, x);
}
Tensor avg_pool_grad(const PoolAttrs& at, const Shape& input_shape, const Tensor& dy) {
  PoolAttrs a = at;
  a.sizes = input_shape;
  return apply_with<AvgPoolGrad>(a, dy);
}

// ---- public argument parsing ---------------------------------------------------------------------

}  // namespace

void register_conv_ops(Registrar& r) {
  r.add<Conv2D>();
  r.add<Conv2DBackpropInput>();
  r.add<Conv2DBackpropFilter>();
  r.add<FusedConv2D>();
  r.add<MaxPool>();
  r.add<MaxPoolGrad>();
  r.add<MaxPoolGradGrad>();
  r.add<AvgPool>();
  r.add<AvgPoolGrad>();
}

}  // namespace ops

}  // namespace tapeflow
