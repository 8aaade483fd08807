// Reductions: values against hand-computed results and a naive double reference, keepdims,
// negative and non-adjacent axes, empty tensors, integers, NaN, errors, and the gradient rules
// that the generic gradient check cannot see (ties, zeros in products).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "core/parallel.h"
#include "support/close.h"
#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tf::testing::vals;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

tf::Tensor iota_f32(const tf::Shape& s) {
  std::vector<float> v(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return tf::constant(v, s);
}

template <class T>
tf::Tensor random_tensor(const tf::Shape& s, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<T> v(static_cast<std::size_t>(s.num_elements()));
  for (T& e : v) e = static_cast<T>(u(rng));
  return tf::constant(v, s);
}

/// Naive reference: sum (or max) over `axes` in double, by enumerating every input index.
std::vector<double> reference(const tf::Tensor& x, const std::vector<int>& axes, bool max) {
  const tf::Shape& s = x.shape();
  std::vector<bool> red(static_cast<std::size_t>(s.rank()), false);
  for (int a : axes) red[static_cast<std::size_t>(a)] = true;
  std::int64_t n_out = 1;
  for (int d = 0; d < s.rank(); ++d)
    if (!red[static_cast<std::size_t>(d)]) n_out *= s[d];
  std::vector<double> out(static_cast<std::size_t>(n_out), max ? -kInf : 0.0);
  std::vector<double> xv(static_cast<std::size_t>(x.num_elements()));
  tf::visit_dtype(x.dtype(), [&]<class T>() {
    auto v = x.values<T>();
    for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<double>(v[i]);
  });
  std::vector<std::int64_t> idx(static_cast<std::size_t>(s.rank()), 0);
  for (std::size_t i = 0; i < xv.size(); ++i) {
    std::int64_t o = 0;
    for (int d = 0; d < s.rank(); ++d)
      if (!red[static_cast<std::size_t>(d)]) o = o * s[d] + idx[static_cast<std::size_t>(d)];
    double& acc = out[static_cast<std::size_t>(o)];
    acc = max ? std::max(acc, xv[i]) : acc + xv[i];
    for (int d = s.rank() - 1; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < s[d]) break;
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
  return out;
}

// ---- axes: one axis or a list, as TensorFlow's axis argument --------------------------------------

// Any integer type is one axis; bool (keepdims' type), floating point and strings are not axes.
static_assert(std::is_convertible_v<int, tf::Axes>);
static_assert(std::is_convertible_v<long, tf::Axes>);
static_assert(std::is_convertible_v<std::int64_t, tf::Axes>);
static_assert(std::is_convertible_v<std::size_t, tf::Axes>);
static_assert(std::is_convertible_v<std::vector<std::int64_t>, tf::Axes>);
static_assert(!std::is_convertible_v<bool, tf::Axes>);
static_assert(!std::is_convertible_v<double, tf::Axes>);
static_assert(!std::is_convertible_v<std::string, tf::Axes>);
static_assert(!std::is_convertible_v<const char*, tf::Axes>);

TEST(ReduceAxes, OneAxisReadsLikeTensorFlow) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, 1)), ElementsAre(6.f, 15.f));
  const tf::Tensor mean = tf::reduce_mean(x, -1, true);
  EXPECT_EQ(mean.shape(), tf::Shape({2, 1}));
  EXPECT_THAT(vals<float>(mean), ElementsAre(2.f, 5.f));
  const int axis = 0;
  EXPECT_THAT(vals<float>(tf::reduce_max(x, axis)), ElementsAre(4.f, 5.f, 6.f));
  const std::size_t unsigned_axis = 1;
  EXPECT_THAT(vals<float>(tf::reduce_min(x, unsigned_axis)), ElementsAre(1.f, 4.f));
}

TEST(ReduceAxes, ListsVectorsAndTheEmptyList) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  EXPECT_EQ(tf::reduce_sum(x, {0, 1}).item<float>(), 21.f);
  EXPECT_EQ(tf::reduce_sum(x, {}).item<float>(), 21.f);
  const std::vector<std::int64_t> axes = {0};
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, axes)), ElementsAre(5.f, 7.f, 9.f));
  const std::vector<int> int_axes = {1};
  EXPECT_THAT(vals<float>(tf::reduce_prod(x, {int_axes.begin(), int_axes.end()})), ElementsAre(6.f, 120.f));
}

TEST(ReduceAxes, AnUnsignedAxisThatWrappedIsOutOfRangeNotTheLastAxis) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  const std::size_t wrapped = std::size_t{0} - 1;
  EXPECT_THAT([&] { tf::reduce_sum(x, wrapped); }, ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                                                       AllOf(HasSubstr("[Sum]"), HasSubstr("out of range"))));
}

// ---- values --------------------------------------------------------------------------------------

TEST(ReduceSum, AllAxesByDefault) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  const tf::Tensor y = tf::reduce_sum(x);
  EXPECT_EQ(y.shape(), tf::Shape());
  EXPECT_EQ(y.item<float>(), 21.f);
}

TEST(ReduceSum, ColumnsAndRows) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, {0})), ElementsAre(5.f, 7.f, 9.f));
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, {1})), ElementsAre(6.f, 15.f));
}

TEST(ReduceSum, NegativeAxisCountsFromTheEnd) {
  const tf::Tensor x = tf::constant({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_THAT(vals<double>(tf::reduce_sum(x, {-1})), ElementsAre(6.0, 15.0));
  EXPECT_THAT(vals<double>(tf::reduce_sum(x, {-2})), ElementsAre(5.0, 7.0, 9.0));
}

TEST(ReduceSum, KeepdimsKeepsReducedAxesAsOnes) {
  const tf::Tensor x = iota_f32({2, 3, 4});
  EXPECT_EQ(tf::reduce_sum(x, {1}, true).shape(), tf::Shape({2, 1, 4}));
  EXPECT_EQ(tf::reduce_sum(x, {0, 2}, true).shape(), tf::Shape({1, 3, 1}));
  EXPECT_EQ(tf::reduce_sum(x, {}, true).shape(), tf::Shape({1, 1, 1}));
  EXPECT_EQ(tf::reduce_sum(x, {0, 2}).shape(), tf::Shape({3}));
}

TEST(ReduceSum, NonAdjacentAxes) {
  // x[i][j][k] = 12 i + 4 j + k; summing over i and k leaves 3 values.
  const tf::Tensor x = iota_f32({2, 3, 4});
  // sum over i < 2, k < 4 of (12 i + 4 j + k) = 48 + 32 j + 12.
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, {0, 2})), ElementsAre(60.f, 92.f, 124.f));
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, {2, 0})), ElementsAre(60.f, 92.f, 124.f));
}

TEST(ReduceSum, ScalarReducesToItself) {
  EXPECT_EQ(tf::reduce_sum(tf::constant(2.5f)).item<float>(), 2.5f);
  EXPECT_EQ(tf::reduce_sum(tf::constant(2.5f), {}, true).shape(), tf::Shape());
}

TEST(ReduceSum, SizeOneAxesOnlyIsACopy) {
  const tf::Tensor x = iota_f32({2, 1, 3});
  const tf::Tensor y = tf::reduce_sum(x, {1});
  EXPECT_EQ(y.shape(), tf::Shape({2, 3}));
  EXPECT_EQ(vals<float>(y), vals<float>(x));
}

struct LargeCase {
  tf::Shape shape;
  std::vector<int> axes;
};

class ReduceLarge : public ::testing::TestWithParam<LargeCase> {};

// Every kernel path (contiguous runs, column tiles, chunked splitting, non-adjacent groups) against
// the naive double reference.
TEST_P(ReduceLarge, SumAndMaxMatchNaiveReference) {
  const auto& [shape, axes] = GetParam();
  const tf::Tensor x = random_tensor<double>(shape, 7);
  const tf::Axes ax(axes.begin(), axes.end());
  const std::vector<double> want_sum = reference(x, axes, false), want_max = reference(x, axes, true);
  const std::vector<double> sum = vals<double>(tf::reduce_sum(x, ax)),
                            max = vals<double>(tf::reduce_max(x, ax));
  ASSERT_EQ(sum.size(), want_sum.size());
  for (std::size_t i = 0; i < sum.size(); ++i) {
    EXPECT_NEAR(sum[i], want_sum[i], 1e-9 * (1 + std::abs(want_sum[i]))) << "output " << i;
    EXPECT_EQ(max[i], want_max[i]) << "output " << i;
  }
  // float32 input, double accumulation: within float32 rounding of the exact sum.
  const tf::Tensor xf = random_tensor<float>(shape, 8);
  const std::vector<double> want_f = reference(xf, axes, false);
  const std::vector<float> sum_f = vals<float>(tf::reduce_sum(xf, ax));
  for (std::size_t i = 0; i < sum_f.size(); ++i)
    EXPECT_NEAR(sum_f[i], want_f[i], 1e-6 * (1 + std::abs(want_f[i]))) << "float32 output " << i;
}

INSTANTIATE_TEST_SUITE_P(Paths, ReduceLarge,
                         ::testing::Values(LargeCase{{1 << 20}, {0}},          // one long run, chunked
                                           LargeCase{{256, 512}, {0}},         // column sums
                                           LargeCase{{256, 512}, {1}},         // row sums
                                           LargeCase{{300000, 3}, {0}},        // few columns, chunked
                                           LargeCase{{3, 300000}, {1}},        // few long rows, chunked
                                           LargeCase{{7, 300, 9}, {1}},        // middle axis, narrow tiles
                                           LargeCase{{5, 700, 3}, {0, 2}},     // non-adjacent groups
                                           LargeCase{{4, 6, 5, 300}, {1, 3}},  // two groups, tiles
                                           LargeCase{{1000, 1000}, {0, 1}},
                                           LargeCase{{2, 3, 2, 3, 2, 3, 2, 3}, {1, 3, 5, 7}},  // four groups
                                           LargeCase{{3, 1, 4, 1, 5}, {1, 2}},  // size-1 axes merge away
                                           LargeCase{{3, 1, 4, 1, 5}, {1, 3}},  // only size-1 axes: a copy
                                           LargeCase{{40000, 17}, {0}}));       // narrow fold, remainder rows

TEST(ReduceSum, Float32AccumulatesInDouble) {
  // A float accumulator drifts to about 100958 here; a double one gives the correctly rounded sum.
  const tf::Tensor x = tf::fill({1000000}, 0.1, tf::float32);
  EXPECT_EQ(tf::reduce_sum(x).item<float>(), static_cast<float>(1e6 * static_cast<double>(0.1f)));
}

TEST(ReduceSum, SameBitsWithOneThreadOrMany) {
  const tf::Tensor x = random_tensor<float>({3, 400000}, 11);
  const int saved = tf::cpu::num_threads();
  tf::cpu::set_num_threads(1);
  const std::vector<float> one = vals<float>(tf::reduce_sum(x, {1})), all1 = vals<float>(tf::reduce_sum(x));
  tf::cpu::set_num_threads(std::max(4, saved));
  const std::vector<float> many = vals<float>(tf::reduce_sum(x, {1})), all2 = vals<float>(tf::reduce_sum(x));
  tf::cpu::set_num_threads(saved);
  EXPECT_EQ(one, many);
  EXPECT_EQ(all1, all2);
}

TEST(ReduceSum, Integers) {
  EXPECT_EQ(tf::reduce_sum(tf::constant({1, 2, 3})).item<std::int32_t>(), 6);
  EXPECT_EQ(tf::reduce_sum(tf::constant({1, 2, 3})).dtype(), tf::int32);
  const tf::Tensor x = tf::constant(std::vector<std::int64_t>{1, 2, 3, 4}, {2, 2});
  EXPECT_THAT(vals<std::int64_t>(tf::reduce_sum(x, {0})), ElementsAre(4, 6));
}

TEST(ReduceSum, IntegerOverflowWrapsLikeTensorFlow) {
  const tf::Tensor x = tf::constant({std::numeric_limits<std::int32_t>::max(), 1});
  EXPECT_EQ(tf::reduce_sum(x).item<std::int32_t>(), std::numeric_limits<std::int32_t>::min());
}

TEST(ReduceMean, FloatValues) {
  const tf::Tensor x = tf::constant({{1.f, 2.f, 3.f}, {4.f, 5.f, 6.f}});
  EXPECT_EQ(tf::reduce_mean(x).item<float>(), 3.5f);
  EXPECT_THAT(vals<float>(tf::reduce_mean(x, {0})), ElementsAre(2.5f, 3.5f, 4.5f));
  EXPECT_THAT(vals<float>(tf::reduce_mean(x, {-1}, true)), ElementsAre(2.f, 5.f));
}

TEST(ReduceMean, IntegersDivideTruncatingTowardZero) {
  EXPECT_EQ(tf::reduce_mean(tf::constant({1, 2})).item<std::int32_t>(), 1);
  EXPECT_EQ(tf::reduce_mean(tf::constant({-1, -2})).item<std::int32_t>(), -1);
  EXPECT_EQ(tf::reduce_mean(tf::constant(std::vector<std::int64_t>{7, 8, 9, 11})).item<std::int64_t>(), 8);
}

TEST(ReduceMean, EmptyAxisIsNaNForFloats) {
  EXPECT_TRUE(std::isnan(tf::reduce_mean(tf::zeros({0})).item<float>()));
  const tf::Tensor y = tf::reduce_mean(tf::zeros({2, 0}, tf::float64), {1});
  EXPECT_EQ(y.shape(), tf::Shape({2}));
  EXPECT_TRUE(std::isnan(vals<double>(y)[0]));
}

TEST(ReduceMean, EmptyAxisThrowsForIntegers) {
  EXPECT_THAT([] { tf::reduce_mean(tf::zeros({0}, tf::int32)); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(
                  HasSubstr("[Mean]"), HasSubstr("empty axis"), HasSubstr("int32 tensor of shape (0,)"))));
  // An empty output needs no value: fine.
  EXPECT_EQ(tf::reduce_mean(tf::zeros({0, 3}, tf::int32), {1}).shape(), tf::Shape({0}));
}

TEST(ReduceMaxMin, Values) {
  const tf::Tensor x = tf::constant({{1.f, 7.f, 3.f}, {4.f, -5.f, 6.f}});
  EXPECT_EQ(tf::reduce_max(x).item<float>(), 7.f);
  EXPECT_EQ(tf::reduce_min(x).item<float>(), -5.f);
  EXPECT_THAT(vals<float>(tf::reduce_max(x, {0})), ElementsAre(4.f, 7.f, 6.f));
  EXPECT_THAT(vals<float>(tf::reduce_min(x, {1})), ElementsAre(1.f, -5.f));
}

TEST(ReduceMaxMin, Integers) {
  const tf::Tensor x = tf::constant({3, -9, 12, 4});
  EXPECT_EQ(tf::reduce_max(x).item<std::int32_t>(), 12);
  EXPECT_EQ(tf::reduce_min(x).item<std::int32_t>(), -9);
  EXPECT_EQ(tf::reduce_max(tf::constant(std::vector<std::int64_t>{-3, -1})).item<std::int64_t>(), -1);
}

TEST(ReduceMaxMin, NaNPropagates) {
  const tf::Tensor x = tf::constant({1.0, kNaN, 3.0});
  EXPECT_TRUE(std::isnan(tf::reduce_max(x).item<double>()));
  EXPECT_TRUE(std::isnan(tf::reduce_min(x).item<double>()));
}

TEST(ReduceMaxMin, EmptyReductionGivesTheIdentity) {
  EXPECT_EQ(tf::reduce_max(tf::zeros({0})).item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(tf::reduce_min(tf::zeros({0})).item<float>(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(tf::reduce_max(tf::zeros({0}, tf::int32)).item<std::int32_t>(),
            std::numeric_limits<std::int32_t>::lowest());
  EXPECT_EQ(tf::reduce_min(tf::zeros({0}, tf::int64)).item<std::int64_t>(),
            std::numeric_limits<std::int64_t>::max());
}

TEST(ReduceProd, Values) {
  const tf::Tensor x = tf::constant({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}});
  EXPECT_EQ(tf::reduce_prod(x).item<double>(), 720.0);
  EXPECT_THAT(vals<double>(tf::reduce_prod(x, {0})), ElementsAre(4.0, 10.0, 18.0));
  EXPECT_EQ(tf::reduce_prod(tf::constant({2, 3, -4})).item<std::int32_t>(), -24);
  EXPECT_EQ(tf::reduce_prod(tf::zeros({0})).item<float>(), 1.f);
}

TEST(ReduceEmpty, EmptyOutputsAndEmptyReductions) {
  const tf::Tensor x = tf::zeros({2, 0});
  EXPECT_EQ(tf::reduce_sum(x, {0}).shape(), tf::Shape({0}));
  EXPECT_THAT(vals<float>(tf::reduce_sum(x, {1})), ElementsAre(0.f, 0.f));
  EXPECT_EQ(tf::reduce_sum(tf::zeros({1, 0, 3}), {1}, true).shape(), tf::Shape({1, 1, 3}));
  EXPECT_EQ(tf::reduce_sum(tf::zeros({0})).item<float>(), 0.f);
}

TEST(ReduceLogSumExp, Values) {
  EXPECT_NEAR(tf::reduce_logsumexp(tf::constant({1.0, 2.0, 3.0})).item<double>(), 3.4076059644443806, 1e-14);
  const tf::Tensor x = tf::constant({{0.f, 0.f}, {1.f, 1.f}});
  EXPECT_THAT(vals<float>(tf::reduce_logsumexp(x, {1})),
              ElementsAre(::testing::FloatEq(std::log(2.f)), ::testing::FloatEq(1.f + std::log(2.f))));
}

TEST(ReduceLogSumExp, LargeValuesDoNotOverflow) {
  EXPECT_FLOAT_EQ(tf::reduce_logsumexp(tf::constant({1000.f, 1000.f})).item<float>(), 1000.f + std::log(2.f));
  EXPECT_FLOAT_EQ(tf::reduce_logsumexp(tf::constant({-1000.f, -1000.f})).item<float>(),
                  -1000.f + std::log(2.f));
}

TEST(ReduceLogSumExp, InfinitiesAndNaNFollowTensorFlow) {
  EXPECT_EQ(tf::reduce_logsumexp(tf::constant({-kInf, -kInf})).item<double>(), -kInf);
  EXPECT_EQ(tf::reduce_logsumexp(tf::constant({1.0, kInf})).item<double>(), kInf);
  EXPECT_TRUE(std::isnan(tf::reduce_logsumexp(tf::constant({1.0, kNaN})).item<double>()));
  EXPECT_EQ(tf::reduce_logsumexp(tf::zeros({0}, tf::float64)).item<double>(), -kInf);
}

TEST(ReduceLogSumExp, NonAdjacentAxesAndKeepdims) {
  const tf::Tensor x = random_tensor<double>({3, 4, 5}, 3);
  const tf::Tensor y = tf::reduce_logsumexp(x, {0, 2}, true);
  EXPECT_EQ(y.shape(), tf::Shape({1, 4, 1}));
  const std::vector<double> want = reference(tf::exp(x), {0, 2}, false);
  for (std::size_t j = 0; j < want.size(); ++j) EXPECT_NEAR(vals<double>(y)[j], std::log(want[j]), 1e-12);
}

TEST(ArgMax, ValuesAlongEachAxis) {
  const tf::Tensor x = tf::constant({{1.f, 9.f, 3.f}, {8.f, 5.f, 6.f}});
  const tf::Tensor a0 = tf::argmax(x, 0);
  EXPECT_EQ(a0.dtype(), tf::int64);
  EXPECT_THAT(vals<std::int64_t>(a0), ElementsAre(1, 0, 1));
  EXPECT_THAT(vals<std::int64_t>(tf::argmax(x, 1)), ElementsAre(1, 0));
  EXPECT_THAT(vals<std::int64_t>(tf::argmax(x, -1)), ElementsAre(1, 0));
  EXPECT_THAT(vals<std::int64_t>(tf::argmin(x, 0)), ElementsAre(0, 1, 0));
  EXPECT_THAT(vals<std::int64_t>(tf::argmin(x, 1)), ElementsAre(0, 1));
}

TEST(Sum, BFloat16SumsTheWidenedValuesWithoutWideningBitwise) {
  // bfloat16 is read as it is (no float32 copy) and summed in double in the same order as the
  // float32 sum of the same values: equal after rounding, bit for bit, for every kind of reduction
  // (full, rows, columns, non-adjacent axes, pairwise and chunked lengths), Inf and NaN included.
  std::mt19937 gen(3);
  std::normal_distribution<float> normal(0.f, 3.f);
  struct Case {
    tf::Shape shape;
    tf::Axes axes;
  };
  for (const Case& c : {Case{{300000}, {}}, Case{{128, 28, 28, 32}, {0, 1, 2}}, Case{{64, 700}, {1}},
                        Case{{5, 6, 7}, {0, 2}}, Case{{3, 1, 4}, {1}}, Case{{0, 3}, {0}}}) {
    SCOPED_TRACE(c.shape.to_string());
    std::vector<float> v(static_cast<std::size_t>(c.shape.num_elements()));
    for (float& e : v) e = normal(gen);
    if (v.size() > 10) {
      v[3] = std::numeric_limits<float>::infinity();
      v[9] = std::numeric_limits<float>::quiet_NaN();
    }
    const tf::Tensor x16 = tf::cast(tf::constant(v, c.shape), tf::bfloat16);
    const tf::Tensor s16 = tf::reduce_sum(x16, c.axes);
    ASSERT_EQ(s16.dtype(), tf::bfloat16);
    const tf::Tensor s32 = tf::reduce_sum(tf::cast(x16, tf::float32), c.axes);
    EXPECT_TRUE(tf::testing::bitwise_equal(s16, tf::cast(s32, tf::bfloat16)));
  }
}

TEST(Reductions, BFloat16IsTheFloat32ReductionOfTheSameValuesRounded) {
  // Max, Min, Prod and ReduceLogSumExp widen bfloat16, reduce in float32 and round once: bit for
  // bit the float32 reduction rounded, over a leading, a middle and every axis.
  using Reduce = tf::Tensor (*)(const tf::Tensor&, const tf::Axes&, bool);
  const tf::Tensor x16 = tf::cast(tf::random::normal({3, 4, 2}, 0, 1, tf::float32, 8), tf::bfloat16);
  for (const Reduce f : {Reduce{&tf::reduce_max}, Reduce{&tf::reduce_min}, Reduce{&tf::reduce_prod},
                         Reduce{&tf::reduce_logsumexp}})
    for (const tf::Axes& axes : {tf::Axes{0}, tf::Axes{1}, tf::Axes{}}) {
      const tf::Tensor y16 = f(x16, axes, false);
      ASSERT_EQ(y16.dtype(), tf::bfloat16);
      EXPECT_TRUE(tf::testing::bitwise_equal(
          y16, tf::cast(f(tf::cast(x16, tf::float32), axes, false), tf::bfloat16)));
    }
}

TEST(Prod, BFloat16GradientWithAZeroIsTheProductOfTheOthers) {
  // The zero test of Prod's gradient reads a bfloat16 input through float32.
  const tf::Tensor x = tf::cast(tf::constant({{2.f, 0.f, 3.f}, {1.f, 2.f, 4.f}}), tf::bfloat16);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_prod(x, {1});
  const tf::Tensor g = *tape.gradient(y, x);
  ASSERT_EQ(g.dtype(), tf::bfloat16);
  EXPECT_THAT(vals<float>(tf::cast(g, tf::float32)), ElementsAre(0.f, 6.f, 0.f, 8.f, 4.f, 2.f));
}

TEST(ArgMax, FirstIndexOnTies) {
  EXPECT_EQ(tf::argmax(tf::constant({1, 5, 5, 2, 5})).item<std::int64_t>(), 1);
  EXPECT_EQ(tf::argmin(tf::constant({4, 1, 3, 1})).item<std::int64_t>(), 1);
  const tf::Tensor x = tf::constant({{2.0, 7.0}, {2.0, 7.0}, {1.0, 7.0}});
  EXPECT_THAT(vals<std::int64_t>(tf::argmax(x, 0)), ElementsAre(0, 0));
  EXPECT_THAT(vals<std::int64_t>(tf::argmin(x, 0)), ElementsAre(2, 0));
}

TEST(ArgMax, FirstNaNWins) {
  EXPECT_EQ(tf::argmax(tf::constant({1.0, kNaN, 9.0, kNaN})).item<std::int64_t>(), 1);
  EXPECT_EQ(tf::argmin(tf::constant({1.0, kNaN, -9.0})).item<std::int64_t>(), 1);
  const tf::Tensor x = tf::constant({{1.0, 2.0}, {kNaN, 3.0}, {kNaN, 0.0}});
  EXPECT_THAT(vals<std::int64_t>(tf::argmax(x, 0)), ElementsAre(1, 1));
}

TEST(ArgMax, LargeInputMatchesScan) {
  const tf::Tensor x = random_tensor<float>({3, 200000}, 5);
  const auto v = x.values<float>();
  const std::vector<std::int64_t> got = vals<std::int64_t>(tf::argmax(x, 1));
  for (std::int64_t r = 0; r < 3; ++r) {
    auto row = v.subspan(static_cast<std::size_t>(r * 200000), 200000);
    EXPECT_EQ(got[static_cast<std::size_t>(r)], std::max_element(row.begin(), row.end()) - row.begin());
  }
}

TEST(ArgMax, StridedAxisMatchesScan) {
  const tf::Tensor x = random_tensor<double>({300, 700}, 9);
  const auto v = x.values<double>();
  const std::vector<std::int64_t> got_max = vals<std::int64_t>(tf::argmax(x, 0));
  const std::vector<std::int64_t> got_min = vals<std::int64_t>(tf::argmin(x, 0));
  for (std::size_t c = 0; c < 700; ++c) {
    std::size_t best = 0, worst = 0;
    for (std::size_t r = 1; r < 300; ++r) {
      if (v[r * 700 + c] > v[best * 700 + c]) best = r;
      if (v[r * 700 + c] < v[worst * 700 + c]) worst = r;
    }
    EXPECT_EQ(got_max[c], static_cast<std::int64_t>(best));
    EXPECT_EQ(got_min[c], static_cast<std::int64_t>(worst));
  }
}

TEST(ArgMax, EmptyOutputIsFine) { EXPECT_EQ(tf::argmax(tf::zeros({0, 3}), 1).shape(), tf::Shape({0})); }

// ---- errors --------------------------------------------------------------------------------------

TEST(ReduceErrors, RepeatedAxis) {
  EXPECT_THAT(
      [] {
        tf::reduce_sum(tf::zeros({2, 3}), {1, -1});
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Sum]"), HasSubstr("repeated"), HasSubstr("float32 tensor of shape (2, 3)"))));
}

TEST(ReduceErrors, AxisOutOfRange) {
  EXPECT_THAT(
      [] {
        tf::reduce_max(tf::zeros({2, 3}), {2});
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Max]"), HasSubstr("axis 2 is out of range"), HasSubstr("rank 2"))));
  EXPECT_THROW(tf::reduce_mean(tf::zeros({2, 3}), {-3}), tf::InvalidArgumentError);
  EXPECT_THROW(tf::argmax(tf::zeros({2, 3}), 2), tf::InvalidArgumentError);
  EXPECT_THROW(tf::argmax(tf::constant(1.f)), tf::InvalidArgumentError);
}

TEST(ReduceErrors, BoolIsRejected) {
  const tf::Tensor b = tf::constant({true, false});
  for (auto f : {&tf::reduce_sum, &tf::reduce_mean, &tf::reduce_max, &tf::reduce_min, &tf::reduce_prod})
    EXPECT_THAT([&] { f(b, {}, false); },
                ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("bool tensor of shape (2,)")));
  EXPECT_THAT([&] { tf::argmax(b); }, ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                                          AllOf(HasSubstr("[ArgMax]"), HasSubstr("bool"))));
}

TEST(ReduceErrors, LogSumExpNeedsFloats) {
  EXPECT_THAT(
      [] {
        tf::reduce_logsumexp(tf::constant({1, 2}));
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[ReduceLogSumExp]"), HasSubstr("int32 tensor of shape (2,)"))));
}

TEST(ReduceErrors, ArgMaxOfEmptyAxis) {
  EXPECT_THAT(
      [] {
        tf::argmin(tf::zeros({2, 0}), 1);
      },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[ArgMin]"), HasSubstr("axis 1 is empty"), HasSubstr("shape (2, 0)"))));
}

// ---- gradients the generic check cannot see -----------------------------------------------------

std::vector<double> grad_of(tf::Tensor (*f)(const tf::Tensor&, const tf::Axes&, bool), const tf::Tensor& x) {
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = f(x, {}, false);
  return vals<double>(*tape.gradient(y, x));
}

TEST(ReduceGradient, MaxSplitsEquallyAmongTies) {
  EXPECT_THAT(grad_of(&tf::reduce_max, tf::constant({1.0, 3.0, 3.0})), ElementsAre(0.0, 0.5, 0.5));
  const std::vector<double> g = grad_of(&tf::reduce_min, tf::constant({2.0, 2.0, 2.0, 5.0}));
  EXPECT_THAT(g, ElementsAre(1.0 / 3, 1.0 / 3, 1.0 / 3, 0.0));
}

TEST(ReduceGradient, MaxTiesPerRow) {
  const tf::Tensor x = tf::constant({{1.0, 4.0, 4.0}, {5.0, 2.0, 3.0}});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_max(x, {1});
  const tf::Tensor g = *tape.gradient(y, x, {tf::constant({2.0, 10.0})});
  EXPECT_THAT(vals<double>(g), ElementsAre(0.0, 1.0, 1.0, 10.0, 0.0, 0.0));
}

TEST(ReduceGradient, MeanIsOneOverCount) {
  EXPECT_THAT(grad_of(&tf::reduce_mean, tf::constant({1.0, 2.0, 3.0, 4.0})),
              ElementsAre(0.25, 0.25, 0.25, 0.25));
}

TEST(ReduceGradient, ProdWithoutZeros) {
  EXPECT_THAT(grad_of(&tf::reduce_prod, tf::constant({2.0, 3.0, 4.0})), ElementsAre(12.0, 8.0, 6.0));
}

TEST(ReduceGradient, ProdWithOneZero) {
  EXPECT_THAT(grad_of(&tf::reduce_prod, tf::constant({2.0, 0.0, 4.0})), ElementsAre(0.0, 8.0, 0.0));
}

TEST(ReduceGradient, ProdWithTwoZeros) {
  EXPECT_THAT(grad_of(&tf::reduce_prod, tf::constant({0.0, 3.0, 0.0})), ElementsAre(0.0, 0.0, 0.0));
}

TEST(ReduceGradient, ProdZerosPerGroup) {
  // Row 0 has one zero, row 1 none, row 2 two.
  const tf::Tensor x = tf::constant({{2.0, 0.0}, {3.0, 5.0}, {0.0, 0.0}});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_prod(x, {1});
  EXPECT_THAT(vals<double>(*tape.gradient(y, x)), ElementsAre(0.0, 2.0, 5.0, 3.0, 0.0, 0.0));
}

TEST(ReduceGradient, ProdSecondDerivativeWithoutZeros) {
  // H[i][j] = prod of the others but i and j (0 on the diagonal); H e0 = (0, x2, x1).
  const tf::Tensor x = tf::constant({2.0, 3.0, 4.0});
  tf::GradientTape outer;
  outer.watch(x);
  tf::Tensor g;
  {
    tf::GradientTape inner;
    inner.watch(x);
    g = *inner.gradient(tf::reduce_prod(x), x);
  }
  const tf::Tensor h0 = *outer.gradient(g * tf::constant({1.0, 0.0, 0.0}), x);
  EXPECT_THAT(vals<double>(h0), ElementsAre(0.0, 4.0, 3.0));
}

TEST(ReduceGradient, LogSumExpIsSoftmax) {
  const std::vector<double> g = grad_of(&tf::reduce_logsumexp, tf::constant({1.0, 2.0, 3.0}));
  const double s = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(g[0], std::exp(1.0) / s, 1e-15);
  EXPECT_NEAR(g[1], std::exp(2.0) / s, 1e-15);
  EXPECT_NEAR(g[2], std::exp(3.0) / s, 1e-15);
}

TEST(ReduceGradient, IntegerReductionsAreNotRecorded) {
  const tf::Tensor x = tf::constant({1, 2});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::reduce_sum(x);
  EXPECT_FALSE(tape.gradient(y, x).has_value());
}

TEST(ReduceGradient, ArgMaxIsNotDifferentiable) {
  EXPECT_EQ(tf::gradient_status("ArgMax"), tf::GradientStatus::NotDifferentiable);
  EXPECT_EQ(tf::gradient_status("ArgMin"), tf::GradientStatus::NotDifferentiable);
}

}  // namespace
