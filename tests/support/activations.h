#pragma once
// Keras's activation names with the function each names (tf::nn's, or tf::exp for
// "exponential"), for the layers' tests of named activations:
//
//   for (const auto& [name, f] : keras_activations()) { Dense(3, name) ~ Dense(3, f) }
//
// and the names an "unknown activation" error lists, so that a test can check that every name a
// layer accepts is among them.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// Every activation name a layer accepts besides "linear", with its function.
inline std::vector<std::pair<std::string, std::function<Tensor(const Tensor&)>>> keras_activations() {
  return {
      {"relu", [](const Tensor& x) { return nn::relu(x); }},
      {"relu6", [](const Tensor& x) { return nn::relu6(x); }},
      {"leaky_relu", [](const Tensor& x) { return nn::leaky_relu(x, 0.2); }},
      {"elu", [](const Tensor& x) { return nn::elu(x); }},
      {"selu", [](const Tensor& x) { return nn::selu(x); }},
      {"gelu", [](const Tensor& x) { return nn::gelu(x, /*approximate=*/false); }},
      {"silu", [](const Tensor& x) { return nn::silu(x); }},
      {"swish", [](const Tensor& x) { return nn::silu(x); }},
      {"mish", [](const Tensor& x) { return nn::mish(x); }},
      {"sigmoid", [](const Tensor& x) { return nn::sigmoid(x); }},
      {"hard_sigmoid", [](const Tensor& x) { return nn::hard_sigmoid(x); }},
      {"tanh", [](const Tensor& x) { return nn::tanh(x); }},
      {"softplus", [](const Tensor& x) { return nn::softplus(x); }},
      {"softsign", [](const Tensor& x) { return nn::softsign(x); }},
      {"exponential", [](const Tensor& x) { return exp(x); }},
      {"softmax", [](const Tensor& x) { return nn::softmax(x, -1); }},
      {"log_softmax", [](const Tensor& x) { return nn::log_softmax(x, -1); }},
  };
}

/// What a layer's "unknown activation" error should list: "linear" and keras_activations()'s names.
inline std::vector<std::string> accepted_activation_names() {
  std::vector<std::string> names = {"linear"};
  for (const auto& named : keras_activations()) names.push_back(named.first);
  return names;
}

/// The quoted names after "expected one of" in an unknown-activation error's message.
inline std::vector<std::string> listed_activation_names(const std::string& message) {
  std::vector<std::string> names;
  const std::size_t list = message.find("expected one of");
  if (list == std::string::npos) return names;
  for (std::size_t open = message.find('"', list); open != std::string::npos;) {
    const std::size_t close = message.find('"', open + 1);
    if (close == std::string::npos) break;
    names.push_back(message.substr(open + 1, close - open - 1));
    open = message.find('"', close + 1);
  }
  return names;
}

}  // namespace tapeflow::testing
