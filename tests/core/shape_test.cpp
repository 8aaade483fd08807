// Shape's printing: `<<` writes what to_string() returns, TensorFlow's rendering.

#include "tapeflow/shape.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tapeflow {
namespace {

std::string streamed(const Shape& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

TEST(Shape, StreamsAsTensorFlowPrintsItsShapes) {
  EXPECT_EQ(streamed(Shape{}), "()");
  EXPECT_EQ(streamed(Shape{2}), "(2,)");
  EXPECT_EQ(streamed(Shape{3, 0, 2}), "(3, 0, 2)");
}

TEST(Shape, StreamsWhatToStringReturns) {
  const Shape s{4, 1, 5};
  EXPECT_EQ(streamed(s), s.to_string());
}

}  // namespace
}  // namespace tapeflow
