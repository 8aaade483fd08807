#pragma once
// Conv2D's three passes in float32 through oneDNN (src/kernels/cpu/onednn.h), on tapeflow's
// layouts: images NHWC, filters HWIO. oneDNN picks the filters' layout for each primitive; the
// HWIO filters (or the HWIO gradient) are reordered to and from it on every call, a copy of
// kh * kw * in * out elements, small beside the convolution. The geometry is validated by the
// caller (src/ops/nn_conv.cpp) and the output is not empty; an empty operand (a sum over nothing)
// gives zeros without calling oneDNN, which leaves a zero-volume primitive's output untouched.

#include <cstdint>

#include "kernels/cpu/im2col.h"

namespace tapeflow::cpu::onednn {

/// Whether oneDNN takes this geometry: it computes with 32-bit strides, paddings and window
/// extents, so a stride or a dilated window beyond 2^31 - 1 (TensorFlow's own limit is 2^31 - 1
/// for each attribute, not for their product) goes to the caller's im2col path instead.
bool supports(const WindowGeometry& g);

/// What the forward pass applies as it writes each output (oneDNN's bias and post-ops).
struct Epilogue {
  const float* bias = nullptr;  // oc values added to each output position, or none
  bool relu = false;            // max(., 0) after the bias
};

/// y (n, oh, ow, oc) = conv2d(x (n, h, w, c), f (kh, kw, c, oc)), then the epilogue (which needs
/// c > 0: the caller applies it to an empty sum itself).
void conv_forward(const float* x, const float* f, const WindowGeometry& g, std::int64_t oc, float* y,
                  Epilogue epilogue = {});

/// dx (n, h, w, c) = the gradient of conv_forward's input for output gradient dy.
void conv_backprop_input(const float* f, const float* dy, const WindowGeometry& g, std::int64_t oc,
                         float* dx);

/// df (kh, kw, c, oc) = the gradient of conv_forward's filters for output gradient dy.
void conv_backprop_filter(const float* x, const float* dy, const WindowGeometry& g, std::int64_t oc,
                          float* df);

}  // namespace tapeflow::cpu::onednn
