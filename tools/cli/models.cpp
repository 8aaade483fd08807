#include "models.h"

#include "tapeflow/errors.h"
#include "tapeflow/nn/conv2d.h"
#include "tapeflow/nn/dense.h"
#include "tapeflow/nn/flatten.h"
#include "tapeflow/nn/pooling.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::cli {
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = {"mlp", "cnn"};
  return names;
}

StepSeededDropout::StepSeededDropout(double rate, std::uint64_t seed)
    : Layer("dropout"), seed_(seed), dropout_(rate, seed) {}

void StepSeededDropout::start_step(std::int64_t epoch, std::int64_t step) {
  const std::uint64_t epoch_seed = mix(seed_ ^ mix(static_cast<std::uint64_t>(epoch)));
  dropout_.reset_seed(mix(epoch_seed + static_cast<std::uint64_t>(step)));
}

Tensor StepSeededDropout::call(const Tensor& x, bool training) { return dropout_.call(x, training); }

void Model::start_step(std::int64_t epoch, std::int64_t step) {
  for (auto& d : dropouts) d->start_step(epoch, step);
}

Model make_model(std::string_view kind, std::uint64_t seed, std::string_view precision) {
  Model m;
  m.kind = std::string(kind);
  m.net = layers::sequential(m.kind);
  std::uint64_t next = mix(seed);
  const mixed_precision::Policy policy(precision);
  // The logits layer computes in float32 under any policy (Keras's advice for mixed precision:
  // the softmax and the argmax see float32).
  const mixed_precision::Policy logits_policy("float32");
  auto dense = [&](std::int64_t units, const char* activation) {
    return layers::dense(units, activation,
                         {.seed = next++, .dtype_policy = units == 10 ? logits_policy : policy});
  };
  auto conv = [&](std::int64_t filters) {
    return layers::conv2d(filters, {3, 3}, "relu",
                          {.padding = "same", .seed = next++, .dtype_policy = policy});
  };
  if (kind == "mlp") {
    m.net->add(layers::flatten());
    m.net->add(dense(256, "relu"));
    m.net->add(dense(128, "relu"));
    m.net->add(dense(10, "linear"));
  } else if (kind == "cnn") {
    m.net->add(conv(32));
    m.net->add(layers::max_pool2d());
    m.net->add(conv(64));
    m.net->add(layers::max_pool2d());
    m.net->add(layers::flatten());
    m.net->add(dense(128, "relu"));
    auto dropout = std::make_shared<StepSeededDropout>(0.3, next++);
    m.dropouts.push_back(dropout);
    m.net->add(dropout);
    m.net->add(dense(10, "linear"));
  } else {
    throw InvalidArgumentError("unknown model '" + std::string(kind) + "': expected mlp or cnn");
  }
  // Build every layer now (Keras builds on the first call), so that the variables exist for a
  // checkpoint restore or an optimizer's build() before the first step.
  (*m.net)(zeros({1, 28, 28, 1}));
  return m;
}

}  // namespace tapeflow::cli
