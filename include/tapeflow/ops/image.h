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

/// tf.image.flip_left_right: each image mirrored along its width, reverse(images, -2).
/// `images` is one image [height, width, channels] or a batch [batch, height, width, channels];
/// any other rank throws InvalidArgumentError. Differentiable (the gradient is flipped back).
Tensor flip_left_right(const Tensor& images);

/// tf.image.flip_up_down: each image mirrored along its height, reverse(images, -3). Ranks as
/// flip_left_right.
Tensor flip_up_down(const Tensor& images);

/// tf.image.stateless_random_flip_left_right: each image of the batch (or the one image) mirrored
/// left to right with probability 1/2, decided by random::stateless_uniform over the batch with
/// `seed` (an int64 tensor of shape (2,), (key, counter)): the same seed flips the same images on
/// every run and machine, so training with it stays reproducible and resumable. An image flips
/// where its draw u rounds to 1 (u > 0.5), as TensorFlow decides. The data augmentation of
/// `tapeflow train --augment flip`. Differentiable with respect to `images`.
Tensor stateless_random_flip_left_right(const Tensor& images, const Tensor& seed);

}  // namespace tapeflow::image
#pragma GCC visibility pop
