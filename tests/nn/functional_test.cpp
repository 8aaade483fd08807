// layers::Functional (Keras's functional API): symbolic inputs, layers applied to them, models
// that branch, merge, share layers, nest and train; their values against the same layers called
// by hand; Keras 2's summary tables; the errors of a graph that cannot run.

#include "tapeflow/nn/functional.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace layers = tf::layers;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::ThrowsMessage;

namespace {

tf::Tensor normals(tf::Shape shape, std::uint64_t seed) {
  return tf::random::normal(shape, 0.0, 1.0, tf::float32, seed);
}

void expect_same(const tf::Tensor& a, const tf::Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
}

}  // namespace

TEST(KerasTensor, InputHasAnUnknownBatchAndItsName) {
  const layers::KerasTensor x = layers::Input({28, 28, 1}, {.name = "image"});
  EXPECT_EQ(x.spec().dims, (std::vector<std::int64_t>{-1, 28, 28, 1}));
  EXPECT_EQ(x.dtype(), tf::float32);
  EXPECT_EQ(x.shape_string(), "(None, 28, 28, 1)");
  EXPECT_EQ(x.to_string(), "KerasTensor(shape=(None, 28, 28, 1), dtype=float32, name='image')");
  EXPECT_EQ(layers::Input({4}, {.batch_size = 8, .dtype = tf::int32}).shape_string(), "(8, 4)");
}

TEST(KerasTensor, AppliedLayersGiveTheirOutputShapeWithUnknownDimsKeptUnknown) {
  const layers::KerasTensor ids = layers::Input({-1}, {.dtype = tf::int32});
  const layers::KerasTensor embedded = layers::embedding(100, 8)->apply(ids);
  EXPECT_EQ(embedded.shape_string(), "(None, None, 8)");
  EXPECT_EQ(embedded.dtype(), tf::float32);
  EXPECT_EQ(layers::global_average_pooling1d()->apply(embedded).shape_string(), "(None, 8)");
  EXPECT_EQ(layers::dense(3)->apply(layers::Input({5})).shape_string(), "(None, 3)");
  EXPECT_EQ(layers::flatten()->apply(layers::Input({2, 3})).shape_string(), "(None, 6)");
}

TEST(KerasTensor, ApplyingBuildsTheLayer) {
  auto dense = layers::dense(3);
  EXPECT_TRUE(dense->variables().empty());
  dense->apply(layers::Input({5}));
  ASSERT_EQ(dense->variables().size(), 2u);
  EXPECT_EQ(dense->variables()[0].shape(), (tf::Shape{5, 3}));
}

TEST(KerasTensor, BadInputShapesAndUnsharedLayersAreErrorsNamingThem) {
  EXPECT_THAT(
      [] {
        layers::Input({-2, 3});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[Input] shape (-2, 3) has a dimension below -1")));
  EXPECT_THAT([] { layers::Input({3}, {.batch_size = 0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("batch_size must be at least 1")));
  layers::Dense on_stack(2, {.name = "local"});
  EXPECT_THAT([&] { on_stack.apply(layers::Input({3})); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[Dense] layer 'local'"), HasSubstr("not owned by a std::shared_ptr"))));
  // A layer that cannot take the input names itself and the input.
  EXPECT_THAT(
      [] {
        layers::conv2d(4, {3, 3})->apply(layers::Input({8}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Conv2D] layer 'conv2d' applied to KerasTensor(shape=(None, 8), dtype=float32"))));
}

TEST(Functional, AChainComputesWhatItsLayersComputeCalledByHand) {
  auto hidden = layers::dense(4, "relu");
  auto out = layers::dense(2);
  const layers::KerasTensor inputs = layers::Input({3});
  layers::Functional model(inputs, out->apply(hidden->apply(inputs)));
  const tf::Tensor x = normals({5, 3}, 1);
  expect_same(model(x), (*out)((*hidden)(x)));
  EXPECT_EQ(model.layers().size(), 2u);
  EXPECT_EQ(model.variables().size(), 4u);
  EXPECT_TRUE(model.trainable_variables()[0] == hidden->variables()[0]);
}

TEST(Functional, AResidualBranchMergesWithAdd) {
  auto dense = layers::dense(3, "tanh");
  const layers::KerasTensor inputs = layers::Input({3});
  const layers::KerasTensor outputs = layers::add()->apply({inputs, dense->apply(inputs)});
  layers::Functional model(inputs, outputs, "residual");
  const tf::Tensor x = normals({4, 3}, 2);
  expect_same(model(x), x + (*dense)(x));
}

TEST(Functional, ASharedLayerRunsOnEachInputWithOneSetOfWeights) {
  auto encoder = layers::dense(4, {.seed = 3});
  const layers::KerasTensor left = layers::Input({6}), right = layers::Input({6});
  const layers::KerasTensor distance =
      layers::subtract()->apply({encoder->apply(left), encoder->apply(right)});
  layers::Functional siamese({left, right}, {distance});
  const tf::Tensor a = normals({2, 6}, 4), b = normals({2, 6}, 5);
  expect_same(siamese({a, b}).at(0), (*encoder)(a) - (*encoder)(b));
  EXPECT_EQ(siamese.variables().size(), 2u);
  EXPECT_EQ(siamese.layers().size(), 2u);
}

TEST(Functional, SeveralOutputsComeBackInOrder) {
  const layers::KerasTensor inputs = layers::Input({2});
  auto first = layers::dense(1), second = layers::dense(3);
  layers::Functional model({inputs}, {first->apply(inputs), second->apply(inputs)});
  const tf::Tensor x = normals({5, 2}, 6);
  const std::vector<tf::Tensor> out = model(std::vector<tf::Tensor>{x});
  ASSERT_EQ(out.size(), 2u);
  expect_same(out[0], (*first)(x));
  expect_same(out[1], (*second)(x));
  EXPECT_THAT([&] { model(x); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("has 1 inputs and 2 outputs")));
}

TEST(Functional, AModelIsALayerOfAnotherModel) {
  const layers::KerasTensor inner_in = layers::Input({3});
  auto inner_dense = layers::dense(2);
  auto inner = layers::model(inner_in, inner_dense->apply(inner_in), "inner");
  const layers::KerasTensor outer_in = layers::Input({3});
  layers::Functional outer(outer_in, layers::concatenate()->apply({inner->apply(outer_in), outer_in}));
  const tf::Tensor x = normals({2, 3}, 7);
  expect_same(outer(x), tf::concat({(*inner_dense)(x), x}, -1));
  EXPECT_EQ(outer.variables().size(), 2u);
}

TEST(Functional, TrainingReachesLayersInsideBranches) {
  // Dropout sees training: a rate of 1 - epsilon zeroes nearly everything only while training.
  const layers::KerasTensor inputs = layers::Input({1000});
  layers::Functional model(inputs, layers::dropout(0.999, 1)->apply(inputs));
  const tf::Tensor x = tf::ones({1, 1000});
  expect_same(model(x, false), x);
  EXPECT_LT(tf::reduce_sum(tf::cast(tf::not_equal(model(x, true), tf::zeros({1, 1000})), tf::float32))
                .item<float>(),
            20.f);
}

TEST(Functional, GradientsReachEveryBranchAsTheSameLayersCalledByHand) {
  auto a = layers::dense(3, {.seed = 1}), b = layers::dense(3, {.seed = 2});
  const layers::KerasTensor inputs = layers::Input({2});
  layers::Functional model(inputs, layers::multiply()->apply({a->apply(inputs), b->apply(inputs)}));
  const tf::Tensor x = normals({4, 2}, 8);
  tf::GradientTape tape({.persistent = true});
  const tf::Tensor by_model = tf::reduce_sum(model(x));
  const tf::Tensor by_hand = tf::reduce_sum((*a)(x) * (*b)(x));
  const std::vector<tf::Variable> vars = model.trainable_variables();
  ASSERT_EQ(vars.size(), 4u);
  const auto from_model = tape.gradient(by_model, vars), from_hand = tape.gradient(by_hand, vars);
  for (std::size_t i = 0; i < vars.size(); ++i) expect_same(*from_model[i], *from_hand[i]);
}

TEST(Functional, InputsOfAnotherShapeOrKindOfDtypeAreErrorsNamingTheInput) {
  const layers::KerasTensor inputs = layers::Input({3}, {.name = "features"});
  layers::Functional model(inputs, layers::dense(1)->apply(inputs), "scorer");
  EXPECT_THAT(
      [&] {
        model(tf::zeros({2, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[Functional] model 'scorer': input 0 ('features')"),
                HasSubstr("expected shape=(None, 3) dtype=float32, found shape=(2, 4) dtype=float32"))));
  EXPECT_THAT(
      [&] {
        model(tf::zeros({2, 3}, tf::int32));
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("found shape=(2, 3) dtype=int32")));
  // Another float is cast to the Input's dtype, as Keras does.
  EXPECT_EQ(model(tf::zeros({2, 3}, tf::float64)).dtype(), tf::float32);
  EXPECT_THAT([&] { model(std::vector<tf::Tensor>{}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("expects 1 input(s), got 0")));
}

TEST(Functional, AGraphThatCannotRunIsAnErrorAtConstruction) {
  const layers::KerasTensor a = layers::Input({2}, {.name = "a"}), b = layers::Input({2}, {.name = "b"});
  auto first = layers::dense(2, {.name = "first"});
  const layers::KerasTensor sum = layers::add()->apply({first->apply(a), b});
  EXPECT_THAT([&] { layers::Functional(a, sum); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("Graph disconnected: cannot obtain value for KerasTensor(shape=(None, 2), "
                                  "dtype=float32, name='b')"),
                        HasSubstr("accessed without issue: ['first']"))));
  EXPECT_THAT(
      [&] { layers::Functional(first->apply(a), sum); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("an input must come from tf::layers::Input()")));
  EXPECT_THAT(
      [&] {
        layers::Functional({a, a}, {sum});
      },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("is given twice")));
  EXPECT_THAT([&] { layers::Functional(std::vector<layers::KerasTensor>{}, {sum}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("needs at least one input and one output")));
}

TEST(FunctionalSummary, AChainGetsTheSequentialLayoutWithItsInputFirst) {
  const layers::KerasTensor inputs = layers::Input({32}, {.name = "input_1"});
  const layers::KerasTensor hidden = layers::dense(16, "relu")->apply(inputs);
  layers::Functional model(inputs, layers::dense(1)->apply(hidden));
  EXPECT_EQ(model.summary(),
            "Model: \"model\"\n"
            "_________________________________________________________________\n"
            " Layer (type)                Output Shape              Param #   \n"
            "=================================================================\n"
            " input_1 (InputLayer)        [(None, 32)]              0         \n"
            "_________________________________________________________________\n"
            " dense (Dense)               (None, 16)                528       \n"
            "_________________________________________________________________\n"
            " dense_1 (Dense)             (None, 1)                 17        \n"
            "=================================================================\n"
            "Total params: 545\n"
            "Trainable params: 545\n"
            "Non-trainable params: 0\n"
            "_________________________________________________________________\n");
}

TEST(FunctionalSummary, ABranchingModelListsWhatEachLayerIsConnectedTo) {
  const layers::KerasTensor inputs = layers::Input({8}, {.name = "input_1"});
  const layers::KerasTensor hidden = layers::dense(8, "relu")->apply(inputs);
  const layers::KerasTensor sum = layers::add()->apply({inputs, hidden});
  layers::Functional model(inputs, layers::dense(2, {.name = "head"})->apply(sum), "residual");
  EXPECT_EQ(
      model.summary(),
      "Model: \"residual\"\n"
      "__________________________________________________________________________________________________\n"
      " Layer (type)                   Output Shape         Param #     Connected to                     \n"
      "==================================================================================================\n"
      " input_1 (InputLayer)           [(None, 8)]          0           []                               \n"
      "__________________________________________________________________________________________________\n"
      " dense (Dense)                  (None, 8)            72          ['input_1[0][0]']                \n"
      "__________________________________________________________________________________________________\n"
      " add (Add)                      (None, 8)            0           ['input_1[0][0]',                \n"
      "                                                                  'dense[0][0]']                  \n"
      "__________________________________________________________________________________________________\n"
      " head (Dense)                   (None, 2)            18          ['add[0][0]']                    \n"
      "==================================================================================================\n"
      "Total params: 90\n"
      "Trainable params: 90\n"
      "Non-trainable params: 0\n"
      "__________________________________________________________________________________________________\n");
}

TEST(FunctionalSummary, ASharedLayerListsEachCallAndItsNodeIndex) {
  auto encoder = layers::dense(4, {.name = "encoder"});
  const layers::KerasTensor a = layers::Input({6}, {.name = "a"}), b = layers::Input({6}, {.name = "b"});
  const layers::KerasTensor joined = layers::concatenate()->apply({encoder->apply(a), encoder->apply(b)});
  const std::string text = layers::Functional({a, b}, {joined}).summary();
  EXPECT_THAT(text,
              HasSubstr(" encoder (Dense)                (None, 4)            28          ['a[0][0]',"));
  EXPECT_THAT(text, HasSubstr("'b[0][0]']"));
  EXPECT_THAT(text, HasSubstr("['encoder[0][0]',"));
  EXPECT_THAT(text, HasSubstr("'encoder[1][0]']"));
  EXPECT_THAT(text, HasSubstr("Total params: 28\n"));
}

TEST(Functional, AttentionOverAnotherSequenceIsANodeOfTwoInputs) {
  auto attention = layers::multi_head_attention(2, 4, {.seed = 5});
  const layers::KerasTensor target = layers::Input({5, 8}), source = layers::Input({7, 8});
  const layers::KerasTensor attended = attention->apply(target, source);
  EXPECT_EQ(attended.shape_string(), "(None, 5, 8)");
  const layers::KerasTensor causal = attention->apply(target, target, {.use_causal_mask = true});
  layers::Functional model({target, source}, {attended, causal});
  const tf::Tensor t = normals({2, 5, 8}, 12), s = normals({2, 7, 8}, 13);
  const std::vector<tf::Tensor> out = model({t, s});
  expect_same(out[0], (*attention)(t, s));
  expect_same(out[1], (*attention)(t, t, {.use_causal_mask = true}));
}
