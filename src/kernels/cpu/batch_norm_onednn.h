#pragma once
// Batch normalization in float32 through oneDNN (src/kernels/cpu/onednn.h), with statistics the
// caller gives (training: the batch's, from channel_moments.h, which sums more accurately than
// oneDNN's own training pass): normalising, and the backward pass, which gives the gradients of
// the input, the scale and the offset. The caller
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

/// y = (x - mean) / sqrt(variance + epsilon) * scale + offset per channel with given statistics
/// (training: the batch's; inference: the moving ones).
void batch_norm_normalise(const float* x, const float* scale, const float* offset, const float* mean,
                          const float* variance, const NormGeometry& g, float epsilon, float* y);

/// The gradients of the training y = batch_norm_normalise(x, ..., the batch's statistics) for
/// output gradient dy: dx, dscale = sum(dy * xhat), doffset = sum(dy) (xhat the normalised x).
void batch_norm_backward(const float* dy, const float* x, const float* scale, const float* mean,
                         const float* variance, const NormGeometry& g, float epsilon, float* dx,
                         float* dscale, float* doffset);

}  // namespace tapeflow::cpu::onednn
