// layers::Sequential: calls its layers in order, collects their variables in order, passes
// `training` through, gradients reach every layer, Keras's summary table, errors.

#include "tapeflow/nn/sequential.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

/// A layer that multiplies by `factor` and records the `training` flag it was called with.
class Scale : public tf::layers::Layer {
 public:
  explicit Scale(double factor) : Layer("scale"), factor_(factor) {}
  tf::Tensor call(const tf::Tensor& x, bool training) override {
    last_training = training;
    return x * factor_;
  }
  bool last_training = false;

 private:
  double factor_;
};

/// A layer that adds `offset`: with Scale, shows the order in which layers run.
class Shift : public tf::layers::Layer {
 public:
  explicit Shift(double offset) : Layer("shift"), offset_(offset) {}
  tf::Tensor call(const tf::Tensor& x, bool /*training*/) override { return x + offset_; }

 private:
  double offset_;
};

}  // namespace

TEST(Sequential, CallsLayersInTheOrderTheyWereGiven) {
  tf::layers::Sequential scale_then_shift(std::make_shared<Scale>(2.0), std::make_shared<Shift>(1.0));
  tf::layers::Sequential shift_then_scale(std::make_shared<Shift>(1.0), std::make_shared<Scale>(2.0));
  tf::Tensor x = tf::constant<float>({3.f});
  EXPECT_FLOAT_EQ(scale_then_shift(x).values<float>()[0], 7.f);
  EXPECT_FLOAT_EQ(shift_then_scale(x).values<float>()[0], 8.f);
}

TEST(Sequential, AddAppendsLayers) {
  tf::layers::Sequential model;
  model.add(std::make_shared<Scale>(2.0));
  model.add(std::make_shared<Shift>(1.0));
  EXPECT_EQ(model.layers().size(), 2u);
  EXPECT_FLOAT_EQ(model(tf::constant<float>({3.f})).values<float>()[0], 7.f);
  EXPECT_EQ(model.name(), "sequential");
}

TEST(Sequential, EmptyModelIsTheIdentity) {
  tf::layers::Sequential model;
  EXPECT_FLOAT_EQ(model(tf::constant<float>({3.f})).values<float>()[0], 3.f);
}

TEST(Sequential, PassesTheTrainingFlagToEveryLayer) {
  auto a = std::make_shared<Scale>(1.0), b = std::make_shared<Scale>(1.0);
  tf::layers::Sequential model(a, b);
  model(tf::ones({1}), /*training=*/true);
  EXPECT_TRUE(a->last_training);
  EXPECT_TRUE(b->last_training);
  model(tf::ones({1}));
  EXPECT_FALSE(a->last_training);
  EXPECT_FALSE(b->last_training);
}

TEST(Sequential, MatchesCallingTheLayersByHand) {
  auto flatten = tf::layers::flatten();
  auto hidden = tf::layers::dense(4, "relu", {.seed = 1});
  auto out = tf::layers::dense(2, {.seed = 2});
  tf::layers::Sequential model{flatten, hidden, out};
  tf::Tensor x = tf::random::normal({3, 2, 3}, 0, 1, tf::float32, 7);
  tf::Tensor y = model(x);
  tf::Tensor expected = (*out)((*hidden)((*flatten)(x)));
  ASSERT_EQ(y.shape(), tf::Shape({3, 2}));
  for (std::size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.values<float>()[i], expected.values<float>()[i]);
}

TEST(Sequential, CollectsVariablesLayerByLayerInOrder) {
  auto first = tf::layers::dense(4, {.name = "first"});
  auto second = tf::layers::dense(2, {.name = "second"});
  tf::layers::Sequential model{tf::layers::flatten(), first, second};
  EXPECT_TRUE(model.variables().empty());  // the Dense layers are built by the first call
  model(tf::ones({1, 3}));
  auto vars = model.trainable_variables();
  ASSERT_EQ(vars.size(), 4u);
  EXPECT_EQ(vars[0].shape(), tf::Shape({3, 4}));  // first.kernel
  EXPECT_EQ(vars[1].shape(), tf::Shape({4}));     // first.bias
  EXPECT_EQ(vars[2].shape(), tf::Shape({4, 2}));  // second.kernel
  EXPECT_EQ(vars[3].shape(), tf::Shape({2}));     // second.bias
  EXPECT_EQ(vars[0].handle_id(), first->kernel().handle_id());
  EXPECT_EQ(vars[3].handle_id(), second->bias().handle_id());
}

TEST(Sequential, GradientsReachEveryLayersVariables) {
  tf::layers::Sequential model{tf::layers::dense(4, "tanh", {.seed = 3}), tf::layers::dense(1, {.seed = 4})};
  tf::Tensor x = tf::random::normal({5, 3}, 0, 1, tf::float32, 11);
  model(x);  // build
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_mean(tf::pow(model(x), 2));
  auto grads = tape.gradient(loss, model.trainable_variables());
  ASSERT_EQ(grads.size(), 4u);
  for (const auto& g : grads) {
    ASSERT_TRUE(g.has_value());
    EXPECT_GT(tf::reduce_sum(tf::abs(*g)).item<float>(), 0.f);
  }
}

TEST(Sequential, AddingANullLayerThrows) {
  tf::layers::Sequential model;
  EXPECT_THAT([&] { model.add(nullptr); }, ThrowsMessage<tf::InvalidArgumentError>(HasSubstr(
                                               "[Sequential] model 'sequential': add() got a null layer")));
}

TEST(Sequential, ErrorsOfALayerNameThatLayer) {
  tf::layers::Sequential model{tf::layers::dense(2)};
  EXPECT_THAT([&] { model(tf::ones({3})); }, ThrowsMessage<tf::InvalidArgumentError>(
                                                 ::testing::AllOf(HasSubstr("[Dense]"), HasSubstr("(3,)"))));
}

TEST(Sequential, SmallConvNetLearnsAToyTarget) {
  // Conv2D -> MaxPool2D -> Flatten -> Dropout -> Dense, trained with SGD to predict the mean of
  // each image: the loss after 60 steps is well below the first one.
  tf::layers::Sequential model{tf::layers::conv2d(4, {3, 3}, "relu", {.padding = "same", .seed = 1}),
                               tf::layers::max_pool2d(), tf::layers::flatten(), tf::layers::dropout(0.1, 2),
                               tf::layers::dense(1, {.seed = 3})};
  tf::Tensor x = tf::random::uniform({16, 6, 6, 1}, 0, 1, tf::float32, 4);
  tf::Tensor y = tf::reduce_mean(x, {1, 2});  // (16, 1)
  tf::optimizers::SGD opt(0.1);
  float first = 0.f, last = 0.f;
  for (int step = 0; step < 60; ++step) {
    tf::GradientTape tape;
    tf::Tensor loss = tf::losses::mean_squared_error(y, model(x, /*training=*/true));
    if (step == 0) first = loss.item<float>();
    last = loss.item<float>();
    auto vars = model.trainable_variables();
    opt.apply_gradients(tape.gradient(loss, vars), vars);
  }
  EXPECT_EQ(model.trainable_variables().size(), 4u);  // conv kernel, bias, dense kernel, bias
  EXPECT_LT(last, 0.5f * first);
}

// ---- a ReLU convolution before max pooling ------------------------------------------------------

namespace {

/// Equal as values, NaN equal to NaN (+0 and -0 are equal: the order of ReLU and pooling may
/// change the sign of a zero, never a value).
void expect_same_values(const tf::Tensor& actual, const tf::Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const tf::Tensor a = tf::cast(actual, tf::float64), e = tf::cast(expected, tf::float64);
  for (std::size_t i = 0; i < a.values<double>().size(); ++i) {
    const double u = a.values<double>()[i], v = e.values<double>()[i];
    EXPECT_TRUE(u == v || (std::isnan(u) && std::isnan(v))) << what << " [" << i << "]: " << u << " vs " << v;
  }
}

/// A batch of images with negative, positive, tied, infinite and NaN pixels.
tf::Tensor awkward_images(tf::DType dtype) {
  tf::Tensor x = tf::random::normal({2, 7, 6, 3}, 0, 1, tf::float64, 21);
  std::vector<double> v(x.values<double>().begin(), x.values<double>().end());
  v[5] = std::numeric_limits<double>::quiet_NaN();
  v[40] = std::numeric_limits<double>::infinity();
  v[77] = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 100; i < 140; ++i) v[i] = -1.0;  // ties, all below zero after the kernel's sign
  return tf::cast(tf::constant(v, x.shape()), dtype);
}

}  // namespace

TEST(Sequential, AReluConvolutionBeforeMaxPoolingGivesTheLayersValuesAndGradients) {
  // Sequential runs Conv2D("relu") -> MaxPool2D as convolution, pooling, ReLU (on the pooled
  // tensor, a quarter of the size): the values and every gradient are those of the layers called
  // one by one, for tiling and overlapping windows, with and without bias, NaN and infinities.
  struct Case {
    std::array<std::int64_t, 2> pool, strides;
    std::string padding;
    bool use_bias;
  };
  for (const Case& c : {Case{{2, 2}, {2, 2}, "valid", true}, Case{{3, 3}, {2, 2}, "same", true},
                        Case{{2, 3}, {1, 2}, "valid", false}}) {
    for (tf::DType dtype : {tf::float32, tf::float64, tf::bfloat16}) {
      const std::string what =
          fmt::format("pool {}x{} strides {}x{} {}{} {}", c.pool[0], c.pool[1], c.strides[0], c.strides[1],
                      c.padding, c.use_bias ? "" : " no bias", tf::dtype_name(dtype));
      auto conv =
          tf::layers::conv2d(4, {3, 3}, "relu", {.padding = "same", .use_bias = c.use_bias, .seed = 5});
      auto pool = tf::layers::max_pool2d(c.pool, c.strides, c.padding);
      tf::layers::Sequential model{conv, pool};
      const tf::Tensor x = awkward_images(dtype);
      tf::Tensor images = x;
      model(x);  // build
      if (c.use_bias)
        tf::Variable(conv->bias()).assign(tf::cast(tf::constant<double>({0.5, -0.25, 0.0, -3.0}), dtype));
      tf::Tensor dy = tf::random::normal(model(x).shape(), 0, 1, dtype, 9);
      auto run = [&](auto&& forward) {
        tf::GradientTape tape;
        tape.watch(images);
        tf::Tensor y = forward(images);
        auto grads = c.use_bias ? tape.gradient(y, {images, conv->kernel(), conv->bias()}, {dy})
                                : tape.gradient(y, {images, conv->kernel()}, {dy});
        std::vector<tf::Tensor> out{y};
        for (auto& g : grads) out.push_back(*g);
        return out;
      };
      const auto fused = run([&](const tf::Tensor& t) { return model(t, /*training=*/true); });
      const auto by_hand = run([&](const tf::Tensor& t) { return (*pool)((*conv)(t)); });
      ASSERT_EQ(fused.size(), by_hand.size());
      for (std::size_t i = 0; i < fused.size(); ++i)
        expect_same_values(fused[i], by_hand[i],
                           fmt::format("{}: {}", what, i == 0 ? "y" : "gradient " + std::to_string(i)));
    }
  }
}

TEST(Sequential, RunsTheReluOfAConvolutionBeforeMaxPoolingOnThePooledTensor) {
  auto conv = tf::layers::conv2d(2, {3, 3}, "relu", {.padding = "same", .seed = 1});
  tf::layers::Sequential model{conv, tf::layers::max_pool2d()};
  tf::Tensor x = tf::random::normal({1, 4, 4, 1}, 0, 1, tf::float32, 2);
  model(x);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = model(x);
  const std::string dot = tf::debug::to_dot(tape, y, {conv->kernel()}, {.gradient_norms = false});
  EXPECT_THAT(dot, HasSubstr("Relu"));
  EXPECT_THAT(dot, HasSubstr("(1, 2, 2, 2)"));
}

// ---- reading like Keras: the factories, braces, sequential() -----------------------------------

TEST(Sequential, BracesTakeTheFactoriesLikeKerasSequential) {
  tf::layers::Sequential model{tf::layers::flatten(), tf::layers::dense(16, "relu"), tf::layers::dense(10)};
  model.add(tf::layers::dropout(0.1));
  ASSERT_EQ(model.layers().size(), 4u);
  EXPECT_EQ(model.layers()[1]->name(), "dense");
  EXPECT_EQ(model(tf::ones({2, 4, 4})).shape(), tf::Shape({2, 10}));
  EXPECT_EQ(model.name(), "sequential");
}

TEST(Sequential, ANamedModelOfALayerList) {
  tf::layers::Sequential model({tf::layers::dense(1)}, "mlp");
  EXPECT_EQ(model.name(), "mlp");
  EXPECT_EQ(model.layers().size(), 1u);
}

TEST(Sequential, BracesCreateTheLayersLeftToRight) {
  // Layers without a seed draw the next seed of a process-wide sequence when created, so the
  // creation order decides their kernels: braces guarantee left to right.
  int created = 0;
  auto stamped = [&created] { return std::make_shared<Scale>(static_cast<double>(created++)); };
  tf::layers::Sequential model{stamped(), stamped(), stamped()};
  for (std::size_t i = 0; i < 3; ++i) {
    const tf::Tensor factor = model.layers()[i]->call(tf::constant<float>({1.f}), false);
    EXPECT_FLOAT_EQ(factor.values<float>()[0], static_cast<float>(i)) << "layer " << i;
  }
}

TEST(Sequential, FactoryMakesAModelThatNestsInAnother) {
  std::shared_ptr<tf::layers::Sequential> empty = tf::layers::sequential();
  EXPECT_TRUE(empty->layers().empty());
  EXPECT_EQ(empty->name(), "sequential");
  EXPECT_EQ(tf::layers::sequential("encoder")->name(), "encoder");
  auto encoder =
      tf::layers::sequential({tf::layers::flatten(), tf::layers::dense(3, {.seed = 1})}, "encoder");
  EXPECT_EQ(encoder->name(), "encoder");
  tf::layers::Sequential model{encoder, tf::layers::dense(1, {.seed = 2})};
  model(tf::ones({2, 2, 2}));
  EXPECT_EQ(model.trainable_variables().size(), 4u);  // the encoder's kernel and bias, then the head's
}

namespace {

/// One row of Keras 2's summary table: columns ending at 29, 55 and 65 characters, the first
/// field after one space.
std::string summary_row(const std::string& layer, const std::string& shape, const std::string& params) {
  return fmt::format(" {:<28}{:<26}{:<10}\n", layer, shape, params);
}

const std::string kUnderline(65, '_'), kDoubleLine(65, '=');

}  // namespace

TEST(SequentialSummary, PrintsKerasTableOfLayersShapesAndParameters) {
  tf::layers::Sequential model{tf::layers::dense(16, "relu", {.name = "hidden"}),
                               tf::layers::dense(1, {.name = "out"})};
  model(tf::zeros({2, 4}));
  EXPECT_EQ(model.summary(), "Model: \"sequential\"\n" + kUnderline + "\n" +
                                 summary_row("Layer (type)", "Output Shape", "Param #") + kDoubleLine + "\n" +
                                 summary_row("hidden (Dense)", "(None, 16)", "80") + kUnderline + "\n" +
                                 summary_row("out (Dense)", "(None, 1)", "17") + kDoubleLine + "\n" +
                                 "Total params: 97\nTrainable params: 97\nNon-trainable params: 0\n" +
                                 kUnderline + "\n");
}

TEST(SequentialSummary, CountsNonTrainableVariablesAndTakesAnInputShape) {
  // BatchNormalization's moving statistics are parameters that are not trainable; 1,000s get commas.
  tf::layers::Sequential model(
      {tf::layers::dense(300, {.name = "wide"}), tf::layers::batch_normalization({.name = "norm"})}, "mlp");
  const std::string text = model.summary(tf::Shape{4});
  EXPECT_THAT(text, HasSubstr(summary_row("wide (Dense)", "(None, 300)", "1500")));
  EXPECT_THAT(text, HasSubstr(summary_row("norm (BatchNormalization)", "(None, 300)", "1200")));
  EXPECT_THAT(text, HasSubstr("Total params: 2,700\nTrainable params: 2,100\nNon-trainable params: 600\n"));
  EXPECT_THAT(text, ::testing::StartsWith("Model: \"mlp\""));
}

TEST(SequentialSummary, NamesUserLayersByTheirClassAndWrapsLongFields) {
  // The summary runs on the last input's shape and dtype: here int32 ids.
  tf::layers::Sequential model{tf::layers::embedding(10, 3, {.name = "tokens"}),
                               std::make_shared<Scale>(2.0)};
  model(tf::zeros({1, 5}, tf::int32));
  const std::string text = model.summary();
  EXPECT_THAT(text, HasSubstr(summary_row("tokens (Embedding)", "(None, 5, 3)", "30")));
  EXPECT_THAT(text, HasSubstr(summary_row("scale (Scale)", "(None, 5, 3)", "0")));
  // A field longer than its column continues on the next line, as Keras prints it.
  tf::layers::Sequential named{tf::layers::dense(2, {.name = "a_dense_layer_with_a_long_name"})};
  named(tf::zeros({1, 2}));
  EXPECT_THAT(named.summary(), HasSubstr("\n a_dense_layer_with_a_long_n  (None, 2)"));
  EXPECT_THAT(named.summary(), HasSubstr("\n ame (Dense)"));
}

TEST(SequentialSummary, OfAModelNeverCalledAsksForDataOrAShape) {
  tf::layers::Sequential model{tf::layers::dense(2)};
  EXPECT_THAT([&] { model.summary(); },
              ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("This model has not yet been built")));
  EXPECT_THAT(model.summary(tf::Shape{3}), HasSubstr("Total params: 8\n"));
}
