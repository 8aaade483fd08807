// compare --group layers (see layers_group.h). Each side builds its layer once, outside the
// timing, with the same shapes: tapeflow's Keras layers on (batch, steps, width) and LibTorch's
// torch::nn modules in their own layout where it differs (Conv1d on (batch, width, steps),
// MultiheadAttention on (steps, batch, width), as LibTorch 1.13's C++ module has no batch_first).
// A timed step runs the layer and takes the gradients of its weights and its input for a fixed
// random gradient of its output (tape.gradient's output_gradients, LibTorch's backward(gradient)),
// as a layer inside a model receives one; LibTorch's gradients are reset to undefined before
// each step, so neither side accumulates into old ones. Two more rows time an Embedding's whole
// SGD step with a row-sparse gradient on both sides, then a dense one.

#include "layers_group.h"

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "tapeflow/nn/conv1d.h"
#include "tapeflow/nn/embedding.h"
#include "tapeflow/nn/layer_normalization.h"
#include "tapeflow/nn/multi_head_attention.h"
#include "tapeflow/nn/recurrent.h"
#include "tapeflow/optim/optimizer.h"
#include "workloads.h"

namespace compare {
namespace {

constexpr std::int64_t kBatch = 64, kSteps = 128, kWidth = 256, kHeads = 8, kVocabulary = 10000;
/// The training steps' vocabulary: a word-level one, of which a batch's 8,192 ids touch few rows.
constexpr std::int64_t kLargeVocabulary = 100000;

/// One layer on each side: `tapeflow(x)` and `torch(x)` give the output whose weighted sum is
/// differentiated; `variables` and `parameters` are what the gradients are taken of besides x.
struct Case {
  std::string name;
  std::function<tf::Tensor(const tf::Tensor&)> tapeflow;
  std::vector<tf::Variable> variables;
  tf::Tensor x;
  std::function<torch::Tensor(const torch::Tensor&)> torch;
  std::vector<torch::Tensor> parameters;
  torch::Tensor t_x;
  bool differentiate_x = true;
};

/// Builds a tapeflow layer by calling it once (Keras builds on the first call) and returns its
/// trainable variables.
template <class L>
std::vector<tf::Variable> built(L& layer, const tf::Tensor& x) {
  (void)layer(x);
  return layer.trainable_variables();
}

std::vector<Case> cases() {
  const tf::Tensor sequence = tf::random::normal({kBatch, kSteps, kWidth}, 0, 1, tf::float32, 1);
  const torch::Tensor t_sequence = to_torch(sequence);
  std::vector<Case> c;
  {
    auto layer =
        std::make_shared<tf::layers::LSTM>(kWidth, tf::layers::LSTMOptions{.return_sequences = true});
    torch::nn::LSTM t(torch::nn::LSTMOptions(kWidth, kWidth).batch_first(true));
    c.push_back({"LSTM", [layer](const tf::Tensor& x) { return (*layer)(x); }, built(*layer, sequence),
                 sequence, [t](const torch::Tensor& x) mutable { return std::get<0>(t->forward(x)); },
                 t->parameters(), t_sequence});
  }
  {
    auto layer = std::make_shared<tf::layers::GRU>(kWidth, tf::layers::GRUOptions{.return_sequences = true});
    torch::nn::GRU t(torch::nn::GRUOptions(kWidth, kWidth).batch_first(true));
    c.push_back({"GRU", [layer](const tf::Tensor& x) { return (*layer)(x); }, built(*layer, sequence),
                 sequence, [t](const torch::Tensor& x) mutable { return std::get<0>(t->forward(x)); },
                 t->parameters(), t_sequence});
  }
  {
    auto layer = std::make_shared<tf::layers::MultiHeadAttention>(kHeads, kWidth / kHeads);
    auto self_attention = [layer](const tf::Tensor& x) { return (*layer)(x, x); };
    (void)self_attention(sequence);
    torch::nn::MultiheadAttention t(torch::nn::MultiheadAttentionOptions(kWidth, kHeads));
    c.push_back({"MultiHeadAttention (8 heads)", self_attention, layer->trainable_variables(), sequence,
                 [t](const torch::Tensor& x) mutable { return std::get<0>(t->forward(x, x, x)); },
                 t->parameters(), t_sequence.transpose(0, 1).contiguous()});
  }
  {
    auto layer = std::make_shared<tf::layers::LayerNormalization>();
    torch::nn::LayerNorm t(torch::nn::LayerNormOptions({kWidth}).eps(1e-3));
    c.push_back({"LayerNormalization", [layer](const tf::Tensor& x) { return layer->call(x, true); },
                 built(*layer, sequence), sequence,
                 [t](const torch::Tensor& x) mutable { return t->forward(x); }, t->parameters(), t_sequence});
  }
  {
    auto layer =
        std::make_shared<tf::layers::Conv1D>(kWidth, 3, tf::layers::Conv1DOptions{.padding = "same"});
    torch::nn::Conv1d t(torch::nn::Conv1dOptions(kWidth, kWidth, 3).padding(1));
    c.push_back({"Conv1D (kernel 3)", [layer](const tf::Tensor& x) { return layer->call(x, true); },
                 built(*layer, sequence), sequence,
                 [t](const torch::Tensor& x) mutable { return t->forward(x); }, t->parameters(),
                 t_sequence.transpose(1, 2).contiguous()});
  }
  {
    const tf::Tensor ids =
        tf::cast(tf::random::uniform({kBatch, kSteps}, 0, static_cast<double>(kVocabulary), tf::float32, 4),
                 tf::int64);
    auto layer = std::make_shared<tf::layers::Embedding>(kVocabulary, kWidth);
    // tapeflow's table gradient is rows (IndexedSlices, as TensorFlow's): LibTorch's sparse one.
    torch::nn::Embedding t(torch::nn::EmbeddingOptions(kVocabulary, kWidth).sparse(true));
    c.push_back({"Embedding (10,000 ids)", [layer](const tf::Tensor& x) { return (*layer)(x); },
                 built(*layer, ids), ids, [t](const torch::Tensor& x) mutable { return t->forward(x); },
                 t->parameters(), to_torch(ids), false});
  }
  return c;
}

/// An Embedding's training step over kLargeVocabulary ids, lookup, table gradient for a fixed
/// gradient of the output and an SGD update, with the gradient row-sparse (`sparse`: tapeflow's
/// IndexedSlices, written in place; LibTorch's Embedding with sparse(true), whose sparse gradient its SGD
/// applies) or dense (tapeflow's rows made dense; LibTorch's default Embedding).
Row embedding_step(const Options& o, bool sparse) {
  const tf::Tensor ids = tf::cast(
      tf::random::uniform({kBatch, kSteps}, 0, static_cast<double>(kLargeVocabulary), tf::float32, 4),
      tf::int64);
  tf::layers::Embedding layer(kLargeVocabulary, kWidth);
  std::vector<tf::Variable> vars = built(layer, ids);
  const std::vector<tf::Source> sources(vars.begin(), vars.end());
  tf::optimizers::SGD opt(0.01);
  torch::nn::Embedding t(torch::nn::EmbeddingOptions(kLargeVocabulary, kWidth).sparse(sparse));
  torch::optim::SGD t_opt(t->parameters(), torch::optim::SGDOptions(0.01));
  const torch::Tensor t_ids = to_torch(ids);
  const tf::Tensor upstream = tf::random::normal({kBatch, kSteps, kWidth}, 0, 1, tf::float32, 3);
  const torch::Tensor t_upstream = to_torch(upstream);
  std::vector<Side> sides{
      {"tapeflow",
       [&] {
         return seconds([&] {
           tf::GradientTape tape;
           const tf::Tensor y = layer(ids);
           std::vector<tf::Gradient> g = tape.gradient(y, sources, {upstream});
           if (!sparse) g[0] = tf::Gradient(*g[0]);
           opt.apply_gradients(g, vars);
         });
       },
       {}},
      {"LibTorch",
       [&] {
         for (torch::Tensor& p : t->parameters()) p.mutable_grad() = torch::Tensor();
         return seconds([&] {
           t->forward(t_ids).backward(t_upstream);
           t_opt.step();
         });
       },
       {}},
  };
  const std::vector<double> m = alternate(sides, o.rounds);
  return {std::string("Y Embedding (100,000 ids) + SGD step, ") + (sparse ? "row-sparse" : "dense") +
              " gradient, float32, 64 x 128 x 256",
          "s",
          m[0],
          m[1],
          "",
          o.config,
          ""};
}

}  // namespace

void layers_group(const Options& o, std::vector<Row>& rows) {
  for (Case& c : cases()) {
    const tf::Tensor upstream = tf::random::normal(c.tapeflow(c.x).shape(), 0, 1, tf::float32, 3);
    const torch::Tensor t_upstream = c.torch(c.t_x).detach().normal_();
    if (c.differentiate_x) c.t_x.requires_grad_(true);
    std::vector<tf::Source> sources(c.variables.begin(), c.variables.end());
    if (c.differentiate_x) sources.emplace_back(c.x);
    std::vector<Side> sides{
        {"tapeflow",
         [&] {
           return seconds([&] {
             tf::GradientTape tape;
             if (c.differentiate_x) tape.watch(c.x);
             const tf::Tensor y = c.tapeflow(c.x);
             (void)tape.gradient(y, sources, {upstream});
           });
         },
         {}},
        {"LibTorch",
         [&] {
           for (torch::Tensor& p : c.parameters) p.mutable_grad() = torch::Tensor();
           if (c.differentiate_x) c.t_x.mutable_grad() = torch::Tensor();
           return seconds([&] { c.torch(c.t_x).backward(t_upstream); });
         },
         {}},
    };
    const std::vector<double> m = alternate(sides, o.rounds);
    rows.push_back({"Y " + c.name + " fwd+bwd, float32, 64 x 128 x 256", "s", m[0], m[1], "", o.config, ""});
  }
  for (bool sparse : {true, false}) rows.push_back(embedding_step(o, sparse));
}

}  // namespace compare
