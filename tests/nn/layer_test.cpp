// Layer's own members: Keras's get_weights and set_weights (in variables() order, all or nothing).

#include "tapeflow/nn/layer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

TEST(Layer, SetWeightsAssignsInTheOrderOfVariablesAndGetWeightsReadsThemBack) {
  tf::layers::Dense dense(2, {.name = "head"});
  (void)dense(tf::ones({1, 3}));
  dense.set_weights({tf::fill({3, 2}, 1.5f), tf::constant({-1.f, 2.f})});
  const std::vector<tf::Tensor> weights = dense.get_weights();
  ASSERT_EQ(weights.size(), 2u);
  EXPECT_EQ(weights[0].to_vector<float>(), std::vector<float>(6, 1.5f));
  EXPECT_EQ(weights[1].to_vector<float>(), (std::vector<float>{-1.f, 2.f}));
  EXPECT_EQ(dense(tf::ones({1, 3})).to_vector<float>(), (std::vector<float>{3.5f, 6.5f}));
}

TEST(Layer, SetWeightsOfTheWrongCountShapeOrDtypeNamesTheLayerAndAssignsNothing) {
  tf::layers::Dense dense(2, {.name = "head"});
  (void)dense(tf::ones({1, 3}));
  const std::vector<tf::Tensor> before = dense.get_weights();
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("layer 'head' has 2 weights, got a list of 1")));
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2}), tf::ones({3})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("weight 1 'bias' is float32 (2,), got float32 (3,)")));
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2}), tf::ones({2}, tf::float64)});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("got float64 (2,)")));
  EXPECT_THAT(
      [&] {
        dense.set_weights({tf::ones({3, 2}), tf::Tensor()});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("got an undefined tensor")));
  const std::vector<tf::Tensor> after = dense.get_weights();
  for (std::size_t i = 0; i < 2; ++i) EXPECT_EQ(after[i].to_vector<float>(), before[i].to_vector<float>());
}
