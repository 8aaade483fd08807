// layers::Flatten: keeps the batch dimension, values in row-major order, gradients, errors.

#include "tapeflow/nn/flatten.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Flatten, KeepsTheBatchDimensionAndMultipliesTheRest) {
  tf::layers::Flatten flatten;
  EXPECT_EQ(flatten(tf::zeros({8, 4, 4, 3})).shape(), tf::Shape({8, 48}));
  EXPECT_EQ(flatten(tf::zeros({2, 5})).shape(), tf::Shape({2, 5}));
}

TEST(Flatten, RankOneInputBecomesAColumn) {
  tf::layers::Flatten flatten;
  EXPECT_EQ(flatten(tf::zeros({3})).shape(), tf::Shape({3, 1}));
}

TEST(Flatten, EmptyBatchGivesAnEmptyResult) {
  tf::layers::Flatten flatten;
  EXPECT_EQ(flatten(tf::zeros({0, 2, 3})).shape(), tf::Shape({0, 6}));
}

TEST(Flatten, KeepsValuesInRowMajorOrder) {
  tf::layers::Flatten flatten;
  tf::Tensor x = tf::constant<float>({1, 2, 3, 4, 5, 6, 7, 8}, tf::Shape({2, 2, 2}));
  tf::Tensor y = flatten(x);
  EXPECT_THAT(std::vector<float>(y.values<float>().begin(), y.values<float>().end()),
              ::testing::ElementsAre(1, 2, 3, 4, 5, 6, 7, 8));
}

TEST(Flatten, HasNoVariables) {
  tf::layers::Flatten flatten;
  flatten(tf::zeros({1, 2, 2}));
  EXPECT_TRUE(flatten.variables().empty());
  EXPECT_EQ(flatten.name(), "flatten");
}

TEST(Flatten, GradientFlowsBackInTheInputShape) {
  tf::layers::Flatten flatten;
  tf::Variable v(tf::constant<double>({1, 2, 3, 4, 5, 6}, tf::Shape({1, 2, 3})), {.name = "v"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(flatten(v) * tf::constant<double>({1, 2, 3, 4, 5, 6}, tf::Shape({1, 6})));
  auto grads = tape.gradient(loss, std::vector<tf::Variable>{v});
  ASSERT_TRUE(grads[0].has_value());
  EXPECT_EQ(grads[0]->shape(), tf::Shape({1, 2, 3}));
  EXPECT_THAT(std::vector<double>(grads[0]->values<double>().begin(), grads[0]->values<double>().end()),
              ::testing::ElementsAre(1, 2, 3, 4, 5, 6));
}

TEST(Flatten, ScalarInputThrowsNamingTheLayerAndShape) {
  tf::layers::Flatten flatten;
  EXPECT_THAT([&] { flatten(tf::constant(1.0, tf::float32)); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[Flatten]"), HasSubstr("rank >= 1"), HasSubstr("()"))));
}

TEST(Flatten, FactoryMakesTheLayerTheConstructorMakes) {
  std::shared_ptr<tf::layers::Flatten> flatten = tf::layers::flatten();
  EXPECT_EQ(flatten->name(), tf::layers::Flatten().name());
  EXPECT_EQ((*flatten)(tf::zeros({2, 3, 4})).shape(), tf::Shape({2, 12}));
  EXPECT_EQ(tf::layers::flatten("f")->name(), "f");
}
