// What Model::fit costs over the loop it replaces: two copies of an MLP (same seeds) train on the
// same data, one with fit(), one with the hand-written loop a TensorFlow guide shows (the same
// shuffled batches, the same traced step: forward, loss and the update fused into the backward
// pass, and the same running loss and accuracy read after every step). The two alternate epoch by
// epoch (which goes first alternates too), so a shared machine's load hits both alike, and end
// with the same weights (checked). Prints the median epoch time of each and their ratio.
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

}  // namespace

int main(int argc, char** argv) {
  std::int64_t n = 8192, batch_size = 64, epochs = 21;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--examples") == 0) n = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--batch-size") == 0) batch_size = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--epochs") == 0) epochs = std::atoll(argv[i + 1]);
    if (std::strcmp(argv[i], "--threads") == 0) tf::set_num_threads(std::atoi(argv[i + 1]));
  }
  const tf::Tensor x = tf::random::uniform({n, 784}, 0, 1, tf::DType::Float32, 1);
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
  float max_diff = 0;
  const auto a = fitted->get_weights(), b = hand->get_weights();
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto va = a[i].to_vector<float>(), vb = b[i].to_vector<float>();
    for (std::size_t j = 0; j < va.size(); ++j) max_diff = std::max(max_diff, std::abs(va[j] - vb[j]));
  }
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
  return 0;
}
