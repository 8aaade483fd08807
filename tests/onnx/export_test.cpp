// tf::export_onnx: every op of the ONNX op table (src/onnx/op_table.cpp), the CLI's MLP and CNN
// with a symbolic batch, checked by onnx.checker and run in ONNX Runtime against tapeflow's own
// results; and the typed errors of bad input.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <sstream>

#include "onnx/onnx_runtime.h"
#include "onnx/op_table.h"
#include "support/errors.h"
#include "support/temp_dir.h"
#include "tapeflow/onnx.h"
#include "tapeflow/tapeflow.h"
#ifdef TAPEFLOW_HAVE_CLI
#include "models.h"
#include "predict.h"
#include "text_models.h"
#include "train.h"
#endif

namespace tf = tapeflow;
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tf::testing::error_of;

namespace {

using Inputs = std::vector<tf::Tensor>;

/// One function of a few ops, on inputs given.
struct OpRow {
  std::string name;
  std::function<tf::Tensor(const Inputs&)> body;
  Inputs inputs;
};

tf::Tensor uniform(const tf::Shape& shape, double lo, double hi, std::uint64_t seed) {
  return tf::random::uniform(shape, lo, hi, tf::DType::Float32, seed);
}

/// The rows: each op of the table at least once (a broadcasting pair for binary ops, both
/// transposes of MatMul, SAME padding with an odd size and a stride of 2 for the windowed ops).
std::vector<OpRow> op_rows() {
  const tf::Tensor x = uniform({2, 3, 4}, -2, 2, 1), y = uniform({4}, -2, 2, 2);
  const tf::Tensor positive = uniform({3, 4}, 0.1, 2, 3), unit = uniform({3, 4}, -0.9, 0.9, 4);
  const tf::Tensor image = uniform({2, 7, 7, 3}, -1, 1, 5), filters = uniform({3, 3, 3, 4}, -1, 1, 6);
  const tf::Tensor bias = uniform({4}, -1, 1, 7);
  std::vector<OpRow> rows;
  auto unary = [&](std::string name, tf::Tensor (*f)(const tf::Tensor&), const tf::Tensor& in) {
    rows.push_back({name, [f](const Inputs& v) { return f(v[0]); }, {in}});
  };
  auto binary = [&](std::string name, tf::Tensor (*f)(const tf::Tensor&, const tf::Tensor&),
                    const tf::Tensor& a, const tf::Tensor& b) {
    rows.push_back({name, [f](const Inputs& v) { return f(v[0], v[1]); }, {a, b}});
  };
  for (auto [name, f] : std::vector<std::pair<std::string, tf::Tensor (*)(const tf::Tensor&)>>{
           {"exp", tf::exp},           {"abs", tf::abs},           {"sign", tf::sign},
           {"sin", tf::sin},           {"cos", tf::cos},           {"tan", tf::tan},
           {"atan", tf::atan},         {"sinh", tf::sinh},         {"cosh", tf::cosh},
           {"tanh", tf::tanh},         {"sigmoid", tf::sigmoid},   {"softplus", tf::softplus},
           {"softsign", tf::softsign}, {"negative", tf::negative}, {"square", tf::square},
           {"relu", tf::nn::relu},     {"relu6", tf::nn::relu6},   {"elu", tf::nn::elu},
           {"selu", tf::nn::selu},     {"identity", tf::identity}, {"stop_gradient", tf::stop_gradient}})
    unary(name, f, x);
  for (auto [name, f] : std::vector<std::pair<std::string, tf::Tensor (*)(const tf::Tensor&)>>{
           {"log", tf::log}, {"sqrt", tf::sqrt}, {"rsqrt", tf::rsqrt}, {"reciprocal", tf::reciprocal}})
    unary(name, f, positive);
  unary("asin", tf::asin, unit);
  unary("acos", tf::acos, unit);
  rows.push_back({"leaky_relu", [](const Inputs& v) { return tf::nn::leaky_relu(v[0], 0.3); }, {x}});
  for (auto [name, f] :
       std::vector<std::pair<std::string, tf::Tensor (*)(const tf::Tensor&, const tf::Tensor&)>>{
           {"add", tf::add},
           {"subtract", tf::subtract},
           {"multiply", tf::multiply},
           {"divide", tf::divide},
           {"maximum", tf::maximum},
           {"minimum", tf::minimum},
           {"squared_difference", tf::squared_difference}})
    binary(name, f, x, y);
  rows.push_back(
      {"pow", [](const Inputs& v) { return tf::pow(v[0], v[1]); }, {positive, uniform({4}, -2, 2, 8)}});
  for (auto [name, f] :
       std::vector<std::pair<std::string, tf::Tensor (*)(const tf::Tensor&, const tf::Tensor&)>>{
           {"equal", tf::equal},
           {"not_equal", tf::not_equal},
           {"less", tf::less},
           {"less_equal", tf::less_equal},
           {"greater", tf::greater},
           {"greater_equal", tf::greater_equal}})
    rows.push_back({name, [f](const Inputs& v) { return f(v[0], tf::maximum(v[0], v[1])); }, {x, y}});
  rows.push_back({"where_logical",
                  [](const Inputs& v) {
                    const tf::Tensor a = tf::less(v[0], v[1]), b = tf::greater(v[0], tf::zeros_like(v[0]));
                    return tf::where(tf::logical_or(tf::logical_and(a, b), tf::logical_not(a)), v[0], v[1]);
                  },
                  {x, y}});
  rows.push_back({"clip_by_value", [](const Inputs& v) { return tf::clip_by_value(v[0], -0.5, 0.5); }, {x}});
  rows.push_back({"cast", [](const Inputs& v) { return tf::cast(v[0] * 3.0, tf::DType::Int32); }, {x}});
  rows.push_back({"softmax", [](const Inputs& v) { return tf::nn::softmax(v[0]); }, {x}});
  rows.push_back({"log_softmax", [](const Inputs& v) { return tf::nn::log_softmax(v[0], 1); }, {x}});
  rows.push_back({"matmul",
                  [](const Inputs& v) { return tf::matmul(v[0], v[1]); },
                  {positive, uniform({4, 5}, -1, 1, 9)}});
  rows.push_back({"matmul_transposed",
                  [](const Inputs& v) { return tf::matmul(v[0], v[1], true, true); },
                  {uniform({4, 3}, -1, 1, 10), uniform({5, 4}, -1, 1, 11)}});
  rows.push_back({"batch_matmul",
                  [](const Inputs& v) { return tf::matmul(v[0], v[1]); },
                  {x, uniform({2, 4, 2}, -1, 1, 12)}});
  rows.push_back({"reshape", [](const Inputs& v) { return tf::reshape(v[0], {4, -1}); }, {x}});
  rows.push_back({"transpose", [](const Inputs& v) { return tf::transpose(v[0], {2, 0, 1}); }, {x}});
  rows.push_back({"expand_dims_squeeze",
                  [](const Inputs& v) { return tf::squeeze(tf::expand_dims(v[0], 1), {1}); },
                  {x}});
  rows.push_back({"broadcast_to", [](const Inputs& v) { return tf::broadcast_to(v[0], {3, 4}); }, {y}});
  rows.push_back({"concat", [](const Inputs& v) { return tf::concat({v[0], v[0] * 2.0}, 1); }, {x}});
  rows.push_back({"stack", [](const Inputs& v) { return tf::stack({v[0], v[0] + 1.0}, 2); }, {x}});
  rows.push_back({"unstack", [](const Inputs& v) { return tf::stack(tf::unstack(v[0], 1), 0) * 2.0; }, {x}});
  rows.push_back({"split", [](const Inputs& v) { return tf::concat(tf::split(v[0], 2, 2), 0); }, {x}});
  rows.push_back({"split_sizes",
                  [](const Inputs& v) {
                    return tf::concat(tf::split(v[0], {1, 3}, 2), 2) * 2.0;
                  },
                  {x}});
  rows.push_back({"gather",
                  [](const Inputs& v) {
                    return tf::gather(v[0], tf::constant({2, 0, 2}), 1);
                  },
                  {x}});
  rows.push_back({"gather_int64_rows",
                  [](const Inputs& v) {
                    return tf::gather(v[0], tf::constant<std::int64_t>({{1, 0}, {1, 1}}));
                  },
                  {positive}});
  rows.push_back({"slice", [](const Inputs& v) { return tf::slice(v[0], {0, 1, 1}, {1, -1, 2}); }, {x}});
  rows.push_back({"pad", [](const Inputs& v) { return tf::pad(v[0], {{1, 0}, {0, 2}}, 0.5); }, {positive}});
  rows.push_back({"tile", [](const Inputs& v) { return tf::tile(v[0], {2, 1}); }, {positive}});
  rows.push_back({"reduce_sum", [](const Inputs& v) { return tf::reduce_sum(v[0], {1}); }, {x}});
  rows.push_back({"reduce_mean", [](const Inputs& v) { return tf::reduce_mean(v[0], {0, 2}, true); }, {x}});
  rows.push_back({"reduce_max", [](const Inputs& v) { return tf::reduce_max(v[0]); }, {x}});
  rows.push_back({"reduce_min", [](const Inputs& v) { return tf::reduce_min(v[0], {-1}); }, {x}});
  rows.push_back({"reduce_prod", [](const Inputs& v) { return tf::reduce_prod(v[0], {0}); }, {x}});
  rows.push_back({"reduce_logsumexp", [](const Inputs& v) { return tf::reduce_logsumexp(v[0], {2}); }, {x}});
  rows.push_back({"argmax", [](const Inputs& v) { return tf::argmax(v[0], 1); }, {x}});
  rows.push_back({"argmin", [](const Inputs& v) { return tf::argmin(v[0], 2); }, {x}});
  rows.push_back({"conv2d_same_stride_2",
                  [](const Inputs& v) {
                    return tf::nn::conv2d(v[0], v[1], {2, 2}, "SAME");
                  },
                  {image, filters}});
  rows.push_back({"conv2d_valid_dilated",
                  [](const Inputs& v) {
                    return tf::nn::conv2d(v[0], v[1], {1, 1}, "VALID", {2, 2});
                  },
                  {image, filters}});
  rows.push_back({"conv2d_explicit",
                  [](const Inputs& v) {
                    return tf::nn::conv2d(v[0], v[1], {1, 1}, "EXPLICIT", {1, 1}, {0, 0, 1, 2, 0, 1, 0, 0});
                  },
                  {image, filters}});
  rows.push_back({"conv2d_bias_relu",
                  [](const Inputs& v) {
                    return tf::nn::conv2d_bias_activation(v[0], v[1], v[2], {1, 1}, "SAME", "relu");
                  },
                  {image, filters, bias}});
  rows.push_back({"max_pool_same",
                  [](const Inputs& v) {
                    return tf::nn::max_pool2d(v[0], {3, 3}, {2, 2}, "SAME");
                  },
                  {image}});
  rows.push_back({"avg_pool_same",
                  [](const Inputs& v) {
                    return tf::nn::avg_pool2d(v[0], {2, 2}, {2, 2}, "SAME");
                  },
                  {image}});
  rows.push_back({"batch_norm_inference",
                  [](const Inputs& v) {
                    return tf::nn::fused_batch_norm_inference(v[0], v[1], v[1] * 0.5, v[1] * 0.1, v[1] + 1.0,
                                                              1e-3);
                  },
                  {image, uniform({3}, 0.5, 1.5, 13)}});
  // Over the last axis, and over the last two with the statistics used too.
  rows.push_back({"layer_norm",
                  [](const Inputs& v) { return tf::nn::fused_layer_norm(v[0], v[1], v[1] * 0.5).y; },
                  {image, uniform({3}, 0.5, 1.5, 14)}});
  rows.push_back({"layer_norm_statistics",
                  [](const Inputs& v) {
                    const auto r = tf::nn::fused_layer_norm(v[0], v[1], v[1] - 1.0, 1e-2, 1);
                    return r.y + r.mean * r.rstd;
                  },
                  {x, uniform({3, 4}, 0.5, 1.5, 15)}});
  return rows;
}

/// A tf::function of `row`, called once on its inputs; `optimize` false keeps every op its own
/// node in graph_text (fusion would merge the elementwise ones).
auto traced(const OpRow& row, bool optimize = true) {
  auto f = tf::function([body = row.body](const Inputs& v) { return body(v); },
                        {.name = row.name, .optimize = optimize});
  f(row.inputs);
  return f;
}

std::vector<tf::TensorSpec> specs_of(const Inputs& inputs) {
  std::vector<tf::TensorSpec> specs;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    specs.push_back(tf::TensorSpec::of(inputs[i]));
    specs.back().name = fmt::format("x{}", i);
  }
  return specs;
}

std::vector<std::pair<std::string, tf::Tensor>> named(const Inputs& inputs, const std::string& prefix = "x") {
  std::vector<std::pair<std::string, tf::Tensor>> out;
  for (std::size_t i = 0; i < inputs.size(); ++i) out.emplace_back(fmt::format("{}{}", prefix, i), inputs[i]);
  return out;
}

class OnnxExport : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string missing = tf::testing::onnx_tools_missing(); !missing.empty())
      GTEST_SKIP() << missing;
  }
  tf::testing::TempDir dir_;
};

TEST_F(OnnxExport, EveryOpOfTheTableRunsInOnnxRuntimeAsInTapeflow) {
  std::vector<fs::path> dirs;
  std::vector<tf::Tensor> expected;
  const std::vector<OpRow> rows = op_rows();
  for (const OpRow& row : rows) {
    auto f = traced(row);
    expected.push_back(f(row.inputs));
    const fs::path d = dir_.path() / row.name;
    fs::create_directories(d);
    tf::export_onnx(f, specs_of(row.inputs), d / "model.onnx");
    tf::testing::write_onnx_inputs(d, named(row.inputs));
    dirs.push_back(d);
  }
  std::vector<fs::path> models;
  for (const fs::path& d : dirs) models.push_back(d / "model.onnx");
  const std::string report = tf::testing::checked_model_report(models);
  std::size_t opset_17 = 0;
  for (std::size_t at = 0; (at = report.find("opset 17\n", at)) != std::string::npos; ++at) ++opset_17;
  EXPECT_EQ(opset_17, rows.size()) << report;
  tf::testing::run_in_onnxruntime(dirs);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::vector<tf::Tensor> out = tf::testing::read_onnx_outputs(dirs[i]);
    ASSERT_EQ(out.size(), 1u) << rows[i].name;
    tf::testing::expect_onnx_close(out[0], expected[i], 1e-5, rows[i].name);
  }
}

/// Every op of the table is traced by at least one row.
TEST(OnnxOpTable, TheRowsCoverEveryOpOfTheTable) {
  std::string listings;
  for (const OpRow& row : op_rows()) listings += traced(row, /*optimize=*/false).graph_text();
  for (const std::string& op : tf::onnx_export::exportable_ops())
    EXPECT_THAT(listings, HasSubstr(" " + op + "(")) << op << " has no row";
}

TEST_F(OnnxExport, TheCallsArgumentsPickTheTraceAndTheVariablesItReads) {
  tf::Variable a(tf::constant({1.0f, 2.0f}), {.name = "a"}), b(tf::constant({10.0f, 20.0f}), {.name = "b"});
  auto f = tf::function([](const tf::Tensor& x, const tf::Variable& v,
                           bool twice) { return x * v.read_value() * (twice ? 2.0 : 1.0); },
                        {.name = "scaled"});
  const tf::Tensor x = tf::constant({3.0f, 4.0f});
  f(x, a, true);
  f(x, a, false);
  const fs::path d = dir_.path() / "scaled";
  fs::create_directories(d);
  // Two traces for float32[2]: the call's arguments choose; `b` is read where the trace read `a`.
  EXPECT_THAT(error_of([&] { tf::export_onnx(f, {{{2}}}, d / "model.onnx"); }),
              HasSubstr("export_onnx(fn, path, args...)"));
  tf::export_onnx(f, (d / "model.onnx").string(), tf::TensorSpec{{2}, tf::DType::Float32, "x"}, b, true);
  tf::testing::write_onnx_inputs(d, {{"x", x}});
  tf::testing::run_in_onnxruntime({d});
  const std::vector<tf::Tensor> out = tf::testing::read_onnx_outputs(d);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{60.0f, 160.0f}));
}

#ifdef TAPEFLOW_HAVE_CLI
namespace cli = tapeflow::cli;

namespace {

/// Runs the model.onnx of each of `dirs` in ONNX Runtime and expects its one output to be
/// `expected` of the same index, within `rtol`.
void expect_onnxruntime_outputs(const std::vector<fs::path>& dirs, const std::vector<tf::Tensor>& expected,
                                double rtol) {
  tf::testing::run_in_onnxruntime(dirs);
  for (std::size_t i = 0; i < dirs.size(); ++i) {
    const std::vector<tf::Tensor> out = tf::testing::read_onnx_outputs(dirs[i]);
    ASSERT_EQ(out.size(), 1u);
    tf::testing::expect_onnx_close(out[0], expected[i], rtol, dirs[i].filename().string());
  }
}

}  // namespace

TEST_F(OnnxExport, TheCliModelsRunInOnnxRuntimeAtABatchSizeNoTraceHad) {
  const tf::Tensor images = uniform({5, 28, 28, 1}, 0, 1, 21);
  std::vector<fs::path> dirs;
  std::vector<tf::Tensor> expected;
  for (const std::string kind : {"mlp", "cnn"}) {
    cli::Model model = cli::make_model(kind, 3);
    const fs::path d = dir_.path() / kind;
    fs::create_directories(d);
    cli::export_model(model, 16, {.onnx = (d / "model.onnx").string()});  // traced at 16 and 2
    const std::string report = tf::testing::checked_model_report({d / "model.onnx"});
    EXPECT_THAT(report, HasSubstr("input images [batch, 28, 28, 1]")) << kind;
    EXPECT_THAT(report, HasSubstr(kind == "cnn" ? "Conv" : "MatMul")) << report;
    expected.push_back((*model.net)(images, /*training=*/false));
    tf::testing::write_onnx_inputs(d, {{"images", images}});
    dirs.push_back(d);
  }
  expect_onnxruntime_outputs(dirs, expected, 1e-5);
}

// The language models' inference, as `tapeflow train --model char-lstm|char-transformer
// --export-onnx` writes it: one sequence of ids, the LSTM's steps unstacked and stacked again, the
// transformer's causal attention and layer normalization.
TEST_F(OnnxExport, TheCliLanguageModelsRunInOnnxRuntimeAsInTapeflow) {
  constexpr std::int64_t kVocabulary = 30, kSteps = 12;
  std::vector<std::int32_t> values(kSteps);
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<std::int32_t>((i * 7 + 3) % kVocabulary);
  const tf::Tensor ids = tf::constant(values, tf::Shape({1, kSteps}));
  std::vector<fs::path> dirs;
  std::vector<tf::Tensor> expected;
  for (const std::string& kind : cli::text_model_names()) {
    const auto model = cli::make_text_model(kind, kVocabulary, kSteps, 5);
    const fs::path d = dir_.path() / kind;
    fs::create_directories(d);
    cli::export_inference([&](const tf::Tensor& x) { return model->call(x, false); },
                          {{1, kSteps}, tf::DType::Int32, "ids"}, 1, {.onnx = (d / "model.onnx").string()});
    EXPECT_THAT(tf::testing::checked_model_report({d / "model.onnx"}), HasSubstr("opset 17")) << kind;
    expected.push_back(model->call(ids, false));
    tf::testing::write_onnx_inputs(d, {{"ids", ids}});
    dirs.push_back(d);
  }
  expect_onnxruntime_outputs(dirs, expected, 1e-4);
}

TEST_F(OnnxExport, TheCnnTrainedByTheCliClassifiesTestImagesInOnnxRuntimeAsInTapeflow) {
  if (!fs::exists(fs::path(tf::data::kFashionMnistDir) / "t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed (scripts/setup.sh installs it)";
  const tf::data::FashionMnist ds = tf::data::load_fashion_mnist();
  const fs::path d = dir_.path() / "cnn";
  fs::create_directories(d);
  cli::TrainOptions o;
  o.model = "cnn";
  o.epochs = 1;
  o.limit = 256;
  o.batch_size = 64;
  o.eval_batch_size = 100;
  o.test_limit = 100;
  o.dataset = &ds;
  o.export_path = dir_ / "cnn.tfn";
  o.export_onnx_path = (d / "model.onnx").string();
  std::ostringstream out, log;
  cli::train(o, out, log, false);
  EXPECT_THAT(out.str(), HasSubstr("exported the model's inference as ONNX to " + o.export_onnx_path));
  tf::testing::checked_model_report({d / "model.onnx"});

  const tf::Tensor images = tf::slice(ds.test_images, {0, 0, 0, 0}, {200, -1, -1, -1});
  const tf::Tensor logits = tf::load_function(o.export_path)({images})[0];
  tf::testing::write_onnx_inputs(d, {{"images", images}});
  tf::testing::run_in_onnxruntime({d});
  const std::vector<tf::Tensor> onnx = tf::testing::read_onnx_outputs(d);
  ASSERT_EQ(onnx.size(), 1u);
  EXPECT_EQ(tf::argmax(onnx[0], 1).to_vector<std::int64_t>(),
            tf::argmax(logits, 1).to_vector<std::int64_t>());
  tf::testing::expect_onnx_close(onnx[0], logits, 1e-5, "the trained CNN's logits");
}
#endif  // TAPEFLOW_HAVE_CLI

// --- Bad input: typed errors naming the function -----------------------------------------------

auto relu_of_sum() {
  tf::Variable w(tf::constant({1.0f, -2.0f, 3.0f}), {.name = "w"});
  return tf::function([w](const tf::Tensor& x) { return tf::nn::relu(x + w.read_value()); },
                      {.name = "relu_of_sum"});
}

TEST(OnnxExportErrors, AnUnwritablePathNamesTheFunctionAndThePath) {
  auto f = relu_of_sum();
  f(tf::zeros({2, 3}));
  const std::string what = error_of<tf::FailedPreconditionError>([&] {
    tf::export_onnx(f, {{{2, 3}}}, "/nonexistent/directory/model.onnx");
  });
  EXPECT_THAT(what, HasSubstr("[export_onnx]"));
  EXPECT_THAT(what, HasSubstr("relu_of_sum"));
  EXPECT_THAT(what, HasSubstr("/nonexistent/directory/model.onnx"));
}

TEST(OnnxExportErrors, AFunctionNeverCalledHasNoTraceToExport) {
  tf::testing::TempDir dir;
  const std::string what = error_of<tf::FailedPreconditionError>([&] {
    tf::export_onnx(relu_of_sum(), {{{2, 3}}}, dir / "m.onnx");
  });
  EXPECT_THAT(what, HasSubstr("relu_of_sum"));
  EXPECT_THAT(what, HasSubstr("traced: none"));
  EXPECT_FALSE(fs::exists(dir / "m.onnx"));
}

TEST(OnnxExportErrors, ASignatureWithoutATraceListsTheTraces) {
  tf::testing::TempDir dir;
  auto f = relu_of_sum();
  f(tf::zeros({2, 3}));
  std::string what = error_of<tf::FailedPreconditionError>([&] {
    tf::export_onnx(f, {{{4, 3}}}, dir / "m.onnx");
  });
  EXPECT_THAT(what, HasSubstr("[export_onnx] function 'relu_of_sum'"));
  EXPECT_THAT(what, HasSubstr("float32[2, 3]"));
  // An unknown dimension needs the graph shared across its sizes, which one trace does not give.
  what = error_of<tf::FailedPreconditionError>([&] { tf::export_onnx(f, {{{-1, 3}}}, dir / "m.onnx"); });
  EXPECT_THAT(what, HasSubstr("no graph shared across the sizes"));
}

TEST(OnnxExportErrors, AnOpWithoutAnOnnxEquivalentIsNamedWithItsInputs) {
  tf::testing::TempDir dir;
  auto f = tf::function([](const tf::Tensor& x) { return tf::expm1(x); }, {.name = "grows"});
  f(tf::zeros({2, 3}));
  const std::string what = error_of<tf::UnimplementedError>([&] {
    tf::export_onnx(f, {{{2, 3}}}, dir / "m.onnx");
  });
  EXPECT_THAT(what, HasSubstr("[export_onnx] Expm1 with input float32 (2, 3) in function 'grows'"));
  EXPECT_THAT(what, HasSubstr("no equivalent"));
  EXPECT_FALSE(fs::exists(dir / "m.onnx"));
}

TEST(OnnxExportErrors, AFunctionThatAssignsAVariableIsRefused) {
  tf::testing::TempDir dir;
  tf::Variable count(tf::constant(0.0f), {.name = "count"});
  auto f = tf::function(
      [&](const tf::Tensor& x) {
        count.assign_add(tf::reduce_sum(x));
        return x * 2.0;
      },
      {.name = "counting"});
  f(tf::ones({3}));
  const std::string what =
      error_of<tf::UnimplementedError>([&] { tf::export_onnx(f, {{{3}}}, dir / "m.onnx"); });
  EXPECT_THAT(what, HasSubstr("AssignAddVariableOp in function 'counting'"));
  EXPECT_THAT(what, HasSubstr("no state"));
}

TEST(OnnxExportErrors, AGraphHoldingSizesOfItsUnknownDimensionsIsRefused) {
  tf::testing::TempDir dir;
  const std::vector<tf::TensorSpec> sig{{{-1, 4}}};
  // Rows of 2: the reshape's attribute is 2n, a number ONNX's fixed attributes cannot follow.
  auto f = tf::function(
      [](const tf::Tensor& x) {
        return tf::reshape(x, {x.shape()[0] * 2, 2});
      },
      {.name = "halves", .input_signature = sig});
  for (std::int64_t n : {2, 3, 4}) f(tf::zeros({n, 4}));
  const std::string what = error_of<tf::UnimplementedError>([&] { tf::export_onnx(f, sig, dir / "m.onnx"); });
  EXPECT_THAT(what, HasSubstr("[export_onnx] function 'halves'"));
  EXPECT_THAT(what, HasSubstr("holds sizes of the unknown dimensions"));
}

TEST(OnnxExportErrors, AMovedFromFunctionIsAFailedPrecondition) {
  auto f = relu_of_sum();
  auto g = std::move(f);
  error_of<tf::FailedPreconditionError>([&] { tf::export_onnx(f, {{{2, 3}}}, "m.onnx"); });
}

}  // namespace
