#pragma once
// `tapeflow train --export model.tfn` and `tapeflow predict model.tfn [IMAGES...]`: a trained
// model's inference as a tf::function file (save_function) or an ONNX model (`--export-onnx`,
// export_onnx), and, from that file alone
// (load_function, without the C++ that built the model), its accuracy on the Fashion-MNIST test
// images or the classes of the user's own images (images.h).
//
// A model file that cannot be read, is corrupt, takes anything but one float32 batch
// [n, 28, 28, 1] or fails to return one [n, classes] tensor of logits is a UsageError naming the
// file (the program exits with status 2).

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "models.h"
#include "tapeflow/data.h"
#include "tapeflow/tensor_spec.h"

namespace tapeflow::cli {

/// Where export_model writes; an empty path is not written.
struct ExportPaths {
  std::string function_file = {};  ///< a tf::function file (save_function), for `tapeflow predict`
  std::string onnx = {};           ///< an ONNX model (export_onnx)
};

/// Writes `inference` (training off) of one input `input` to `paths`. Where input's first
/// dimension is -1, for batches of any size, traced at `batch` and at a second size; otherwise
/// for input's dims alone.
void export_inference(const std::function<Tensor(const Tensor&)>& inference, const TensorSpec& input,
                      std::int64_t batch, const ExportPaths& paths);

/// export_inference of `model`: logits of a batch of [n, 28, 28, 1] images, named "images".
void export_model(Model& model, std::int64_t batch, const ExportPaths& paths);

struct PredictOptions {
  std::string model_path;
  std::vector<std::string> images{};  ///< files of images to classify (images.h); empty: the test set
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::int64_t limit = 0;                       ///< the first `limit` test images; 0: all
  std::int64_t batch_size = 1000;               ///< for a file that takes any batch size
  const data::FashionMnist* dataset = nullptr;  ///< tests: an already loaded data set
};

/// Loads the file, runs it over the test images in batches of `batch_size`, or of the file's own
/// batch size if it has one (the last batch padded with zeros), and prints the accuracy. Returns
/// the accuracy. Throws UsageError for a bad model file or a data set that cannot be read.
double predict(const PredictOptions& o, std::ostream& out);

/// Loads the file and classifies every image of the files `o.images` (read_images), batched as
/// predict() does: prints one line per image, `FILE: NAME (CLASS, probability P)` (`FILE[i]` for
/// a file of several images), NAME the Fashion-MNIST class name. Returns the classes, in order.
/// Throws UsageError for a bad model or image file.
std::vector<std::int64_t> classify(const PredictOptions& o, std::ostream& out);

}  // namespace tapeflow::cli
