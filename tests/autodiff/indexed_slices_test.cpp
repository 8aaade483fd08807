// IndexedSlices: the row-sparse gradient of a table read by gather along axis 0, as TensorFlow's
// tape gives it, and the rules by which it stays rows or becomes dense in a backward pass.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "autodiff/op_def.h"
#include "support/close.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

using tf::testing::bitwise_equal;

tf::Variable table() {
  return tf::Variable(tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}, {7.0f, 8.0f}}));
}

TEST(IndexedSlices, HoldsRowsOfADenseShapeAndAddsRepeatedRowsWhenMadeDense) {
  const tf::IndexedSlices rows(tf::constant({{1.0f, 1.0f}, {2.0f, 3.0f}, {10.0f, 20.0f}}),
                               tf::constant<std::int32_t>({2, 0, 2}), tf::Shape({4, 2}));
  EXPECT_EQ(rows.dense_shape(), tf::Shape({4, 2}));
  EXPECT_EQ(rows.dtype(), tf::float32);
  EXPECT_EQ(rows.to_dense().to_vector<float>(), (std::vector<float>{2, 3, 0, 0, 11, 21, 0, 0}));
}

TEST(IndexedSlices, PrintsAsTensorFlowDoes) {
  const tf::IndexedSlices rows(tf::constant({{1.0f, 2.0f}}), tf::constant<std::int32_t>({1}),
                               tf::Shape({3, 2}));
  EXPECT_EQ(
      tf::to_string(rows),
      "IndexedSlices(indices=tf.Tensor([1], shape=(1,), dtype=int32), values=tf.Tensor([[1. 2.]], shape=(1, "
      "2), dtype=float32), dense_shape=tf.Tensor([3 2], shape=(2,), dtype=int32))");
}

TEST(IndexedSlices, RejectsRowsThatDoNotFitTheDenseShapeNamingShapesAndDtypes) {
  const tf::Tensor two_rows = tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}});
  const tf::Tensor ids = tf::constant<std::int32_t>({0, 1});
  EXPECT_THAT(
      [&] {
        tf::IndexedSlices(two_rows, ids, tf::Shape({4, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("[IndexedSlices] 2 indices into dense_shape (4, 3) need values of shape (2, 3), got a "
                    "float32 tensor of shape (2, 2)")));
  EXPECT_THAT(
      [&] {
        tf::IndexedSlices(two_rows, tf::constant<std::int32_t>({0, 4}), tf::Shape({4, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("indices[1] = 4 is not a row of dense_shape (4, 2) (rows are in [0, 4))")));
  EXPECT_THAT(
      [&] {
        tf::IndexedSlices(two_rows, tf::constant<std::int64_t>({0, -1}), tf::Shape({4, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("indices[1] = -1 is not a row")));
  EXPECT_THAT(
      [&] {
        tf::IndexedSlices(two_rows, tf::constant({0.0f, 1.0f}), tf::Shape({4, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          HasSubstr("indices must be an int32 or int64 vector, got a float32 tensor of shape (2,)")));
  EXPECT_THAT(
      [&] {
        tf::IndexedSlices(tf::constant<std::int32_t>({{1, 2}, {3, 4}}), ids, tf::Shape({4, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("values must be floating")));
  EXPECT_THAT(
      [&] {
        tf::IndexedSlices(tf::Tensor(), ids, tf::Shape({4, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("values and indices must be defined")));
  EXPECT_THAT([&] { tf::IndexedSlices(tf::constant(1.0f), tf::constant<std::int32_t>({0}), tf::Shape({})); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("dense_shape must have rank >= 1")));
}

TEST(IndexedSlices, IsTheGradientOfAVariableReadByGatherAlongAxisZero) {
  tf::Variable v = table();
  const tf::Tensor ids = tf::constant<std::int32_t>({{3, 0}, {3, 1}});
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(tf::gather(v, ids) * tf::constant({1.0f, 10.0f}));
  const tf::Gradient g = tape.gradient(y, v);
  const tf::IndexedSlices* rows = g.indexed_slices();
  ASSERT_NE(rows, nullptr);
  EXPECT_EQ(rows->indices().to_vector<std::int32_t>(), (std::vector<std::int32_t>{3, 0, 3, 1}));
  EXPECT_EQ(rows->values().shape(), tf::Shape({4, 2}));
  EXPECT_EQ(rows->dense_shape(), tf::Shape({4, 2}));
  // The dense form: row 3 was read twice.
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{1, 10, 1, 10, 0, 0, 2, 20}));
  EXPECT_THAT(tf::to_string(g), HasSubstr("IndexedSlices(indices=tf.Tensor([3 0 3 1]"));
}

TEST(IndexedSlices, ItsDenseFormIsBitwiseTheGradientAJacobianGives) {
  tf::Variable v(tf::random::normal({50, 3}, 0.0f, 1.0f, tf::float32, 7));
  const tf::Tensor ids = tf::cast(tf::random::uniform({64}, 0.0, 50.0, tf::float32, 8), tf::int32);
  const tf::Tensor w = tf::random::normal({64, 3}, 0.0f, 1.0f, tf::float32, 9);
  tf::GradientTape tape(tf::TapeOptions{.persistent = true});
  const tf::Tensor y = tf::reduce_sum(tf::gather(v, ids) * w);
  const tf::Gradient g = tape.gradient(y, v);
  ASSERT_NE(g.indexed_slices(), nullptr);
  const tf::Gradient dense = tape.jacobian(y, v);  // a Jacobian pass takes no rows
  EXPECT_EQ(dense.indexed_slices(), nullptr);
  EXPECT_TRUE(bitwise_equal(*g, *dense));
}

TEST(IndexedSlices, RowsOfTwoReadsOfOneTableAreConcatenatedAsTensorFlowAggregatesThem) {
  tf::Variable v = table();
  tf::GradientTape tape;
  const tf::Tensor first = tf::reduce_sum(tf::gather(v, tf::constant<std::int32_t>({1})));
  const tf::Tensor second = tf::reduce_sum(tf::gather(v, tf::constant<std::int64_t>({2, 1})) * 3.0f);
  const tf::Tensor y = first + second;
  const tf::Gradient g = tape.gradient(y, v);
  ASSERT_NE(g.indexed_slices(), nullptr);
  // The later read's rows come first (the walk is in reverse); int32 and int64 ids give int64.
  EXPECT_EQ(g.indexed_slices()->indices().dtype(), tf::int64);
  EXPECT_EQ(g.indexed_slices()->indices().to_vector<std::int64_t>(), (std::vector<std::int64_t>{2, 1, 1}));
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 0, 4, 4, 3, 3, 0, 0}));
}

TEST(IndexedSlices, ATableAlsoReadDenselyGetsADenseGradient) {
  tf::Variable v = table();
  tf::GradientTape tape;
  const tf::Tensor y =
      tf::reduce_sum(tf::gather(v, tf::constant<std::int32_t>({0}))) + tf::reduce_sum(v * 2.0f);
  const tf::Gradient g = tape.gradient(y, v);
  EXPECT_EQ(g.indexed_slices(), nullptr);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{3, 3, 2, 2, 2, 2, 2, 2}));
}

TEST(IndexedSlices, PassesThroughIdentityAndAWatchedTensorKeepsThem) {
  const tf::Tensor t = tf::constant({{1.0f, 2.0f}, {3.0f, 4.0f}});
  tf::GradientTape tape;
  tape.watch(t);
  const tf::Tensor y = tf::reduce_sum(tf::gather(tf::identity(t), tf::constant<std::int32_t>({1})));
  const tf::Gradient g = tape.gradient(y, t);
  ASSERT_NE(g.indexed_slices(), nullptr);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 0, 1, 1}));
}

TEST(IndexedSlices, AnOpReadingTheRowsGetsTheDenseForm) {
  // The cotangent of exp(v)'s output is rows; exp's gradient multiplies it densely.
  tf::Variable v = table();
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(tf::gather(tf::exp(v * 0.0f), tf::constant<std::int32_t>({2})));
  const tf::Gradient g = tape.gradient(y, v);
  EXPECT_EQ(g.indexed_slices(), nullptr);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(IndexedSlices, AGatherAlongAnotherAxisGivesADenseGradient) {
  tf::Variable v = table();
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(tf::gather(v, tf::constant<std::int32_t>({1, 1}), 1));
  const tf::Gradient g = tape.gradient(y, v);
  EXPECT_EQ(g.indexed_slices(), nullptr);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 2, 0, 2, 0, 2, 0, 2}));
}

TEST(IndexedSlices, AnOuterTapeDifferentiatesThroughTheRows) {
  tf::Variable v = table();
  const tf::Tensor ids = tf::constant<std::int32_t>({0, 0, 3});
  tf::GradientTape outer;
  tf::Gradient g;
  {
    tf::GradientTape inner;
    const tf::Tensor y = tf::reduce_sum(tf::square(tf::gather(v, ids)));
    g = inner.gradient(y, v);  // rows 2 * v[ids]
  }
  ASSERT_NE(g.indexed_slices(), nullptr);
  const tf::Tensor z = tf::reduce_sum(*g);  // 2 * (2 v[0] + v[3]) summed
  const tf::Gradient h = outer.gradient(z, v);
  EXPECT_EQ(h->to_vector<float>(), (std::vector<float>{4, 4, 0, 0, 0, 0, 2, 2}));
}

TEST(IndexedSlices, AFunctionCallsBackwardGraphGivesTheDenseForm) {
  // The backward graph of a tf::function call is traced from gradient(): its output is dense.
  tf::Variable v = table();
  auto f = tf::function([&v](const tf::Tensor& ids) { return tf::reduce_sum(tf::gather(v, ids)); });
  const tf::Tensor ids = tf::constant<std::int32_t>({3, 3, 1});
  tf::GradientTape eager_tape;
  const tf::Gradient eager = eager_tape.gradient(tf::reduce_sum(tf::gather(v, ids)), v);
  for (int call = 0; call < 2; ++call) {
    tf::GradientTape tape;
    const tf::Gradient g = tape.gradient(f(ids), v);
    EXPECT_TRUE(bitwise_equal(*g, *eager)) << "call " << call;
  }
}

TEST(IndexedSlices, AGradientOfRowsMakesItsDenseFormOnceForAllCopies) {
  const tf::Gradient g(
      tf::IndexedSlices(tf::constant({{1.0f}}), tf::constant<std::int32_t>({1}), tf::Shape({2, 1})));
  const tf::Gradient copy = g;
  ASSERT_TRUE(g);
  EXPECT_EQ(g.why_missing(), "");
  EXPECT_EQ(g->id(), copy->id());  // one dense tensor
  EXPECT_EQ(g.value_or(tf::constant({{9.0f}, {9.0f}})).to_vector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ(static_cast<std::optional<tf::Tensor>>(g)->to_vector<float>(), (std::vector<float>{0, 1}));
  // A mutable read keeps the rows; a tensor put in place of the dense form replaces them.
  tf::Gradient owned = g;
  EXPECT_EQ(owned->to_vector<float>(), (std::vector<float>{0, 1}));
  const tf::IndexedSlices* rows = owned.indexed_slices();
  ASSERT_NE(rows, nullptr);
  owned.value() = tf::constant({{5.0f}, {6.0f}});
  EXPECT_EQ(owned.indexed_slices(), nullptr);
  EXPECT_EQ(owned->to_vector<float>(), (std::vector<float>{5, 6}));
  EXPECT_EQ(rows->indices().to_vector<std::int32_t>(), (std::vector<std::int32_t>{1}));  // still valid
  EXPECT_NE(g.indexed_slices(), nullptr);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 1}));
}

TEST(IndexedSlices, ForEachGradientDeliversTheRows) {
  tf::Variable v = table();
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(tf::gather(v, tf::constant<std::int32_t>({2, 2})));
  const std::vector<tf::Source> sources{v};
  bool delivered = false;
  tf::for_each_gradient(tape, y, sources, [&](std::size_t, tf::Gradient g) {
    ASSERT_NE(g.indexed_slices(), nullptr);
    EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 2, 2, 0, 0}));
    delivered = true;
  });
  EXPECT_TRUE(delivered);
}

TEST(IndexedSlices, AUserGradientForTheVariableReadGetsADenseDy) {
  // register_gradient replaces ReadVariableOp's gradient: rows no longer pass it unread. The
  // built-in entry is put back after the test.
  struct Restore {
    std::shared_ptr<const tf::autodiff::GradientEntry> entry =
        tf::autodiff::registry().get("ReadVariableOp").gradient();
    ~Restore() { tf::autodiff::registry().get("ReadVariableOp").set_gradient(entry); }
  } restore;
  ASSERT_TRUE(restore.entry->is_dy);
  bool called = false;
  tf::register_gradient("ReadVariableOp", [&](const tf::GradContext& c) -> tf::Grads {
    called = true;
    return {c.dy() * 2.0f};
  });
  tf::Variable v = table();
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(tf::gather(v, tf::constant<std::int32_t>({1})));
  const tf::Gradient g = tape.gradient(y, v);
  EXPECT_TRUE(called);
  EXPECT_EQ(g.indexed_slices(), nullptr);
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{0, 0, 2, 2, 0, 0, 0, 0}));
}

}  // namespace
