// layers::Conv1D: lazy build and Keras's kernel layout, forward values against a loop reference
// for every padding (causal included), strides and dilation, mixed precision, errors.

#include "tapeflow/nn/conv1d.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::DoubleNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::ThrowsMessage;

namespace {

/// The 1-D cross-correlation of x (n, steps, c) with kernel k (taps, c, o) plus bias b, with plain
/// loops: `pad_before` zeros before each sequence, then windows of taps spaced `dilation` apart,
/// starting every `stride` steps, for `out_steps` outputs (steps past the input read zeros).
std::vector<double> conv1d_reference(const tf::Tensor& x, const tf::Tensor& k, const tf::Tensor& b,
                                     std::int64_t pad_before, std::int64_t stride, std::int64_t dilation,
                                     std::int64_t out_steps) {
  const auto& xs = x.shape();
  const std::int64_t n = xs[0], steps = xs[1], c = xs[2], taps = k.shape()[0], o = k.shape()[2];
  const auto xv = x.to_vector<double>(), kv = k.to_vector<double>(), bv = b.to_vector<double>();
  std::vector<double> out;
  for (std::int64_t bi = 0; bi < n; ++bi)
    for (std::int64_t t = 0; t < out_steps; ++t)
      for (std::int64_t oc = 0; oc < o; ++oc) {
        double acc = bv[static_cast<std::size_t>(oc)];
        for (std::int64_t tap = 0; tap < taps; ++tap) {
          const std::int64_t s = t * stride + tap * dilation - pad_before;
          if (s < 0 || s >= steps) continue;
          for (std::int64_t ci = 0; ci < c; ++ci)
            acc += xv[static_cast<std::size_t>((bi * steps + s) * c + ci)] *
                   kv[static_cast<std::size_t>((tap * c + ci) * o + oc)];
        }
        out.push_back(acc);
      }
  return out;
}

/// A float64 input (2, 7, 3) of distinct values.
tf::Tensor sequences() { return tf::cast(tf::reshape(tf::range(0, 42), {2, 7, 3}), tf::float64) * 0.1 - 1.0; }

struct PaddingCase {
  std::string padding;
  std::int64_t stride, dilation, pad_before, out_steps;
};

class Conv1DPadding : public ::testing::TestWithParam<PaddingCase> {};

TEST_P(Conv1DPadding, MatchesTheLoopReference) {
  const PaddingCase& p = GetParam();
  tf::layers::Conv1D conv(
      2, 3, {.strides = p.stride, .padding = p.padding, .dilation_rate = p.dilation, .seed = 7});
  const tf::Tensor x = sequences();
  conv.build(x.shape(), tf::float64);
  const_cast<tf::Variable&>(conv.bias()).assign(tf::constant({0.5, -0.25}));
  const tf::Tensor y = conv(x);
  EXPECT_EQ(y.shape(), tf::Shape({2, p.out_steps, 2}));
  EXPECT_THAT(
      y.to_vector<double>(),
      Pointwise(DoubleNear(1e-12), conv1d_reference(x, conv.kernel().value(), conv.bias().value(),
                                                    p.pad_before, p.stride, p.dilation, p.out_steps)));
}

// 7 steps, 3 taps: valid 5 outputs; same pads 1 before (TensorFlow's SAME: the odd zero after);
// causal pads (3 - 1) * dilation before.
INSTANTIATE_TEST_SUITE_P(
    Paddings, Conv1DPadding,
    ::testing::Values(PaddingCase{"valid", 1, 1, 0, 5}, PaddingCase{"same", 1, 1, 1, 7},
                      PaddingCase{"causal", 1, 1, 2, 7}, PaddingCase{"causal", 1, 2, 4, 7},
                      PaddingCase{"valid", 2, 1, 0, 3}, PaddingCase{"same", 2, 1, 1, 4},
                      PaddingCase{"CAUSAL", 2, 1, 2, 4}, PaddingCase{"valid", 1, 3, 0, 1}),
    [](const ::testing::TestParamInfo<PaddingCase>& info) {
      const PaddingCase& p = info.param;
      return p.padding + "_stride" + std::to_string(p.stride) + "_dilation" + std::to_string(p.dilation);
    });

TEST(Conv1D, IsBuiltLazilyWithKerasKernelLayout) {
  tf::layers::Conv1D conv(8, 5, "relu");
  EXPECT_FALSE(conv.built());
  const tf::Tensor y = conv(tf::zeros({4, 20, 3}));
  EXPECT_EQ(y.shape(), tf::Shape({4, 16, 8}));
  EXPECT_EQ(conv.kernel().shape(), tf::Shape({5, 3, 8}));
  EXPECT_EQ(conv.bias().shape(), tf::Shape({8}));
  EXPECT_THAT(tf::testing::names(conv.trainable_variables()), ::testing::ElementsAre("kernel", "bias"));
}

TEST(Conv1D, CausalOutputsDependOnlyOnEarlierSteps) {
  // Changing step 4 of the input changes outputs 4.. and leaves outputs 0..3 as they were.
  tf::layers::Conv1D conv(2, 3, {.padding = "causal", .dilation_rate = 2, .seed = 3});
  std::vector<double> values(10, 1.0);
  const tf::Tensor before = conv(tf::constant(values, tf::Shape{1, 10, 1}));
  values[4] = 5.0;
  const tf::Tensor after = conv(tf::constant(values, tf::Shape{1, 10, 1}));
  const auto b = before.to_vector<double>(), a = after.to_vector<double>();
  for (std::size_t i = 0; i < 8; ++i) EXPECT_EQ(a[i], b[i]) << "output element " << i;
  EXPECT_NE(a[8], b[8]);
}

TEST(Conv1D, GroupsSplitTheChannels) {
  tf::layers::Conv1D conv(4, 2, {.groups = 2, .seed = 1});
  const tf::Tensor y = conv(tf::ones({1, 3, 6}));
  EXPECT_EQ(conv.kernel().shape(), tf::Shape({2, 3, 4}));
  EXPECT_EQ(y.shape(), tf::Shape({1, 2, 4}));
}

TEST(Conv1D, RunsInBfloat16UnderTheMixedPolicyWithFloat32Weights) {
  tf::layers::Conv1D conv(4, 3, {.dtype_policy = tf::mixed_precision::Policy("mixed_bfloat16")});
  const tf::Tensor y = conv(tf::ones({2, 6, 3}));
  EXPECT_EQ(y.dtype(), tf::bfloat16);
  EXPECT_EQ(conv.kernel().dtype(), tf::float32);
}

TEST(Conv1D, BadArgumentsAndInputsNameTheLayerAndShapes) {
  EXPECT_THAT([] { tf::layers::Conv1D(4, 3, {.padding = "full"}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Conv1D] unknown padding 'full'")));
  EXPECT_THAT([] { tf::layers::Conv1D(4, 0); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Conv1D] kernel_size must be positive")));
  EXPECT_THAT([] { tf::layers::Conv1D(4, 3, {.groups = 3}); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[Conv1D] groups must be positive and divide filters")));
  tf::layers::Conv1D conv(4, 5);
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({2, 8}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv1D]"), HasSubstr("rank 3"), HasSubstr("(2, 8)"))));
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({2, 4, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("window of 5 steps, longer than the input"), HasSubstr("(2, 4, 3)"))));
  conv(tf::zeros({2, 8, 3}));
  EXPECT_THAT(
      [&] {
        conv(tf::zeros({2, 8, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("built for inputs with 3 channels"), HasSubstr("(2, 8, 2)"))));
}

TEST(Conv1D, AnEmptyBatchGivesAnEmptyOutput) {
  tf::layers::Conv1D conv(4, 3, {.padding = "causal"});
  EXPECT_EQ(conv(tf::zeros({0, 5, 2})).shape(), tf::Shape({0, 5, 4}));
}

}  // namespace
