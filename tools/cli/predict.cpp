#include "predict.h"

#include <fmt/format.h>

#include <algorithm>

#include "tapeflow/function.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"
#include "train.h"

namespace tapeflow::cli {

void export_model(Model& model, std::int64_t batch, const std::string& path) {
  // Batches of any size: the second trace, at another size, shows that the graph does not depend
  // on it, so the file keeps the batch dimension unknown (tf::function's unknown dimensions).
  const std::vector<TensorSpec> images{{{-1, 28, 28, 1}, DType::Float32, "images"}};
  auto logits = function([&model](const Tensor& x) { return (*model.net)(x, /*training=*/false); },
                         {.name = "predict", .input_signature = images});
  for (std::int64_t n : {std::max<std::int64_t>(batch, 2), batch == 2 ? std::int64_t{3} : std::int64_t{2}})
    logits(zeros({n, 28, 28, 1}));  // the traces: inference only, no state changes
  save_function(logits, images, path);
}

double predict(const PredictOptions& o, std::ostream& out) {
  LoadedFunction f = load_function(o.model_path);
  const std::vector<TensorSpec>& sig = f.input_signature();
  if (sig.size() != 1 || sig[0].dims.size() != 4 || sig[0].dims[0] == 0 || sig[0].dims[1] != 28 ||
      sig[0].dims[2] != 28 || sig[0].dims[3] != 1 || sig[0].dtype != DType::Float32)
    throw UsageError(
        fmt::format("{}: function '{}' takes {} tensor(s), not one float32 batch [n, 28, 28, 1] of "
                    "images (was it written by tapeflow train --export?)",
                    o.model_path, f.name(), sig.size()));
  const data::FashionMnist ds = fashion_mnist(o.dataset, o.data_dir);
  std::int64_t n = ds.test_images.shape()[0];
  if (o.limit > 0) n = std::min(n, o.limit);
  // A file whose batch dimension is unknown takes any batch; one of a fixed batch size gets its
  // last batch padded to that size.
  const bool any_batch = sig[0].dims[0] < 0;
  const std::int64_t batch = any_batch ? o.batch_size : sig[0].dims[0];
  std::int64_t correct = 0;
  for (std::int64_t begin = 0; begin < n; begin += batch) {
    const std::int64_t size = std::min(batch, n - begin);
    Tensor x = slice(ds.test_images, {begin, 0, 0, 0}, {size, -1, -1, -1});
    if (size < batch && !any_batch) x = pad(x, {{0, batch - size}, {0, 0}, {0, 0}, {0, 0}});
    const std::vector<Tensor> results = f({x});
    if (results.size() != 1 || results[0].shape().rank() != 2 || results[0].shape()[0] != x.shape()[0])
      throw UsageError(fmt::format(
          "{}: function '{}' returned {} tensor(s){}, not one [n, classes] tensor of logits for a batch of "
          "{} "
          "(was it written by tapeflow train --export?)",
          o.model_path, f.name(), results.size(),
          results.empty() ? std::string() : " (the first of shape " + results[0].shape().to_string() + ")",
          x.shape()[0]));
    const Tensor& logits = results[0];
    Tensor predicted = slice(argmax(logits, 1), {0}, {size});
    Tensor labels = cast(slice(ds.test_labels, {begin}, {size}), DType::Int64);
    correct +=
        static_cast<std::int64_t>(reduce_sum(cast(equal(predicted, labels), DType::Float64)).item<double>());
  }
  const double accuracy = n > 0 ? static_cast<double>(correct) / static_cast<double>(n) : 0.0;
  out << fmt::format("{}: function '{}', {} variables, batches of {}{}: test accuracy {:.4f} on {} images\n",
                     o.model_path, f.name(), f.variables().size(), batch, any_batch ? " (any size)" : "",
                     accuracy, n);
  return accuracy;
}

}  // namespace tapeflow::cli
