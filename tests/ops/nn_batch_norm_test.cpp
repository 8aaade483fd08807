// FusedBatchNorm, FusedBatchNormGrad and FusedBatchNormInference: values by hand, float32 against
// float64 and against the same formula written with elementwise ops, on channels last, in the
// middle and of a matrix; the statistics' own gradients; NaN; empty channels; bfloat16 refused;
// inference against the elementwise formula; the layer running one op. The op table (op_cases_nn.cpp) checks
// every gradient numerically, the second order included, eager and traced.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

namespace {

/// The per-channel shape (1, ..., c, ..., 1) for x of rank `rank` normalised over `axis`.
std::vector<std::int64_t> per_channel(const tf::Tensor& x, std::int64_t axis) {
  std::vector<std::int64_t> dims(static_cast<std::size_t>(x.rank()), 1);
  dims[static_cast<std::size_t>(axis)] = x.shape()[axis];
  return dims;
}

tf::Axes all_but(std::int64_t axis, int rank) {
  tf::Axes axes;
  for (std::int64_t a = 0; a < rank; ++a)
    if (a != axis) axes.push_back(a);
  return axes;
}

/// Batch normalization written with the elementwise ops and reductions (what the layer ran
/// before the fused op): y, mean, variance.
tf::nn::FusedBatchNormResult by_elementwise_ops(const tf::Tensor& x, const tf::Tensor& scale,
                                                const tf::Tensor& offset, double epsilon, std::int64_t axis) {
  const auto b = per_channel(x, axis);
  const tf::Axes others = all_but(axis, x.rank());
  const tf::Tensor mean = tf::reduce_mean(x, others, true);
  const tf::Tensor variance = tf::reduce_mean(tf::square(x - mean), others, true);
  const tf::Tensor y =
      (x - mean) * tf::rsqrt(variance + epsilon) * tf::reshape(scale, b) + tf::reshape(offset, b);
  return {y, tf::reshape(mean, {-1}), tf::reshape(variance, {-1})};
}

struct Layout {
  tf::Shape shape;
  std::int64_t axis;
};
// NHWC over its channels (inner 1), the channels in the middle (inner > 1), a matrix.
const Layout kLayouts[] = {{{4, 5, 6, 3}, -1}, {{3, 4, 5}, 1}, {{64, 7}, -1}};

/// A layout's normalised axis and channel count, and float64 x, scale and offset drawn with seeds
/// from `seed` on.
struct Sample {
  std::int64_t axis, channels;
  tf::Tensor x, scale, offset;
  Sample(const Layout& l, std::uint64_t seed)
      : axis(l.axis < 0 ? l.axis + l.shape.rank() : l.axis),
        channels(l.shape[axis]),
        x(tf::random::uniform(l.shape, -3, 5, tf::float64, seed)),
        scale(tf::random::uniform({channels}, 0.5, 2, tf::float64, seed + 1)),
        offset(tf::random::uniform({channels}, -1, 1, tf::float64, seed + 2)) {}
};

}  // namespace

TEST(FusedBatchNorm, NormalisesEachChannelWithTheBatchStatistics) {
  // Channel 0 holds 1, 3 (mean 2, biased variance 1), channel 1 holds 2, 6 (mean 4, variance 4).
  const tf::Tensor x = tf::constant({{1.f, 2.f}, {3.f, 6.f}});
  const auto r = tf::nn::fused_batch_norm(x, tf::constant({1.f, 2.f}), tf::constant({0.f, 10.f}), 1e-3);
  const float s0 = 1.f / std::sqrt(1.f + 1e-3f), s1 = 2.f / std::sqrt(4.f + 1e-3f);
  EXPECT_THAT(r.mean.to_vector<float>(), ElementsAre(2.f, 4.f));
  EXPECT_THAT(r.variance.to_vector<float>(), ElementsAre(1.f, 4.f));
  const auto y = r.y.to_vector<float>();
  EXPECT_NEAR(y[0], -s0, 1e-6);
  EXPECT_NEAR(y[1], 10.f - 2.f * s1, 1e-5);
  EXPECT_NEAR(y[2], s0, 1e-6);
  EXPECT_NEAR(y[3], 10.f + 2.f * s1, 1e-5);
}

TEST(FusedBatchNorm, Float32AgreesWithFloat64AndWithTheElementwiseOps) {
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(l.shape.to_string());
    const Sample d(l, 1);
    const tf::Tensor &x64 = d.x, &scale64 = d.scale, &offset64 = d.offset;
    const auto x = tf::cast(x64, tf::float32), scale = tf::cast(scale64, tf::float32),
               offset = tf::cast(offset64, tf::float32);
    const auto fused = tf::nn::fused_batch_norm(x, scale, offset, 1e-3, l.axis);
    const auto exact = tf::nn::fused_batch_norm(x64, scale64, offset64, 1e-3, l.axis);
    const auto ops = by_elementwise_ops(x64, scale64, offset64, 1e-3, d.axis);
    tf::testing::expect_close(exact.y, ops.y, 1e-12);
    tf::testing::expect_close(exact.mean, ops.mean, 1e-12);
    tf::testing::expect_close(exact.variance, ops.variance, 1e-12);
    tf::testing::expect_close(tf::cast(fused.y, tf::float64), exact.y, 1e-5);
    tf::testing::expect_close(tf::cast(fused.mean, tf::float64), exact.mean, 1e-5);
    tf::testing::expect_close(tf::cast(fused.variance, tf::float64), exact.variance, 1e-5);
  }
}

TEST(FusedBatchNorm, GradientsAgreeWithThoseOfTheElementwiseOpsInBothDtypes) {
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(l.shape.to_string());
    const Sample d(l, 4);
    const tf::Tensor &x = d.x, &scale = d.scale, &offset = d.offset;
    const std::int64_t axis = d.axis, c = d.channels;
    const tf::Tensor dy = tf::random::uniform(l.shape, -1, 1, tf::float64, 7);
    const tf::Tensor dmean = tf::random::uniform({c}, -1, 1, tf::float64, 8);
    const tf::Tensor dvariance = tf::random::uniform({c}, -1, 1, tf::float64, 9);
    // The three outputs weighted, so the statistics' own gradients count too.
    auto gradients = [&](auto f, tf::DType dtype) {
      const tf::Tensor xs = tf::cast(x, dtype), ss = tf::cast(scale, dtype), os = tf::cast(offset, dtype);
      tf::GradientTape tape;
      tape.watch(xs);
      tape.watch(ss);
      tape.watch(os);
      const tf::nn::FusedBatchNormResult r = f(xs, ss, os);
      const tf::Tensor loss = tf::reduce_sum(r.y * tf::cast(dy, dtype)) +
                              tf::reduce_sum(r.mean * tf::cast(dmean, dtype)) +
                              tf::reduce_sum(r.variance * tf::cast(dvariance, dtype));
      std::vector<tf::Tensor> g;
      for (const auto& gi : tape.gradient(loss, {xs, ss, os})) g.push_back(tf::cast(*gi, tf::float64));
      return g;
    };
    auto fused = [&](const tf::Tensor& a, const tf::Tensor& s, const tf::Tensor& o) {
      return tf::nn::fused_batch_norm(a, s, o, 1e-3, l.axis);
    };
    auto ops = [&](const tf::Tensor& a, const tf::Tensor& s, const tf::Tensor& o) {
      return by_elementwise_ops(a, s, o, 1e-3, axis);
    };
    const auto reference = gradients(ops, tf::float64);
    const auto exact = gradients(fused, tf::float64);
    const auto single = gradients(fused, tf::float32);
    for (std::size_t i = 0; i < 3; ++i) {
      tf::testing::expect_close(exact[i], reference[i], 1e-10);
      tf::testing::expect_close(single[i], reference[i], 2e-4);
    }
  }
}

TEST(FusedBatchNorm, GradientOpHasTheClosedForm) {
  // Two elements per channel: xhat = -1, 1 (up to epsilon); doffset = sum(dy), dscale =
  // sum(dy * xhat), dx = scale * rstd * (dy - doffset / 2 - xhat * dscale / 2).
  const tf::Tensor x = tf::constant({{1.0}, {3.0}}), dy = tf::constant({{0.5}, {2.0}});
  const tf::Tensor mean = tf::constant({2.0}), variance = tf::constant({1.0});
  const auto [dx, dscale, doffset] =
      tf::raw_ops::fused_batch_norm_grad(dy, x, tf::constant({3.0}), mean, variance, 1e-3);
  const double rstd = 1 / std::sqrt(1.001), xhat0 = -rstd, xhat1 = rstd;
  const double ds = 0.5 * xhat0 + 2.0 * xhat1, db = 2.5;
  EXPECT_NEAR(doffset.to_vector<double>()[0], db, 1e-12);
  EXPECT_NEAR(dscale.to_vector<double>()[0], ds, 1e-12);
  EXPECT_NEAR(dx.to_vector<double>()[0], 3 * rstd * (0.5 - db / 2 - xhat0 * ds / 2), 1e-12);
  EXPECT_NEAR(dx.to_vector<double>()[1], 3 * rstd * (2.0 - db / 2 - xhat1 * ds / 2), 1e-12);
}

TEST(FusedBatchNorm, NaNStaysInItsChannel) {
  for (const tf::DType dtype : {tf::float32, tf::float64}) {
    const tf::Tensor x =
        tf::cast(tf::constant({{1.0, std::numeric_limits<double>::quiet_NaN()}, {3.0, 4.0}}), dtype);
    const tf::Tensor ones = tf::cast(tf::constant({1.0, 1.0}), dtype);
    tf::GradientTape tape;
    tape.watch(x);
    const auto r = tf::nn::fused_batch_norm(x, ones, ones * 0.0);
    const auto y = tf::cast(r.y, tf::float64).to_vector<double>();
    EXPECT_TRUE(std::isfinite(y[0]) && std::isfinite(y[2]));
    EXPECT_TRUE(std::isnan(y[1]) && std::isnan(y[3]));
    const auto dx = tf::cast(*tape.gradient(r.y, x), tf::float64).to_vector<double>();
    EXPECT_TRUE(std::isfinite(dx[0]) && std::isfinite(dx[2]));
    EXPECT_TRUE(std::isnan(dx[1]) && std::isnan(dx[3]));
  }
}

TEST(FusedBatchNorm, NoChannelsGiveEmptyOutputs) {
  const auto r = tf::nn::fused_batch_norm(tf::zeros({4, 0}), tf::zeros({0}), tf::zeros({0}));
  EXPECT_EQ(r.y.shape(), (tf::Shape{4, 0}));
  EXPECT_EQ(r.mean.shape(), (tf::Shape{0}));
  EXPECT_EQ(r.variance.shape(), (tf::Shape{0}));
}

TEST(FusedBatchNorm, BFloat16IsRefusedByName) {
  const tf::Tensor x = tf::cast(tf::ones({4, 2}), tf::bfloat16), s = tf::cast(tf::ones({2}), tf::bfloat16);
  try {
    (void)tf::nn::fused_batch_norm(x, s, s);
    FAIL() << "bfloat16 was accepted";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[FusedBatchNorm]"));
    EXPECT_THAT(e.what(), HasSubstr("bfloat16"));
  }
}

TEST(FusedBatchNorm, TheLayerTrainsWithOneOpAndInfersWithTheMovingStatistics) {
  tf::layers::BatchNormalization bn;
  const tf::Tensor x = tf::random::uniform({8, 3, 3, 4}, -1, 1, tf::float32, 11);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = bn(x, /*training=*/true);
  EXPECT_THAT(tf::debug::explain(tape, y, x).path, ElementsAre("FusedBatchNorm"));
  // The moving statistics moved 1% of the way to the batch's.
  const auto batch = tf::nn::fused_batch_norm(x, tf::ones({4}), tf::zeros({4}));
  tf::testing::expect_close(bn.moving_mean().value(), batch.mean * 0.01, 1e-6);
  tf::testing::expect_close(bn.moving_variance().value(), batch.variance * 0.01 + 0.99, 1e-6);
}

TEST(FusedBatchNormInference, EqualsTheElementwiseFormulaInBothDtypes) {
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(l.shape.to_string());
    const Sample d(l, 21);
    const tf::Tensor &x = d.x, &scale = d.scale, &offset = d.offset;
    const std::int64_t c = d.channels;
    const auto b = per_channel(x, d.axis);
    const tf::Tensor mean = tf::random::uniform({c}, -1, 1, tf::float64, 24);
    const tf::Tensor variance = tf::random::uniform({c}, 0.1, 3, tf::float64, 25);
    const tf::Tensor formula =
        (x - tf::reshape(mean, b)) * tf::rsqrt(tf::reshape(variance, b) + 1e-3) * tf::reshape(scale, b) +
        tf::reshape(offset, b);
    tf::testing::expect_close(
        tf::nn::fused_batch_norm_inference(x, scale, offset, mean, variance, 1e-3, l.axis), formula, 1e-12);
    auto f32 = [](const tf::Tensor& t) { return tf::cast(t, tf::float32); };
    const tf::Tensor single = tf::nn::fused_batch_norm_inference(f32(x), f32(scale), f32(offset), f32(mean),
                                                                 f32(variance), 1e-3, l.axis);
    tf::testing::expect_close(tf::cast(single, tf::float64), formula, 1e-5);
  }
  // An empty batch normalises to nothing (no statistics to compute).
  EXPECT_EQ(tf::nn::fused_batch_norm_inference(tf::zeros({0, 2}), tf::ones({2}), tf::zeros({2}),
                                               tf::zeros({2}), tf::ones({2}))
                .shape(),
            (tf::Shape{0, 2}));
}

TEST(FusedBatchNormInference, TheLayerInfersWithOneOp) {
  tf::layers::BatchNormalization bn({.momentum = 0.5});
  const tf::Tensor x = tf::random::uniform({8, 3, 3, 4}, -1, 1, tf::float32, 12);
  (void)bn(x, /*training=*/true);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = bn(x);
  EXPECT_THAT(tf::debug::explain(tape, y, x).path, ElementsAre("FusedBatchNormInference"));
  const tf::Tensor expected = (x - bn.moving_mean().value()) * tf::rsqrt(bn.moving_variance().value() + 1e-3);
  tf::testing::expect_close(y, expected, 1e-5);
}

TEST(FusedBatchNorm, StatisticsAreSummedInDoubleAndIndependentOfTheThreadCount) {
  // Values near 100: a float32 running sum over 200,000 of them loses the mean's fourth decimal
  // (oneDNN's own training pass was 6e-4 off); tapeflow's summation keeps it to float32 rounding.
  const tf::Tensor x =
      tf::cast(tf::random::uniform({128, 28, 28, 2}, -1, 1, tf::float64, 31) + 100.0, tf::float32);
  const tf::Tensor ones = tf::ones({2}), zeros = tf::zeros({2});
  const auto exact = tf::nn::fused_batch_norm(tf::cast(x, tf::float64), tf::cast(ones, tf::float64),
                                              tf::cast(zeros, tf::float64));
  const int threads = tf::num_threads();
  tf::set_num_threads(1);
  const auto one = tf::nn::fused_batch_norm(x, ones, zeros);
  tf::set_num_threads(2);
  const auto two = tf::nn::fused_batch_norm(x, ones, zeros);
  tf::set_num_threads(threads);
  tf::testing::expect_close(tf::cast(one.mean, tf::float64), exact.mean, 1e-7);
  tf::testing::expect_close(tf::cast(one.variance, tf::float64), exact.variance, 1e-5);
  tf::testing::expect_close(tf::cast(one.y, tf::float64), exact.y, 2e-5);
  EXPECT_TRUE(tf::testing::bitwise_equal(one.mean, two.mean));
  EXPECT_TRUE(tf::testing::bitwise_equal(one.variance, two.variance));
}

TEST(FusedBatchNormGrad, SumsAreInDoubleAndIndependentOfTheThreadCount) {
  // 200,000 elements per channel: a float32 running sum of dy loses about 4 of its 7 digits (oneDNN's
  // backward pass gave the offset's gradient 3.3e-6 relative error); tapeflow's keeps float32's
  // rounding of the result.
  const tf::Shape s{128, 28, 28, 2};
  const tf::Tensor x = tf::cast(tf::random::uniform(s, -1, 1, tf::float64, 51) + 100.0, tf::float32);
  const tf::Tensor dy = tf::cast(tf::random::uniform(s, -1, 1, tf::float64, 52) + 0.5, tf::float32);
  const auto stats = tf::nn::fused_batch_norm(x, tf::ones({2}), tf::zeros({2}));
  const tf::Tensor scale = tf::constant({1.5f, -0.5f});
  auto grads = [&](tf::DType dtype) {
    const auto g =
        tf::raw_ops::fused_batch_norm_grad(tf::cast(dy, dtype), tf::cast(x, dtype), tf::cast(scale, dtype),
                                           tf::cast(stats.mean, dtype), tf::cast(stats.variance, dtype));
    return std::vector<tf::Tensor>{tf::cast(g[0], tf::float64), tf::cast(g[1], tf::float64),
                                   tf::cast(g[2], tf::float64)};
  };
  const auto exact = grads(tf::float64);
  const int threads = tf::num_threads();
  tf::set_num_threads(1);
  const auto one = grads(tf::float32);
  tf::set_num_threads(2);
  const auto two = grads(tf::float32);
  tf::set_num_threads(threads);
  tf::testing::expect_close(one[2], exact[2], 1e-7);  // doffset
  tf::testing::expect_close(one[1], exact[1], 1e-6);  // dscale, of the float32 statistics' xhat
  tf::testing::expect_close(one[0], exact[0], 1e-5);
  for (std::size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(tf::testing::bitwise_equal(one[i], two[i])) << "output " << i;
}

TEST(FusedBatchNorm, WideRowsAreSummedInWavesOfBoundedMemory) {
  // 200,000 channels: one row per chunk, two chunks per wave of partial results, five waves.
  const tf::Tensor x64 = tf::random::uniform({9, 200000}, -1, 1, tf::float64, 41) + 100.0;
  const tf::Tensor x = tf::cast(x64, tf::float32);
  const auto r = tf::nn::fused_batch_norm(x, tf::ones({200000}), tf::zeros({200000}));
  const tf::Tensor exact_mean = tf::reduce_mean(tf::cast(x, tf::float64), 0);
  const tf::Tensor exact_variance = tf::reduce_mean(tf::square(tf::cast(x, tf::float64) - exact_mean), 0);
  tf::testing::expect_close(tf::cast(r.mean, tf::float64), exact_mean, 1e-7);
  tf::testing::expect_close(tf::cast(r.variance, tf::float64), exact_variance, 1e-5);
}
