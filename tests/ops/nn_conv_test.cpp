// Convolution and pooling: values against a direct float64 reference loop (both paddings,
// strides 1 to 3, 1x1 / 3x3 / even and non-square kernels and kernels larger than the image,
// several channels and images), the gradient ops against the reference's adjoints, each in
// float64 (im2col + GEMM) and float32 (oneDNN), empty tensors, errors, and pooling values and
// gradients by hand. The op table (op_cases_nn.cpp) checks every gradient numerically.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <string>

#include "kernels/cpu/onednn.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

namespace {

/// A case of the reference tests: input (n, h, w, c), filters (kh, kw, c, oc).
struct ConvCase {
  std::int64_t n, h, w, c, kh, kw, oc, sh, sw;
  bool same;
  std::int64_t dh = 1, dw = 1, groups = 1;
};

/// Output size and leading padding of one dimension, written out from TensorFlow's documentation.
std::pair<std::int64_t, std::int64_t> out_and_pad(std::int64_t in, std::int64_t k, std::int64_t s,
                                                  bool same) {
  if (!same) return {(in - k + s) / s, 0};  // ceil((in - k + 1) / s)
  const std::int64_t out = (in + s - 1) / s;
  const std::int64_t pad_total = std::max<std::int64_t>((out - 1) * s + k - in, 0);
  return {out, pad_total / 2};
}

/// Deterministic, non-symmetric values.
std::vector<double> pattern(std::int64_t size, double phase) {
  std::vector<double> v(static_cast<std::size_t>(size));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = std::sin(0.37 * static_cast<double>(i) + phase);
  return v;
}

/// The convolution geometry of a case, and index helpers for the reference loops.
struct Ref {
  ConvCase k;
  std::int64_t oh, ow, pt, pl;
  std::int64_t cg;  // input channels per group: the filters' in_channels
  explicit Ref(const ConvCase& c) : k(c), cg(c.c / c.groups) {
    std::tie(oh, pt) = out_and_pad(c.h, (c.kh - 1) * c.dh + 1, c.sh, c.same);
    std::tie(ow, pl) = out_and_pad(c.w, (c.kw - 1) * c.dw + 1, c.sw, c.same);
  }
  std::size_t xi(std::int64_t b, std::int64_t y, std::int64_t x, std::int64_t ci) const {
    return static_cast<std::size_t>(((b * k.h + y) * k.w + x) * k.c + ci);
  }
  /// ci: the filters' in-channel (within the group).
  std::size_t fi(std::int64_t dy, std::int64_t dx, std::int64_t ci, std::int64_t o) const {
    return static_cast<std::size_t>(((dy * k.kw + dx) * cg + ci) * k.oc + o);
  }
  std::size_t yi(std::int64_t b, std::int64_t y, std::int64_t x, std::int64_t o) const {
    return static_cast<std::size_t>(((b * oh + y) * ow + x) * k.oc + o);
  }
  /// Calls f(x index, filter index, output index) for every term of the convolution sum.
  template <class F>
  void terms(F f) const {
    for (std::int64_t b = 0; b < k.n; ++b)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t x = 0; x < ow; ++x)
          for (std::int64_t dy = 0; dy < k.kh; ++dy)
            for (std::int64_t dx = 0; dx < k.kw; ++dx) {
              const std::int64_t iy = y * k.sh + dy * k.dh - pt, ix = x * k.sw + dx * k.dw - pl;
              if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
              // Group g convolves input channels [g * cg, (g + 1) * cg) into out_channels
              // [g * og, (g + 1) * og).
              const std::int64_t og = k.oc / k.groups;
              for (std::int64_t ci = 0; ci < k.c; ++ci)
                for (std::int64_t o = (ci / cg) * og; o < (ci / cg + 1) * og; ++o)
                  f(xi(b, iy, ix, ci), fi(dy, dx, ci % cg, o), yi(b, y, x, o));
            }
  }
  tf::Shape in_shape() const { return {k.n, k.h, k.w, k.c}; }
  tf::Shape filter_shape() const { return {k.kh, k.kw, cg, k.oc}; }
  tf::Shape out_shape() const { return {k.n, oh, ow, k.oc}; }
  std::vector<std::int64_t> strides() const { return {k.sh, k.sw}; }
  std::vector<std::int64_t> dilations() const { return {k.dh, k.dw}; }
  std::string padding() const { return k.same ? "SAME" : "VALID"; }
};

const std::vector<ConvCase> kCases = {
    {1, 4, 4, 1, 1, 1, 1, 1, 1, false},             // 1x1, the pointwise (no im2col) path
    {2, 5, 4, 3, 1, 1, 2, 1, 1, true},              // 1x1 SAME = VALID, several images and channels
    {2, 5, 5, 3, 1, 1, 2, 2, 2, true},              // 1x1 with stride 2 (im2col path)
    {1, 5, 5, 2, 3, 3, 3, 1, 1, false},             // 3x3 VALID
    {2, 5, 5, 2, 3, 3, 3, 1, 1, true},              // 3x3 SAME
    {2, 6, 7, 2, 3, 3, 4, 2, 2, true},              // 3x3 SAME stride 2, odd/even sizes
    {3, 7, 6, 3, 3, 3, 2, 2, 2, false},             // 3x3 VALID stride 2
    {1, 6, 6, 2, 2, 2, 2, 1, 1, true},              // even kernel: padding only after
    {2, 5, 7, 2, 2, 3, 3, 2, 1, true},              // non-square kernel, different strides
    {1, 3, 3, 1, 3, 3, 1, 1, 1, false},             // kernel = input: one output
    {1, 2, 3, 2, 5, 5, 3, 1, 1, true},              // kernel larger than the image, SAME
    {2, 7, 8, 3, 2, 2, 5, 3, 3, false},             // stride larger than the kernel: rows skipped
    {4, 9, 9, 16, 3, 3, 24, 1, 1, true},            // enough channels for oneDNN's blocked kernels
    {2, 7, 7, 2, 3, 3, 3, 1, 1, true, 2, 2},        // dilation 2, SAME
    {1, 9, 8, 2, 3, 2, 2, 2, 1, false, 2, 3},       // dilations (2, 3) with strides, VALID
    {2, 5, 5, 4, 3, 3, 6, 1, 1, true, 1, 1, 2},     // 2 groups
    {2, 6, 6, 3, 3, 3, 3, 2, 2, true, 1, 1, 3},     // depthwise: a group per channel
    {1, 7, 7, 4, 2, 2, 8, 1, 1, false, 2, 2, 4},    // depthwise, 2 filters per channel, dilated
    {2, 6, 6, 32, 3, 3, 64, 1, 1, true, 1, 1, 32},  // depthwise with oneDNN's blocked channels
};

/// The dtypes the convolution has a kernel for, with the tolerance of a sum of a few hundred
/// products of values in [-1, 1].
struct DTypeCase {
  tf::DType dtype;
  double tolerance;
};
const std::vector<DTypeCase> kDTypes = {{tf::DType::Float64, 1e-12}, {tf::DType::Float32, 2e-5}};

tf::Tensor make(const std::vector<double>& v, const tf::Shape& s, tf::DType dtype) {
  return tf::cast(tf::constant(v, s), dtype);
}
std::vector<double> values_of(const tf::Tensor& t) {
  return tf::cast(t, tf::DType::Float64).to_vector<double>();
}

std::string label(const ConvCase& c) {
  auto d = [](std::int64_t v) { return std::to_string(v); };
  return "input (" + d(c.n) + ", " + d(c.h) + ", " + d(c.w) + ", " + d(c.c) + ") filters (" + d(c.kh) + ", " +
         d(c.kw) + ", " + d(c.c) + ", " + d(c.oc) + ") strides (" + d(c.sh) + ", " + d(c.sw) + ") " +
         (c.same ? "SAME" : "VALID") + " dilations (" + d(c.dh) + ", " + d(c.dw) + ") groups " + d(c.groups);
}

/// Equal within `tol`, relative to the value where it exceeds 1.
void expect_near(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at flat index " << i;
}

// ---- conv2d values ---------------------------------------------------------------------------------

TEST(Conv2D, MatchesTheReferenceLoop) {
  for (const DTypeCase& d : kDTypes)
    for (const ConvCase& c : kCases) {
      SCOPED_TRACE(label(c) + " " + std::string(tf::dtype_name(d.dtype)));
      const Ref r(c);
      const auto xv = pattern(r.in_shape().num_elements(), 0.1),
                 fv = pattern(r.filter_shape().num_elements(), 1.3);
      std::vector<double> want(static_cast<std::size_t>(r.out_shape().num_elements()), 0.0);
      r.terms([&](std::size_t xi, std::size_t fi, std::size_t yi) { want[yi] += xv[xi] * fv[fi]; });
      const tf::Tensor y =
          tf::nn::conv2d(make(xv, r.in_shape(), d.dtype), make(fv, r.filter_shape(), d.dtype), r.strides(),
                         r.padding(), r.dilations());
      EXPECT_EQ(y.shape(), r.out_shape());
      EXPECT_EQ(y.dtype(), d.dtype);
      expect_near(values_of(y), want, d.tolerance);
    }
}

TEST(Conv2D, SamePaddingByHand) {
  // 3x3 ones filter over a 3x3 image with SAME padding: each output sums its 3x3 neighbourhood.
  const tf::Tensor x = tf::constant(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1});
  const tf::Tensor f = tf::constant(std::vector<double>(9, 1.0), {3, 3, 1, 1});
  EXPECT_THAT(tf::nn::conv2d(x, f, {1, 1}, "SAME").to_vector<double>(),
              ElementsAre(12, 21, 16, 27, 45, 33, 24, 39, 28));
  EXPECT_THAT(tf::nn::conv2d(x, f, {1, 1}, "VALID").to_vector<double>(), ElementsAre(45));
}

TEST(Conv2D, StridesAcceptOneOrFourValuesLikeTensorFlow) {
  const ConvCase c{1, 6, 6, 2, 3, 3, 2, 2, 2, true};
  const Ref r(c);
  const tf::Tensor x = tf::constant(pattern(r.in_shape().num_elements(), 0.2), r.in_shape());
  const tf::Tensor f = tf::constant(pattern(r.filter_shape().num_elements(), 0.9), r.filter_shape());
  const auto want = tf::nn::conv2d(x, f, {2, 2}, "SAME").to_vector<double>();
  EXPECT_EQ(tf::nn::conv2d(x, f, {2}, "SAME").to_vector<double>(), want);
  EXPECT_EQ(tf::nn::conv2d(x, f, {1, 2, 2, 1}, "SAME").to_vector<double>(), want);
}

TEST(Conv2D, EmptyBatchGivesAnEmptyOutput) {
  const tf::Tensor x = tf::zeros({0, 5, 5, 2}, tf::DType::Float64);
  const tf::Tensor f = tf::ones({3, 3, 2, 4}, tf::DType::Float64);
  EXPECT_EQ(tf::nn::conv2d(x, f, {1, 1}, "SAME").shape(), tf::Shape({0, 5, 5, 4}));
  EXPECT_EQ(tf::nn::conv2d(x, f, {2, 2}, "VALID").shape(), tf::Shape({0, 2, 2, 4}));
}

TEST(Conv2D, EmptySpatialOrChannelDimensionsGiveEmptyOrZeroOutputs) {
  const tf::Tensor f = tf::ones({3, 3, 2, 4}, tf::DType::Float32);
  EXPECT_EQ(tf::nn::conv2d(tf::zeros({1, 0, 5, 2}), f, {2, 2}, "SAME").shape(), tf::Shape({1, 0, 3, 4}));
  EXPECT_EQ(tf::nn::conv2d(tf::zeros({1, 0, 5, 2}), f, {1, 1}, "VALID").shape(), tf::Shape({1, 0, 3, 4}));
  EXPECT_EQ(tf::nn::conv2d(tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2, 0}), {1, 1}, "VALID").shape(),
            tf::Shape({1, 2, 2, 0}));
  // No input channels: every output is an empty sum.
  EXPECT_THAT(
      tf::nn::conv2d(tf::ones({1, 2, 2, 0}), tf::ones({1, 1, 0, 2}), {1, 1}, "VALID").to_vector<float>(),
      ElementsAre(0, 0, 0, 0, 0, 0, 0, 0));
}

TEST(Conv2D, GradientOfAnEmptyBatchIsEmptyAndTheFilterGradientZero) {
  for (const DTypeCase& d : kDTypes) {
    const tf::Tensor x = tf::zeros({0, 4, 4, 2}, d.dtype);
    const tf::Tensor f = tf::ones({3, 3, 2, 3}, d.dtype);
    tf::GradientTape tape;
    tape.watch(x);
    tape.watch(f);
    const tf::Tensor y = tf::reduce_sum(tf::nn::conv2d(x, f, {1, 1}, "SAME"));
    const auto g = tape.gradient(y, {x, f});
    EXPECT_EQ(g[0]->shape(), x.shape());
    EXPECT_EQ(g[1]->shape(), f.shape());
    EXPECT_THAT(values_of(*g[1]), ::testing::Each(0.0));
  }
}

TEST(Conv2DBackpropInput, NoOutputChannelsGiveAZeroGradient) {
  // dy (1, 2, 2, 0): the input gradient sums over no output channels.
  const tf::Tensor dx = tf::raw_ops::conv2d_backprop_input({1, 4, 4, 2}, tf::ones({3, 3, 2, 0}),
                                                           tf::ones({1, 2, 2, 0}), {1, 1}, "VALID");
  EXPECT_EQ(dx.shape(), tf::Shape({1, 4, 4, 2}));
  EXPECT_THAT(dx.to_vector<float>(), ::testing::Each(0.0f));
}

// ---- the gradient ops against the reference's adjoints --------------------------------------------

TEST(Conv2DBackpropInput, MatchesTheReferenceAdjoint) {
  for (const DTypeCase& d : kDTypes)
    for (const ConvCase& c : kCases) {
      SCOPED_TRACE(label(c) + " " + std::string(tf::dtype_name(d.dtype)));
      const Ref r(c);
      const auto fv = pattern(r.filter_shape().num_elements(), 1.3),
                 dyv = pattern(r.out_shape().num_elements(), 0.4);
      std::vector<double> want(static_cast<std::size_t>(r.in_shape().num_elements()), 0.0);
      r.terms([&](std::size_t xi, std::size_t fi, std::size_t yi) { want[xi] += dyv[yi] * fv[fi]; });
      const tf::Tensor dx = tf::raw_ops::conv2d_backprop_input(
          r.in_shape(), make(fv, r.filter_shape(), d.dtype), make(dyv, r.out_shape(), d.dtype), r.strides(),
          r.padding(), r.dilations());
      EXPECT_EQ(dx.shape(), r.in_shape());
      expect_near(values_of(dx), want, d.tolerance);
    }
}

TEST(Conv2DBackpropFilter, MatchesTheReferenceAdjoint) {
  for (const DTypeCase& d : kDTypes)
    for (const ConvCase& c : kCases) {
      SCOPED_TRACE(label(c) + " " + std::string(tf::dtype_name(d.dtype)));
      const Ref r(c);
      const auto xv = pattern(r.in_shape().num_elements(), 0.1),
                 dyv = pattern(r.out_shape().num_elements(), 0.4);
      std::vector<double> want(static_cast<std::size_t>(r.filter_shape().num_elements()), 0.0);
      r.terms([&](std::size_t xi, std::size_t fi, std::size_t yi) { want[fi] += dyv[yi] * xv[xi]; });
      const tf::Tensor df = tf::raw_ops::conv2d_backprop_filter(
          make(xv, r.in_shape(), d.dtype), r.filter_shape(), make(dyv, r.out_shape(), d.dtype), r.strides(),
          r.padding(), r.dilations());
      EXPECT_EQ(df.shape(), r.filter_shape());
      expect_near(values_of(df), want, d.tolerance);
    }
}

TEST(Conv2D, TapeGradientsAreTheBackpropOps) {
  const ConvCase c{2, 5, 5, 2, 3, 3, 3, 2, 2, true};
  const Ref r(c);
  const tf::Tensor x = tf::constant(pattern(r.in_shape().num_elements(), 0.1), r.in_shape());
  const tf::Tensor f = tf::constant(pattern(r.filter_shape().num_elements(), 1.3), r.filter_shape());
  const tf::Tensor dy = tf::constant(pattern(r.out_shape().num_elements(), 0.4), r.out_shape());
  tf::GradientTape tape;
  tape.watch(x);
  tape.watch(f);
  const tf::Tensor y = tf::nn::conv2d(x, f, {2, 2}, "SAME");
  const auto g = tape.gradient(y, {x, f}, {dy});
  EXPECT_EQ(g[0]->to_vector<double>(),
            tf::raw_ops::conv2d_backprop_input(x.shape(), f, dy, {2, 2}, "SAME").to_vector<double>());
  EXPECT_EQ(g[1]->to_vector<double>(),
            tf::raw_ops::conv2d_backprop_filter(x, f.shape(), dy, {2, 2}, "SAME").to_vector<double>());
}

TEST(Conv2DBackpropInput, GradientWithRespectToOutBackpropIsConv2D) {
  // BackpropInput is linear in out_backprop with adjoint conv2d: the gradient of
  // sum(ddx * backprop_input(W, dy)) with respect to dy is conv2d(ddx, W).
  const ConvCase c{1, 5, 5, 2, 3, 3, 2, 2, 2, true};
  const Ref r(c);
  const tf::Tensor f = tf::constant(pattern(r.filter_shape().num_elements(), 1.3), r.filter_shape());
  const tf::Tensor dy = tf::constant(pattern(r.out_shape().num_elements(), 0.4), r.out_shape());
  const tf::Tensor ddx = tf::constant(pattern(r.in_shape().num_elements(), 2.0), r.in_shape());
  tf::GradientTape tape;
  tape.watch(dy);
  const tf::Tensor dx = tf::raw_ops::conv2d_backprop_input(r.in_shape(), f, dy, {2, 2}, "SAME");
  const tf::Tensor g = *tape.gradient(dx, dy, {ddx});
  expect_near(g.to_vector<double>(), tf::nn::conv2d(ddx, f, {2, 2}, "SAME").to_vector<double>(), 1e-12);
}

TEST(Conv2D, SecondDerivativeThroughNestedTapes) {
  // L = sum(conv2d(x, W)^2) / 2: dL/dx = BackpropInput(W, y); d/dW of sum(dL/dx * v) must match
  // central differences.
  const ConvCase c{1, 4, 4, 2, 3, 3, 2, 1, 1, true};
  const Ref r(c);
  const tf::Tensor x = tf::constant(pattern(r.in_shape().num_elements(), 0.1), r.in_shape());
  const auto fv = pattern(r.filter_shape().num_elements(), 1.3);
  const tf::Tensor v = tf::constant(pattern(r.in_shape().num_elements(), 0.7), r.in_shape());
  auto inner = [&](const tf::Tensor& f) {
    tf::GradientTape t;
    t.watch(x);
    const tf::Tensor y = tf::nn::conv2d(x, f, {1, 1}, "SAME");
    const tf::Tensor loss = tf::reduce_sum(y * y) * 0.5;
    return tf::reduce_sum(*t.gradient(loss, x) * v);
  };
  const tf::Tensor f = tf::constant(fv, r.filter_shape());
  tf::GradientTape outer;
  outer.watch(f);
  const tf::Tensor s = inner(f);
  const auto g = outer.gradient(s, f)->to_vector<double>();
  const double eps = 1e-6;
  for (std::size_t i : {std::size_t{0}, std::size_t{7}, std::size_t{20}, fv.size() - 1}) {
    auto fp = fv, fm = fv;
    fp[i] += eps;
    fm[i] -= eps;
    const double num = (inner(tf::constant(fp, r.filter_shape())).to_vector<double>()[0] -
                        inner(tf::constant(fm, r.filter_shape())).to_vector<double>()[0]) /
                       (2 * eps);
    EXPECT_NEAR(g[i], num, 1e-6) << "filter element " << i;
  }
}

// ---- conv2d + bias (+ relu) as one op ---------------------------------------------------------------

TEST(FusedConv2D, EqualsConv2DThenBiasThenActivation) {
  for (const DTypeCase& d : kDTypes)
    for (const ConvCase& c : kCases)
      for (const std::string activation : {"linear", "relu"}) {
        SCOPED_TRACE(label(c) + " " + std::string(tf::dtype_name(d.dtype)) + " " + activation);
        const Ref r(c);
        const tf::Tensor x = make(pattern(r.in_shape().num_elements(), 0.1), r.in_shape(), d.dtype);
        const tf::Tensor f = make(pattern(r.filter_shape().num_elements(), 1.3), r.filter_shape(), d.dtype);
        const tf::Tensor b = make(pattern(c.oc, 2.2), {c.oc}, d.dtype);
        tf::Tensor want = tf::nn::conv2d(x, f, r.strides(), r.padding(), r.dilations()) + b;
        if (activation == "relu") want = tf::nn::relu(want);
        const tf::Tensor y =
            tf::nn::conv2d_bias_activation(x, f, b, r.strides(), r.padding(), activation, r.dilations());
        EXPECT_EQ(y.shape(), r.out_shape());
        expect_near(values_of(y), values_of(want), d.tolerance);
      }
}

TEST(FusedConv2D, GradientsEqualThoseOfTheThreeOps) {
  for (const DTypeCase& d : kDTypes) {
    SCOPED_TRACE(std::string(tf::dtype_name(d.dtype)));
    const Ref r({2, 6, 7, 3, 3, 3, 4, 2, 1, true});
    const tf::Tensor x = make(pattern(r.in_shape().num_elements(), 0.1), r.in_shape(), d.dtype);
    const tf::Tensor f = make(pattern(r.filter_shape().num_elements(), 1.3), r.filter_shape(), d.dtype);
    const tf::Tensor b = make(pattern(4, 2.2), {4}, d.dtype);
    const tf::Tensor dy = make(pattern(r.out_shape().num_elements(), 0.4), r.out_shape(), d.dtype);
    auto grads = [&](bool fused) {
      tf::GradientTape tape;
      for (const tf::Tensor& t : {x, f, b}) tape.watch(t);
      const tf::Tensor y = fused ? tf::nn::conv2d_bias_activation(x, f, b, r.strides(), r.padding(), "relu")
                                 : tf::nn::relu(tf::nn::conv2d(x, f, r.strides(), r.padding()) + b);
      return tape.gradient(y, {x, f, b}, {dy});
    };
    const auto fused = grads(true), unfused = grads(false);
    for (std::size_t i = 0; i < 3; ++i)
      expect_near(values_of(*fused[i]), values_of(*unfused[i]), d.tolerance);
  }
}

TEST(FusedConv2D, ReluKeepsNaNAsReluDoes) {
  // oneDNN's own ReLU post-op turns NaN into 0; the fused op keeps it in every dtype, as nn::relu
  // does (and as the float64 kernel always did), and still zeroes the negative outputs.
  for (const tf::DType dtype : {tf::float64, tf::float32, tf::bfloat16}) {
    SCOPED_TRACE(std::string(tf::dtype_name(dtype)));
    std::vector<double> pixels = pattern(1 * 5 * 5 * 2, 0.1);
    pixels[12] = std::numeric_limits<double>::quiet_NaN();
    const tf::Tensor x = make(pixels, {1, 5, 5, 2}, dtype);
    const tf::Tensor f = make(pattern(3 * 3 * 2 * 3, 1.3), {3, 3, 2, 3}, dtype);
    const tf::Tensor b = make({-50.0, 0.5, 50.0}, {3}, dtype);
    const std::vector<double> y = values_of(tf::nn::conv2d_bias_activation(x, f, b, {1, 1}, "VALID", "relu"));
    const std::vector<double> want = values_of(tf::nn::relu(tf::nn::conv2d(x, f, {1, 1}, "VALID") + b));
    ASSERT_EQ(y.size(), want.size());
    std::size_t nans = 0, zeros = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(std::isnan(y[i]), std::isnan(want[i])) << i;
      if (!std::isnan(want[i])) {
        EXPECT_NEAR(y[i], want[i], 0.05 * (1 + std::abs(want[i]))) << i;
      }
      nans += std::isnan(y[i]);
      zeros += y[i] == 0;
    }
    EXPECT_GT(nans, 0u);   // windows over the NaN pixel
    EXPECT_GT(zeros, 0u);  // the -50 bias's channel, away from the NaN
  }
}

TEST(FusedConv2D, NoInputChannelsGiveTheActivatedBias) {
  for (const DTypeCase& d : kDTypes) {
    const tf::Tensor y = tf::nn::conv2d_bias_activation(
        tf::ones({1, 1, 2, 0}, d.dtype), tf::ones({1, 1, 0, 2}, d.dtype),
        tf::cast(tf::constant(std::vector<double>{-1.5, 2.5}), d.dtype), {1, 1}, "VALID", "relu");
    EXPECT_THAT(values_of(y), ElementsAre(0, 2.5, 0, 2.5));
  }
}

// ---- conv2d errors ---------------------------------------------------------------------------------

TEST(Conv2D, RejectsInputsThatAreNotRankFour) {
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({4, 4, 2}), tf::ones({3, 3, 2, 1}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("'input' must have rank 4"), HasSubstr("(4, 4, 2)"))));
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("'filters' must have rank 4"), HasSubstr("HWIO"))));
}

TEST(Conv2D, RejectsAChannelMismatch) {
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 3}), tf::ones({3, 3, 2, 1}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("input channels"), HasSubstr("(1, 4, 4, 3)"),
                HasSubstr("(3, 3, 2, 1)"), HasSubstr("input has 3 channels, filters expect 2"))));
}

TEST(Conv2D, RejectsStridesBelowOneOrHuge) {
  for (const std::vector<std::int64_t>& s :
       {std::vector<std::int64_t>{0, 1}, {1, -2}, {0}, {std::int64_t{1} << 40, 1}}) {
    EXPECT_THAT(
        [&] {
          tf::nn::conv2d(tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2, 1}), s, "SAME");
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(
            AllOf(HasSubstr("[Conv2D]"), HasSubstr("strides must be >= 1"), HasSubstr("padding SAME"),
                  HasSubstr("(1, 4, 4, 2)"))));
  }
}

TEST(Conv2D, RejectsMalformedStrideListsAndPadding) {
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2, 1}), {1, 1, 1});
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("'strides' must have 1, 2 or 4 elements"))));
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2, 1}), {2, 1, 1, 1});
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("(2, 1, 1, 1)")));
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2, 1}), {1, 1}, "same");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"),
                HasSubstr("padding must be \"VALID\", \"SAME\" or \"EXPLICIT\", got \"same\""))));
}

// EXPLICIT padding (TensorFlow's explicit_paddings): the convolution of the zero-padded input
// with VALID padding, forward and both gradients, float64 (im2col) and float32 (oneDNN):
// asymmetric amounts, amounts larger than the window, strides, dilations and groups. The 1x1
// filter padded only below and right has more output positions than input ones: fuzz_nn found
// Conv2DBackpropInput's float64 GEMM writing past the input gradient there (ASan,
// fuzz/corpus/fuzz_nn/da0c45fa66a1702dc490cc640c579d558fea190b).
TEST(Conv2D, ExplicitPaddingConvolvesTheZeroPaddedInput) {
  struct Case {
    tf::Shape input, filters;
    std::vector<std::int64_t> strides, dilations;
    std::int64_t top, bottom, left, right;
  };
  const Case cases[] = {{{2, 5, 4, 3}, {3, 3, 3, 4}, {1, 1}, {1, 1}, 1, 2, 0, 3},
                        {{1, 6, 7, 2}, {2, 3, 2, 3}, {2, 3}, {1, 1}, 0, 0, 2, 1},
                        {{1, 3, 3, 2}, {3, 3, 2, 2}, {1, 1}, {1, 1}, 5, 4, 6, 3},
                        {{2, 7, 6, 4}, {3, 2, 2, 4}, {1, 2}, {2, 1}, 2, 1, 1, 2},
                        {{2, 3, 4, 2}, {1, 1, 2, 3}, {1, 1}, {1, 1}, 0, 2, 0, 1}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.input.to_string() + " * " + c.filters.to_string());
    const std::vector<std::int64_t> explicit_paddings{0, 0, c.top, c.bottom, c.left, c.right, 0, 0};
    const std::vector<std::pair<std::int64_t, std::int64_t>> pads{
        {0, 0}, {c.top, c.bottom}, {c.left, c.right}, {0, 0}};
    for (const tf::DType dtype : {tf::float64, tf::float32}) {
      const tf::Tensor x = tf::random::uniform(c.input, -1, 1, dtype, 1);
      const tf::Tensor f = tf::random::uniform(c.filters, -1, 1, dtype, 2);
      tf::GradientTape tape({.persistent = true});
      tape.watch(x);
      tape.watch(f);
      const tf::Tensor y = tf::nn::conv2d(x, f, c.strides, "EXPLICIT", c.dilations, explicit_paddings);
      const tf::Tensor padded = tf::nn::conv2d(tf::pad(x, pads), f, c.strides, "VALID", c.dilations);
      ASSERT_EQ(y.shape(), padded.shape());
      const tf::Tensor dy = tf::random::uniform(y.shape(), -1, 1, dtype, 3);
      const auto g = tape.gradient(y, {x, f}, {dy});
      const auto g_padded = tape.gradient(padded, {x, f}, {dy});
      const double tol = dtype == tf::float64 ? 1e-12 : 1e-5;
      tf::testing::expect_close(y, padded, tol);
      tf::testing::expect_close(*g[0], *g_padded[0], tol);
      tf::testing::expect_close(*g[1], *g_padded[1], tol);
    }
  }
}

TEST(Conv2D, ExplicitPaddingBeyondOneDnnsIntegersRunsThroughIm2col) {
  // 2^30 rows of zeros above and below a 4-row image, stride 2^30: three output rows, the middle
  // one the image's first two rows. oneDNN computes paddings in int32 (onednn::supports).
  const std::int64_t big = std::int64_t{1} << 30;
  const tf::Tensor x = tf::random::uniform({1, 4, 4, 1}, -1, 1, tf::float32, 4), f = tf::ones({2, 2, 1, 1});
  const tf::Tensor y = tf::nn::conv2d(x, f, {big, 1}, "EXPLICIT", {1, 1}, {0, 0, big, big, 0, 0, 0, 0});
  ASSERT_EQ(y.shape(), (tf::Shape{1, 3, 3, 1}));
  const tf::Tensor first_rows = tf::nn::conv2d(tf::slice(x, {0, 0, 0, 0}, {1, 2, 4, 1}), f);
  tf::testing::expect_close(tf::slice(y, {0, 1, 0, 0}, {1, 1, 3, 1}), first_rows, 1e-6);
  EXPECT_EQ(tf::reduce_sum(tf::abs(y)).to_vector<float>()[0],
            tf::reduce_sum(tf::abs(first_rows)).to_vector<float>()[0]);
}

TEST(Conv2D, ExplicitPaddingErrorsNameTheList) {
  const tf::Tensor x = tf::ones({1, 4, 4, 2}), f = tf::ones({3, 3, 2, 1});
  auto conv = [&](std::string_view padding, std::vector<std::int64_t> explicit_paddings) {
    return [=] { tf::nn::conv2d(x, f, {1, 1}, padding, {1, 1}, explicit_paddings); };
  };
  using ::testing::ThrowsMessage;
  EXPECT_THAT(conv("EXPLICIT", {0, 0, 1, 1, 1, 1}),
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[Conv2D]"), HasSubstr("8 values"), HasSubstr("(0, 0, 1, 1, 1, 1)"))));
  EXPECT_THAT(conv("EXPLICIT", {1, 0, 1, 1, 1, 1, 0, 0}),
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("batch and channels 0")));
  EXPECT_THAT(conv("EXPLICIT", {0, 0, -1, 1, 1, 1, 0, 0}),
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr(">= 0"), HasSubstr("-1"))));
  EXPECT_THAT(
      conv("SAME", {0, 0, 1, 1, 1, 1, 0, 0}),
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("must be empty unless padding is \"EXPLICIT\"")));
  // A window larger than the padded input (4 + 0 + 0 rows for a 5-row filter).
  EXPECT_THAT(
      [&] {
        tf::nn::conv2d(x, tf::ones({5, 1, 2, 1}), {1, 1}, "EXPLICIT", {1, 1}, {0, 0, 0, 0, 1, 1, 0, 0});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("EXPLICIT (top 0, bottom 0, left 1, right 1)"), HasSubstr("larger than"))));
  // Pooling takes VALID and SAME only, as TensorFlow's MaxPool kernel.
  EXPECT_THAT(
      [&] {
        tf::nn::max_pool2d(x, {2, 2}, {2, 2}, "EXPLICIT");
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("padding must be \"VALID\" or \"SAME\"")));
}

TEST(Conv2D, RejectsAKernelLargerThanTheInputWithValidPadding) {
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 2, 5, 1}), tf::ones({3, 3, 1, 1}), {1, 1}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[Conv2D]"), HasSubstr("window (3, 3) is larger than the input's spatial size (2, 5)"),
          HasSubstr("padding VALID"), HasSubstr("strides (1, 1)"))));
  // SAME pads the input up to the kernel.
  EXPECT_EQ(tf::nn::conv2d(tf::ones({1, 2, 5, 1}), tf::ones({3, 3, 1, 1}), {1, 1}, "SAME").shape(),
            tf::Shape({1, 2, 5, 1}));
}

TEST(Conv2D, RejectsAnEmptyFilterWindow) {
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 1}), tf::ones({0, 3, 1, 1}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("window must be at least 1x1"))));
}

TEST(Conv2D, RejectsMixedDtypesAndIntegers) {
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 1}), tf::ones({3, 3, 1, 1}, tf::DType::Float64));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("same dtype"), HasSubstr("float64"))));
  EXPECT_THAT(
      [] {
        tf::nn::conv2d(tf::ones({1, 4, 4, 1}, tf::DType::Int32), tf::ones({3, 3, 1, 1}, tf::DType::Int32));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("float32 or float64"))));
}

TEST(Conv2D, RejectsAnOutputTooLargeForTheGemm) {
  // A 1x1 kernel over 2^31 x 2^31 positions would need more rows than BLAS can index; the
  // input is empty (zero channels), so only the size check can stop it.
  const std::int64_t big = std::int64_t{1} << 31;
  EXPECT_THAT(
      [&] {
        tf::nn::conv2d(tf::ones({1, big, big, 0}), tf::ones({1, 1, 0, 1}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D]"), HasSubstr("too large"))));
}

TEST(Conv2DBackpropInput, RejectsAnOutBackpropOfTheWrongShape) {
  EXPECT_THAT(
      [] {
        tf::raw_ops::conv2d_backprop_input({1, 4, 4, 2}, tf::ones({3, 3, 2, 3}), tf::ones({1, 3, 3, 3}),
                                           {1, 1}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2DBackpropInput]"), HasSubstr("'out_backprop' must have shape (1, 2, 2, 3)"),
                HasSubstr("(1, 3, 3, 3)"))));
}

TEST(Conv2DBackpropFilter, RejectsAnOutBackpropOfTheWrongShape) {
  EXPECT_THAT(
      [] {
        tf::raw_ops::conv2d_backprop_filter(tf::ones({1, 4, 4, 2}), {3, 3, 2, 3}, tf::ones({1, 4, 4, 3}),
                                            {1, 1}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[Conv2DBackpropFilter]"), HasSubstr("'out_backprop' must have shape (1, 2, 2, 3)"))));
}

// ---- pooling ---------------------------------------------------------------------------------------

/// 0, 1, ..., 15 as a (1, 4, 4, 1) image.
tf::Tensor ramp16() {
  std::vector<double> v(16);
  for (std::size_t i = 0; i < 16; ++i) v[i] = static_cast<double>(i);
  return tf::constant(v, {1, 4, 4, 1});
}

/// 1, ..., 9 as a (1, 3, 3, 1) image.
tf::Tensor ramp9() { return tf::constant(std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 3, 3, 1}); }

TEST(MaxPool, TakesTheMaximumOfEachWindow) {
  const tf::Tensor y = tf::nn::max_pool2d(ramp16(), {2, 2}, {2, 2}, "VALID");
  EXPECT_EQ(y.shape(), tf::Shape({1, 2, 2, 1}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(5, 7, 13, 15));
}

TEST(MaxPool, SamePaddingIgnoresThePadding) {
  // 3x3, window 2, stride 2, SAME: pad_total 1, all after; windows rows/cols {0, 1} and {2}.
  const tf::Tensor y = tf::nn::max_pool2d(-ramp9(), {2, 2}, {2, 2}, "SAME");
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(-1, -3, -7, -9));
}

TEST(MaxPool, PoolsEachChannelSeparatelyInFloat32) {
  const tf::Tensor x = tf::constant(std::vector<float>{1, 8, 2, 7, 3, 6, 4, 5}, {1, 2, 2, 2});
  EXPECT_THAT(tf::nn::max_pool2d(x, {2, 2}, {1, 1}, "VALID").to_vector<float>(), ElementsAre(4, 8));
}

TEST(MaxPool, GradientGoesToTheArgmax) {
  const tf::Tensor x = ramp16();
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::nn::max_pool2d(x, {2, 2}, {2, 2}, "VALID");
  const tf::Tensor dx = *tape.gradient(y, x, {tf::constant(std::vector<double>{1, 2, 3, 4}, {1, 2, 2, 1})});
  EXPECT_THAT(dx.to_vector<double>(), ElementsAre(0, 0, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, 3, 0, 4));
}

TEST(MaxPool, GradientOnTiesGoesToTheFirstMaximumOnly) {
  const tf::Tensor x = tf::ones({1, 2, 2, 1}, tf::DType::Float64);
  const tf::Tensor dx = tf::raw_ops::max_pool_grad(x, tf::constant(std::vector<double>{5}, {1, 1, 1, 1}),
                                                   {2, 2}, {2, 2}, "VALID");
  EXPECT_THAT(dx.to_vector<double>(), ElementsAre(5, 0, 0, 0));
}

/// Max pooling and its gradient written out plainly: per window (its first row oy * sh - top, its
/// first column ox * sw - left, clipped to the image) the first maximum in row-major order, NaN
/// above everything (the first NaN); y takes its value and dx adds dy there (windows in order).
struct PoolReference {
  std::vector<double> y, dx;
};
struct PoolGeometry {
  std::int64_t n, h, w, c, kh, kw, sh, sw, oh, ow, top, left;
};
PoolReference pool_reference(const std::vector<double>& x, const std::vector<double>& dy,
                             const PoolGeometry& g) {
  const auto [n, h, w, c, kh, kw, sh, sw, oh, ow, top, left] = g;
  PoolReference r{std::vector<double>(static_cast<std::size_t>(n * oh * ow * c)),
                  std::vector<double>(x.size(), 0.0)};
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t oy = 0; oy < oh; ++oy)
      for (std::int64_t ox = 0; ox < ow; ++ox)
        for (std::int64_t ci = 0; ci < c; ++ci) {
          std::size_t best = 0;
          bool found = false;
          for (std::int64_t y = std::max<std::int64_t>(0, oy * sh - top); y < std::min(h, oy * sh - top + kh);
               ++y)
            for (std::int64_t xx = std::max<std::int64_t>(0, ox * sw - left);
                 xx < std::min(w, ox * sw - left + kw); ++xx) {
              const auto at = static_cast<std::size_t>(((i * h + y) * w + xx) * c + ci);
              if (!found || x[at] > x[best] || (std::isnan(x[at]) && !std::isnan(x[best]))) best = at;
              found = true;
            }
          const auto o = static_cast<std::size_t>(((i * oh + oy) * ow + ox) * c + ci);
          r.y[o] = x[best];
          r.dx[best] += dy[o];
        }
  return r;
}

/// TensorFlow's output size and padding before the image along one axis.
std::pair<std::int64_t, std::int64_t> pooled_size_and_before(std::int64_t in, std::int64_t k, std::int64_t s,
                                                             const std::string& padding) {
  if (padding == "VALID") return {(in - k) / s + 1, 0};
  const std::int64_t out = (in + s - 1) / s;
  return {out, std::max<std::int64_t>((out - 1) * s + k - in, 0) / 2};
}

/// Pixels with many ties (five values), NaN after and before maxima, two NaN in some windows,
/// infinities; exact in float64, float32 and bfloat16.
std::vector<double> awkward_pixels(std::int64_t count) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = pattern(count, 0.2);
  for (double& v : x) v = std::round(v * 2);
  for (std::size_t k = 0; k < x.size(); k += 11) x[k] = nan;
  for (std::size_t k = 5; k < x.size(); k += 17) x[k] = (k % 2 ? inf : -inf);
  return x;
}

/// Runs MaxPool and MaxPoolGrad in float64, float32 and bfloat16 and expects the reference's bits
/// (NaN as NaN).
void expect_pooling_as_reference(const std::vector<double>& x, const std::vector<double>& dy,
                                 const PoolGeometry& g, const std::string& padding) {
  auto same_bits = [](double a, double b) {
    return std::isnan(a) ? std::isnan(b) : std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
  };
  for (const tf::DType dtype : {tf::float64, tf::float32, tf::bfloat16}) {
    SCOPED_TRACE(tf::dtype_name(dtype));
    const tf::Tensor xt = tf::cast(tf::constant(x, {g.n, g.h, g.w, g.c}), dtype);
    const tf::Tensor dyt = tf::cast(tf::constant(dy, {g.n, g.oh, g.ow, g.c}), dtype);
    const std::vector<double> y =
        tf::cast(tf::nn::max_pool2d(xt, {g.kh, g.kw}, {g.sh, g.sw}, padding), tf::float64)
            .to_vector<double>();
    const std::vector<double> dx =
        tf::cast(tf::raw_ops::max_pool_grad(xt, dyt, {g.kh, g.kw}, {g.sh, g.sw}, padding), tf::float64)
            .to_vector<double>();
    // dy as the dtype holds it (the reference's sums of it are exact: see the callers).
    const PoolReference want = pool_reference(x, tf::cast(dyt, tf::float64).to_vector<double>(), g);
    ASSERT_EQ(y.size(), want.y.size());
    for (std::size_t k = 0; k < y.size(); ++k) ASSERT_TRUE(same_bits(y[k], want.y[k])) << "y[" << k << "]";
    ASSERT_EQ(dx.size(), want.dx.size());
    for (std::size_t k = 0; k < dx.size(); ++k)
      ASSERT_TRUE(same_bits(dx[k], want.dx[k])) << "dx[" << k << "]: " << dx[k] << " vs " << want.dx[k];
  }
}

TEST(MaxPool, WindowsAsLargeAsTheirStridesPoolAndRouteTheGradientToTheFirstMaximum) {
  // Windows equal to their strides over an image of two windows a side tile it: MaxPoolGrad takes
  // its own kernel, which writes each element of dx once. With one more row (column) where the
  // window is taller (wider) than one, VALID padding leaves it in no window (the same kernel; that
  // row's gradient is 0), and SAME padding gives the last windows a part outside the image (the
  // general kernel). All three against the plain reference, bit for bit, with ties, NaN after or
  // before a maximum, two NaN in a window and infinities, for channel counts that are and are
  // not whole vectors (16 lanes).
  for (const auto& [kh, kw] : {std::pair<std::int64_t, std::int64_t>{2, 2}, {3, 3}, {1, 2}, {3, 1}})
    for (const std::int64_t c : {1, 7, 16, 33})
      for (const bool remainder : {false, true})
        for (const std::string padding : {"VALID", "SAME"}) {
          if (!remainder && padding == "SAME") continue;  // the same windows as VALID
          SCOPED_TRACE(testing::Message() << kh << "x" << kw << " windows, " << c << " channels, "
                                          << (remainder ? "a row/column more, " : "") << padding);
          const std::int64_t n = 3, h = 2 * kh + (remainder && kh > 1), w = 2 * kw + (remainder && kw > 1);
          const auto [oh, top] = pooled_size_and_before(h, kh, kh, padding);
          const auto [ow, left] = pooled_size_and_before(w, kw, kw, padding);
          // Each dx element gets at most one dy: any dy values are exact.
          expect_pooling_as_reference(awkward_pixels(n * h * w * c), pattern(n * oh * ow * c, 1.1),
                                      {n, h, w, c, kh, kw, kh, kw, oh, ow, top, left}, padding);
        }
}

TEST(MaxPool, OverlappingWindowsPoolAndAddTheGradientsOfEveryWindowAtItsFirstMaximum) {
  // Windows larger than their strides share input elements, and an element that is the first
  // maximum of several windows gets the sum of their gradients: against the plain reference, bit
  // for bit, with dy small integers (every sum exact, in any order and dtype).
  struct Case {
    std::int64_t kh, kw, sh, sw;
  };
  for (const Case& k : {Case{3, 3, 2, 2}, Case{3, 3, 1, 1}, Case{2, 3, 1, 2}, Case{3, 1, 2, 1}})
    for (const std::int64_t c : {1, 16, 19})
      for (const std::string padding : {"VALID", "SAME"}) {
        SCOPED_TRACE(testing::Message() << k.kh << "x" << k.kw << " windows, strides " << k.sh << "x" << k.sw
                                        << ", " << c << " channels, " << padding);
        const std::int64_t n = 2, h = 7, w = 6;
        const auto [oh, top] = pooled_size_and_before(h, k.kh, k.sh, padding);
        const auto [ow, left] = pooled_size_and_before(w, k.kw, k.sw, padding);
        std::vector<double> dy = pattern(n * oh * ow * c, 1.1);
        for (double& v : dy) v = std::round(v * 4);
        expect_pooling_as_reference(awkward_pixels(n * h * w * c), dy,
                                    {n, h, w, c, k.kh, k.kw, k.sh, k.sw, oh, ow, top, left}, padding);
      }
}

TEST(MaxPool, OverlappingWindowsAccumulateAtASharedArgmax) {
  // Window 2, stride 1 over a 1x3 row with the maximum in the middle: both windows pick it.
  const tf::Tensor x = tf::constant(std::vector<double>{1, 9, 2}, {1, 1, 3, 1});
  const tf::Tensor dx = tf::raw_ops::max_pool_grad(x, tf::constant(std::vector<double>{1, 10}, {1, 1, 2, 1}),
                                                   {1, 2}, {1, 1}, "VALID");
  EXPECT_THAT(dx.to_vector<double>(), ElementsAre(0, 11, 0));
}

TEST(MaxPoolGradGrad, GathersAtTheArgmax) {
  const tf::Tensor ddx = tf::constant(
      std::vector<double>{10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25}, {1, 4, 4, 1});
  EXPECT_THAT(tf::raw_ops::max_pool_grad_grad(ramp16(), ddx, {2, 2}, {2, 2}, "VALID").to_vector<double>(),
              ElementsAre(15, 17, 23, 25));
}

TEST(MaxPool, SecondDerivativeWithRespectToTheUpstreamGradientIsAGather) {
  const tf::Tensor x = ramp16();
  const tf::Tensor dy = tf::constant(std::vector<double>{1, 2, 3, 4}, {1, 2, 2, 1});
  tf::GradientTape tape;
  tape.watch(dy);
  const tf::Tensor dx = tf::raw_ops::max_pool_grad(x, dy, {2, 2}, {2, 2}, "VALID");
  const tf::Tensor g =
      *tape.gradient(dx, dy, {tf::constant(std::vector<double>(16, 1.0), {1, 4, 4, 1}) + ramp16()});
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(6, 8, 14, 16));
}

TEST(MaxPool, BFloat16PoolsTheSameValuesAsFloat32WithoutWidening) {
  // A maximum and its position need no arithmetic: bfloat16 pooling (no float32 copy) gives exactly
  // the float32 pooling of the same values, NaN included, and so do the gradient ops (where
  // overlapping windows share a maximum, the float32 sum rounded to bfloat16).
  std::vector<double> v = pattern(2 * 6 * 6 * 5, 0.3);
  v[7] = std::numeric_limits<double>::quiet_NaN();
  const tf::Tensor x16 = tf::cast(tf::constant(v, {2, 6, 6, 5}), tf::bfloat16);
  const tf::Tensor x32 = tf::cast(x16, tf::float32);
  struct Window {
    std::vector<std::int64_t> ksize, strides;
    const char* padding;
  };
  for (const Window& w : {Window{{2, 2}, {2, 2}, "VALID"}, Window{{3, 3}, {2, 2}, "SAME"}}) {
    SCOPED_TRACE(w.padding);
    const tf::Tensor y16 = tf::nn::max_pool2d(x16, w.ksize, w.strides, w.padding);
    EXPECT_EQ(y16.dtype(), tf::bfloat16);
    EXPECT_TRUE(tf::testing::bitwise_equal(tf::cast(y16, tf::float32),
                                           tf::nn::max_pool2d(x32, w.ksize, w.strides, w.padding)));
    const tf::Tensor dy16 =
        tf::cast(tf::constant(pattern(y16.num_elements(), 1.7), y16.shape()), tf::bfloat16);
    const tf::Tensor dx16 = tf::raw_ops::max_pool_grad(x16, dy16, w.ksize, w.strides, w.padding);
    const tf::Tensor dx32 =
        tf::raw_ops::max_pool_grad(x32, tf::cast(dy16, tf::float32), w.ksize, w.strides, w.padding);
    EXPECT_EQ(dx16.dtype(), tf::bfloat16);
    EXPECT_TRUE(tf::testing::bitwise_equal(tf::cast(dx16, tf::float32),
                                           tf::cast(tf::cast(dx32, tf::bfloat16), tf::float32)));
    const tf::Tensor g16 = tf::raw_ops::max_pool_grad_grad(x16, x16, w.ksize, w.strides, w.padding);
    EXPECT_TRUE(
        tf::testing::bitwise_equal(tf::cast(g16, tf::float32),
                                   tf::raw_ops::max_pool_grad_grad(x32, x32, w.ksize, w.strides, w.padding)));
  }
}

TEST(Conv2D, BFloat16ThroughFloat32IsTheFloat32ConvolutionOfTheSameValuesRounded) {
  // Without AMX, oneDNN's bfloat16 convolution kernels are slower than its float32 ones, so
  // bfloat16 convolutions widen, convolve in float32 and round once (cpu::onednn::
  // convolves_bfloat16): bit for bit the float32 ops on the same values, rounded.
  const tf::cpu::onednn::BFloat16KernelsScope scope(tf::cpu::onednn::BFloat16Kernels::kThroughFloat32);
  const tf::Tensor x16 = tf::cast(tf::constant(pattern(2 * 7 * 7 * 3, 0.3), {2, 7, 7, 3}), tf::bfloat16);
  const tf::Tensor f16 = tf::cast(tf::constant(pattern(3 * 3 * 3 * 4, 0.7), {3, 3, 3, 4}), tf::bfloat16);
  const tf::Tensor b16 = tf::cast(tf::constant(pattern(4, 1.1), {4}), tf::bfloat16);
  const tf::Tensor dy16 = tf::cast(tf::constant(pattern(2 * 7 * 7 * 4, 1.3), {2, 7, 7, 4}), tf::bfloat16);
  auto f32 = [](const tf::Tensor& t) { return tf::cast(t, tf::float32); };
  auto rounded = [](const tf::Tensor& t) { return tf::cast(t, tf::bfloat16); };
  const std::vector<std::int64_t> s{1, 1};
  EXPECT_TRUE(tf::testing::bitwise_equal(tf::nn::conv2d(x16, f16, s, "SAME"),
                                         rounded(tf::nn::conv2d(f32(x16), f32(f16), s, "SAME"))));
  EXPECT_TRUE(tf::testing::bitwise_equal(
      tf::nn::conv2d_bias_activation(x16, f16, b16, s, "SAME", "relu"),
      rounded(tf::nn::conv2d_bias_activation(f32(x16), f32(f16), f32(b16), s, "SAME", "relu"))));
  EXPECT_TRUE(tf::testing::bitwise_equal(
      tf::raw_ops::conv2d_backprop_input(x16.shape(), f16, dy16, s, "SAME"),
      rounded(tf::raw_ops::conv2d_backprop_input(x16.shape(), f32(f16), f32(dy16), s, "SAME"))));
  EXPECT_TRUE(tf::testing::bitwise_equal(
      tf::raw_ops::conv2d_backprop_filter(x16, f16.shape(), dy16, s, "SAME"),
      rounded(tf::raw_ops::conv2d_backprop_filter(f32(x16), f16.shape(), f32(dy16), s, "SAME"))));
}

TEST(AvgPool, AveragesEachWindow) {
  EXPECT_THAT(tf::nn::avg_pool2d(ramp16(), {2, 2}, {2, 2}, "VALID").to_vector<double>(),
              ElementsAre(2.5, 4.5, 10.5, 12.5));
}

TEST(AvgPool, SamePaddingCountsOnlyInputElements) {
  // Windows {1, 2, 4, 5}, {3, 6}, {7, 8}, {9}.
  EXPECT_THAT(tf::nn::avg_pool2d(ramp9(), {2, 2}, {2, 2}, "SAME").to_vector<double>(),
              ElementsAre(3, 4.5, 7.5, 9));
}

TEST(AvgPool, GradientSpreadsOverTheWindowCount) {
  const tf::Tensor x = ramp9();
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::nn::avg_pool2d(x, {2, 2}, {2, 2}, "SAME");
  const tf::Tensor dx = *tape.gradient(y, x, {tf::constant(std::vector<double>{4, 2, 2, 1}, {1, 2, 2, 1})});
  EXPECT_THAT(dx.to_vector<double>(), ElementsAre(1, 1, 1, 1, 1, 1, 1, 1, 1));
}

TEST(AvgPool, OverlappingWindowsAddUp) {
  const tf::Tensor dx = tf::raw_ops::avg_pool_grad(
      {1, 1, 3, 1}, tf::constant(std::vector<double>{2, 4}, {1, 1, 2, 1}), {1, 2}, {1, 1}, "VALID");
  EXPECT_THAT(dx.to_vector<double>(), ElementsAre(1, 3, 2));
}

TEST(AvgPoolGrad, GradientIsAvgPool) {
  const tf::Tensor dy = tf::constant(std::vector<double>{1, 2, 3, 4}, {1, 2, 2, 1});
  tf::GradientTape tape;
  tape.watch(dy);
  const tf::Tensor dx = tf::raw_ops::avg_pool_grad({1, 3, 3, 1}, dy, {2, 2}, {2, 2}, "SAME");
  const tf::Tensor g = *tape.gradient(dx, dy, {ramp9()});
  EXPECT_THAT(g.to_vector<double>(), ElementsAre(3, 4.5, 7.5, 9));
}

TEST(Pooling, EmptyBatchAndSpatialDimensionsGiveEmptyOutputs) {
  EXPECT_EQ(tf::nn::max_pool2d(tf::zeros({0, 4, 4, 3}), {2, 2}, {2, 2}, "VALID").shape(),
            tf::Shape({0, 2, 2, 3}));
  EXPECT_EQ(tf::nn::avg_pool2d(tf::zeros({2, 0, 4, 3}), {2, 2}, {2, 2}, "SAME").shape(),
            tf::Shape({2, 0, 2, 3}));
  EXPECT_EQ(tf::nn::avg_pool2d(tf::zeros({2, 4, 4, 0}), {2, 2}, {2, 2}, "SAME").shape(),
            tf::Shape({2, 2, 2, 0}));
}

TEST(Pooling, RejectsZeroOrHugeWindowsAndStrides) {
  const tf::Tensor x = tf::ones({1, 4, 4, 1});
  const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
  for (auto pool : {&tf::nn::max_pool2d, &tf::nn::avg_pool2d}) {
    EXPECT_THAT(
        [&] {
          pool(x, {0, 2}, {1, 1}, "VALID");
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(
            AllOf(HasSubstr("window must be at least 1x1"), HasSubstr("(0, 2)"), HasSubstr("(1, 4, 4, 1)"))));
    EXPECT_THAT(
        [&] {
          pool(x, {huge, huge}, {1, 1}, "SAME");
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("window must be at least 1x1")));
    EXPECT_THAT(
        [&] {
          pool(x, {2, 2}, {1, 0}, "VALID");
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("strides must be >= 1")));
    EXPECT_THAT(
        [&] {
          pool(x, {2, 2}, {huge, 1}, "SAME");
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("strides must be >= 1")));
    EXPECT_THAT(
        [&] {
          pool(x, {5, 1}, {1, 1}, "VALID");
        },
        ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("larger than the input")));
  }
  EXPECT_THAT(
      [&] {
        tf::nn::max_pool2d(x, {0, 2}, {1, 1}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[MaxPool]")));
  EXPECT_THAT(
      [&] {
        tf::nn::avg_pool2d(x, {0, 2}, {1, 1}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[AvgPool]")));
}

TEST(Pooling, AWindowFarLargerThanTheInputCoversTheWholeInput) {
  // With SAME padding every window of a huge size covers the whole 4x4 input. The kernels used to
  // size their work and an argmax table by the window itself: 2^14 took 37 s, 2^31 - 1 hung,
  // 2^31 threw std::length_error, and the size arithmetic overflowed (UBSan).
  const tf::Tensor x = ramp16();  // 0..15
  const tf::Tensor dy = tf::ones({1, 4, 4, 1}, tf::DType::Float64);
  for (const std::int64_t k : {std::int64_t{1} << 14, (std::int64_t{1} << 31) - 1, std::int64_t{1} << 31}) {
    SCOPED_TRACE(k);
    EXPECT_THAT(tf::nn::max_pool2d(x, {k, k}, {1, 1}, "SAME").to_vector<double>(), ::testing::Each(15.0));
    EXPECT_THAT(tf::nn::avg_pool2d(x, {k, k}, {1, 1}, "SAME").to_vector<double>(), ::testing::Each(7.5));
    // Each of the 16 windows sends its gradient to the maximum (the last element) ...
    std::vector<double> to_max(16, 0.0);
    to_max[15] = 16.0;
    EXPECT_THAT(tf::raw_ops::max_pool_grad(x, dy, {k, k}, {1, 1}, "SAME").to_vector<double>(),
                ElementsAreArray(to_max));
    EXPECT_THAT(tf::raw_ops::max_pool_grad_grad(x, ramp16(), {k, k}, {1, 1}, "SAME").to_vector<double>(),
                ::testing::Each(15.0));
    // ... or spreads 1/16 over the 16 elements.
    EXPECT_THAT(tf::raw_ops::avg_pool_grad({1, 4, 4, 1}, dy, {k, k}, {1, 1}, "SAME").to_vector<double>(),
                ::testing::Each(1.0));
  }
}

TEST(Pooling, AHugeWindowOnOneAxisPoolsWholeColumns) {
  const tf::Tensor x = ramp16();  // rows 0..3, 4..7, 8..11, 12..15
  const std::int64_t k = std::int64_t{1} << 31;
  const tf::Tensor y = tf::nn::max_pool2d(x, {k, 1}, {4, 1}, "SAME");
  EXPECT_EQ(y.shape(), tf::Shape({1, 1, 4, 1}));
  EXPECT_THAT(y.to_vector<double>(), ElementsAre(12, 13, 14, 15));
  EXPECT_THAT(tf::nn::avg_pool2d(x, {1, k}, {1, 4}, "SAME").to_vector<double>(),
              ElementsAre(1.5, 5.5, 9.5, 13.5));
}

TEST(MaxPool, RejectsAWindowCoveringMoreThan2To31MinusOneInputPositions) {
  // The argmax is an int32 position within the window. (An image of 46341 x 46341 positions with
  // no channels stands in for one of 2^31 elements.)
  const tf::Tensor x = tf::zeros({1, 46341, 46341, 0});
  EXPECT_THAT(
      [&] {
        tf::nn::max_pool2d(x, {46341, 46341}, {1, 1}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[MaxPool]"), HasSubstr("2^31 - 1 input positions"), HasSubstr("46341 x 46341"))));
  EXPECT_EQ(tf::nn::avg_pool2d(x, {46341, 46341}, {1, 1}, "VALID").shape(), tf::Shape({1, 1, 1, 0}));
}

TEST(Conv2D, AnIm2colBufferBeyondTheAllocationLimitIsResourceExhausted) {
  // The im2col matrix (float64's path) of one 64x64x4 image with an 8x8 window has 4096 x 256
  // doubles (8 MiB), far more than the input or the output: it is checked against the allocation
  // limit like a tensor.
  struct LimitGuard {
    std::int64_t saved = tf::allocation_limit();
    ~LimitGuard() { tf::set_allocation_limit(saved); }
  } guard;
  tf::set_allocation_limit(std::int64_t{1} << 20);
  const tf::Tensor x = tf::ones({1, 64, 64, 4}, tf::DType::Float64);
  const tf::Tensor f = tf::ones({8, 8, 4, 1}, tf::DType::Float64);
  const tf::Tensor dy = tf::ones({1, 64, 64, 1}, tf::DType::Float64);
  EXPECT_THAT(
      [&] {
        tf::nn::conv2d(x, f, {1, 1}, "SAME");
      },
      ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[Conv2D]")));
  EXPECT_THAT(
      [&] {
        tf::raw_ops::conv2d_backprop_input(x.shape(), f, dy, {1, 1}, "SAME");
      },
      ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[Conv2DBackpropInput]")));
  EXPECT_THAT(
      [&] {
        tf::raw_ops::conv2d_backprop_filter(x, f.shape(), dy, {1, 1}, "SAME");
      },
      ::testing::ThrowsMessage<tf::ResourceExhaustedError>(HasSubstr("[Conv2DBackpropFilter]")));
}

/// The sum of |t|'s elements, in float64.
double total_abs(const tf::Tensor& t) {
  return tf::cast(tf::reduce_sum(tf::abs(t)), tf::float64).item<double>();
}

// A window far larger than the input reads padding almost everywhere: the kernels convolve with
// the taps that meet the input only, so the work and the scratch memory are bounded by the input
// and the output, not by the window (a 3x3 filter dilated by 16711681 took 23 s and 4.2 GB; a
// 512x512 filter on a 4x4 image needed a 4M-element im2col matrix).
TEST(Conv2D, TapsThatNeverMeetTheInputCostNothing) {
  struct LimitGuard {
    std::int64_t saved = tf::allocation_limit();
    ~LimitGuard() { tf::set_allocation_limit(saved); }
  } guard;
  tf::set_allocation_limit(std::int64_t{8} << 20);
  for (const tf::DType dtype : {tf::float64, tf::float32}) {
    SCOPED_TRACE(tf::dtype_name(dtype));
    const double tol = dtype == tf::float64 ? 1e-12 : 1e-5;
    {  // dilated columns: only the middle column of taps meets the input
      const tf::Tensor x = tf::random::uniform({2, 8, 8, 1}, -1, 1, dtype, 1);
      const tf::Tensor f = tf::random::uniform({3, 3, 1, 4}, -1, 1, dtype, 2);
      tf::GradientTape tape({.persistent = true});
      tape.watch(x);
      tape.watch(f);
      const tf::Tensor y = tf::nn::conv2d(x, f, {1, 1}, "SAME", {1, 16711681});
      const tf::Tensor middle = tf::slice(f, {0, 1, 0, 0}, {3, 1, 1, 4});
      tape.watch(middle);
      const tf::Tensor expected = tf::nn::conv2d(x, middle, {1, 1}, "SAME");
      tf::testing::expect_close(y, expected, tol);
      const tf::Tensor dy = tf::random::uniform(y.shape(), -1, 1, dtype, 3);
      tf::testing::expect_close(*tape.gradient(y, x, {dy}), *tape.gradient(expected, x, {dy}), tol);
      const tf::Tensor df = *tape.gradient(y, f, {dy});
      tf::testing::expect_close(tf::slice(df, {0, 1, 0, 0}, {3, 1, 1, 4}),
                                *tape.gradient(expected, middle, {dy}), tol);
      EXPECT_EQ(total_abs(tf::slice(df, {0, 0, 0, 0}, {3, 1, 1, 4})), 0.0);
      EXPECT_EQ(total_abs(tf::slice(df, {0, 2, 0, 0}, {3, 1, 1, 4})), 0.0);
    }
    {  // a 512x512 filter on a 4x4 image, padding SAME: taps 252-258 of each axis meet it
      const tf::Tensor x = tf::random::uniform({1, 4, 4, 1}, -1, 1, dtype, 4);
      const tf::Tensor f = tf::random::uniform({512, 512, 1, 1}, -1, 1, dtype, 5);
      tf::GradientTape tape({.persistent = true});
      tape.watch(x);
      tape.watch(f);
      const tf::Tensor y = tf::nn::conv2d(x, f, {1, 1}, "SAME");
      const tf::Tensor met = tf::slice(f, {252, 252, 0, 0}, {7, 7, 1, 1});
      tape.watch(met);
      const tf::Tensor expected =
          tf::nn::conv2d(x, met, {1, 1}, "EXPLICIT", {1, 1}, {0, 0, 3, 3, 3, 3, 0, 0});
      tf::testing::expect_close(y, expected, tol);
      const tf::Tensor dy = tf::random::uniform(y.shape(), -1, 1, dtype, 6);
      tf::testing::expect_close(*tape.gradient(y, x, {dy}), *tape.gradient(expected, x, {dy}), tol);
      const tf::Tensor df = *tape.gradient(y, f, {dy});
      const tf::Tensor df_met = *tape.gradient(expected, met, {dy});
      tf::testing::expect_close(tf::slice(df, {252, 252, 0, 0}, {7, 7, 1, 1}), df_met, tol);
      EXPECT_NEAR(total_abs(df), total_abs(df_met), tol);
    }
  }
}

// No tap meets the input (a 2x2 filter dilated past a 3x3 image under EXPLICIT padding): every
// output is the bias alone, and the filters' gradient is zero.
TEST(Conv2D, NoTapMeetingTheInputGivesTheBiasAlone) {
  const tf::Tensor x = tf::random::uniform({1, 3, 3, 2}, -1, 1, tf::float64, 1);
  const tf::Tensor f = tf::random::uniform({2, 2, 2, 3}, -1, 1, tf::float64, 2);
  const tf::Tensor b = tf::constant({0.5, -0.25, 2.0});
  // Rows: taps 0 and 1 read rows o * 8 - 10 and o * 8 + 10 for o in {0, 1, 2}: all outside.
  const std::vector<std::int64_t> paddings{0, 0, 10, 30, 0, 0, 0, 0};
  tf::GradientTape tape;
  tape.watch(f);
  const tf::Tensor y = tf::nn::conv2d_bias_activation(x, f, b, {8, 1}, "EXPLICIT", "relu", {20, 1}, paddings);
  ASSERT_EQ(y.shape(), (tf::Shape{1, 3, 2, 3}));
  EXPECT_EQ(y.to_vector<double>(),
            std::vector<double>({0.5, 0, 2, 0.5, 0, 2, 0.5, 0, 2, 0.5, 0, 2, 0.5, 0, 2, 0.5, 0, 2}));
  const tf::Tensor df = *tape.gradient(tf::reduce_sum(y), f);
  EXPECT_EQ(total_abs(df), 0.0);
  EXPECT_EQ(total_abs(tf::nn::conv2d(x, f, {8, 1}, "EXPLICIT", {20, 1}, paddings)), 0.0);
}

TEST(Pooling, RejectsBadRanksAndGradientShapes) {
  EXPECT_THAT(
      [] {
        tf::nn::max_pool2d(tf::ones({4, 4}), {2, 2}, {2, 2}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[MaxPool]"), HasSubstr("rank 4"), HasSubstr("(4, 4)"))));
  EXPECT_THAT(
      [] {
        tf::raw_ops::max_pool_grad(tf::ones({1, 4, 4, 1}), tf::ones({1, 3, 3, 1}), {2, 2}, {2, 2}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[MaxPoolGrad]"), HasSubstr("'grad' must have shape (1, 2, 2, 1)"))));
  EXPECT_THAT(
      [] {
        tf::raw_ops::avg_pool_grad({1, 4, 4, 1}, tf::ones({1, 4, 4, 1}), {2, 2}, {2, 2}, "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[AvgPoolGrad]"), HasSubstr("'grad' must have shape (1, 2, 2, 1)"))));
  EXPECT_THAT(
      [] {
        tf::raw_ops::max_pool_grad_grad(tf::ones({1, 4, 4, 1}), tf::ones({1, 2, 2, 1}), {2, 2}, {2, 2},
                                        "VALID");
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[MaxPoolGradGrad]"), HasSubstr("'grad' must have shape (1, 4, 4, 1)"))));
}

}  // namespace

TEST(MaxPoolGrad, WindowsThatTileTheImageWriteEveryInputOnce) {
  // 2x2 windows with stride 2 over a 6x6 image cover each input exactly once: the gradient is dy
  // at each window's maximum and 0 everywhere else (written, not left from the allocation).
  for (tf::DType dtype : {tf::DType::Float32, tf::DType::Float64}) {
    const tf::Tensor x = make(pattern(2 * 6 * 6 * 3, 0.3), {2, 6, 6, 3}, dtype);
    const tf::Tensor dy = make(std::vector<double>(2 * 3 * 3 * 3, 1.0), {2, 3, 3, 3}, dtype);
    const auto dx = values_of(tf::raw_ops::max_pool_grad(x, dy, {2, 2}, {2, 2}, "VALID"));
    EXPECT_EQ(std::count(dx.begin(), dx.end(), 1.0), 2 * 3 * 3 * 3);
    EXPECT_EQ(std::count(dx.begin(), dx.end(), 0.0), 2 * 6 * 6 * 3 - 2 * 3 * 3 * 3);
  }
}

TEST(Conv2D, StridesAndDilationsBeyondOneDnnsRangeStillComputeInFloat32) {
  // oneDNN computes with 32-bit strides and window extents: a stride of 2^31 or a window dilated
  // past 2^31 - 1 runs through im2col instead, with the same values as float64.
  const std::int64_t big = std::int64_t{1} << 31;
  struct Case {
    tf::Shape x, f;
    std::vector<std::int64_t> strides, dilations;
  };
  for (const Case& c : {Case{{1, 3, 3, 2}, {3, 3, 2, 2}, {big, 1}, {1, 1}},
                        Case{{1, 4, 4, 1}, {3, 3, 1, 2}, {1, 1}, {big - 1, 1}}}) {
    const tf::Tensor x = tf::constant(pattern(c.x.num_elements(), 0.1), c.x);
    const tf::Tensor f = tf::constant(pattern(c.f.num_elements(), 1.3), c.f);
    const tf::Tensor y64 = tf::nn::conv2d(x, f, c.strides, "SAME", c.dilations);
    const tf::Tensor y32 =
        tf::nn::conv2d(tf::cast(x, tf::float32), tf::cast(f, tf::float32), c.strides, "SAME", c.dilations);
    expect_near(values_of(y32), values_of(y64), 2e-5);
    const tf::Tensor dy = tf::ones(y64.shape(), tf::float32);
    expect_near(values_of(tf::raw_ops::conv2d_backprop_filter(tf::cast(x, tf::float32), c.f, dy, c.strides,
                                                              "SAME", c.dilations)),
                values_of(tf::raw_ops::conv2d_backprop_filter(x, c.f, tf::cast(dy, tf::float64), c.strides,
                                                              "SAME", c.dilations)),
                2e-5);
  }
}

// oneDNN's kernels grow with the strides and paddings: fuzz_nn found a bfloat16
// Conv2DBackpropInput with stride 2^31 - 1 (one output row) asking oneDNN for gigabytes of JIT
// code (fuzz/corpus/fuzz_nn/7cc0a1143c526b39821a34080b33b41d5ce29788), and stride and padding
// 2^28 exhausted memory. A stride that never moves the window is built as the least one with the
// same output; larger strides and paddings run through im2col. Every pass, float32 and bfloat16,
// against float64.
TEST(Conv2D, HugeStridesAndPaddingsComputeWithBoundedMemory) {
  const std::int64_t big = std::int64_t{1} << 28;
  struct Case {
    std::vector<std::int64_t> strides, explicit_paddings;
  };
  for (const Case& c : {Case{{2147483647, 2}, {0, 0, 0, 0, 0, 0, 0, 0}},  // one output row
                        Case{{100, 100}, {0, 0, 0, 0, 0, 0, 0, 0}},       // oneDNN, stride 4
                        Case{{big, big}, {0, 0, 0, big, 0, big, 0, 0}},   // im2col
                        Case{{5000, 1}, {0, 0, 5000, 0, 0, 0, 0, 0}}}) {  // past oneDNN's reach
    SCOPED_TRACE(::testing::PrintToString(c.strides));
    const tf::Tensor x = tf::constant(pattern(2 * 6 * 6 * 2, 0.1), {2, 6, 6, 2});
    const tf::Tensor f = tf::constant(pattern(3 * 3 * 2 * 2, 1.3), {3, 3, 2, 2});
    const auto conv = [&](const tf::Tensor& a, const tf::Tensor& b) {
      return tf::nn::conv2d(a, b, c.strides, "EXPLICIT", {1, 1}, c.explicit_paddings);
    };
    const tf::Tensor y64 = conv(x, f);
    const tf::Tensor dy = tf::constant(pattern(y64.num_elements(), 0.7), y64.shape());
    const tf::Tensor dx64 = tf::raw_ops::conv2d_backprop_input(x.shape(), f, dy, c.strides, "EXPLICIT",
                                                               {1, 1}, c.explicit_paddings);
    const tf::Tensor df64 = tf::raw_ops::conv2d_backprop_filter(x, f.shape(), dy, c.strides, "EXPLICIT",
                                                                {1, 1}, c.explicit_paddings);
    for (const tf::DType dtype : {tf::float32, tf::bfloat16}) {
      const double tol = dtype == tf::float32 ? 2e-5 : 0.05;
      const tf::Tensor xd = tf::cast(x, dtype), fd = tf::cast(f, dtype), dyd = tf::cast(dy, dtype);
      expect_near(values_of(conv(xd, fd)), values_of(y64), tol);
      expect_near(values_of(tf::raw_ops::conv2d_backprop_input(x.shape(), fd, dyd, c.strides, "EXPLICIT",
                                                               {1, 1}, c.explicit_paddings)),
                  values_of(dx64), tol);
      expect_near(values_of(tf::raw_ops::conv2d_backprop_filter(xd, f.shape(), dyd, c.strides, "EXPLICIT",
                                                                {1, 1}, c.explicit_paddings)),
                  values_of(df64), tol);
    }
  }
}
