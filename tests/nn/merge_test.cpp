// The merge layers (Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate): their values
// on tensors as the ops they stand for, their symbolic shapes, and the errors of lists they do not
// take. Their gradients are rows of the layer table (tests/nn/layer_gradients_test.cpp).

#include "tapeflow/nn/merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace layers = tf::layers;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

const tf::Tensor kA = tf::constant<float>({{1.f, -2.f, 3.f}, {0.5f, 4.f, -1.f}});
const tf::Tensor kB = tf::constant<float>({{2.f, 2.f, -3.f}, {1.5f, -4.f, 2.f}});
const tf::Tensor kC = tf::constant<float>({{0.f, 1.f, 5.f}, {-0.5f, 3.f, 1.f}});

std::vector<float> values(const tf::Tensor& t) { return t.to_vector<float>(); }

}  // namespace

TEST(Merge, ElementwiseLayersComputeWhatTheirOpsDo) {
  EXPECT_EQ(values((*layers::add())({kA, kB, kC})), values(kA + kB + kC));
  EXPECT_EQ(values((*layers::subtract())({kA, kB})), values(kA - kB));
  EXPECT_EQ(values((*layers::multiply())({kA, kB, kC})), values(kA * kB * kC));
  EXPECT_EQ(values((*layers::average())({kA, kB})), values((kA + kB) / 2.0));
  EXPECT_EQ(values((*layers::maximum())({kA, kB, kC})), values(tf::maximum(tf::maximum(kA, kB), kC)));
  EXPECT_EQ(values((*layers::minimum())({kA, kB, kC})), values(tf::minimum(tf::minimum(kA, kB), kC)));
  // One input is the input itself (Keras takes lists of one).
  EXPECT_EQ(values((*layers::add())({kA})), values(kA));
}

TEST(Merge, KerasDocumentationExamples) {
  // keras.layers.Add()([x1, x2]) with x1 = ones(2, 3), x2 = 2 * ones(2, 3): threes.
  EXPECT_EQ(values((*layers::add())({tf::ones({2, 3}), tf::fill({2, 3}, 2.0f)})), std::vector<float>(6, 3.f));
  // keras.layers.Concatenate(axis=1) of arange(20).reshape(2, 2, 5) and arange(20, 30).reshape(2, 1, 5).
  const tf::Tensor x = tf::reshape(tf::range(0, 20, 1, tf::float32), {2, 2, 5});
  const tf::Tensor y = tf::reshape(tf::range(20, 30, 1, tf::float32), {2, 1, 5});
  const tf::Tensor joined = (*layers::concatenate(1))({x, y});
  EXPECT_EQ(joined.shape(), (tf::Shape{2, 3, 5}));
  EXPECT_EQ(values(tf::slice(joined, {0, 2, 0}, {1, 1, 5})), (std::vector<float>{20, 21, 22, 23, 24}));
  EXPECT_EQ(values(tf::slice(joined, {1, 0, 0}, {1, 1, 5})), (std::vector<float>{10, 11, 12, 13, 14}));
}

TEST(Merge, ElementwiseLayersBroadcastAndPropagateNaN) {
  const tf::Tensor row = tf::constant<float>({{10.f, 20.f, 30.f}});
  EXPECT_EQ(values((*layers::add())({kA, row})), values(kA + row));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const tf::Tensor with_nan = tf::constant<float>({{nan, 0.f, 0.f}, {0.f, 0.f, 0.f}});
  EXPECT_TRUE(std::isnan(values((*layers::maximum())({kA, with_nan}))[0]));
  EXPECT_TRUE(std::isnan(values((*layers::minimum())({with_nan, kA}))[0]));
}

TEST(Merge, SymbolicInputsGiveTheMergedShape) {
  const layers::KerasTensor a = layers::Input({4, 3}), b = layers::Input({2, 3});
  EXPECT_EQ(layers::concatenate(1)->apply({a, b}).shape_string(), "(None, 6, 3)");
  EXPECT_EQ(layers::add()->apply({a, layers::Input({1, 3})}).shape_string(), "(None, 4, 3)");
  EXPECT_EQ(layers::average()->apply({layers::Input({-1, 3}), layers::Input({-1, 3})}).shape_string(),
            "(None, None, 3)");
}

TEST(Merge, ListsALayerDoesNotTakeAreErrorsNamingItTheShapesAndDtypes) {
  EXPECT_THAT(
      [] {
        (*layers::subtract())({kA, kB, kC});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(
          HasSubstr("[Subtract] layer 'subtract' should be called on a list of exactly 2 inputs, got 3"),
          HasSubstr("[(2, 3) float32, (2, 3) float32, (2, 3) float32]"))));
  EXPECT_THAT([] { (*layers::add())({}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("a list of at least 1 input, got 0")));
  EXPECT_THAT(
      [] {
        (*layers::add())({kA, tf::cast(kB, tf::float64)});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Add] layer 'add' needs inputs of one dtype"), HasSubstr("(2, 3) float64"))));
  EXPECT_THAT(
      [] {
        (*layers::multiply())({kA, tf::ones({2, 4})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("inputs of shapes that do not broadcast: [(2, 3) float32, (2, 4) float32]")));
  EXPECT_THAT(
      [] {
        (*layers::concatenate())({kA, tf::ones({3, 3})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("matching shapes except for the concatenation axis -1, got [(2, 3) float32, (3, 3)")));
  EXPECT_THAT(
      [] {
        (*layers::concatenate(2))({kA, kB});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("axis 2 is out of range for inputs of rank 2")));
  EXPECT_THAT(
      [] {
        (*layers::add())({kA, tf::Tensor()});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("got an undefined tensor")));
}

TEST(Merge, OneTensorIsAnErrorAsInAnySequential) {
  tf::layers::Sequential model{layers::dense(3), layers::add()};
  EXPECT_THAT(
      [&] {
        model(tf::ones({2, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Add] layer 'add': a merge layer should be called on a list of inputs"),
                HasSubstr("one tensor of shape (2, 3) and dtype float32"))));
  // Symbolic inputs of mismatched shapes fail when the graph is built, naming the layer.
  EXPECT_THAT(
      [] {
        layers::concatenate()->apply({layers::Input({2, 3}), layers::Input({4, 3})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Concatenate] layer 'concatenate' applied to")));
}
