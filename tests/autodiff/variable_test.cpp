// Variable: identity, naming, assignment rules, and the ReadVariableOp gradient.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

TEST(Variable, NamesFollowTensorFlowsConvention) {
  EXPECT_EQ(tf::Variable(1.0f).name(), "Variable:0");
  EXPECT_EQ(tf::Variable(1.0f, {.name = "x0"}).name(), "x0:0");
  EXPECT_EQ(tf::Variable(1.0f, {.name = "kernel", .keras_style = true}).name(), "kernel");
}

TEST(Variable, CopiesShareState) {
  tf::Variable a(1.0f);
  tf::Variable b = a;
  b.assign(tf::constant(5.0f));
  EXPECT_FLOAT_EQ(a.value().item<float>(), 5.0f);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a.handle_id(), b.handle_id());
}

TEST(Variable, AssignRequiresSameShapeAndDtype) {
  tf::Variable v({1.f, 2.f}, {.name = "v"});
  try {
    v.assign(tf::constant({1.f, 2.f, 3.f}));
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("(2,)"));
    EXPECT_THAT(e.what(), HasSubstr("(3,)"));
  }
  EXPECT_THROW(v.assign(tf::constant({1.0, 2.0})), tf::InvalidArgumentError);
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{1.f, 2.f}));
}

TEST(Variable, AssignAddAndSubUpdateInPlace) {
  tf::Variable v({1.f, 2.f});
  v.assign_add(tf::constant({10.f, 10.f}));
  v.assign_sub(tf::constant({1.f, 2.f}));
  EXPECT_EQ(v.value().to_vector<float>(), (std::vector<float>{10.f, 10.f}));
}

TEST(Variable, GradientFlowsThroughEachRead) {
  tf::Variable v(3.0f);
  tf::GradientTape tape;
  tf::Tensor a = v, b = v;
  EXPECT_NE(a.id(), b.id());  // every recorded read is its own tensor
  EXPECT_FLOAT_EQ(tape.gradient(a * b, v)->item<float>(), 6.0f);
}

TEST(Variable, ReadOutsideATapeIsNotRecorded) {
  tf::Variable v(3.0f);
  tf::Tensor a = v;
  tf::GradientTape tape;
  EXPECT_FALSE(tape.gradient(a * a, v).has_value());
}

TEST(Variable, ReadsFromManyThreadsSeeConsistentValues) {
  tf::Variable v(tf::zeros({64}));
  std::vector<std::thread> readers;
  std::atomic<bool> bad{false};
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&] {
      for (int i = 0; i < 200; ++i) {
        auto vals = v.value().to_vector<float>();
        for (float x : vals)
          if (x != vals[0]) bad = true;
      }
    });
  for (int i = 0; i < 200; ++i) v.assign(tf::fill({64}, i));
  for (auto& r : readers) r.join();
  EXPECT_FALSE(bad);
}
