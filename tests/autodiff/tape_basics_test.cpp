// The first tape behaviours: the seed guide's opening examples.

#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

TEST(GradientTape, SquareOfVariable) {
  tf::Variable x(3.0f);
  tf::GradientTape tape;
  tf::Tensor y = tf::square(x);
  auto dy_dx = tape.gradient(y, x);
  ASSERT_TRUE(dy_dx.has_value());
  EXPECT_FLOAT_EQ(dy_dx->item<float>(), 6.0f);
}

TEST(GradientTape, WatchedConstantAndIntermediate) {
  tf::Tensor x = tf::constant(3.0f);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  tf::Tensor z = y * y;
  EXPECT_FLOAT_EQ(tape.gradient(z, y)->item<float>(), 18.0f);
}
