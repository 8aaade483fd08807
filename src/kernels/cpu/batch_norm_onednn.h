#pragma once
// Batch normalization in float32 through oneDNN (src/kernels/cpu/onednn.h): the training forward
// computes the batch statistics and normalises, the backward gives the gradients of the input,
// the scale and the offset; inference normalises with given statistics. The caller
// (src/ops/nn_batch_norm.cpp) validates shapes and dtypes; every extent here is at least 1.

#include <cstdint>

namespace tapeflow::cpu::onednn {

/// A tensor seen as (outer, channels, inner): the normalised axis, with the axes before it and
/// after it flattened. NHWC images normalised over their channels are (n * h * w, c, 1).
struct NormGeometry {
  std::int64_t outer = 1, channels = 1, inner = 1;
  /// The elements each channel's statistics average over.
  std::int64_t count() const { return outer * inner; }
};

/// y = (x - mean) / sqrt(variance + epsilon) * scale + offset per channel, with mean and
/// variance (biased: divided by count()) those of x over everything but the channels, written to
/// `mean` and `variance`.
void batch_norm_forward(const float* x, const float* scale, const float* offset, const NormGeometry& g,
                        float epsilon, float* y, float* mean, float* variance);

/// y = (x - mean) / sqrt(variance + epsilon) * scale + offset per channel with given statistics
/// (inference: the moving ones).
void batch_norm_inference(const float* x, const float* scale, const float* offset, const float* mean,
                          const float* variance, const NormGeometry& g, float epsilon, float* y);

/// The gradients of batch_norm_forward's y for output gradient dy, given the statistics it
/// computed: dx, dscale = sum(dy * xhat), doffset = sum(dy) (xhat the normalised x).
void batch_norm_backward(const float* dy, const float* x, const float* scale, const float* mean,
                         const float* variance, const NormGeometry& g, float epsilon, float* dx,
                         float* dscale, float* doffset);

}  // namespace tapeflow::cpu::onednn
