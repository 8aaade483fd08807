#include "kernels/cpu/conv_onednn.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>
#include <string>

#include "core/allocator.h"
#include "core/check.h"
#include "kernels/cpu/onednn.h"

namespace tapeflow::cpu::onednn {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

enum class Pass : std::int64_t { kForward, kBackpropInput, kBackpropFilter };

constexpr std::string_view pass_name(Pass p) {
  switch (p) {
    case Pass::kForward:
      return "convolution forward";
    case Pass::kBackpropInput:
      return "convolution backward data";
    case Pass::kBackpropFilter:
      return "convolution backward weights";
  }
  return "convolution";
}

/// One pass's primitive, the memory layouts it was built for, and the reorder between the
/// HWIO filters and the filter layout oneDNN chose (none when they agree).
struct ConvPrimitive {
  dnnl::primitive primitive;
  memory::desc images, outputs, user_filters, filters;
  std::optional<dnnl::reorder> reorder;
  std::size_t scratchpad_bytes = 0;
};

using Key = std::array<std::int64_t, 19>;

Key key(Pass pass, const WindowGeometry& g, std::int64_t oc, const Epilogue& e, DType dtype) {
  return {static_cast<std::int64_t>(pass),
          static_cast<std::int64_t>(dtype),
          g.n,
          g.h,
          g.w,
          g.c,
          oc,
          g.kh,
          g.kw,
          g.sh,
          g.sw,
          g.pad_top,
          g.pad_left,
          g.oh,
          g.ow,
          g.dh,
          g.dw,
          g.groups,
          e.bias != nullptr};
}

std::string describe(Pass pass, const WindowGeometry& g, std::int64_t oc, DType dtype) {
  return fmt::format(
      "{} in {}: input (batch {}, {}x{}, {} channels), filters {}x{}x{}x{}, {} groups, strides ({}, {}), "
      "dilations ({}, {}), padding top {} left {}, output {}x{}",
      pass_name(pass), dtype_name(dtype), g.n, g.h, g.w, g.c, g.kh, g.kw, g.c / g.groups, oc, g.groups, g.sh,
      g.sw, g.dh, g.dw, g.pad_top, g.pad_left, g.oh, g.ow);
}

memory::data_type data_type(DType dtype) {
  return dtype == DType::BFloat16 ? memory::data_type::bf16 : memory::data_type::f32;
}

memory::desc bias_desc(std::int64_t oc, DType dtype) { return memory::desc({oc}, data_type(dtype), Tag::a); }

/// Builds pass `pass`; only the forward pass has an epilogue.
ConvPrimitive build(Pass pass, const WindowGeometry& g, std::int64_t oc, const Epilogue& e, DType dtype) {
  const memory::data_type dt = data_type(dtype);
  // oneDNN counts dilation from 0 (the taps' gap), TensorFlow from 1 (their distance).
  const memory::dims strides{g.sh, g.sw}, dilations{g.dh - 1, g.dw - 1}, pad_l{g.pad_top, g.pad_left};
  // The bottom and right padding that make oneDNN's output size tapeflow's (TensorFlow's rule).
  const std::int64_t extent_h = (g.kh - 1) * g.dh + 1, extent_w = (g.kw - 1) * g.dw + 1;
  const memory::dims pad_r{std::max<std::int64_t>((g.oh - 1) * g.sh + extent_h - g.h - g.pad_top, 0),
                           std::max<std::int64_t>((g.ow - 1) * g.sw + extent_w - g.w - g.pad_left, 0)};
  ConvPrimitive c;
  c.images = memory::desc({g.n, g.c, g.h, g.w}, dt, Tag::nhwc);
  c.outputs = memory::desc({g.n, oc, g.oh, g.ow}, dt, Tag::nhwc);
  // Grouped filters are (groups, oc / groups, c / groups, kh, kw) to oneDNN; tapeflow's HWIO
  // filters with O = group * (oc / groups) + o are its hwigo layout.
  const memory::dims filter_dims = g.groups == 1
                                       ? memory::dims{oc, g.c, g.kh, g.kw}
                                       : memory::dims{g.groups, oc / g.groups, g.c / g.groups, g.kh, g.kw};
  c.user_filters = memory::desc(filter_dims, dt, g.groups == 1 ? Tag::hwio : Tag::hwigo);
  const memory::desc any_filters(filter_dims, dt, Tag::any);
  const dnnl::primitive_attr attr = attributes();
  const auto& eng = engine();
  // A zero descriptor: no bias.
  const memory::desc bias = e.bias ? bias_desc(oc, dtype) : memory::desc();
  const dnnl::convolution_forward::primitive_desc forward(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, c.images, any_filters, bias,
       c.outputs, strides, dilations, pad_l, pad_r},
      attr, eng);
  switch (pass) {
    case Pass::kForward:
      c.filters = forward.weights_desc();
      c.scratchpad_bytes = forward.scratchpad_desc().get_size();
      c.primitive = dnnl::convolution_forward(forward);
      break;
    case Pass::kBackpropInput: {
      const dnnl::convolution_backward_data::primitive_desc pd(
          {dnnl::algorithm::convolution_direct, c.images, any_filters, c.outputs, strides, dilations, pad_l,
           pad_r},
          attr, eng, forward);
      c.filters = pd.weights_desc();
      c.scratchpad_bytes = pd.scratchpad_desc().get_size();
      c.primitive = dnnl::convolution_backward_data(pd);
      break;
    }
    case Pass::kBackpropFilter: {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          {dnnl::algorithm::convolution_direct, c.images, any_filters, c.outputs, strides, dilations, pad_l,
           pad_r},
          attr, eng, forward);
      c.filters = pd.diff_weights_desc();
      c.scratchpad_bytes = pd.scratchpad_desc().get_size();
      c.primitive = dnnl::convolution_backward_weights(pd);
      break;
    }
  }
  if (c.filters != c.user_filters) {
    c.reorder = pass == Pass::kBackpropFilter ? dnnl::reorder({eng, c.filters, eng, c.user_filters})
                                              : dnnl::reorder({eng, c.user_filters, eng, c.filters});
  }
  return c;
}

/// `g` with the stride of a dimension whose output has one position lowered to the least that
/// still gives one position (the input's reach past the window, 1 if none): such a stride never
/// moves the window, but oneDNN's JIT kernels may unroll over it (a backward-data kernel for a
/// stride of 2^31 - 1 asks for gigabytes of code buffer). One primitive then serves every such
/// stride, and build() derives the same bottom and right padding.
WindowGeometry without_unused_strides(WindowGeometry g) {
  const auto least = [](std::int64_t size, std::int64_t pad, std::int64_t kernel, std::int64_t dilation) {
    return std::max<std::int64_t>(size + pad - ((kernel - 1) * dilation + 1) + 1, 1);
  };
  if (g.oh == 1) g.sh = std::min(g.sh, least(g.h, g.pad_top, g.kh, g.dh));
  if (g.ow == 1) g.sw = std::min(g.sw, least(g.w, g.pad_left, g.kw, g.dw));
  return g;
}

/// The primitive for `pass` on this geometry (and epilogue), built on first use.
std::shared_ptr<const ConvPrimitive> primitive(Pass pass, const WindowGeometry& geometry, std::int64_t oc,
                                               const Epilogue& e, DType dtype) {
  static PrimitiveCache<Key, ConvPrimitive> cache(256);
  const WindowGeometry g = without_unused_strides(geometry);
  return cache.get(key(pass, g, oc, e, dtype), [&] {
    return checked(
        pass_name(pass), [&] { return describe(pass, geometry, oc, dtype); },
        [&] { return build(pass, g, oc, e, dtype); });
  });
}

/// Runs `c`, the primitive of pass `pass`, whose filter operand (read, or written for
/// kBackpropFilter) is the HWIO buffer `user_filters`, with `args` holding the image and output
/// operands.
void run(Pass pass, const WindowGeometry& g, std::int64_t oc, DType dtype, const ConvPrimitive& c,
         std::unordered_map<int, memory> args, int filter_arg, const void* user_filters) {
  const std::function<std::string()> what = [&] { return describe(pass, g, oc, dtype); };
  const memory user = wrap(c.user_filters, user_filters);
  if (!c.reorder) {
    args.emplace(filter_arg, user);
    execute(pass_name(pass), what, c.primitive, std::move(args), c.scratchpad_bytes);
    return;
  }
  const std::shared_ptr<void> buffer =
      detail::allocate_buffer(static_cast<std::int64_t>(c.filters.get_size()), pass_name(pass));
  const memory reordered = wrap(c.filters, buffer.get());
  args.emplace(filter_arg, reordered);
  if (pass == Pass::kBackpropFilter) {
    execute(pass_name(pass), what, c.primitive, std::move(args), c.scratchpad_bytes);
    execute("reorder", what, *c.reorder, {{DNNL_ARG_FROM, reordered}, {DNNL_ARG_TO, user}}, 0);
  } else {
    execute("reorder", what, *c.reorder, {{DNNL_ARG_FROM, user}, {DNNL_ARG_TO, reordered}}, 0);
    execute(pass_name(pass), what, c.primitive, std::move(args), c.scratchpad_bytes);
  }
}

}  // namespace

bool supports(const WindowGeometry& geometry) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  // oneDNN's kernels grow with the strides and paddings (building a forward primitive for stride
  // and padding 2^22 takes half a gigabyte and 2.5 s; 2^28 exhausts memory), which no network
  // uses; the im2col path computes such windows in time proportional to the output.
  constexpr std::int64_t kMaxReach = 4096;
  const WindowGeometry g = without_unused_strides(geometry);
  const std::int64_t extent_h = (g.kh - 1) * g.dh + 1, extent_w = (g.kw - 1) * g.dw + 1;
  // The bottom and right padding conv_forward derives (build), at most the stride's reach.
  const std::int64_t pad_bottom = (g.oh - 1) * g.sh + extent_h - g.h - g.pad_top;
  const std::int64_t pad_right = (g.ow - 1) * g.sw + extent_w - g.w - g.pad_left;
  // The window's extent and the input's must also fit oneDNN's int32 arithmetic.
  return g.sh <= kMaxReach && g.sw <= kMaxReach && g.pad_top <= kMaxReach && g.pad_left <= kMaxReach &&
         pad_bottom <= kMaxReach && pad_right <= kMaxReach && extent_h <= kMax / 4 && extent_w <= kMax / 4 &&
         g.h <= kMax / 4 && g.w <= kMax / 4;
}

void conv_forward(const void* x, const void* f, const WindowGeometry& g, std::int64_t oc, void* y,
                  Epilogue epilogue, DType dtype) {
  TAPEFLOW_ASSERT(g.c > 0 || !epilogue.bias, "an epilogue needs input channels");
  if (g.c == 0) {  // an empty sum
    std::fill_n(static_cast<std::byte*>(y), g.n * g.out_positions() * oc * dtype_size(dtype), std::byte{0});
    return;
  }
  const auto c_ptr = primitive(Pass::kForward, g, oc, epilogue, dtype);
  const ConvPrimitive& c = *c_ptr;
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, wrap(c.images, x)}, {DNNL_ARG_DST, wrap(c.outputs, y)}};
  if (epilogue.bias) args.emplace(DNNL_ARG_BIAS, wrap(bias_desc(oc, dtype), epilogue.bias));
  run(Pass::kForward, g, oc, dtype, c, std::move(args), DNNL_ARG_WEIGHTS, f);
}

void conv_backprop_input(const void* f, const void* dy, const WindowGeometry& g, std::int64_t oc, void* dx,
                         DType dtype) {
  if (oc == 0 || g.out_positions() == 0) {
    std::fill_n(static_cast<std::byte*>(dx), g.n * g.image_size() * dtype_size(dtype), std::byte{0});
    return;
  }
  const auto c_ptr = primitive(Pass::kBackpropInput, g, oc, {}, dtype);
  const ConvPrimitive& c = *c_ptr;
  run(Pass::kBackpropInput, g, oc, dtype, c,
      {{DNNL_ARG_DIFF_DST, wrap(c.outputs, dy)}, {DNNL_ARG_DIFF_SRC, wrap(c.images, dx)}}, DNNL_ARG_WEIGHTS,
      f);
}

void conv_backprop_filter(const void* x, const void* dy, const WindowGeometry& g, std::int64_t oc, void* df,
                          DType dtype) {
  if (g.n == 0 || g.out_positions() == 0) {
    std::fill_n(static_cast<std::byte*>(df), g.kh * g.kw * (g.c / g.groups) * oc * dtype_size(dtype),
                std::byte{0});
    return;
  }
  const auto c_ptr = primitive(Pass::kBackpropFilter, g, oc, {}, dtype);
  const ConvPrimitive& c = *c_ptr;
  run(Pass::kBackpropFilter, g, oc, dtype, c,
      {{DNNL_ARG_SRC, wrap(c.images, x)}, {DNNL_ARG_DIFF_DST, wrap(c.outputs, dy)}}, DNNL_ARG_DIFF_WEIGHTS,
      df);
}

}  // namespace tapeflow::cpu::onednn
