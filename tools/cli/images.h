#pragma once
// The user's own images for `tapeflow predict MODEL.tfn FILE...`: 28x28 grey images, light
// clothes on black as in Fashion-MNIST, read from an IDX file (the data set's own format, raw or
// gzip), a PNG image or a NumPy .npy array. The format is told by the file's first bytes, not its
// name.
//
//   IDX   uint8 pixels (0..255), or float32/float64 values in [0, 1]; shape [28, 28], [n, 28, 28]
//         or [n, 28, 28, 1].
//   PNG   one 28x28 image (read by cairo); colours become grey by their luma
//         (0.299 R + 0.587 G + 0.114 B), transparent pixels are black.
//   .npy  dtype '|u1' (pixels 0..255), '<f4' or '<f8' (values in [0, 1]), C order; shape as IDX's.

#include <string>

#include "tapeflow/tensor.h"

namespace tapeflow::cli {

/// The images of `path` as float32 [n, 28, 28, 1] in [0, 1]. Throws UsageError naming the file
/// for a file that cannot be read, is none of the three formats, is malformed or truncated, holds
/// images that are not 28x28 or values outside the range of its type.
Tensor read_images(const std::string& path);

}  // namespace tapeflow::cli
