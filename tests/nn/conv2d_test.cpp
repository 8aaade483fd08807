// layers::Conv2D: lazy build, HWIO kernel and initialisers, forward values against a loop
// reference, padding and strides, gradients to kernel and bias, errors.

#include "tapeflow/nn/conv2d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "support/activations.h"
#include "support/errors.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;
using ::testing::UnorderedElementsAreArray;
using tf::testing::names;

namespace {

/// VALID, stride-1 cross-correlation plus bias with plain loops: x (n, h, w, c), k (kh, kw, c, o).
std::vector<double> conv_reference(const tf::Tensor& x, const tf::Tensor& k, const tf::Tensor& b) {
  const auto& xs = x.shape();
  const auto& ks = k.shape();
  const std::int64_t n = xs[0], h = xs[1], w = xs[2], c = xs[3], kh = ks[0], kw = ks[1], o = ks[3];
  const std::int64_t oh = h - kh + 1, ow = w - kw + 1;
  auto xv = x.values<double>(), kv = k.values<double>(), bv = b.values<double>();
  std::vector<double> out;
  for (std::int64_t bi = 0; bi < n; ++bi)
    for (std::int64_t i = 0; i < oh; ++i)
      for (std::int64_t j = 0; j < ow; ++j)
        for (std::int64_t oc = 0; oc < o; ++oc) {
          double acc = bv[static_cast<std::size_t>(oc)];
          for (std::int64_t di = 0; di < kh; ++di)
            for (std::int64_t dj = 0; dj < kw; ++dj)
              for (std::int64_t ci = 0; ci < c; ++ci)
                acc += xv[static_cast<std::size_t>(((bi * h + i + di) * w + j + dj) * c + ci)] *
                       kv[static_cast<std::size_t>(((di * kw + dj) * c + ci) * o + oc)];
          out.push_back(acc);
        }
  return out;
}

double max_abs(const tf::Tensor& t) { return tf::reduce_max(tf::abs(t)).item<float>(); }

}  // namespace

TEST(Conv2D, IsBuiltLazilyWithAnHwioKernelFromTheInputChannels) {
  tf::layers::Conv2D conv(4, {3, 2});
  EXPECT_FALSE(conv.built());
  EXPECT_TRUE(conv.variables().empty());
  conv(tf::zeros({1, 5, 5, 2}));
  ASSERT_TRUE(conv.built());
  EXPECT_EQ(conv.kernel().shape(), tf::Shape({3, 2, 2, 4}));
  EXPECT_EQ(conv.bias().shape(), tf::Shape({4}));
  EXPECT_EQ(conv.name(), "conv2d");
}

TEST(Conv2D, VariablesAreKernelThenBiasWithKerasNames) {
  tf::layers::Conv2D conv(2, {1, 1}, "relu");
  conv(tf::zeros({1, 2, 2, 3}));
  EXPECT_THAT(names(conv.trainable_variables()), ::testing::ElementsAre("kernel", "bias"));
}

TEST(Conv2D, WithoutBiasHasOnlyAKernel) {
  tf::layers::Conv2D conv(2, {1, 1}, {.use_bias = false});
  conv(tf::zeros({1, 2, 2, 3}));
  EXPECT_THAT(names(conv.trainable_variables()), ::testing::ElementsAre("kernel"));
  EXPECT_THROW(conv.bias(), tf::FailedPreconditionError);
}

TEST(Conv2D, MatchesALoopReferenceInFloat64) {
  tf::layers::Conv2D conv(3, {2, 3}, {.seed = 5});
  tf::Tensor x = tf::random::normal({2, 4, 5, 2}, 0, 1, tf::float64, 9);
  conv.build(x.shape(), tf::float64);
  tf::Variable bias = conv.bias();  // a handle to the same variable
  bias.assign(tf::constant<double>({0.5, -1.0, 2.0}));
  tf::Tensor y = conv(x);
  ASSERT_EQ(y.shape(), tf::Shape({2, 3, 3, 3}));
  auto expected = conv_reference(x, conv.kernel(), conv.bias());
  auto got = y.values<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << i;
}

TEST(Conv2D, OutputShapesFollowPaddingAndStrides) {
  tf::Tensor x = tf::zeros({2, 7, 6, 1});
  EXPECT_EQ(tf::layers::Conv2D(8, {3, 3})(x).shape(), tf::Shape({2, 5, 4, 8}));
  EXPECT_EQ(tf::layers::Conv2D(8, {3, 3}, tf::layers::Conv2DOptions{.padding = "same"})(x).shape(),
            tf::Shape({2, 7, 6, 8}));
  EXPECT_EQ(tf::layers::Conv2D(8, {3, 3}, tf::layers::Conv2DOptions{.strides = {2, 2}, .padding = "SAME"})(x)
                .shape(),
            tf::Shape({2, 4, 3, 8}));
  EXPECT_EQ(tf::layers::Conv2D(8, {3, 3}, tf::layers::Conv2DOptions{.strides = {2, 1}})(x).shape(),
            tf::Shape({2, 3, 4, 8}));
}

TEST(Conv2D, EmptyBatchGivesAnEmptyOutput) {
  tf::layers::Conv2D conv(4, {3, 3});
  EXPECT_EQ(conv(tf::zeros({0, 5, 5, 2})).shape(), tf::Shape({0, 3, 3, 4}));
}

TEST(Conv2D, ReluActivationClampsNegatives) {
  tf::layers::Conv2D conv(8, {2, 2}, "relu", {.seed = 1});
  tf::Tensor y = conv(tf::random::normal({2, 4, 4, 3}, 0, 1, tf::float32, 3));
  EXPECT_GE(tf::reduce_min(y).item<float>(), 0.f);
  EXPECT_GT(tf::reduce_max(y).item<float>(), 0.f);
}

TEST(Conv2D, GlorotUniformKernelUsesReceptiveFieldFans) {
  tf::layers::Conv2D conv(16, {3, 3}, {.seed = 2});
  conv(tf::zeros({1, 3, 3, 8}));
  const double limit = std::sqrt(6.0 / (9 * 8 + 9 * 16));  // fan_in = 3*3*8, fan_out = 3*3*16
  EXPECT_LE(max_abs(conv.kernel()), limit);
  EXPECT_GT(max_abs(conv.kernel()), 0.9 * limit);  // 1152 draws come close to the bound
}

TEST(Conv2D, HeUniformKernelIsBoundedBySqrtSixOverFanIn) {
  tf::layers::Conv2D conv(16, {3, 3}, {.seed = 2, .kernel_initializer = "he_uniform"});
  conv(tf::zeros({1, 3, 3, 8}));
  const double limit = std::sqrt(6.0 / (9 * 8));
  EXPECT_LE(max_abs(conv.kernel()), limit);
  EXPECT_GT(max_abs(conv.kernel()), 0.9 * limit);
}

TEST(Conv2D, HeNormalKernelHasStddevSqrtTwoOverFanIn) {
  tf::layers::Conv2D conv(64, {3, 3}, {.seed = 4, .kernel_initializer = "he_normal"});
  conv(tf::zeros({1, 3, 3, 32}));
  const tf::Tensor k = conv.kernel();
  const double stddev = std::sqrt(tf::reduce_mean(k * k).item<float>());
  EXPECT_NEAR(stddev, std::sqrt(2.0 / (9 * 32)), 0.03 * std::sqrt(2.0 / (9 * 32)));  // 18432 draws
}

TEST(Conv2D, SameSeedGivesTheSameKernel) {
  tf::layers::Conv2D a(4, {2, 2}, {.seed = 7}), b(4, {2, 2}, {.seed = 7});
  a(tf::zeros({1, 2, 2, 3}));
  b(tf::zeros({1, 2, 2, 3}));
  EXPECT_EQ(tf::reduce_max(tf::abs(a.kernel() - b.kernel())).item<float>(), 0.f);
}

TEST(Conv2D, GradientsReachKernelAndBias) {
  tf::layers::Conv2D conv(2, {2, 2}, {.seed = 1});
  tf::Tensor x = tf::random::normal({3, 4, 5, 2}, 0, 1, tf::float32, 6);
  conv(x);
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(conv(x));
  auto grads = tape.gradient(loss, conv.trainable_variables());
  ASSERT_EQ(grads.size(), 2u);
  ASSERT_TRUE(grads[0].has_value() && grads[1].has_value());
  EXPECT_EQ(grads[0]->shape(), tf::Shape({2, 2, 2, 2}));
  // d sum(y) / d bias[o] = number of output positions = 3 * 3 * 4.
  for (float g : grads[1]->values<float>()) EXPECT_FLOAT_EQ(g, 36.f);
  // d sum(y) / d kernel[di, dj, c, o] = sum of the inputs the tap sees, the same for every o.
  tf::Tensor window = tf::reduce_sum(tf::slice(x, {0, 0, 0, 0}, {3, 3, 4, 2}), tf::Axes{0, 1, 2});
  EXPECT_NEAR(grads[0]->values<float>()[0], window.values<float>()[0], 1e-4);
}

TEST(Conv2D, RankThreeInputThrowsNamingTheLayerAndShape) {
  tf::layers::Conv2D conv(2, {3, 3});
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({5, 5, 1}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("rank 4"), HasSubstr("(5, 5, 1)"))));
}

TEST(Conv2D, ChannelMismatchAfterBuildThrows) {
  tf::layers::Conv2D conv(2, {3, 3});
  conv(tf::zeros({1, 5, 5, 3}));
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({1, 5, 5, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Conv2D]"), HasSubstr("3 channels"),
                                                    HasSubstr("(3, 3, 3, 2)"), HasSubstr("(1, 5, 5, 4)"))));
}

TEST(Conv2D, ValidWindowLargerThanTheImageThrows) {
  tf::layers::Conv2D conv(2, {3, 3});
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({1, 2, 5, 1}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("3x3 window"), HasSubstr("(1, 2, 5, 1)"))));
}

TEST(Conv2D, IntegerInputThrows) {
  tf::layers::Conv2D conv(2, {1, 1});
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({1, 2, 2, 1}, tf::DType::Int32));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[Conv2D]"), HasSubstr("int32"))));
}

TEST(Conv2D, InvalidConstructorArgumentsThrow) {
  EXPECT_THAT(
      [] {
        tf::layers::Conv2D(0, {3, 3});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Conv2D] filters must be positive, got 0")));
  EXPECT_THAT(
      [] {
        tf::layers::Conv2D(2, {3, 0});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[Conv2D] kernel_size must be positive and at most 2^31, got (3, 0)")));
  EXPECT_THAT(
      [] {
        tf::layers::Conv2D(2, {3, 3}, tf::layers::Conv2DOptions{.strides = {0, 1}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[Conv2D] strides must be positive and at most 2^31, got (0, 1)")));
  EXPECT_THAT(
      [] {
        tf::layers::Conv2D(2, {3, 3}, tf::layers::Conv2DOptions{.padding = "full"});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Conv2D] unknown padding 'full'")));
  EXPECT_THAT(
      [] {
        tf::layers::Conv2D(2, {3, 3}, tf::layers::Conv2DOptions{.kernel_initializer = "lecun"});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Conv2D] unknown kernel_initializer 'lecun'")));
}

TEST(Conv2D, HugeKernelSizesThrowInsteadOfOverflowing) {
  // The receptive field kh * kw was computed in signed arithmetic: INT64_MAX * 2 overflowed (UBSan).
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  EXPECT_THAT(
      [&] {
        tf::layers::Conv2D(1, {max, 2});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[Conv2D] kernel_size must be positive and at most 2^31, got (9223372036854775807, 2)")));
  EXPECT_THAT(
      [&] {
        tf::layers::Conv2D(1, {3, 3}, tf::layers::Conv2DOptions{.strides = {max, 1}});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[Conv2D] strides must be positive and at most 2^31")));
  // 2^31 x 2^31 x 3 x 1 kernel elements: more than 2^62, refused when the layer is built.
  const std::int64_t k = std::int64_t{1} << 31;
  tf::layers::Conv2D conv(1, {k, k}, tf::layers::Conv2DOptions{.padding = "same"});
  EXPECT_THAT(
      [&] {
        conv.build(tf::Shape({1, 4, 4, 3}), tf::DType::Float32);
      },
      ThrowsMessage<tf::ResourceExhaustedError>(AllOf(HasSubstr("[Conv2D]"), HasSubstr("2^62"))));
  EXPECT_FALSE(conv.built());
}

TEST(Conv2D, UnknownActivationNameThrowsNamingConv2DAndEveryAcceptedName) {
  const std::string message = tf::testing::error_of([] { tf::layers::Conv2D(2, {3, 3}, "gelu_typo"); });
  EXPECT_THAT(message, HasSubstr("[Conv2D] unknown activation 'gelu_typo'"));
  // The names listed are exactly those whose values EveryKerasActivationNameMatchesItsFunction checks.
  EXPECT_THAT(tf::testing::listed_activation_names(message),
              UnorderedElementsAreArray(tf::testing::accepted_activation_names()));
}

TEST(Conv2D, EveryKerasActivationNameMatchesItsFunction) {
  const tf::Tensor x = tf::random::normal({2, 4, 4, 3}, 0, 3, tf::float32, 5);
  for (const auto& [name, f] : tf::testing::keras_activations()) {
    tf::layers::Conv2D by_name(4, {2, 2}, name, {.seed = 1});
    tf::layers::Conv2D by_function(4, {2, 2}, f, {.seed = 1});
    const tf::Tensor got = by_name(x), want = by_function(x);
    // "relu" runs one fused op, the function the convolution, the bias and relu: equal up to rounding.
    EXPECT_LE(max_abs(got - want), 1e-5f * max_abs(want)) << name;
  }
}

// ---- the factory -------------------------------------------------------------------------------

TEST(Conv2D, BracedOptionsAloneNameTheLayer) {
  tf::layers::Conv2D layer(4, {3, 3}, {.name = "features"});
  EXPECT_EQ(layer.name(), "features");
  EXPECT_EQ(tf::layers::conv2d(4, {3, 3}, {.name = "c"})->name(), "c");
}

TEST(Conv2D, FactoryMakesTheLayerTheConstructorMakes) {
  const tf::Tensor x = tf::random::uniform({1, 5, 5, 2}, -1, 1, tf::float32, 9);
  std::shared_ptr<tf::layers::Conv2D> conv =
      tf::layers::conv2d(3, {3, 3}, "relu", {.padding = "same", .seed = 4});
  tf::layers::Conv2D by_hand(3, {3, 3}, "relu", {.padding = "same", .seed = 4});
  EXPECT_EQ(conv->name(), by_hand.name());
  EXPECT_EQ(conv->filters(), 3);
  EXPECT_EQ((*conv)(x).to_vector<float>(), by_hand(x).to_vector<float>());
  auto strided = tf::layers::conv2d(2, {2, 2}, {.name = "c", .strides = {2, 2}, .seed = 5});
  tf::layers::Conv2D strided_by_hand(2, {2, 2}, {.name = "c", .strides = {2, 2}, .seed = 5});
  EXPECT_EQ(strided->name(), "c");
  EXPECT_EQ((*strided)(x).to_vector<float>(), strided_by_hand(x).to_vector<float>());
  EXPECT_THROW(tf::layers::conv2d(1, {0, 3}), tf::InvalidArgumentError);
}

TEST(Conv2D, RunsOneFusedConv2DForABiasWithReluOrNoActivation) {
  // A named relu (or no activation) with a bias is one FusedConv2D; a function is not looked into.
  auto recorded_ops = [](tf::layers::Conv2D& layer) {
    const tf::Tensor x = tf::ones({1, 5, 5, 2});
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor y = layer(x);
    return tf::debug::explain(tape, y, x).path;  // from the output back to x
  };
  tf::layers::Conv2D relu(3, {3, 3}, "relu", {.seed = 1});
  tf::layers::Conv2D linear(3, {3, 3}, {.seed = 1});
  tf::layers::Conv2D custom(
      3, {3, 3}, tf::layers::Activation([](const tf::Tensor& t) { return tf::nn::relu(t); }), {.seed = 1});
  tf::layers::Conv2D no_bias(3, {3, 3}, "relu", {.use_bias = false, .seed = 1});
  EXPECT_THAT(recorded_ops(relu), ElementsAre("FusedConv2D"));
  EXPECT_THAT(recorded_ops(linear), ElementsAre("FusedConv2D"));
  EXPECT_THAT(recorded_ops(custom), ElementsAre("Relu", "AddV2", "Conv2D"));
  EXPECT_THAT(recorded_ops(no_bias), ElementsAre("Relu", "Conv2D"));
}

TEST(Conv2D, DilationRateAndGroupsReachTheConvolution) {
  tf::layers::Conv2D layer(6, {3, 3}, "relu",
                           {.padding = "same", .seed = 3, .dilation_rate = {2, 1}, .groups = 2});
  const tf::Tensor x = tf::random::normal({2, 7, 6, 4}, 0, 1, tf::float32, 4);
  const tf::Tensor y = layer(x);
  EXPECT_EQ(layer.kernel().shape(), tf::Shape({3, 3, 2, 6}));  // in_channels per group
  const tf::Tensor want =
      tf::nn::relu(tf::nn::conv2d(x, layer.kernel().value(), {1, 1}, "SAME", {2, 1}) + layer.bias().value());
  EXPECT_LT(tf::reduce_max(tf::abs(y - want)).to_vector<float>()[0], 1e-5f);
}

TEST(Conv2D, GroupsMustDivideFiltersAndTheInputChannels) {
  EXPECT_THAT(
      [] {
        tf::layers::Conv2D(6, {3, 3}, {.groups = 4});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("groups"), HasSubstr("6"), HasSubstr("4"))));
  tf::layers::Conv2D layer(6, {3, 3}, {.groups = 2});
  EXPECT_THAT(
      [&] {
        layer(tf::ones({1, 5, 5, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("2 groups"), HasSubstr("(1, 5, 5, 3)"))));
}
