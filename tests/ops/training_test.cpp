// ApplyGradientDescent, ApplyKerasMomentum and ApplyAdam: one pass each that must round exactly like the
// elementwise ops it replaces (the SGD, momentum and Adam optimizers' formulas), in float32 and float64, and
// their argument checks.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

TEST(ApplyGradientDescent, EqualsTheElementwiseFormulaBitForBit) {
  for (tf::DType dtype : {tf::float32, tf::float64}) {
    const tf::Shape s{300, 1000};  // enough elements for tapeflow's pool to split the work
    const tf::Tensor w = tf::random::normal(s, 0, 1, dtype, 1), g = tf::random::normal(s, 0, 1, dtype, 2);
    const tf::Tensor lr = tf::cast(tf::constant(0.0123), dtype);
    const tf::Tensor got = tf::raw_ops::apply_gradient_descent(w, lr, g);
    const tf::Tensor want = w - g * lr;
    EXPECT_EQ(tf::cast(got, tf::float64).to_vector<double>(), tf::cast(want, tf::float64).to_vector<double>())
        << tf::dtype_name(dtype);
  }
}

TEST(ApplyGradientDescent, TheSgdOptimizerRunsIt) {
  tf::Variable w(tf::constant({1.0f, -2.0f}));
  tf::optimizers::SGD sgd(0.25);
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(tf::square(w));
  sgd.apply_gradients(tape.gradient(loss, std::vector<tf::Variable>{w}), std::vector<tf::Variable>{w});
  // w -= 0.25 * 2w
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{0.5f, -1.0f}));
}

TEST(ApplyGradientDescent, RejectsMismatchedShapesAndDtypes) {
  const tf::Tensor w = tf::ones({3}), lr = tf::constant(0.1f);
  EXPECT_THAT(
      [&] { tf::raw_ops::apply_gradient_descent(w, lr, tf::ones({2})); },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[ApplyGradientDescent]"), HasSubstr("'grad'"),
                                                    HasSubstr("(3,)"), HasSubstr("(2,)"))));
  EXPECT_THAT([&] { tf::raw_ops::apply_gradient_descent(w, tf::ones({3}), w); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("'lr'"), HasSubstr("scalar"))));
  EXPECT_THAT([&] { tf::raw_ops::apply_gradient_descent(w, tf::constant(0.1), w); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("'lr'"), HasSubstr("float64"))));
}

TEST(ApplyKerasMomentum, EqualsTheElementwiseFormulaBitForBit) {
  for (tf::DType dtype : {tf::float32, tf::float64}) {
    for (bool nesterov : {false, true}) {
      const tf::Shape s{300, 1000};
      const tf::Tensor w = tf::random::normal(s, 0, 1, dtype, 1), v = tf::random::normal(s, 0, 0.1, dtype, 2),
                       g = tf::random::normal(s, 0, 1, dtype, 3);
      const tf::Tensor lr = tf::cast(tf::constant(0.0123), dtype);
      const double m = 0.9;
      const auto [w2, v2] = tf::raw_ops::apply_keras_momentum(w, v, lr, g, m, nesterov);
      const tf::Tensor v_want = v * m - g * lr;
      const tf::Tensor w_want = w + (nesterov ? v_want * m - g * lr : v_want);
      for (auto [got, want] : {std::pair{v2, v_want}, std::pair{w2, w_want}})
        EXPECT_EQ(tf::cast(got, tf::float64).to_vector<double>(),
                  tf::cast(want, tf::float64).to_vector<double>())
            << tf::dtype_name(dtype) << (nesterov ? " nesterov" : "");
    }
  }
}

TEST(ApplyKerasMomentum, TheSgdOptimizerWithMomentumRunsIt) {
  tf::Variable w(tf::constant({1.0f, -2.0f}));
  tf::optimizers::SGD sgd(0.25, /*momentum=*/0.5);
  for (int step = 0; step < 2; ++step) {
    tf::GradientTape tape;
    const tf::Tensor loss = tf::reduce_sum(tf::square(w));
    sgd.apply_gradients(tape.gradient(loss, std::vector<tf::Variable>{w}), std::vector<tf::Variable>{w});
  }
  // v1 = -0.5 w0, w1 = 0.5 w0; v2 = 0.5 v1 - 0.25 * 2 w1 = -0.5 w0, w2 = w1 + v2 = 0
  EXPECT_EQ(w.value().to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(ApplyAdam, EqualsTheElementwiseFormulaBitForBit) {
  const double b1 = 0.9, b2 = 0.999, eps = 1e-7;
  for (tf::DType dtype : {tf::float32, tf::float64}) {
    // Enough elements for tapeflow's pool to split the work.
    const tf::Shape s{300, 1000};
    const tf::Tensor w = tf::random::normal(s, 0, 1, dtype, 1), m = tf::random::normal(s, 0, 0.1, dtype, 2),
                     v = tf::abs(tf::random::normal(s, 0, 0.01, dtype, 3)),
                     g = tf::random::normal(s, 0, 1, dtype, 4);
    const tf::Tensor lr_t = tf::cast(tf::constant(1e-3 * std::sqrt(1 - b2) / (1 - b1)), dtype);
    const auto [w2, m2, v2] = tf::raw_ops::apply_adam(w, m, v, lr_t, g, b1, b2, eps);
    const tf::Tensor m_want = m + (g - m) * (1.0 - b1);
    const tf::Tensor v_want = v + (tf::square(g) - v) * (1.0 - b2);
    const tf::Tensor w_want = w - m_want * lr_t / (tf::sqrt(v_want) + eps);
    for (auto [got, want] : {std::pair{m2, m_want}, std::pair{v2, v_want}, std::pair{w2, w_want}}) {
      const auto g64 = tf::cast(got, tf::float64).to_vector<double>(),
                 w64 = tf::cast(want, tf::float64).to_vector<double>();
      EXPECT_EQ(g64, w64) << tf::dtype_name(dtype);
    }
  }
}

TEST(ApplyAdam, TheAdamOptimizerRunsIt) {
  tf::Variable w(tf::ones({4}));
  tf::optimizers::Adam adam(0.1);
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(tf::square(w));
  adam.apply_gradients(tape.gradient(loss, std::vector<tf::Variable>{w}), std::vector<tf::Variable>{w});
  // First Adam step: m = 0.1 g, v = 0.001 g^2, lr_t = 0.1 sqrt(0.001) / 0.1: w -= ~0.1 sign(g).
  for (float x : w.value().to_vector<float>()) EXPECT_NEAR(x, 0.9f, 1e-4f);
}

TEST(ApplyAdam, RejectsMismatchedShapesAndDtypes) {
  const tf::Tensor w = tf::ones({3}), lr = tf::constant(0.1f);
  EXPECT_THAT([&] { tf::raw_ops::apply_adam(w, tf::ones({2}), w, lr, w, 0.9, 0.999, 1e-7); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[ApplyAdam]"), HasSubstr("'m'"), HasSubstr("(3,)"), HasSubstr("(2,)"))));
  EXPECT_THAT([&] { tf::raw_ops::apply_adam(w, w, w, tf::ones({1}), w, 0.9, 0.999, 1e-7); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("'lr_t'"), HasSubstr("scalar"))));
  EXPECT_THAT([&] { tf::raw_ops::apply_adam(w, w, w, lr, tf::ones({3}, tf::float64), 0.9, 0.999, 1e-7); },
              ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("'grad'"), HasSubstr("float64"))));
}

}  // namespace
