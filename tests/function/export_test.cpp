// save_function / load_function: a traced graph and its variables as a file, run by a program
// that does not have the C++ that built it.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("tapeflow_export_test_" + name + ".tfn");
}

TEST(SaveFunction, ALoadedFunctionComputesWhatTheTracedOneDid) {
  tf::Variable w(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}}), {.name = "w"});
  tf::Variable b(tf::constant({0.5f, -0.5f}), {.name = "b"});
  auto predict = tf::function(
      [&](const tf::Tensor& x) { return tf::nn::relu(tf::matmul(x, w.read_value()) + b.read_value()); },
      {.name = "predict"});
  const tf::Tensor x = tf::constant({{1.0f, -1.0f}, {0.5f, 2.0f}, {-3.0f, 0.0f}});
  const tf::Tensor expected = predict(x);
  const auto path = temp_path("predict");
  tf::save_function(predict, {{{3, 2}, tf::DType::Float32, "x"}}, path);
  w.assign(tf::zeros({2, 2}));  // the file holds the values at save time
  tf::LoadedFunction loaded = tf::load_function(path);
  EXPECT_EQ(loaded.name(), "predict");
  ASSERT_EQ(loaded.variables().size(), 2u);
  std::vector<tf::Tensor> out = loaded({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].to_vector<float>(), expected.to_vector<float>());
  out = loaded({x});  // the graph, traced again from the loaded body
  EXPECT_EQ(out[0].to_vector<float>(), expected.to_vector<float>());
  std::filesystem::remove(path);
}

TEST(SaveFunction, GradientsFlowThroughALoadedFunction) {
  tf::Variable w(tf::constant({2.0, -1.0}), {.name = "w"});
  auto f = tf::function([&](const tf::Tensor& x) { return tf::reduce_sum(tf::square(x * w.read_value())); });
  const tf::Tensor x = tf::constant({1.0, 3.0});
  f(x);
  const auto path = temp_path("grad");
  tf::save_function(f, {{{2}, tf::DType::Float64}}, path);
  tf::LoadedFunction loaded = tf::load_function(path);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = loaded({x})[0];
  tf::Tensor g = *tape.gradient(y, x);
  // d/dx sum((x w)^2) = 2 x w^2
  EXPECT_EQ(g.to_vector<double>(), (std::vector<double>{8.0, 6.0}));
  std::filesystem::remove(path);
}

TEST(SaveFunction, AFunctionWithACustomGradientIsRefusedNotSavedWithoutIt) {
  // A file cannot hold the gradient function; the loaded graph would differentiate 3x (3, not 100).
  auto triple = tf::function([](const tf::Tensor& x) {
    return tf::custom_gradient({x}, [](const std::vector<tf::Tensor>& in) {
      return tf::CustomGradientResult{
          {in[0] * 3.0f},
          [](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
            return {dy[0] * 100.0f};
          }};
    })[0];
  });
  triple(tf::constant({1.0f, 2.0f}));
  const auto path = temp_path("custom_gradient");
  try {
    tf::save_function(triple, {{{2}, tf::DType::Float32, "x"}}, path);
    FAIL() << "saved a function whose custom gradient the file would drop";
  } catch (const tf::UnimplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("CustomGradient"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SaveFunction, ADimensionBelowMinusOneIsATypedError) {
  auto f = tf::function([](const tf::Tensor& x) { return x * 2.0f; });
  f(tf::zeros({2, 4}));
  EXPECT_THROW(tf::save_function(f, {{{-2, 4}, tf::DType::Float32, "x"}}, temp_path("minus_two")),
               tf::InvalidArgumentError);
}

TEST(SaveFunction, SavingNeedsATraceOfTheSignature) {
  auto f = tf::function([](const tf::Tensor& x) { return x * 2.0; }, {.name = "twice"});
  EXPECT_THROW(tf::save_function(f, {{{2}, tf::DType::Float32}}, temp_path("untraced")),
               tf::FailedPreconditionError);
}

TEST(SaveFunction, AnUnknownDimensionStaysUnknownInTheFile) {
  // A model's inference for batches of any size, as a SavedModel's serving signature [None, 2].
  tf::Variable w(tf::constant({{1.0f, -2.0f}, {0.5f, 3.0f}}), {.name = "w"});
  const std::vector<tf::TensorSpec> any_batch{{{-1, 2}, tf::DType::Float32, "x"}};
  auto predict = tf::function(
      [&](const tf::Tensor& x) {
        return tf::nn::softmax(tf::matmul(tf::reshape(x, {-1, 2}), w.read_value()));
      },
      {.name = "predict", .input_signature = any_batch});
  predict(tf::ones({4, 2}));
  predict(tf::ones({3, 2}));  // a second size shows the graph does not depend on it
  const auto path = temp_path("any_batch");
  tf::save_function(predict, any_batch, path);
  tf::LoadedFunction loaded = tf::load_function(path);
  EXPECT_EQ(loaded.input_signature()[0].dims, (std::vector<std::int64_t>{-1, 2}));
  for (std::int64_t n : {1, 2, 5, 100}) {
    const tf::Tensor x =
        tf::random::uniform({n, 2}, -1.0, 1.0, tf::DType::Float32, static_cast<std::uint64_t>(n));
    EXPECT_EQ(loaded({x})[0].to_vector<float>(), predict(x).to_vector<float>()) << n << " rows";
  }
  std::filesystem::remove(path);
}

TEST(SaveFunction, AnUnknownDimensionNeedsTwoAgreeingTracesAndSaysSo) {
  const std::vector<tf::TensorSpec> any_batch{{{-1, 2}, tf::DType::Float32, "x"}};
  auto f = tf::function([](const tf::Tensor& x) { return x * 2.0; },
                        {.name = "twice", .input_signature = any_batch});
  f(tf::ones({4, 2}));
  try {
    tf::save_function(f, any_batch, temp_path("one_size"));
    FAIL() << "expected FailedPreconditionError";
  } catch (const tf::FailedPreconditionError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'twice'"), std::string::npos) << what;
    EXPECT_NE(what.find("two different sizes"), std::string::npos) << what;
  }
  f(tf::ones({5, 2}));
  tf::save_function(f, any_batch, temp_path("one_size"));  // now it can
  // A dimension the function itself declares known cannot become unknown in the file.
  auto g = tf::function(
      [](const tf::Tensor& x) { return x * 2.0; },
      {.name = "fixed", .input_signature = std::vector<tf::TensorSpec>{{{4, 2}, tf::DType::Float32}}});
  g(tf::ones({4, 2}));
  EXPECT_THROW(tf::save_function(g, any_batch, temp_path("one_size")), tf::FailedPreconditionError);
  std::filesystem::remove(temp_path("one_size"));
}

TEST(SaveFunction, TracesOfCallsWithOtherNonTensorArgumentsMakeTheSignatureAmbiguousAndAreListed) {
  auto scaled = tf::function([](const tf::Tensor& x, double scale) { return x * scale; }, {.name = "scaled"});
  scaled(tf::ones({3}), 3.0);
  scaled(tf::ones({3}), 5.0);
  try {
    tf::save_function(scaled, {{{3}, tf::DType::Float32}}, temp_path("ambiguous"));
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'scaled'"), std::string::npos) << what;
    EXPECT_NE(what.find("2 traces for the signature (float32[3])"), std::string::npos) << what;
    EXPECT_NE(what.find("Tf8(3) as tapeflow::Tensor (tapeflow::Tensor, double)"), std::string::npos) << what;
    EXPECT_NE(what.find("Tf8(5) as"), std::string::npos) << what;
    EXPECT_NE(what.find("save_function(fn, path, args...)"), std::string::npos) << what;
  }
  EXPECT_FALSE(std::filesystem::exists(temp_path("ambiguous")));
}

TEST(SaveFunction, TheCallsArgumentsPickTheTraceToSave) {
  auto f = tf::function([](const tf::Tensor& x, bool training) { return training ? x + 1.0f : x * 2.0f; });
  const tf::Tensor x = tf::constant({1.0f, -2.0f, 4.0f});
  const tf::Tensor when_training = f(x, true), when_not = f(x, false);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    const auto path = temp_path(training ? "training" : "inference");
    tf::save_function(f, path, tf::TensorSpec{{3}, tf::DType::Float32, "x"}, training);
    EXPECT_EQ(tf::load_function(path)({x})[0].to_vector<float>(),
              (training ? when_training : when_not).to_vector<float>());
    std::filesystem::remove(path);
  }
  // The arguments of a call never made, or of another C++ type, have no trace to save.
  EXPECT_THROW(tf::save_function(f, temp_path("other"), tf::TensorSpec{{4}, tf::DType::Float32}, true),
               tf::FailedPreconditionError);
  EXPECT_THROW(tf::save_function(f, temp_path("other"), tf::TensorSpec{{3}, tf::DType::Float32}, 1),
               tf::FailedPreconditionError);
}

TEST(SaveFunction, TheCallsArgumentsPickTheGraphSharedAcrossSizes) {
  const std::vector<tf::TensorSpec> any_batch{{{-1, 2}, tf::DType::Float32, "x"}};
  auto scaled = tf::function([](const tf::Tensor& x, double scale) { return x * scale; },
                             {.name = "scaled", .input_signature = any_batch});
  for (double scale : {2.0, 3.0})
    for (std::int64_t n : {4, 5}) scaled(tf::ones({n, 2}), scale);
  EXPECT_THROW(tf::save_function(scaled, any_batch, temp_path("shared")), tf::InvalidArgumentError);
  tf::save_function(scaled, temp_path("shared"), any_batch[0], 3.0);
  const std::vector<tf::Tensor> out = tf::load_function(temp_path("shared"))({tf::ones({7, 2})});
  EXPECT_EQ(out[0].to_vector<float>(), std::vector<float>(14, 3.0f));
  std::filesystem::remove(temp_path("shared"));
}

TEST(LoadFunction, ACallNotMatchingTheSignatureNamesBoth) {
  auto f = tf::function([](const tf::Tensor& x) { return x + 1.0; }, {.name = "inc"});
  f(tf::zeros({2, 3}));
  const auto path = temp_path("inc");
  tf::save_function(f, {{{2, 3}, tf::DType::Float32}}, path);
  tf::LoadedFunction loaded = tf::load_function(path);
  try {
    loaded({tf::zeros({4})});
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'inc'"), std::string::npos) << what;
    EXPECT_NE(what.find("float32[4]"), std::string::npos) << what;
    EXPECT_NE(what.find("float32[2, 3]"), std::string::npos) << what;
  }
  EXPECT_THROW(loaded({tf::zeros({2, 3}), tf::zeros({2, 3})}), tf::InvalidArgumentError);
  std::filesystem::remove(path);
}

TEST(LoadFunction, CorruptAndForeignFilesAreTypedErrors) {
  auto f = tf::function([](const tf::Tensor& x) { return tf::exp(x); });
  f(tf::zeros({2}));
  const auto path = temp_path("corrupt");
  tf::save_function(f, {{{2}, tf::DType::Float32}}, path);
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (std::size_t cut : {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(bytes.data(), static_cast<std::streamsize>(cut));
    EXPECT_THROW(tf::load_function(path), tf::DataLossError) << "cut at " << cut;
  }
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(flipped.data(), static_cast<std::streamsize>(flipped.size()));
  EXPECT_THROW(tf::load_function(path), tf::Error);
  tf::save_checkpoint(path.string(), tf::NamedVariables{{"v", tf::Variable(tf::zeros({2}))}});
  EXPECT_THROW(tf::load_function(path), tf::DataLossError);
  std::filesystem::remove(path);
  EXPECT_THROW(tf::load_function(path), tf::InvalidArgumentError);
}

}  // namespace

namespace {

// tf::cond and tf::while_loop export: their graphs travel inside the ops' attributes.
TEST(SaveFunction, CondAndWhileLoopRunFromTheFile) {
  tf::Variable scale(tf::constant(1.5), {.name = "scale"});
  auto f = tf::function(
      [&](const tf::Tensor& x) {
        // |x| * scale via a cond, then halved until below 1 via a loop (with a cond inside it).
        const tf::Tensor sum = tf::reduce_sum(x);
        tf::Tensor y = tf::cond(
            sum > 0.0, [&] { return std::vector<tf::Tensor>{x * scale.read_value()}; },
            [&] { return std::vector<tf::Tensor>{-x * scale.read_value()}; })[0];
        auto loop = tf::while_loop(
            [](const std::vector<tf::Tensor>& v) { return tf::reduce_max(v[0]) > 1.0; },
            [](const std::vector<tf::Tensor>& v) {
              return std::vector<tf::Tensor>{
                  tf::cond(
                      tf::reduce_max(v[0]) > 4.0, [&] { return std::vector<tf::Tensor>{v[0] * 0.25}; },
                      [&] { return std::vector<tf::Tensor>{v[0] * 0.5}; })[0],
                  v[1] + 1.0};
            },
            {y, tf::constant(0.0)});
        return std::vector<tf::Tensor>{loop[0], loop[1]};
      },
      {.name = "control"});
  const tf::Tensor pos = tf::constant({3.0, 5.0}), neg = tf::constant({-20.0, 1.0});
  const auto want_pos = f(pos), want_neg = f(neg);
  const auto path = temp_path("control");
  tf::save_function(f, {{{2}, tf::DType::Float64, "x"}}, path);
  tf::LoadedFunction loaded = tf::load_function(path);
  for (int call = 0; call < 2; ++call) {  // the loaded body traced, then its graph
    const auto got_pos = loaded({pos}), got_neg = loaded({neg});
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(got_pos[i].to_vector<double>(), want_pos[i].to_vector<double>()) << i;
      EXPECT_EQ(got_neg[i].to_vector<double>(), want_neg[i].to_vector<double>()) << i;
    }
  }
  // Gradients flow through the loaded cond and loop: d/dx of sum(loop result) at pos is
  // scale * 0.5^k for the k halvings (or quarterings) the loop made.
  tf::GradientTape tape, eager;
  tape.watch(pos);
  const tf::Tensor g = *tape.gradient(tf::reduce_sum(loaded({pos})[0]), pos);
  eager.watch(pos);
  const tf::Tensor ge = *eager.gradient(tf::reduce_sum(f(pos)[0]), pos);
  EXPECT_EQ(g.to_vector<double>(), ge.to_vector<double>());
  std::filesystem::remove(path);
}

TEST(SaveFunction, ACondThatAssignsAVariableIsNotExportedAndSaysWhy) {
  tf::Variable counter(tf::constant(0.0), {.name = "counter"});
  auto f = tf::function([&](const tf::Tensor& x) {
    return tf::cond(
        tf::reduce_sum(x) > 0.0,
        [&] {
          counter.assign_add(tf::constant(1.0));
          return std::vector<tf::Tensor>{x};
        },
        [&] { return std::vector<tf::Tensor>{-x}; })[0];
  });
  f(tf::constant({1.0}));
  try {
    tf::save_function(f, {{{1}, tf::DType::Float64, "x"}}, temp_path("stateful"));
    FAIL() << "a cond whose branch assigns was exported";
  } catch (const tf::UnimplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("'If'"), std::string::npos) << e.what();
  }
}

}  // namespace
