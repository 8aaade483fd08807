// FusedLayerNorm and FusedLayerNormGrad: values by hand, float32 against float64 and against the
// same formula written with elementwise ops, over the last axis, the last two and all of x; the
// statistics' own gradients; values far from zero; NaN; no rows; bfloat16 refused; sums
// independent of the thread count; the layer running one op. The op table (op_cases_nn.cpp)
// checks every gradient numerically, the second order included, eager and traced.

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

tf::Axes axes_from(std::int64_t first, int rank) {
  tf::Axes axes;
  for (std::int64_t a = first; a < rank; ++a) axes.push_back(a);
  return axes;
}

/// Layer normalization written with reductions and elementwise ops (what the layer runs for axes
/// that are not trailing): y, mean, rstd.
tf::nn::FusedLayerNormResult by_elementwise_ops(const tf::Tensor& x, const tf::Tensor& scale,
                                                const tf::Tensor& offset, double epsilon,
                                                std::int64_t begin_axis) {
  const tf::Axes normalised = axes_from(begin_axis, x.rank());
  const tf::Tensor mean = tf::reduce_mean(x, normalised, true);
  const tf::Tensor rstd = tf::rsqrt(tf::reduce_mean(tf::square(x - mean), normalised, true) + epsilon);
  return {(x - mean) * rstd * scale + offset, mean, rstd};
}

struct Layout {
  tf::Shape shape;
  std::int64_t begin_axis;  // normalised, >= 0
};
// (batch, steps, width) over the width; over the last two axes; a matrix as one row.
const Layout kLayouts[] = {{{4, 5, 24}, 2}, {{3, 4, 5}, 1}, {{6, 7}, 0}};

/// float64 x, scale and offset for a layout, drawn with seeds from `seed` on.
struct Sample {
  tf::Tensor x, scale, offset;
  Sample(const Layout& l, std::uint64_t seed)
      : x(tf::random::uniform(l.shape, -3, 5, tf::float64, seed)),
        scale(tf::random::uniform(params(l), 0.5, 2, tf::float64, seed + 1)),
        offset(tf::random::uniform(params(l), -1, 1, tf::float64, seed + 2)) {}
  static tf::Shape params(const Layout& l) {
    return tf::Shape(std::vector<std::int64_t>(l.shape.dims().begin() + l.begin_axis, l.shape.dims().end()));
  }
};

}  // namespace

TEST(FusedLayerNorm, NormalisesEachRowWithItsOwnStatistics) {
  // Row 0 holds 1, 3 (mean 2, biased variance 1), row 1 holds 2, 6 (mean 4, variance 4).
  const tf::Tensor x = tf::constant({{1.f, 3.f}, {2.f, 6.f}});
  const auto r = tf::nn::fused_layer_norm(x, tf::constant({1.f, 2.f}), tf::constant({0.f, 10.f}), 1e-3);
  const float s0 = 1.f / std::sqrt(1.f + 1e-3f), s1 = 1.f / std::sqrt(4.f + 1e-3f);
  EXPECT_EQ(r.mean.shape(), (tf::Shape{2, 1}));
  EXPECT_THAT(r.mean.to_vector<float>(), ElementsAre(2.f, 4.f));
  EXPECT_NEAR(r.rstd.to_vector<float>()[0], s0, 1e-7);
  EXPECT_NEAR(r.rstd.to_vector<float>()[1], s1, 1e-7);
  const auto y = r.y.to_vector<float>();
  EXPECT_NEAR(y[0], -s0, 1e-6);
  EXPECT_NEAR(y[1], 10.f + 2.f * s0, 1e-5);
  EXPECT_NEAR(y[2], -2.f * s1, 1e-6);
  EXPECT_NEAR(y[3], 10.f + 2.f * 2.f * s1, 1e-5);
}

TEST(FusedLayerNorm, Float32AgreesWithFloat64AndWithTheElementwiseOps) {
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(l.shape.to_string());
    const Sample d(l, 1);
    const auto fused = tf::nn::fused_layer_norm(tf::cast(d.x, tf::float32), tf::cast(d.scale, tf::float32),
                                                tf::cast(d.offset, tf::float32), 1e-3, l.begin_axis);
    const auto exact = tf::nn::fused_layer_norm(d.x, d.scale, d.offset, 1e-3, l.begin_axis);
    const auto ops = by_elementwise_ops(d.x, d.scale, d.offset, 1e-3, l.begin_axis);
    tf::testing::expect_close(exact.y, ops.y, 1e-12);
    tf::testing::expect_close(exact.mean, ops.mean, 1e-12);
    tf::testing::expect_close(exact.rstd, ops.rstd, 1e-12);
    tf::testing::expect_close(tf::cast(fused.y, tf::float64), exact.y, 1e-5);
    tf::testing::expect_close(tf::cast(fused.mean, tf::float64), exact.mean, 1e-6);
    tf::testing::expect_close(tf::cast(fused.rstd, tf::float64), exact.rstd, 1e-6);
  }
}

TEST(FusedLayerNorm, GradientsAgreeWithThoseOfTheElementwiseOpsInBothDtypes) {
  for (const Layout& l : kLayouts) {
    SCOPED_TRACE(l.shape.to_string());
    const Sample d(l, 4);
    const tf::Tensor dy = tf::random::uniform(l.shape, -1, 1, tf::float64, 7);
    const tf::Shape stats = tf::nn::fused_layer_norm(d.x, d.scale, d.offset, 1e-3, l.begin_axis).mean.shape();
    const tf::Tensor dmean = tf::random::uniform(stats, -1, 1, tf::float64, 8);
    const tf::Tensor drstd = tf::random::uniform(stats, -1, 1, tf::float64, 9);
    // The three outputs weighted, so the statistics' own gradients count too.
    auto gradients = [&](auto f, tf::DType dtype) {
      const tf::Tensor xs = tf::cast(d.x, dtype), ss = tf::cast(d.scale, dtype),
                       os = tf::cast(d.offset, dtype);
      tf::GradientTape tape;
      tape.watch(xs);
      tape.watch(ss);
      tape.watch(os);
      const tf::nn::FusedLayerNormResult r = f(xs, ss, os);
      const tf::Tensor loss = tf::reduce_sum(r.y * tf::cast(dy, dtype)) +
                              tf::reduce_sum(r.mean * tf::cast(dmean, dtype)) +
                              tf::reduce_sum(r.rstd * tf::cast(drstd, dtype));
      std::vector<tf::Tensor> g;
      for (const auto& gi : tape.gradient(loss, {xs, ss, os})) g.push_back(tf::cast(*gi, tf::float64));
      return g;
    };
    auto fused = [&](const tf::Tensor& a, const tf::Tensor& s, const tf::Tensor& o) {
      return tf::nn::fused_layer_norm(a, s, o, 1e-3, l.begin_axis);
    };
    auto ops = [&](const tf::Tensor& a, const tf::Tensor& s, const tf::Tensor& o) {
      return by_elementwise_ops(a, s, o, 1e-3, l.begin_axis);
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

TEST(FusedLayerNormGrad, HasTheClosedForm) {
  // One row of two: xhat = -r, r with r = 1 / sqrt(1 + epsilon); g = dy * scale;
  // dx = r * (g - mean(g) - xhat * mean(g * xhat)), dscale = dy * xhat, doffset = dy.
  const tf::Tensor x = tf::constant({{1.0, 3.0}}), dy = tf::constant({{0.5, 2.0}});
  const tf::Tensor scale = tf::constant({3.0, -1.0});
  const tf::Tensor mean = tf::constant({{2.0}}), rstd = tf::constant({{1 / std::sqrt(1.001)}});
  const auto [dx, dscale, doffset] = tf::raw_ops::fused_layer_norm_grad(dy, x, scale, mean, rstd, 1e-3);
  const double r = 1 / std::sqrt(1.001), xhat0 = -r, xhat1 = r, g0 = 1.5, g1 = -2.0;
  const double mean_g = (g0 + g1) / 2, mean_g_xhat = (g0 * xhat0 + g1 * xhat1) / 2;
  EXPECT_THAT(doffset.to_vector<double>(), ElementsAre(0.5, 2.0));
  EXPECT_NEAR(dscale.to_vector<double>()[0], 0.5 * xhat0, 1e-12);
  EXPECT_NEAR(dscale.to_vector<double>()[1], 2.0 * xhat1, 1e-12);
  EXPECT_NEAR(dx.to_vector<double>()[0], r * (g0 - mean_g - xhat0 * mean_g_xhat), 1e-12);
  EXPECT_NEAR(dx.to_vector<double>()[1], r * (g1 - mean_g - xhat1 * mean_g_xhat), 1e-12);
}

TEST(FusedLayerNorm, RowsFarFromZeroKeepTheirDigits) {
  // Rows of 256 values near 1000 with a spread of 1: the statistics come from two passes in
  // double, and the backward pass's mean(g * xhat) from sums of g and g * x in double, which
  // cancel by a factor of about 1000, far inside double's margin over float32.
  const tf::Shape s{64, 256};
  const tf::Tensor x64 = tf::random::uniform(s, -1, 1, tf::float64, 21) + 1000.0;
  const tf::Tensor dy64 = tf::random::uniform(s, -1, 1, tf::float64, 22);
  const tf::Tensor scale64 = tf::random::uniform({256}, 0.5, 2, tf::float64, 23);
  const tf::Tensor x = tf::cast(x64, tf::float32), dy = tf::cast(dy64, tf::float32);
  const tf::Tensor scale = tf::cast(scale64, tf::float32);
  const auto r = tf::nn::fused_layer_norm(x, scale, tf::zeros({256}));
  const auto exact = by_elementwise_ops(tf::cast(x, tf::float64), tf::cast(scale, tf::float64),
                                        tf::zeros({256}, tf::float64), 1e-3, 1);
  tf::testing::expect_close(tf::cast(r.rstd, tf::float64), exact.rstd, 1e-6);
  tf::testing::expect_close(tf::cast(r.y, tf::float64), exact.y, 1e-4);
  const auto g = tf::raw_ops::fused_layer_norm_grad(dy, x, scale, r.mean, r.rstd);
  const auto g64 = tf::raw_ops::fused_layer_norm_grad(
      tf::cast(dy, tf::float64), tf::cast(x, tf::float64), tf::cast(scale, tf::float64),
      tf::cast(r.mean, tf::float64), tf::cast(r.rstd, tf::float64));
  for (std::size_t i = 0; i < 3; ++i) tf::testing::expect_close(tf::cast(g[i], tf::float64), g64[i], 1e-5);
}

TEST(FusedLayerNorm, NaNStaysInItsRow) {
  for (const tf::DType dtype : {tf::float32, tf::float64}) {
    const tf::Tensor x =
        tf::cast(tf::constant({{1.0, std::numeric_limits<double>::quiet_NaN()}, {3.0, 4.0}}), dtype);
    const tf::Tensor ones = tf::cast(tf::constant({1.0, 1.0}), dtype);
    tf::GradientTape tape;
    tape.watch(x);
    const auto r = tf::nn::fused_layer_norm(x, ones, ones * 0.0);
    const auto y = tf::cast(r.y, tf::float64).to_vector<double>();
    EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
    EXPECT_TRUE(std::isfinite(y[2]) && std::isfinite(y[3]));
    const auto dx = tf::cast(*tape.gradient(r.y, x), tf::float64).to_vector<double>();
    EXPECT_TRUE(std::isnan(dx[0]) && std::isnan(dx[1]));
    EXPECT_TRUE(std::isfinite(dx[2]) && std::isfinite(dx[3]));
  }
}

TEST(FusedLayerNorm, NoRowsGiveEmptyOutputsAndGradients) {
  const tf::Tensor x = tf::zeros({0, 3});
  tf::GradientTape tape;
  tape.watch(x);
  const auto r = tf::nn::fused_layer_norm(x, tf::ones({3}), tf::zeros({3}));
  EXPECT_EQ(r.y.shape(), (tf::Shape{0, 3}));
  EXPECT_EQ(r.mean.shape(), (tf::Shape{0, 1}));
  EXPECT_EQ(r.rstd.shape(), (tf::Shape{0, 1}));
  EXPECT_EQ(tape.gradient(r.y, x)->shape(), (tf::Shape{0, 3}));
}

TEST(FusedLayerNorm, BFloat16IsRefusedByName) {
  const tf::Tensor x = tf::cast(tf::ones({4, 2}), tf::bfloat16), s = tf::cast(tf::ones({2}), tf::bfloat16);
  try {
    (void)tf::nn::fused_layer_norm(x, s, s);
    FAIL() << "bfloat16 was accepted";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[FusedLayerNorm]"));
    EXPECT_THAT(e.what(), HasSubstr("bfloat16"));
  }
}

TEST(FusedLayerNorm, ResultsAndGradientsAreIndependentOfTheThreadCount) {
  // 4,099 rows: chunks of 256 rows, a tail of 3 rows (the backward pass takes rows four at a time).
  const tf::Shape s{4099, 256};
  const tf::Tensor x = tf::random::uniform(s, -1, 1, tf::float32, 31);
  const tf::Tensor dy = tf::random::uniform(s, -1, 1, tf::float32, 32);
  const tf::Tensor scale = tf::random::uniform({256}, 0.5, 2, tf::float32, 33);
  auto run = [&](int threads) {
    const int before = tf::num_threads();
    tf::set_num_threads(threads);
    const auto r = tf::nn::fused_layer_norm(x, scale, tf::zeros({256}));
    const auto g = tf::raw_ops::fused_layer_norm_grad(dy, x, scale, r.mean, r.rstd);
    tf::set_num_threads(before);
    return std::vector<tf::Tensor>{r.y, r.mean, r.rstd, g[0], g[1], g[2]};
  };
  const auto one = run(1), two = run(2);
  for (std::size_t i = 0; i < one.size(); ++i) EXPECT_TRUE(tf::testing::bitwise_equal(one[i], two[i])) << i;
  // The column sums against float64 over all 4,099 rows.
  const auto exact = tf::raw_ops::fused_layer_norm_grad(
      tf::cast(dy, tf::float64), tf::cast(x, tf::float64), tf::cast(scale, tf::float64),
      tf::cast(one[1], tf::float64), tf::cast(one[2], tf::float64));
  tf::testing::expect_close(tf::cast(one[5], tf::float64), exact[2], 1e-6);
  tf::testing::expect_close(tf::cast(one[4], tf::float64), exact[1], 1e-5);
}

TEST(FusedLayerNorm, TheLayerRunsOneOpOverTrailingAxesAndTheFormulaOtherwise) {
  const tf::Tensor x = tf::random::uniform({2, 3, 4}, -1, 1, tf::float32, 41);
  tf::layers::LayerNormalization last, middle({.axis = {1}});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = last(x);
  EXPECT_THAT(tf::debug::explain(tape, y, x).path, ElementsAre("FusedLayerNorm"));
  const tf::Tensor z = middle(x);
  EXPECT_GT(tf::debug::explain(tape, z, x).path.size(), 1u);
  const auto expected = by_elementwise_ops(x, tf::ones({4}), tf::zeros({4}), 1e-3, 2);
  tf::testing::expect_close(y, expected.y, 1e-6);
}
