// Variable: identity, naming, assignment rules, and the ReadVariableOp gradient.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

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

// Runs under ThreadSanitizer too (tapeflow_thread_tests): the read-modify-write holds the lock.
TEST(VariableThreads, ConcurrentAssignAddAndAssignSubLoseNoUpdate) {
  constexpr int kThreads = 4, kIncrements = 20000;
  tf::Variable counter(0.0f);
  tf::Variable balance(0.0f);  // +2 then -1 per step: only the sum of all updates is exact
  std::latch start(kThreads);  // all threads update at once, so their updates interleave
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t)
    workers.emplace_back([&] {
      start.arrive_and_wait();
      for (int i = 0; i < kIncrements; ++i) {
        counter.assign_add(tf::constant(1.0f));
        balance.assign_add(tf::constant(2.0f));
        balance.assign_sub(tf::constant(1.0f));
      }
    });
  for (auto& w : workers) w.join();
  EXPECT_EQ(counter.value().item<float>(), static_cast<float>(kThreads * kIncrements));
  EXPECT_EQ(balance.value().item<float>(), static_cast<float>(kThreads * kIncrements));
}

TEST(Variable, AssignAddOfAnUndefinedTensorNamesTheOp) {
  tf::Variable v(1.0f, {.name = "v"});
  try {
    v.assign_add(tf::Tensor());
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[AssignAddVariableOp] variable v:0"));
  }
  EXPECT_EQ(v.value().item<float>(), 1.0f);
}

TEST(Variable, AssignAddAndAssignSubRequireTheVariablesShapeAndDtype) {
  // TensorFlow's AssignAddVariableOp: a scalar does not broadcast into a vector variable.
  tf::Variable v(tf::constant({1.f, 2.f}), {.name = "v"});
  EXPECT_THAT([&] { v.assign_add(tf::constant(1.f)); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[AssignAddVariableOp] variable v:0 has shape (2,) and dtype float32"),
                        HasSubstr("got shape () and dtype float32"))));
  EXPECT_THAT(
      [&] {
        v.assign_sub(tf::constant({{1.f, 2.f}}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[AssignSubVariableOp] variable v:0"), HasSubstr("got shape (1, 2)"))));
  EXPECT_THAT(
      [&] {
        v.assign_add(tf::constant({1.0, 2.0}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("got shape (2,) and dtype float64")));
  EXPECT_THAT(v.value().to_vector<float>(), ElementsAre(1.f, 2.f));
}

/// Every member of a moved-from Variable, with the operation its error must name.
std::vector<std::pair<std::string, std::function<void(tf::Variable&)>>> uses_of_a_variable() {
  return {
      {"[Variable::name]", [](tf::Variable& v) { (void)v.name(); }},
      {"[ReadVariableOp]", [](tf::Variable& v) { (void)v.read_value(); }},
      {"[ReadVariableOp]", [](tf::Variable& v) { (void)(tf::Tensor(v) * 2.0f); }},
      {"[Variable::value]", [](tf::Variable& v) { (void)v.value(); }},
      {"[AssignVariableOp]", [](tf::Variable& v) { v.assign(tf::constant(1.0f)); }},
      {"[AssignAddVariableOp]", [](tf::Variable& v) { v.assign_add(tf::constant(1.0f)); }},
      {"[AssignSubVariableOp]", [](tf::Variable& v) { v.assign_sub(tf::constant(1.0f)); }},
      {"[Variable::shape]", [](tf::Variable& v) { (void)v.shape(); }},
      {"[Variable::dtype]", [](tf::Variable& v) { (void)v.dtype(); }},
      {"[Variable::trainable]", [](tf::Variable& v) { (void)v.trainable(); }},
      {"[Variable::handle_id]", [](tf::Variable& v) { (void)v.handle_id(); }},
  };
}

TEST(Variable, EveryUseOfAMovedFromVariableThrowsNamingTheOperation) {
  for (const auto& [op, use] : uses_of_a_variable()) {
    tf::Variable v(3.0f, {.name = "w"});
    tf::Variable taken = std::move(v);
    ASSERT_TRUE(v.moved_from());  // NOLINT(bugprone-use-after-move): the point of the test
    try {
      use(v);
      ADD_FAILURE() << op << ": expected InvalidArgumentError";
    } catch (const tf::InvalidArgumentError& e) {
      EXPECT_THAT(e.what(), HasSubstr(op));
      EXPECT_THAT(e.what(), HasSubstr("moved from"));
    }
    EXPECT_EQ(taken.value().item<float>(), 3.0f) << op;  // the state lives on in the new owner
  }
}

TEST(Variable, MovedFromVariableIsUsableAgainAfterAssigningAVariable) {
  tf::Variable v(3.0f);
  tf::Variable taken = std::move(v);
  v = tf::Variable(5.0f, {.name = "again"});  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(v.moved_from());
  EXPECT_EQ(v.name(), "again:0");
  EXPECT_EQ(v.value().item<float>(), 5.0f);
}

TEST(Variable, GradientWithRespectToAMovedFromVariableThrowsNamingTheCall) {
  tf::Variable w(3.0f);
  tf::Variable taken = std::move(w);
  tf::GradientTape tape;
  tf::Tensor y = tf::Tensor(taken) * 2.0f;
  try {
    (void)tape.gradient(y, w);  // NOLINT(bugprone-use-after-move)
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[GradientTape::gradient] source 0 is a moved-from Variable"));
  }
  EXPECT_FLOAT_EQ(tape.gradient(y, taken)->item<float>(), 2.0f);  // the check ran before the tape was used up
}
