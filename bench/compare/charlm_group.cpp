// compare --group charlm (see charlm_group.h). The networks are the same — Embedding(vocabulary,
// 64), a 256-unit LSTM over every step, Dense(vocabulary) — and so are the data, the batches, the
// optimizer and the initial weights: LibTorch's model starts from a copy of tapeflow's float32
// one (Keras's initialisers; both order the LSTM's gates i, f, g, o), so the two perplexities
// differ only by floating-point rounding, which training amplifies.

#include "charlm_group.h"

#include <torch/torch.h>

#include <cmath>
#include <string>
#include <vector>

#include "tapeflow/data.h"
#include "tapeflow/nn/loss.h"
#include "tapeflow/optim/optimizer.h"
#include "text_models.h"
#include "train_text.h"
#include "workloads.h"

namespace compare {
namespace {

namespace cli = tapeflow::cli;

constexpr std::int64_t kSteps = 64, kBatch = 64, kEmbedding = 64, kUnits = 256;
// Keras's Adam adds epsilon to sqrt(v) before the bias correction, PyTorch's after: the same 1e-7
// is about 30 times larger in Keras's early steps, where it slows the weights with small
// gradients (validation perplexity 8.68 against LibTorch's 7.29 after 10 epochs). At 1e-12 the
// two formulas agree, and the runs follow each other to the fourth digit of the loss.
constexpr double kLearningRate = 0.005, kEpsilon = 1e-12;
constexpr std::uint64_t kSeed = 1;

/// The char-lstm in LibTorch: the same layers, batch-first.
struct TorchCharLstm : torch::nn::Module {
  explicit TorchCharLstm(std::int64_t vocabulary)
      : embedding(register_module("embedding", torch::nn::Embedding(vocabulary, kEmbedding))),
        lstm(register_module("lstm",
                             torch::nn::LSTM(torch::nn::LSTMOptions(kEmbedding, kUnits).batch_first(true)))),
        logits(register_module("logits", torch::nn::Linear(kUnits, vocabulary))) {}
  torch::Tensor forward(const torch::Tensor& ids) {
    return logits->forward(std::get<0>(lstm->forward(embedding->forward(ids))));
  }
  torch::nn::Embedding embedding;
  torch::nn::LSTM lstm;
  torch::nn::Linear logits;
};

/// Sets `model`'s weights to those of the tapeflow char-lstm `variables` (embedding table, LSTM
/// kernel, recurrent kernel and bias, Dense kernel and bias), in LibTorch's layouts: the kernels
/// transposed, the LSTM's bias as bias_ih with a zero bias_hh.
void copy_weights(const std::vector<tf::Variable>& variables, TorchCharLstm& model) {
  torch::NoGradGuard no_grad;
  const auto value = [&](std::size_t i) { return to_torch(variables.at(i).value()); };
  model.embedding->weight.copy_(value(0));
  model.lstm->named_parameters()["weight_ih_l0"].copy_(value(1).t());
  model.lstm->named_parameters()["weight_hh_l0"].copy_(value(2).t());
  model.lstm->named_parameters()["bias_ih_l0"].copy_(value(3));
  // One bias, as Keras has: LibTorch's second one stays zero, out of training (trained, it would
  // move the gates' bias at twice the rate).
  model.lstm->named_parameters()["bias_hh_l0"].zero_().requires_grad_(false);
  model.logits->weight.copy_(value(4).t());
  model.logits->bias.copy_(value(5));
}

/// The mean cross-entropy of `model` on (x, y) in batches, in nats per character.
double torch_loss(TorchCharLstm& model, const torch::Tensor& x, const torch::Tensor& y) {
  torch::NoGradGuard no_grad;
  double sum = 0;
  const std::int64_t n = x.size(0);
  for (std::int64_t begin = 0; begin < n; begin += kBatch) {
    const std::int64_t end = std::min(n, begin + kBatch);
    const torch::Tensor logits = model.forward(x.slice(0, begin, end));
    sum += torch::nn::functional::cross_entropy(
               logits.reshape({-1, logits.size(2)}), y.slice(0, begin, end).reshape({-1}),
               torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
               .item<double>();
  }
  return sum / static_cast<double>(x.numel());
}

}  // namespace

void charlm_group(const Options& o, std::vector<Row>& rows) {
  const cli::Corpus corpus = cli::read_corpus(cli::default_text_files());
  const cli::TextData d = cli::make_windows(corpus, kSteps, 0, "fortunes-min's text");
  const auto vocabulary = static_cast<std::int64_t>(corpus.vocabulary.size());
  const std::int64_t n = d.train_x.shape()[0];

  struct TfRun {
    std::shared_ptr<tf::layers::Model> model;
    std::vector<double> seconds;
  };
  std::vector<TfRun> tf_runs;
  for (const char* precision : {"float32", "mixed_bfloat16"}) {
    TfRun r{cli::make_text_model("char-lstm", vocabulary, kSteps, kSeed, precision), {}};
    r.model->compile(std::make_shared<tf::optimizers::Adam>(kLearningRate,
                                                            tf::optimizers::AdamOptions{.epsilon = kEpsilon}),
                     tf::losses::Loss("sparse_categorical_crossentropy", {.from_logits = true}));
    tf_runs.push_back(std::move(r));
  }
  TorchCharLstm torch_model(vocabulary);
  copy_weights(tf_runs[0].model->trainable_variables(), torch_model);
  std::vector<torch::Tensor> trained;
  for (const torch::Tensor& p : torch_model.parameters())
    if (p.requires_grad()) trained.push_back(p);
  torch::optim::Adam torch_opt(trained, torch::optim::AdamOptions(kLearningRate).eps(kEpsilon));
  const torch::Tensor tx = to_torch(d.train_x), ty = to_torch(d.train_y);
  std::vector<double> torch_seconds;

  Side tapeflow_side{"tapeflow", {}, {}};
  for (std::int64_t epoch = 0; epoch < o.lm_epochs; ++epoch) {
    for (TfRun& r : tf_runs) {
      tapeflow_side.run = [&] {
        return seconds([&] {
          r.model->fit(d.train_x, d.train_y,
                       {.batch_size = kBatch,
                        .epochs = epoch + 1,
                        .verbose = 0,
                        .initial_epoch = epoch,
                        .seed = kSeed});
        });
      };
      r.seconds.push_back(run_side(tapeflow_side));
    }
    Side torch_side{"LibTorch",
                    [&] {
                      return seconds([&] {
                        const std::vector<std::int64_t> order = tf::data::shuffled_indices(n, kSeed, epoch);
                        for (std::int64_t begin = 0; begin < n; begin += kBatch) {
                          const std::int64_t end = std::min(n, begin + kBatch);
                          const torch::Tensor rows_of = torch::tensor(
                              std::vector<std::int64_t>(order.begin() + begin, order.begin() + end));
                          const torch::Tensor logits = torch_model.forward(tx.index_select(0, rows_of));
                          const torch::Tensor loss = torch::nn::functional::cross_entropy(
                              logits.reshape({-1, vocabulary}), ty.index_select(0, rows_of).reshape({-1}));
                          torch_opt.zero_grad();
                          loss.backward();
                          torch_opt.step();
                        }
                      });
                    },
                    {}};
    torch_seconds.push_back(run_side(torch_side));
  }
  const double torch_epoch = median(torch_seconds);
  const std::string what =
      fmt("char-LSTM (fortunes-min, %.0f windows of 64, batch 64, Adam)", static_cast<double>(n));
  rows.push_back({"Z one epoch " + what + ", float32", "s", median(tf_runs[0].seconds), torch_epoch, "",
                  o.config, fmt("median of %.0f epochs", static_cast<double>(o.lm_epochs))});
  rows.push_back({"Z one epoch " + what + ", tapeflow mixed_bfloat16", "s", median(tf_runs[1].seconds),
                  torch_epoch, "", o.config, "LibTorch in float32"});
  const double torch_perplexity =
      std::exp(torch_loss(torch_model, to_torch(d.validation_x), to_torch(d.validation_y)));
  for (std::size_t i = 0; i < tf_runs.size(); ++i) {
    const double loss =
        tf_runs[i]
            .model->evaluate(d.validation_x, d.validation_y, {.batch_size = kBatch, .verbose = 0})
            .at("loss");
    rows.push_back({fmt("Z validation perplexity after %.0f epochs, ", static_cast<double>(o.lm_epochs)) +
                        (i == 0 ? "float32" : "tapeflow mixed_bfloat16"),
                    "", std::exp(loss), torch_perplexity, "", o.config,
                    "lower is better; LibTorch in float32"});
  }
}

}  // namespace compare
