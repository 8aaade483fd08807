#pragma once
// `tapeflow train --export model.tfn` and `tapeflow predict model.tfn`: a trained model's inference
// as a tf::function file (save_function), and its accuracy on the Fashion-MNIST test images from
// that file alone (load_function), without the C++ that built the model.

#include <cstdint>
#include <ostream>
#include <string>

#include "models.h"
#include "tapeflow/data.h"

namespace tapeflow::cli {

/// Writes the inference of `model` (logits of a batch of [n, 28, 28, 1] images, training off) to
/// `path` for batches of any size n, traced at `batch` and at a second size.
void export_model(Model& model, std::int64_t batch, const std::string& path);

struct PredictOptions {
  std::string model_path;
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::int64_t limit = 0;                       ///< the first `limit` test images; 0: all
  std::int64_t batch_size = 1000;               ///< for a file that takes any batch size
  const data::FashionMnist* dataset = nullptr;  ///< tests: an already loaded data set
};

/// Loads the file, runs it over the test images in batches of `batch_size`, or of the file's own
/// batch size if it has one (the last batch padded with zeros), and prints the accuracy. Returns
/// the accuracy.
double predict(const PredictOptions& o, std::ostream& out);

}  // namespace tapeflow::cli
