// The bfloat16 dtype: its element type's rounding, casts, printing, creation, checkpoints, and
// how ops take it (docs/design/bfloat16.md, "How each op takes bfloat16"): elementwise ops and reductions
// compute in float32 and round once, the products and convolutions have their own kernels, and any other op
// refuses it by name.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <limits>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

std::vector<float> floats(const tf::Tensor& t) { return tf::cast(t, tf::float32).to_vector<float>(); }

TEST(BFloat16, IsATwoByteFloatingDtype) {
  EXPECT_EQ(tf::dtype_name(tf::bfloat16), "bfloat16");
  EXPECT_EQ(tf::dtype_size(tf::bfloat16), 2u);
  EXPECT_TRUE(tf::is_floating(tf::bfloat16));
  EXPECT_EQ(tf::dtype_of<tf::bfloat16_t>(), tf::bfloat16);
}

TEST(BFloat16, ElementRoundsToNearestEvenAndWidensExactly) {
  EXPECT_EQ(tf::bfloat16_t(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa, 1.
  EXPECT_EQ(tf::bfloat16_t(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: the even one is 1 + 2^-6.
  EXPECT_EQ(static_cast<float>(tf::bfloat16_t(1.0f + 3 * std::ldexp(1.0f, -8))), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_EQ(static_cast<float>(tf::bfloat16_t(1.1f)), 1.1015625f);
  EXPECT_TRUE(std::isnan(static_cast<float>(tf::bfloat16_t(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(static_cast<float>(tf::bfloat16_t(std::numeric_limits<float>::infinity())),
            std::numeric_limits<float>::infinity());
  // The largest float rounds up past bfloat16's largest finite value: infinity.
  EXPECT_EQ(static_cast<float>(tf::bfloat16_t(std::numeric_limits<float>::max())),
            std::numeric_limits<float>::infinity());
}

TEST(BFloat16, CastRoundsAndWidensBothWays) {
  const tf::Tensor x = tf::constant({1.1f, -2.5f, 1e-3f, 65504.f});
  const tf::Tensor b = tf::cast(x, tf::bfloat16);
  EXPECT_EQ(b.dtype(), tf::bfloat16);
  EXPECT_EQ(b.shape(), x.shape());
  const auto v = b.values<tf::bfloat16_t>();
  for (std::size_t i = 0; i < v.size(); ++i)
    EXPECT_EQ(v[i].bits, tf::bfloat16_t(x.values<float>()[i]).bits) << i;
  EXPECT_THAT(floats(b), ::testing::ElementsAre(1.1015625f, -2.5f, 0.000999450684f, 65536.f));
  // To float64, int32 and bool, through float32.
  EXPECT_EQ(tf::cast(b, tf::float64).to_vector<double>()[0], 1.1015625);
  EXPECT_THAT(tf::cast(b, tf::int32).to_vector<std::int32_t>(), ::testing::ElementsAre(1, -2, 0, 65536));
  EXPECT_THAT(tf::cast(tf::constant({7, -3}), tf::bfloat16).values<tf::bfloat16_t>()[1].bits,
              tf::bfloat16_t(-3.f).bits);
  // A bfloat16 NaN has no int32 value: the Cast error names it.
  EXPECT_THAT([&] { tf::cast(tf::cast(tf::constant({NAN}), tf::bfloat16), tf::int32); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Cast] cannot convert nan to int32")));
}

TEST(BFloat16, PrintsItsExactValues) {
  const tf::Tensor b = tf::cast(tf::constant({1.1f, 2.f}), tf::bfloat16);
  EXPECT_EQ(tf::to_string(b), "tf.Tensor([1.1015625 2.       ], shape=(2,), dtype=bfloat16)");
  EXPECT_EQ(tf::repr(tf::cast(tf::constant(0.5f), tf::bfloat16)),
            "<tf.Tensor: shape=(), dtype=bfloat16, numpy=0.5>");
}

TEST(BFloat16, CreationOpsMakeIt) {
  EXPECT_THAT(floats(tf::fill({3}, 1.1, tf::bfloat16)), ::testing::Each(1.1015625f));
  EXPECT_THAT(floats(tf::zeros({2}, tf::bfloat16)), ::testing::Each(0.f));
  EXPECT_THAT(floats(tf::eye(2, std::nullopt, tf::bfloat16)), ::testing::ElementsAre(1.f, 0.f, 0.f, 1.f));
  const tf::Tensor c = tf::constant({tf::bfloat16_t(0.25f), tf::bfloat16_t(3.f)});
  EXPECT_EQ(c.dtype(), tf::bfloat16);
  // Uniform values stay below maxval after rounding (0.999 rounds up to 1 in bfloat16).
  const tf::Tensor u = tf::random::uniform({100000}, 0.99, 1.0, tf::bfloat16, 3);
  for (float f : floats(u)) ASSERT_TRUE(f >= 0.98828125f && f < 1.0f) << f;
}

TEST(BFloat16, ElementwiseOpsComputeInFloat32AndRoundOnce) {
  const tf::Tensor a = tf::cast(tf::constant({1.f, 2.5f, -3.f, 100.f}), tf::bfloat16);
  const tf::Tensor b = tf::cast(tf::constant({0.3f, 0.7f, 1e-3f, 0.1f}), tf::bfloat16);
  struct Case {
    const char* name;
    tf::Tensor got;
    tf::Tensor want;  // the float32 op on the same (bfloat16) values, rounded
  };
  const tf::Tensor fa = tf::cast(a, tf::float32), fb = tf::cast(b, tf::float32);
  const std::vector<Case> cases = {
      {"add", a + b, fa + fb},
      {"mul", a * b, fa * fb},
      {"div", a / b, fa / fb},
      {"exp", tf::exp(b), tf::exp(fb)},
      {"tanh", tf::tanh(a), tf::tanh(fa)},
      {"relu", tf::nn::relu(a), tf::nn::relu(fa)},
      {"broadcast", a * tf::cast(tf::constant(3.f), tf::bfloat16), fa * 3.f},
      {"sum", tf::reduce_sum(a), tf::reduce_sum(fa)},
      {"mean", tf::reduce_mean(tf::reshape(a, {2, 2}), {0}), tf::reduce_mean(tf::reshape(fa, {2, 2}), {0})},
      {"where", tf::where(tf::greater(a, b), a, b), tf::where(tf::greater(fa, fb), fa, fb)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.got.dtype(), tf::bfloat16) << c.name;
    EXPECT_EQ(floats(c.got), floats(tf::cast(c.want, tf::bfloat16))) << c.name;
  }
  EXPECT_EQ(tf::greater(a, b).dtype(), tf::bool_);  // comparisons stay bool
}

TEST(BFloat16, MixingWithFloat32IsAnErrorNamingTheOp) {
  const tf::Tensor a = tf::cast(tf::constant({1.f}), tf::bfloat16);
  EXPECT_THAT([&] { a + tf::constant({1.f}); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[AddV2]"), HasSubstr("bfloat16"), HasSubstr("float32"))));
}

TEST(BFloat16, AnOpWithoutABFloat16KernelRefusesItByName) {
  const tf::Tensor m = tf::cast(tf::constant({{1.f, 2.f}, {3.f, 4.f}}), tf::bfloat16);
  EXPECT_THAT(
      [&] {
        tf::nn::sparse_softmax_cross_entropy_with_logits(tf::constant({0, 1}), m);
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[SparseSoftmaxCrossEntropyWithLogits] has no bfloat16 kernel"),
                HasSubstr("shape (2, 2)"))));
  // A public function that checks its dtype before the op runs says so in its own words.
  EXPECT_THAT([&] { tf::nn::softmax_cross_entropy_with_logits(m, m); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr(
                  "[SoftmaxCrossEntropyWithLogits] 'logits' must be a float32 or float64 tensor, got a "
                  "bfloat16 tensor of shape (2, 2)")));
  EXPECT_THAT([&] { tf::random::uniform({2}, 0, 1, tf::int32); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("float32, float64 or bfloat16")));
}

TEST(BFloat16, GradientsFlowThroughItAndBackToFloat32) {
  tf::Variable w(tf::constant({{0.5f, -1.f}, {2.f, 0.25f}}));
  const tf::Tensor x = tf::constant({{1.f, 2.f}});
  tf::GradientTape tape;
  const tf::Tensor y = tf::matmul(tf::cast(x, tf::bfloat16), tf::cast(w, tf::bfloat16));
  const tf::Tensor loss = tf::reduce_sum(tf::cast(tf::tanh(y), tf::float32));
  const tf::Tensor g = *tape.gradient(loss, w);
  EXPECT_EQ(g.dtype(), tf::float32);
  // d/dw sum(tanh(x @ w)) = x^T (1 - tanh^2(x @ w)), to bfloat16's precision.
  const tf::Tensor y64 = tf::matmul(tf::cast(x, tf::float64), tf::cast(w, tf::float64));
  const auto want = tf::matmul(tf::transpose(tf::cast(x, tf::float64)), 1.0 - tf::square(tf::tanh(y64)));
  const auto got = tf::cast(g, tf::float64).to_vector<double>();
  const auto ref = want.to_vector<double>();
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], ref[i], 2e-2 * (1 + std::abs(ref[i]))) << i;
}

TEST(BFloat16, CheckpointsKeepItsBits) {
  const auto path = std::filesystem::temp_directory_path() / "tapeflow_bfloat16_test.ckpt";
  tf::Variable v(tf::cast(tf::constant({1.1f, -0.3f, 7.f}), tf::bfloat16));
  tf::save_checkpoint(path.string(), {{"v", v}});
  tf::Variable back(tf::zeros({3}, tf::bfloat16));
  tf::restore_checkpoint(path.string(), {{"v", back}});
  EXPECT_EQ(floats(back.value()), floats(v.value()));
  std::filesystem::remove(path);
}

TEST(BFloat16, CheckNumericsSeesItsNaN) {
  tf::enable_check_numerics();
  struct Off {
    ~Off() { tf::disable_check_numerics(); }
  } const off;  // the process-wide switch goes back off however the test ends
  const tf::Tensor a = tf::cast(tf::constant({0.f}), tf::bfloat16);
  EXPECT_THAT([&] { a / a; }, ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("1 NaN")));
}

}  // namespace
