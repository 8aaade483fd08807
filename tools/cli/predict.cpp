#include "predict.h"

#include <fmt/format.h>

#include <algorithm>

#include "images.h"
#include "tapeflow/errors.h"
#include "tapeflow/function.h"
#include "tapeflow/onnx.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/nn.h"
#include "tapeflow/ops/reduce.h"
#include "train.h"

namespace tapeflow::cli {

void export_inference(const std::function<Tensor(const Tensor&)>& inference, const TensorSpec& input,
                      std::int64_t batch, const ExportPaths& paths) {
  // Batches of any size: the second trace, at another size, shows that the graph does not depend
  // on it, so the file keeps the batch dimension unknown (tf::function's unknown dimensions).
  const std::vector<TensorSpec> signature{input};
  auto traced = function([&inference](const Tensor& x) { return inference(x); },
                         {.name = "predict", .input_signature = signature});
  // Inference only: the traces change no state.
  const std::vector<std::int64_t> batches =
      input.dims[0] >= 0 ? std::vector<std::int64_t>{input.dims[0]}
                         : std::vector<std::int64_t>{std::max<std::int64_t>(batch, 2), batch == 2 ? 3 : 2};
  for (std::int64_t n : batches) {
    std::vector<std::int64_t> dims = input.dims;
    dims[0] = n;
    traced(zeros(Shape(std::span<const std::int64_t>(dims)), input.dtype));
  }
  if (!paths.function_file.empty()) save_function(traced, signature, paths.function_file);
  if (!paths.onnx.empty()) export_onnx(traced, signature, paths.onnx);
}

void export_model(Model& model, std::int64_t batch, const ExportPaths& paths) {
  export_inference([&model](const Tensor& x) { return (*model.net)(x, /*training=*/false); },
                   {{-1, 28, 28, 1}, DType::Float32, "images"}, batch, paths);
}

namespace {

/// The function file `path`, checked to take one float32 batch [n, 28, 28, 1]. Throws UsageError
/// naming the file for one that cannot be read, is corrupt or takes something else.
LoadedFunction load_model(const std::string& path) {
  LoadedFunction f = [&] {
    try {
      return load_function(path);
    } catch (const Error& e) {
      throw UsageError(fmt::format("cannot load the model '{}': {}", path, e.what()));
    }
  }();
  const std::vector<TensorSpec>& sig = f.input_signature();
  if (sig.size() != 1 || sig[0].dims.size() != 4 || sig[0].dims[0] == 0 || sig[0].dims[1] != 28 ||
      sig[0].dims[2] != 28 || sig[0].dims[3] != 1 || sig[0].dtype != DType::Float32)
    throw UsageError(
        fmt::format("{}: function '{}' takes {} tensor(s), not one float32 batch [n, 28, 28, 1] of "
                    "images (was it written by tapeflow train --export?)",
                    path, f.name(), sig.size()));
  return f;
}

/// The batch size `f` runs at: its own, or `any` for a file that takes any batch size.
std::int64_t batch_of(const LoadedFunction& f, std::int64_t any) {
  const std::int64_t dim = f.input_signature()[0].dims[0];
  return dim < 0 ? any : dim;
}

/// The logits [n, classes] of `f` (loaded from `path`) for `images` [n, 28, 28, 1], run in batches
/// of `batch`; for a file of a fixed batch size the last batch is padded with zeros. Throws
/// UsageError naming the file when the function fails or returns anything but one [n, classes]
/// tensor per batch.
Tensor logits_of(const LoadedFunction& f, const std::string& path, const Tensor& images, std::int64_t batch) {
  const bool any_batch = f.input_signature()[0].dims[0] < 0;
  const std::int64_t n = images.shape()[0];
  std::vector<Tensor> parts;
  for (std::int64_t begin = 0; begin < n; begin += batch) {
    const std::int64_t size = std::min(batch, n - begin);
    Tensor x = slice(images, {begin, 0, 0, 0}, {size, -1, -1, -1});
    if (size < batch && !any_batch) x = pad(x, {{0, batch - size}, {0, 0}, {0, 0}, {0, 0}});
    std::vector<Tensor> results;
    try {
      results = f({x});
    } catch (const Error& e) {
      throw UsageError(fmt::format("{}: function '{}' failed on a batch of {}: {}", path, f.name(),
                                   x.shape()[0], e.what()));
    }
    if (results.size() != 1 || results[0].shape().rank() != 2 || results[0].shape()[0] != x.shape()[0] ||
        results[0].shape()[1] < 1 || !is_floating(results[0].dtype()))
      throw UsageError(fmt::format(
          "{}: function '{}' returned {} tensor(s){}, not one [n, classes] tensor of logits for a batch of "
          "{} (was it written by tapeflow train --export?)",
          path, f.name(), results.size(),
          results.empty() ? std::string()
                          : fmt::format(" (the first of shape {}, {})", results[0].shape().to_string(),
                                        dtype_name(results[0].dtype())),
          x.shape()[0]));
    parts.push_back(slice(results[0], {0, 0}, {size, -1}));
  }
  return parts.empty() ? zeros({0, 10}) : concat(parts, 0);
}

}  // namespace

double predict(const PredictOptions& o, std::ostream& out) {
  const LoadedFunction f = load_model(o.model_path);
  const data::FashionMnist ds = fashion_mnist(o.dataset, o.data_dir);
  std::int64_t n = ds.test_images.shape()[0];
  if (o.limit > 0) n = std::min(n, o.limit);
  const std::int64_t batch = batch_of(f, o.batch_size);
  const Tensor images = slice(ds.test_images, {0, 0, 0, 0}, {n, -1, -1, -1});
  const Tensor predicted = argmax(logits_of(f, o.model_path, images, batch), 1);
  const Tensor labels = cast(slice(ds.test_labels, {0}, {n}), DType::Int64);
  const auto correct = reduce_sum(cast(equal(predicted, labels), DType::Float64)).item<double>();
  const double accuracy = n > 0 ? correct / static_cast<double>(n) : 0.0;
  out << fmt::format("{}: function '{}', {} variables, batches of {}{}: test accuracy {:.4f} on {} images\n",
                     o.model_path, f.name(), f.variables().size(), batch,
                     f.input_signature()[0].dims[0] < 0 ? " (any size)" : "", accuracy, n);
  return accuracy;
}

std::vector<std::int64_t> classify(const PredictOptions& o, std::ostream& out) {
  const LoadedFunction f = load_model(o.model_path);
  std::vector<Tensor> read;
  for (const std::string& file : o.images) read.push_back(read_images(file));
  std::vector<std::int64_t> classes;
  for (std::size_t i = 0; i < o.images.size(); ++i) {
    const Tensor probabilities =
        nn::softmax(cast(logits_of(f, o.model_path, read[i], batch_of(f, o.batch_size)), DType::Float32));
    const std::vector<std::int64_t> best = argmax(probabilities, 1).to_vector<std::int64_t>();
    const std::vector<float> p = reduce_max(probabilities, {1}).to_vector<float>();
    for (std::size_t k = 0; k < best.size(); ++k) {
      const auto label = static_cast<std::size_t>(best[k]);
      const std::string name = label < data::class_names().size() ? std::string(data::class_names()[label])
                                                                  : fmt::format("class {}", label);
      out << fmt::format("{}{}: {} ({}, probability {:.3f})\n", o.images[i],
                         best.size() == 1 ? std::string() : fmt::format("[{}]", k), name, label, p[k]);
      classes.push_back(best[k]);
    }
  }
  return classes;
}

}  // namespace tapeflow::cli
