#pragma once
/// \file ops/image.h
/// Image ops (NHWC: [..., height, width, channels]).

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::image {

/// tf.image.adjust_contrast: for each channel, (x - mean) * contrast_factor + mean, where the
/// mean is over height and width. `images` has rank >= 3 and is float; `contrast_factor` is a
/// scalar of the same dtype.
///
/// NOTE: like TensorFlow's AdjustContrastv2, this op has no registered gradient: taking a
/// gradient through it raises LookupError ("gradient registry has no entry for:
/// AdjustContrastv2"), the documented example of a missing gradient.
Tensor adjust_contrast(const Tensor& images, const Tensor& contrast_factor);

}  // namespace tapeflow::image
#pragma GCC visibility pop
