// What Model::fit costs over the loop it replaces: two copies of an MLP (same seeds) train on the
// same data, one with fit(), one with the hand-written loop a TensorFlow guide shows (the same
// shuffled batches, the same traced step: forward, loss and the update fused into the backward
// pass, and the same running loss and accuracy read after every step). The two alternate epoch by
// epoch (which goes first alternates too), so a shared machine's load hits both alike, and end
// with the same weights (checked). Prints the median epoch time of each and their ratio.
//
// Then what a tf.data pipeline costs fit over tensors in memory: the same data as raw pixels
// (int32, 0..255), normalised (cast to float32, times 1/255) either once ahead of fit, or by
// the pipeline's map on 2 worker threads, per example (from_tensor_slices, map, batch,
// prefetch) and per batch (from_tensor_slices, batch, map, prefetch); in order, so all three end
// with the same weights (checked). The three alternate as above.
//
//   bench_fit [--examples N] [--batch-size B] [--epochs E] [--threads T]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

std::shared_ptr<tf::layers::Sequential> mlp() {
  return tf::layers::sequential(
      {tf::layers::dense(128, "relu", {.seed = 1}), tf::layers::dense(10, {.seed = 2})});
}

const tf::losses::Loss kLoss("sparse_categorical_crossentropy", {.from_logits = true});

/// The hand-written loop's traced step (the body fit() traces).
struct Step {
  tf::layers::Sequential* model;
  tf::optimizers::Optimizer* optimizer;
  std::vector<tf::Variable> vars;
  std::pair<tf::Tensor, tf::Tensor> operator()(const tf::Tensor& x, const tf::Tensor& y) const {
    tf::GradientTape tape;
    tf::Tensor logits = model->call(x, /*training=*/true);
    tf::Tensor loss = kLoss(y, logits);
    optimizer->minimize(loss, vars, tape);
    return {loss, logits};
  }
};

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The largest difference between two models' weights.
float max_weight_difference(tf::layers::Model& a, tf::layers::Model& b) {
  float max_diff = 0;
  const auto wa = a.get_weights(), wb = b.get_weights();
  for (std::size_t i = 0; i < wa.size(); ++i) {
    const auto va = wa[i].to_vector<float>(), vb = wb[i].to_vector<float>();
    for (std::size_t j = 0; j < va.size(); ++j) max_diff = std::max(max_diff, std::abs(va[j] - vb[j]));
  }
  return max_diff;
}

/// Raw pixels to the model's inputs.
tf::Tensor normalize(const tf::Tensor& pixels) {
  return tf::cast(pixels, tf::DType::Float32) * (1.0f / 255.0f);
}

/// The time of an epoch of fit from tensors in memory and from two pipelines that normalise the
/// pixels on 2 worker threads, per example and per batch (see the file comment).
void pipeline_against_tensors(const tf::Tensor& pixels, const tf::Tensor& y, std::int64_t batch_size,
                              std::int64_t epochs) {
  const tf::Tensor x = normalize(pixels);
  const auto normalize_element = [](const tf::data::Element& e) {
    return tf::data::Element{normalize(e[0]), e[1]};
  };
  const tf::data::Dataset per_example = tf::data::Dataset::from_tensor_slices({pixels, y})
                                            .map(normalize_element, /*num_parallel_calls=*/2)
                                            .batch(batch_size)
                                            .prefetch(2);
  const tf::data::Dataset per_batch = tf::data::Dataset::from_tensor_slices({pixels, y})
                                          .batch(batch_size)
                                          .map(normalize_element, /*num_parallel_calls=*/2)
                                          .prefetch(2);
  std::vector<std::shared_ptr<tf::layers::Sequential>> models;
  for (int i = 0; i < 3; ++i) {
    models.push_back(mlp());
    models.back()->compile(std::make_shared<tf::optimizers::Adam>(1e-3), kLoss, {.metrics = {"accuracy"}});
  }
  std::vector<std::vector<double>> seconds(3);
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    const tf::layers::FitOptions options{.batch_size = batch_size,
                                         .epochs = epoch + 1,
                                         .verbose = 0,
                                         .shuffle = false,
                                         .initial_epoch = epoch};
    for (int k = 0; k < 3; ++k) {
      const int which = static_cast<int>((epoch + k) % 3);  // each goes first in turn
      const auto start = std::chrono::steady_clock::now();
      if (which == 0) models[0]->fit(x, y, options);
      if (which == 1) models[1]->fit(per_example, options);
      if (which == 2) models[2]->fit(per_batch, options);
      seconds[static_cast<std::size_t>(which)].push_back(seconds_since(start));
    }
  }
  for (auto& s : seconds) s.erase(s.begin());  // the first epoch traces
  const float diff =
      std::max(max_weight_difference(*models[0], *models[1]), max_weight_difference(*models[0], *models[2]));
  std::printf("\nfit from tensors in memory (normalised ahead): median %.2f ms per epoch\n",
              1e3 * median(seconds[0]));
  std::printf(
      "fit from a pipeline, map per example on 2 threads: median %.2f ms per epoch, %.3f of tensors'\n",
      1e3 * median(seconds[1]), median(seconds[1]) / median(seconds[0]));
  std::printf("fit from a pipeline, map per batch on 2 threads: median %.2f ms per epoch, %.3f of tensors'\n",
              1e3 * median(seconds[2]), median(seconds[2]) / median(seconds[0]));
  std::printf("weights differ by at most %.3g\n", static_cast<double>(diff));
}

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 8192, batch_size = 64, epochs = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--examples") == 0) n = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch-size") == 0) batch_size = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) tf::set_num_threads(std::atoi(argv[i + 1]));
  }
  // uniform [0, 256) truncated: 0..255.
  const tf::Tensor pixels =
      tf::cast(tf::random::uniform({n, 784}, 0, 256, tf::DType::Float32, 1), tf::DType::Int32);
  const tf::Tensor x = normalize(pixels);
  const tf::Tensor y = tf::cast(tf::random::uniform({n}, 0, 10, tf::DType::Float32, 2), tf::DType::Int32);

  auto fitted = mlp();
  fitted->compile(std::make_shared<tf::optimizers::Adam>(1e-3), kLoss, {.metrics = {"accuracy"}});

  auto hand = mlp();
  tf::optimizers::Adam optimizer(1e-3);
  hand->call(tf::slice(x, {0, 0}, {1, 784}), false);  // builds the variables, as fit() does
  auto step = tf::function(Step{hand.get(), &optimizer, hand->trainable_variables()});
  tf::metrics::Mean loss_metric("loss");
  tf::metrics::SparseCategoricalAccuracy accuracy;

  std::vector<double> fit_s, hand_s;
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    auto run_fit = [&] {
      const auto start = std::chrono::steady_clock::now();
      fitted->fit(x, y,
                  {.batch_size = batch_size, .epochs = epoch + 1, .verbose = 0, .initial_epoch = epoch});
      fit_s.push_back(seconds_since(start));
    };
    auto run_hand = [&] {
      const auto start = std::chrono::steady_clock::now();
      const auto order = tf::data::shuffled_indices(n, 0, epoch);
      loss_metric.reset_state();
      accuracy.reset_state();
      for (std::int64_t begin = 0; begin < n; begin += batch_size) {
        const std::int64_t size = std::min(batch_size, n - begin);
        const tf::Tensor idx =
            tf::constant(std::vector<std::int64_t>(order.begin() + begin, order.begin() + begin + size),
                         tf::Shape({size}));
        const tf::Tensor yb = tf::gather(y, idx);
        auto [loss, logits] = step(tf::gather(x, idx), yb);
        tf::NoRecordingScope unrecorded;
        loss_metric.update_state(loss, tf::constant(static_cast<float>(size)));
        accuracy.update_state(yb, logits);
        (void)loss_metric.result();
        (void)accuracy.result();
      }
      hand_s.push_back(seconds_since(start));
    };
    if (epoch % 2 == 0) {
      run_fit();
      run_hand();
    } else {
      run_hand();
      run_fit();
    }
  }
  // The first epoch traces: left out of the medians.
  fit_s.erase(fit_s.begin());
  hand_s.erase(hand_s.begin());
  const float max_diff = max_weight_difference(*fitted, *hand);
  const double steps = std::ceil(static_cast<double>(n) / static_cast<double>(batch_size));
  std::printf("MLP 784-128-10, Adam, %lld examples, batch %lld (%.0f steps), %lld epochs, %d threads\n",
              static_cast<long long>(n), static_cast<long long>(batch_size), steps,
              static_cast<long long>(epochs), tf::num_threads());
  std::printf("fit:          median %.2f ms per epoch (%.3f ms per step)\n", 1e3 * median(fit_s),
              1e3 * median(fit_s) / steps);
  std::printf("hand-written: median %.2f ms per epoch (%.3f ms per step)\n", 1e3 * median(hand_s),
              1e3 * median(hand_s) / steps);
  std::printf("fit / hand-written: %.3f; weights differ by at most %.3g\n", median(fit_s) / median(hand_s),
              static_cast<double>(max_diff));
  pipeline_against_tensors(pixels, y, batch_size, epochs);
  return 0;
}
