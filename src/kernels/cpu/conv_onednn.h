#pragma once
// Conv2D's three passes in float32 and bfloat16 through oneDNN (src/kernels/cpu/onednn.h), on tapeflow's
// layouts: images NHWC, filters HWIO. oneDNN picks the filters' layout for each primitive; the
// HWIO filters (or the HWIO gradient) are reordered to and from it on every call, a copy of
// kh * kw * in * out elements, small beside the convolution. The geometry is validated by the
// caller (src/ops/nn_conv.cpp) and the output is not empty; an empty operand (a sum over nothing)
// gives zeros without calling oneDNN, which leaves a zero-volume primitive's output untouched.

#include <cstdint>

#include "kernels/cpu/im2col.h"
#include "tapeflow/dtype.h"

namespace tapeflow::cpu::onednn {

/// Whether oneDNN takes this geometry. Its kernels grow with the strides and paddings, so a stride
/// or padding above 4096 (after a stride that never moves the window is taken as the least one
/// with the same output), and a dilated window or input beyond oneDNN's 32-bit arithmetic, go to
/// the caller's im2col path instead.
bool supports(const WindowGeometry& g);

/// What the forward pass applies as it writes each output (oneDNN's bias). Not its ReLU post-op:
/// that turns NaN into 0 (it takes the maximum with 0 in an order that drops NaN), where
/// tapeflow's ReLU keeps NaN.
struct Epilogue {
  const void* bias = nullptr;  // oc values (of the operands' dtype) added to each output position
};

/// Every operand of a pass has `dtype`, float32 or bfloat16 (which oneDNN accumulates in float32
/// and rounds once per output).

/// y (n, oh, ow, oc) = conv2d(x (n, h, w, c), f (kh, kw, c, oc)), then the epilogue (which needs
/// c > 0: the caller applies it to an empty sum itself).
void conv_forward(const void* x, const void* f, const WindowGeometry& g, std::int64_t oc, void* y,
                  Epilogue epilogue = {}, DType dtype = DType::Float32);

/// dx (n, h, w, c) = the gradient of conv_forward's input for output gradient dy.
void conv_backprop_input(const void* f, const void* dy, const WindowGeometry& g, std::int64_t oc, void* dx,
                         DType dtype = DType::Float32);

/// df (kh, kw, c, oc) = the gradient of conv_forward's filters for output gradient dy.
void conv_backprop_filter(const void* x, const void* dy, const WindowGeometry& g, std::int64_t oc, void* df,
                          DType dtype = DType::Float32);

}  // namespace tapeflow::cpu::onednn
