// jacobian, batch_jacobian and hessian: against finite differences and closed forms.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "support/errors.h"
#include "support/log_capture.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

namespace {

/// f(x) = sin(x) * x + x * sum(x): coupled, so the Jacobian is dense.
tf::Tensor f(const tf::Tensor& x) { return tf::sin(x) * x + x * tf::reduce_sum(x); }

std::vector<double> finite_difference_jacobian(const tf::Tensor& x) {
  const auto n = x.num_elements();
  const std::int64_t m = f(x).num_elements();
  std::vector<double> j(static_cast<std::size_t>(m * n));
  for (std::int64_t c = 0; c < n; ++c) {
    auto xp = x.to_vector<double>(), xm = xp;
    xp[static_cast<std::size_t>(c)] += 1e-6;
    xm[static_cast<std::size_t>(c)] -= 1e-6;
    auto fp = f(tf::constant(xp, x.shape())).to_vector<double>(),
         fm = f(tf::constant(xm, x.shape())).to_vector<double>();
    for (std::int64_t r = 0; r < m; ++r)
      j[static_cast<std::size_t>(r * n + c)] =
          (fp[static_cast<std::size_t>(r)] - fm[static_cast<std::size_t>(r)]) / 2e-6;
  }
  return j;
}

TEST(Jacobian, MatchesFiniteDifferencesWithShapeTargetPlusSource) {
  tf::Tensor x = tf::constant(std::vector<double>{0.3, -1.2, 2.0, 0.7, 0.1, -0.4}, tf::Shape{2, 3});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = f(x);
  auto j = tape.jacobian(y, x);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->shape(), (tf::Shape{2, 3, 2, 3}));
  auto expected = finite_difference_jacobian(x);
  auto got = j->to_vector<double>();
  for (std::size_t k = 0; k < got.size(); ++k) EXPECT_NEAR(got[k], expected[k], 1e-6) << k;
}

TEST(Jacobian, RowsEqualSeparateGradientCalls) {
  tf::Tensor x = tf::constant(std::vector<double>{0.5, 1.5, -2.0});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor y = f(x);
  auto j = tape.jacobian(y, x)->to_vector<double>();
  for (int r = 0; r < 3; ++r) {
    std::vector<double> onehot(3, 0.0);
    onehot[static_cast<std::size_t>(r)] = 1.0;
    auto row = tape.gradient(y, x, {tf::constant(onehot)})->to_vector<double>();
    for (int c = 0; c < 3; ++c)
      EXPECT_EQ(j[static_cast<std::size_t>(r * 3 + c)], row[static_cast<std::size_t>(c)]);
  }
}

TEST(Jacobian, UnconnectedAndIntegerSources) {
  tf::Tensor x = tf::constant({1.f, 2.f});
  tf::Tensor other = tf::constant({1.f, 2.f, 3.f});
  tf::Tensor ints = tf::constant({1, 2});
  tf::GradientTape tape({.persistent = true});
  tape.watch({x, other, ints});
  tf::Tensor y = x * x;
  auto none = tape.jacobian(y, {x, other, ints});
  EXPECT_TRUE(none[0].has_value());
  EXPECT_FALSE(none[1].has_value());
  EXPECT_FALSE(none[2].has_value());
  auto zero = tape.jacobian(y, {other, ints}, tf::UnconnectedGradients::Zero);
  EXPECT_EQ(zero[0]->shape(), (tf::Shape{2, 3}));
  EXPECT_EQ(zero[1]->shape(), (tf::Shape{2, 2}));
  EXPECT_EQ(zero[1]->dtype(), tf::DType::Int32);
}

TEST(Jacobian, NonPersistentTapeIsConsumed) {
  tf::Tensor x = tf::constant({1.f, 2.f});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  EXPECT_EQ(tape.jacobian(y, x)->to_vector<float>(), (std::vector<float>{2.f, 0.f, 0.f, 4.f}));
  EXPECT_THROW((void)tape.jacobian(y, x), tf::FailedPreconditionError);
}

TEST(BatchJacobian, PerExampleJacobians) {
  tf::Tensor x = tf::constant({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x * x;  // [3, 2]; example b depends only on x[b]
  auto j = tape.batch_jacobian(y, x);
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->shape(), (tf::Shape{3, 2, 2}));
  const std::vector<double> expected{3, 0, 0, 12, 27, 0, 0, 48, 75, 0, 0, 108};
  EXPECT_EQ(j->to_vector<double>(), expected);
}

TEST(BatchJacobian, MismatchedBatchDimensionsThrow) {
  tf::Tensor x = tf::ones({3, 2});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::reshape(x, {2, 3});
  try {
    (void)tape.batch_jacobian(y, x);
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("Need first dimension of target shape (2, 3) and source shape (3, 2) to match."));
  }
}

TEST(BatchJacobian, UnconnectedIsNoneNotZeros) {
  tf::Tensor x = tf::ones({3, 2}), z = tf::ones({3, 2});
  tf::GradientTape tape({.persistent = true});
  tape.watch({x, z});
  tf::Tensor y = x * 2.0f;
  EXPECT_FALSE(tape.batch_jacobian(y, z).has_value());
  EXPECT_EQ(tape.batch_jacobian(y, z, tf::UnconnectedGradients::Zero)->shape(), (tf::Shape{3, 2, 2}));
}

TEST(Hessian, OfACoupledFunction) {
  // h(x) = sum(x)^2 + sum(sin(x)): H = 2 * ones - diag(sin(x))
  tf::Tensor x = tf::constant(std::vector<double>{0.2, -0.5, 1.0});
  auto h = tf::hessian(
      [](const tf::Tensor& v) { return tf::reduce_sum(v) * tf::reduce_sum(v) + tf::reduce_sum(tf::sin(v)); },
      x);
  EXPECT_EQ(h.shape(), (tf::Shape{3, 3}));
  auto xv = x.to_vector<double>();
  auto hv = h.to_vector<double>();
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c)
      EXPECT_NEAR(hv[static_cast<std::size_t>(r * 3 + c)],
                  2.0 - (r == c ? std::sin(xv[static_cast<std::size_t>(r)]) : 0.0), 1e-12);
}

TEST(Hessian, RequiresAScalarFunction) {
  EXPECT_THROW(tf::hessian([](const tf::Tensor& v) { return v * v; }, tf::ones({2})),
               tf::InvalidArgumentError);
}

}  // namespace

namespace {

TEST(JacobianVectorised, DenseLayerMatchesTheRowByRowLoop) {
  tf::Variable w(tf::random::normal({5, 4}, 0, 1, tf::float64, 1));
  tf::Variable b(tf::random::normal({5, 1}, 0, 1, tf::float64, 2));
  tf::Tensor x = tf::random::normal({4, 1}, 0, 1, tf::float64, 3);
  tf::testing::LogCapture log(tf::LogLevel::Info);  // the vectorisation fallback note
  std::vector<tf::Gradient> fast, slow;
  for (bool parallel : {true, false}) {
    tf::GradientTape tape;
    tape.watch(x);
    tf::Tensor y = tf::tanh(tf::matmul(w, x) + b) * 2.0;
    auto j = tape.jacobian(y, {x, w, b}, tf::UnconnectedGradients::None, parallel);
    (parallel ? fast : slow) = j;
  }
  EXPECT_TRUE(log.messages.empty()) << log.messages.front();
  ASSERT_EQ(fast.size(), 3u);
  EXPECT_EQ(fast[0]->shape(), (tf::Shape{5, 1, 4, 1}));
  EXPECT_EQ(fast[1]->shape(), (tf::Shape{5, 1, 5, 4}));
  for (std::size_t i = 0; i < 3; ++i) {
    auto a = fast[i]->to_vector<double>(), e = slow[i]->to_vector<double>();
    ASSERT_EQ(a.size(), e.size());
    for (std::size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], e[k], 1e-14) << i << ":" << k;
  }
}

TEST(JacobianVectorised, BroadcastOperandsKeepTheStackDimension) {
  tf::Tensor x = tf::constant(std::vector<double>{0.5, -1.0, 2.0}, tf::Shape{3, 1});
  tf::Tensor c = tf::constant(std::vector<double>{1.0, 2.0}, tf::Shape{1, 2});
  tf::GradientTape tape({.persistent = true});
  tape.watch({x, c});
  tf::Tensor y = tf::exp(x * c) / (x + 3.0);  // [3, 2]
  auto fast = tape.jacobian(y, {x, c});
  auto slow = tape.jacobian(y, {x, c}, tf::UnconnectedGradients::None, false);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(fast[i]->shape(), slow[i]->shape());
    auto a = fast[i]->to_vector<double>(), e = slow[i]->to_vector<double>();
    for (std::size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], e[k], 1e-13);
  }
}

TEST(JacobianVectorised, AnOpWithoutBatchingFallsBackAndSaysWhich) {
  tf::testing::LogCapture log(tf::LogLevel::Info);  // the vectorisation fallback note
  tf::Tensor x = tf::constant({1.0, 2.0});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * tf::reduce_sum(tf::sign(x) * x);
  auto j = tape.jacobian(y, x);
  EXPECT_EQ(j->to_vector<double>(), (std::vector<double>{4.0, 1.0, 2.0, 5.0}));
  ASSERT_FALSE(log.messages.empty());
  EXPECT_THAT(log.messages[0], HasSubstr("cannot take stacked cotangents"));
}

}  // namespace

namespace {

TEST(BatchJacobianVectorised, DenseLayerPerExampleMatchesClosedForm) {
  // y[b] = tanh(x[b] W): dy[b, j]/dx[b, i] = (1 - y[b, j]^2) W[i, j]
  tf::Tensor x = tf::random::normal({4, 3}, 0, 1, tf::float64, 5);
  tf::Tensor w = tf::random::normal({3, 2}, 0, 1, tf::float64, 6);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::tanh(tf::matmul(x, w));
  auto j = tape.batch_jacobian(y, x);
  ASSERT_EQ(j->shape(), (tf::Shape{4, 2, 3}));
  auto jv = j->to_vector<double>(), yv = y.to_vector<double>(), wv = w.to_vector<double>();
  for (int b = 0; b < 4; ++b)
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 3; ++i) {
        const double yy = yv[static_cast<std::size_t>(b * 2 + r)];
        EXPECT_NEAR(jv[static_cast<std::size_t>((b * 2 + r) * 3 + i)],
                    (1 - yy * yy) * wv[static_cast<std::size_t>(i * 2 + r)], 1e-12);
      }
}

TEST(BatchJacobianVectorised, UnbatchableOpFallsBackColumnByColumn) {
  tf::Tensor x = tf::constant({{1.0, -2.0}, {3.0, 4.0}});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::sign(x) * x * x;  // Sign's gradient is not batchable
  EXPECT_EQ(tape.batch_jacobian(y, x)->to_vector<double>(), (std::vector<double>{2, 0, 0, 4, 6, 0, 0, 8}));
}

}  // namespace

namespace {

TEST(Hessian, MatchesFiniteDifferencesOfTheGradient) {
  // g(x) = sum(tanh(W x)) with x a column: H = W^T diag(-2 tanh(Wx) (1 - tanh^2(Wx))) W.
  const tf::Tensor w = tf::random::normal({4, 3}, 0, 1, tf::float64, 21);
  auto g = [&](const tf::Tensor& x) {
    return tf::reduce_sum(tf::tanh(tf::matmul(w, tf::reshape(x, {3, 1}))));
  };
  const tf::Tensor x = tf::constant(std::vector<double>{0.3, -0.2, 0.5});
  const auto h = tf::hessian(g, x).to_vector<double>();
  auto grad_at = [&](std::vector<double> v) {
    tf::Tensor xv = tf::constant(v);
    tf::GradientTape tape;
    tape.watch(xv);
    return tape.gradient(g(xv), xv)->to_vector<double>();
  };
  for (int c = 0; c < 3; ++c) {
    auto xp = x.to_vector<double>(), xm = xp;
    xp[static_cast<std::size_t>(c)] += 1e-6;
    xm[static_cast<std::size_t>(c)] -= 1e-6;
    const auto gp = grad_at(xp), gm = grad_at(xm);
    for (int r = 0; r < 3; ++r)
      EXPECT_NEAR(h[static_cast<std::size_t>(r * 3 + c)],
                  (gp[static_cast<std::size_t>(r)] - gm[static_cast<std::size_t>(r)]) / 2e-6, 1e-6);
  }
}

}  // namespace

namespace {

/// Jacobians as values that tapes differentiate again: the outer tape's derivative of a
/// Jacobian against central differences of the Jacobian itself.

/// f's Jacobian at `x`, computed on a tape of its own (vectorised or row by row).
std::vector<double> jacobian_at(const std::vector<double>& x, bool parallel) {
  const tf::Tensor xv = tf::constant(x);
  tf::GradientTape tape;
  tape.watch(xv);
  return tape.jacobian(f(xv), xv, tf::UnconnectedGradients::None, parallel)->to_vector<double>();
}

TEST(Jacobian, OfAJacobianMatchesFiniteDifferences) {
  const std::vector<double> x0{0.4, -1.1, 0.8};
  for (bool parallel : {true, false}) {
    const tf::Tensor x = tf::constant(x0);
    tf::GradientTape outer;
    outer.watch(x);
    tf::Tensor j;
    {
      tf::GradientTape inner;
      inner.watch(x);
      j = *inner.jacobian(f(x), x, tf::UnconnectedGradients::None, parallel);
    }
    const tf::Gradient jj = outer.jacobian(j, x);
    ASSERT_TRUE(jj) << "parallel=" << parallel;
    ASSERT_EQ(jj->shape(), (tf::Shape{3, 3, 3}));
    const auto got = jj->to_vector<double>();
    for (std::size_t k = 0; k < 3; ++k) {
      auto xp = x0, xm = x0;
      xp[k] += 1e-6;
      xm[k] -= 1e-6;
      const auto jp = jacobian_at(xp, parallel), jm = jacobian_at(xm, parallel);
      for (std::size_t rc = 0; rc < 9; ++rc)
        EXPECT_NEAR(got[rc * 3 + k], (jp[rc] - jm[rc]) / 2e-6, 1e-6)
            << "parallel=" << parallel << " rc=" << rc;
    }
  }
}

TEST(Jacobian, IsRecordedOnAnEnclosingTape) {
  // y = x^3 elementwise: J = diag(3x^2), so d sum(J) / dx = 6x; both assembly paths.
  for (bool parallel : {true, false}) {
    const tf::Tensor x = tf::constant({0.5, -2.0, 1.5});
    tf::GradientTape outer;
    outer.watch(x);
    tf::Tensor j;
    {
      tf::GradientTape inner;
      inner.watch(x);
      j = *inner.jacobian(x * x * x, x, tf::UnconnectedGradients::None, parallel);
    }
    const tf::Gradient d = outer.gradient(j, x);
    ASSERT_TRUE(d) << "parallel=" << parallel;
    EXPECT_EQ(d->to_vector<double>(), (std::vector<double>{3.0, -12.0, 9.0})) << "parallel=" << parallel;
  }
}

TEST(BatchJacobian, IsRecordedOnAnEnclosingTape) {
  // y[b] = x[b]^3: each example's Jacobian is diag(3 x[b]^2), so d sum(J) / dx = 6x. The second
  // case has sign() on the path, which makes batch_jacobian go column by column.
  const tf::Tensor x = tf::constant({{1.0, -2.0}, {3.0, 0.5}});
  for (bool column_by_column : {false, true}) {
    tf::GradientTape outer;
    outer.watch(x);
    tf::Tensor j;
    {
      tf::GradientTape inner;
      inner.watch(x);
      const tf::Tensor cube = x * x * x;
      j = *inner.batch_jacobian(column_by_column ? cube * tf::abs(tf::sign(x)) : cube, x);
    }
    ASSERT_EQ(j.shape(), (tf::Shape{2, 2, 2}));
    const tf::Gradient d = outer.gradient(j, x);
    ASSERT_TRUE(d) << "column_by_column=" << column_by_column;
    EXPECT_EQ(d->to_vector<double>(), (std::vector<double>{6.0, -12.0, 18.0, 3.0}))
        << "column_by_column=" << column_by_column;
  }
}

TEST(Hessian, IsRecordedOnAnEnclosingTape) {
  // f(x) = sum(x^4): H = diag(12 x^2), so d sum(H) / dx = 24x.
  const tf::Tensor x = tf::constant({0.5, -1.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor h = tf::hessian([](const tf::Tensor& v) { return tf::reduce_sum(v * v * v * v); }, x);
  EXPECT_EQ(h.to_vector<double>(), (std::vector<double>{3.0, 0.0, 0.0, 12.0}));
  EXPECT_EQ(tape.gradient(h, x)->to_vector<double>(), (std::vector<double>{12.0, -24.0}));
}

TEST(Jacobian, EmptyTargetGivesAnEmptyJacobianNotNone) {
  const tf::Tensor x = tf::constant({1.0, 2.0, 3.0});
  for (bool parallel : {true, false}) {
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor y = tf::slice(x * 2.0, {1}, {0});
    const tf::Gradient j = tape.jacobian(y, x, tf::UnconnectedGradients::None, parallel);
    ASSERT_TRUE(j) << "parallel=" << parallel;
    EXPECT_EQ(j->shape(), (tf::Shape{0, 3}));
  }
}

TEST(BatchJacobian, EmptyTargetGivesAnEmptyJacobianNotNone) {
  {
    const tf::Tensor x = tf::ones({0, 2}, tf::float64);  // no examples
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Gradient j = tape.batch_jacobian(x * x, x);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->shape(), (tf::Shape{0, 2, 2}));
  }
  {
    const tf::Tensor x = tf::ones({3, 2}, tf::float64);  // examples with no target columns
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Gradient j = tape.batch_jacobian(tf::slice(x * x, {0, 0}, {3, 0}), x);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->shape(), (tf::Shape{3, 0, 2}));
  }
}

TEST(BatchJacobian, RankBelowTwoThrowsTensorFlowsMessage) {
  const tf::Tensor x = tf::ones({3, 2});
  {
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor y = tf::reduce_sum(x, {1});  // [3]
    const std::string msg = tf::testing::error_of([&] { (void)tape.batch_jacobian(y, x); });
    EXPECT_THAT(msg, HasSubstr("[GradientTape::batch_jacobian] Shape (3,) must have rank at least 2"));
    EXPECT_THAT(msg, HasSubstr("target shape (3,) and dtype float32, source shape (3, 2) and dtype float32"));
  }
  {
    const tf::Tensor v = tf::ones({3});
    tf::GradientTape tape;
    tape.watch(v);
    const tf::Tensor y = tf::reshape(v * 2.0f, {3, 1});
    EXPECT_THAT(tf::testing::error_of([&] { (void)tape.batch_jacobian(y, v); }),
                HasSubstr("Shape (3,) must have rank at least 2: the source must be [batch, ...]"));
  }
  {
    const tf::Tensor s = tf::constant(2.0f);
    tf::GradientTape tape;
    tape.watch(s);
    EXPECT_THAT(tf::testing::error_of([&] { (void)tape.batch_jacobian(s * s, s); }),
                HasSubstr("Shape () must have rank at least 2"));
  }
}

TEST(Jacobian, ReadingAMissingJacobianThrowsNamingTheSource) {
  const tf::Tensor x = tf::constant({1.f, 2.f}), other = tf::constant({1.f, 2.f, 3.f});
  tf::GradientTape tape({.persistent = true});
  tape.watch({x, other});
  const tf::Tensor y = x * x;
  const auto js = tape.jacobian(y, {x, other});
  const std::string msg = tf::testing::error_of<tf::FailedPreconditionError>([&] { (void)*js[1]; });
  EXPECT_THAT(msg, HasSubstr("tensor #" + std::to_string(other.id()) + " with shape (3,) and dtype float32"));
  EXPECT_THAT(msg, HasSubstr("not connected to the target"));
  const tf::Tensor unused = tf::ones({2, 1});
  tape.watch(unused);
  const tf::Gradient bj = tape.batch_jacobian(tf::reshape(y, {2, 1}), unused);
  EXPECT_THROW((void)bj.value(), tf::FailedPreconditionError);
}

}  // namespace

// bfloat16 carries gradients, so its Jacobians are bfloat16 too: the one-hot cotangents are
// written in the target's dtype (the seed was written through visit_dtype, which refuses it).
TEST(Jacobian, OfABFloat16TargetIsBFloat16) {
  const tf::Tensor x = tf::cast(tf::constant({1.0f, 2.0f}), tf::bfloat16);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = x * x;
  const tf::Tensor j = *tape.jacobian(y, x);
  EXPECT_EQ(j.dtype(), tf::bfloat16);
  EXPECT_EQ(tf::cast(j, tf::float32).to_vector<float>(), (std::vector<float>{2, 0, 0, 4}));
}

TEST(BatchJacobian, OfABFloat16TargetIsBFloat16) {
  const tf::Tensor x = tf::cast(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}}), tf::bfloat16);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = x * x;
  const tf::Tensor j = *tape.batch_jacobian(y, x);
  EXPECT_EQ(j.dtype(), tf::bfloat16);
  EXPECT_EQ(tf::cast(j, tf::float32).to_vector<float>(), (std::vector<float>{2, 0, 0, 4, 6, 0, 0, 8}));
}
