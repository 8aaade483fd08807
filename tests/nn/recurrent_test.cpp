// layers::LSTM and layers::GRU: forward values against step-by-step loop references in double
// (every gate of every unit written out, not the layers' batched matmuls), initial and final
// states, go_backwards, dropout and recurrent_dropout, Keras's weight names, shapes and
// unit_forget_bias, the orthogonal initialiser, mixed precision, tf::function, a short training
// run, errors. Gradients are in
// layer_gradients_test.cpp.

#include "tapeflow/nn/recurrent.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pointwise;
using ::testing::ThrowsMessage;

namespace {

using Vec = std::vector<double>;

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

std::size_t idx(std::int64_t i) { return static_cast<std::size_t>(i); }

/// What a reference run gives: each step's h in processing order, (batch, steps, units)
/// row-major, and the final h and c (batch, units).
struct Reference {
  Vec sequence, h, c;
};

/// Element i of a recurrent dropout mask (batch, units); 1 without a mask.
double mask_at(const Vec& mask, std::int64_t i) { return mask.empty() ? 1.0 : mask[idx(i)]; }

/// The LSTM of Keras's formulas, one unit and one gate at a time: x (n, steps, f), kernel
/// (f, 4u), recurrent (u, 4u), bias (4u), gates i, f, c, o.
Reference lstm_reference(const tf::Tensor& x, const tf::Tensor& kernel, const tf::Tensor& recurrent,
                         const Vec& bias, Vec h, Vec c, bool backwards, const Vec& recurrent_mask = {}) {
  const std::int64_t n = x.shape()[0], steps = x.shape()[1], f = x.shape()[2], u = recurrent.shape()[0];
  const Vec xv = x.to_vector<double>(), k = kernel.to_vector<double>(), r = recurrent.to_vector<double>();
  Reference out;
  out.sequence.assign(idx(n * steps * u), 0.0);
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = backwards ? steps - 1 - i : i;
    Vec h_next(h.size()), c_next(c.size());
    for (std::int64_t b = 0; b < n; ++b)
      for (std::int64_t j = 0; j < u; ++j) {
        double z[4];
        for (std::int64_t g = 0; g < 4; ++g) {
          const std::int64_t col = g * u + j;
          double acc = bias[idx(col)];
          for (std::int64_t q = 0; q < f; ++q)
            acc += xv[idx((b * steps + t) * f + q)] * k[idx(q * 4 * u + col)];
          for (std::int64_t q = 0; q < u; ++q)
            acc += h[idx(b * u + q)] * mask_at(recurrent_mask, b * u + q) * r[idx(q * 4 * u + col)];
          z[g] = acc;
        }
        const double in = sigmoid(z[0]), forget = sigmoid(z[1]), candidate = std::tanh(z[2]),
                     o = sigmoid(z[3]);
        c_next[idx(b * u + j)] = forget * c[idx(b * u + j)] + in * candidate;
        h_next[idx(b * u + j)] = o * std::tanh(c_next[idx(b * u + j)]);
        out.sequence[idx((b * steps + i) * u + j)] = h_next[idx(b * u + j)];
      }
    h = h_next;
    c = c_next;
  }
  out.h = h;
  out.c = c;
  return out;
}

/// The GRU of Keras's formulas, one unit at a time: kernel (f, 3u), recurrent (u, 3u), gates z,
/// r, h; `recurrent_bias` is used with reset_after only.
Reference gru_reference(const tf::Tensor& x, const tf::Tensor& kernel, const tf::Tensor& recurrent,
                        const Vec& input_bias, const Vec& recurrent_bias, Vec h, bool reset_after,
                        bool backwards, const Vec& recurrent_mask = {}) {
  const std::int64_t n = x.shape()[0], steps = x.shape()[1], f = x.shape()[2], u = recurrent.shape()[0];
  const Vec xv = x.to_vector<double>(), k = kernel.to_vector<double>(), r = recurrent.to_vector<double>();
  Reference out;
  out.sequence.assign(idx(n * steps * u), 0.0);
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t t = backwards ? steps - 1 - i : i;
    Vec h_next(h.size());
    for (std::int64_t b = 0; b < n; ++b) {
      Vec xg(idx(3 * u)), rg(idx(3 * u));  // x @ kernel + input bias; h @ recurrent (+ recurrent bias)
      for (std::int64_t col = 0; col < 3 * u; ++col) {
        double xs = input_bias[idx(col)], rs = reset_after ? recurrent_bias[idx(col)] : 0.0;
        for (std::int64_t q = 0; q < f; ++q) xs += xv[idx((b * steps + t) * f + q)] * k[idx(q * 3 * u + col)];
        for (std::int64_t q = 0; q < u; ++q)
          rs += h[idx(b * u + q)] * mask_at(recurrent_mask, b * u + q) * r[idx(q * 3 * u + col)];
        xg[idx(col)] = xs;
        rg[idx(col)] = rs;
      }
      Vec z(idx(u)), reset(idx(u));
      for (std::int64_t j = 0; j < u; ++j) {
        z[idx(j)] = sigmoid(xg[idx(j)] + rg[idx(j)]);
        reset[idx(j)] = sigmoid(xg[idx(u + j)] + rg[idx(u + j)]);
      }
      for (std::int64_t j = 0; j < u; ++j) {
        double inner = 0.0;
        if (reset_after) {
          inner = reset[idx(j)] * rg[idx(2 * u + j)];
        } else {  // (r * h) @ recurrent[:, 2u:]
          for (std::int64_t q = 0; q < u; ++q)
            inner += reset[idx(q)] * h[idx(b * u + q)] * mask_at(recurrent_mask, b * u + q) *
                     r[idx(q * 3 * u + 2 * u + j)];
        }
        const double candidate = std::tanh(xg[idx(2 * u + j)] + inner);
        const double zj = z[idx(j)];
        h_next[idx(b * u + j)] = zj * h[idx(b * u + j)] + (1.0 - zj) * candidate;
        out.sequence[idx((b * steps + i) * u + j)] = h_next[idx(b * u + j)];
      }
    }
    h = h_next;
  }
  out.h = h;
  return out;
}

/// A float64 input of normals, (n, steps, features).
tf::Tensor inputs(std::int64_t n, std::int64_t steps, std::int64_t features, std::uint64_t seed) {
  return tf::random::normal({n, steps, features}, 0.0, 1.0, tf::float64, seed);
}

/// Replaces `v`'s value by normals (a bias of zeros would hide a bias applied wrongly).
void randomize(const tf::Variable& v, std::uint64_t seed) {
  tf::Variable copy = v;  // copies share the variable
  copy.assign(tf::random::normal(v.shape(), 0.0, 0.5, tf::float64, seed));
}

Vec values(const tf::Variable& v) { return v.value().to_vector<double>(); }

/// The Gram matrix of the rows (m m^T, rows x rows) or of the columns (m^T m) of a row-major
/// matrix, compared with the identity within 1e-6.
void expect_orthonormal(const Vec& m, std::int64_t rows, std::int64_t cols, bool of_rows) {
  const std::int64_t size = of_rows ? rows : cols, inner = of_rows ? cols : rows;
  for (std::int64_t a = 0; a < size; ++a)
    for (std::int64_t b = 0; b < size; ++b) {
      double dot = 0.0;
      for (std::int64_t k = 0; k < inner; ++k)
        dot += of_rows ? m[idx(a * cols + k)] * m[idx(b * cols + k)]
                       : m[idx(k * cols + a)] * m[idx(k * cols + b)];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-6) << "Gram element (" << a << ", " << b << ")";
    }
}

TEST(LSTM, MatchesTheStepReference) {
  for (const bool sequences : {false, true})
    for (const bool backwards : {false, true}) {
      SCOPED_TRACE(::testing::Message()
                   << "return_sequences " << sequences << ", go_backwards " << backwards);
      tf::layers::LSTM lstm(3, {.return_sequences = sequences, .go_backwards = backwards, .seed = 4});
      const tf::Tensor x = inputs(2, 5, 4, 1);
      lstm.build(x.shape(), tf::float64);
      randomize(lstm.bias(), 9);
      const tf::Tensor y = lstm(x);
      const Reference ref = lstm_reference(x, lstm.kernel().value(), lstm.recurrent_kernel().value(),
                                           values(lstm.bias()), Vec(6, 0.0), Vec(6, 0.0), backwards);
      EXPECT_EQ(y.shape(), sequences ? tf::Shape({2, 5, 3}) : tf::Shape({2, 3}));
      EXPECT_THAT(y.to_vector<double>(), Pointwise(DoubleNear(1e-10), sequences ? ref.sequence : ref.h));
    }
}

TEST(LSTM, StartsFromTheInitialStateAndReturnsTheFinalStates) {
  tf::layers::LSTM lstm(3, {.return_sequences = true, .return_state = true, .seed = 5});
  const tf::Tensor x = inputs(2, 4, 2, 2);
  const tf::Tensor h0 = tf::random::normal({2, 3}, 0.0, 1.0, tf::float64, 3);
  const tf::Tensor c0 = tf::random::normal({2, 3}, 0.0, 1.0, tf::float64, 4);
  const tf::layers::LSTMState s = lstm.call_with_state(x, std::pair{h0, c0});
  const Reference ref =
      lstm_reference(x, lstm.kernel().value(), lstm.recurrent_kernel().value(), values(lstm.bias()),
                     h0.to_vector<double>(), c0.to_vector<double>(), false);
  EXPECT_EQ(s.output.shape(), tf::Shape({2, 4, 3}));
  EXPECT_EQ(s.h.shape(), tf::Shape({2, 3}));
  EXPECT_EQ(s.c.shape(), tf::Shape({2, 3}));
  EXPECT_THAT(s.output.to_vector<double>(), Pointwise(DoubleNear(1e-10), ref.sequence));
  EXPECT_THAT(s.h.to_vector<double>(), Pointwise(DoubleNear(1e-10), ref.h));
  EXPECT_THAT(s.c.to_vector<double>(), Pointwise(DoubleNear(1e-10), ref.c));
  // return_state leaves operator() (what Sequential calls) returning the output alone.
  EXPECT_THAT(
      lstm(x).to_vector<double>(),
      Pointwise(DoubleNear(1e-10), lstm_reference(x, lstm.kernel().value(), lstm.recurrent_kernel().value(),
                                                  values(lstm.bias()), Vec(6, 0.0), Vec(6, 0.0), false)
                                       .sequence));
}

TEST(LSTM, GoBackwardsIsTheForwardLayerOnTheReversedSequenceInProcessingOrder) {
  // Keras 3: the sequence comes out in processing order (Bidirectional flips it back).
  tf::layers::LSTM backwards(2, {.return_sequences = true, .go_backwards = true, .seed = 6});
  tf::layers::LSTM forwards(2, {.return_sequences = true, .seed = 6});
  const tf::Tensor x = inputs(3, 4, 2, 7);
  EXPECT_THAT(backwards(x).to_vector<double>(),
              Pointwise(DoubleNear(1e-12), forwards(tf::reverse(x, {1})).to_vector<double>()));
}

TEST(LSTM, IsBuiltLazilyWithKerasWeightNamesAndShapes) {
  tf::layers::LSTM lstm(3);
  EXPECT_FALSE(lstm.built());
  EXPECT_EQ(lstm(tf::zeros({2, 5, 4})).shape(), tf::Shape({2, 3}));
  EXPECT_EQ(lstm.kernel().shape(), tf::Shape({4, 12}));
  EXPECT_EQ(lstm.recurrent_kernel().shape(), tf::Shape({3, 12}));
  EXPECT_EQ(lstm.bias().shape(), tf::Shape({12}));
  EXPECT_EQ(lstm.kernel().dtype(), tf::float32);
  EXPECT_EQ(lstm.name(), "lstm");
  EXPECT_THAT(tf::testing::names(lstm.trainable_variables()),
              ElementsAre("kernel", "recurrent_kernel", "bias"));
  tf::layers::LSTM plain(2, {.use_bias = false});
  plain(tf::zeros({1, 2, 3}));
  EXPECT_THAT(tf::testing::names(plain.trainable_variables()), ElementsAre("kernel", "recurrent_kernel"));
  EXPECT_THROW(plain.bias(), tf::FailedPreconditionError);
}

TEST(LSTM, UnitForgetBiasSetsTheForgetGateSliceToOnes) {
  tf::layers::LSTM lstm(2);
  lstm.build({1, 3, 2}, tf::float64);
  EXPECT_THAT(values(lstm.bias()), ElementsAre(0, 0, 1, 1, 0, 0, 0, 0));
  tf::layers::LSTM zeros(2, {.unit_forget_bias = false});
  zeros.build({1, 3, 2}, tf::float64);
  EXPECT_THAT(values(zeros.bias()), ElementsAre(0, 0, 0, 0, 0, 0, 0, 0));
}

TEST(LSTM, AnEmptyBatchGivesAnEmptyOutput) {
  tf::layers::LSTM lstm(3, {.return_sequences = true});
  EXPECT_EQ(lstm(tf::zeros({0, 4, 2})).shape(), tf::Shape({0, 4, 3}));
}

TEST(GRU, MatchesTheStepReference) {
  for (const bool reset_after : {true, false})
    for (const bool sequences : {false, true})
      for (const bool backwards : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "reset_after " << reset_after << ", return_sequences "
                                          << sequences << ", go_backwards " << backwards);
        tf::layers::GRU gru(3, {.return_sequences = sequences,
                                .go_backwards = backwards,
                                .reset_after = reset_after,
                                .seed = 8});
        const tf::Tensor x = inputs(2, 5, 4, 10);
        gru.build(x.shape(), tf::float64);
        randomize(gru.bias(), 11);
        const Vec bias = values(gru.bias());
        // reset_after: row 0 the input bias, row 1 the recurrent one.
        const Vec input_bias(bias.begin(), bias.begin() + 9);
        const Vec recurrent_bias = reset_after ? Vec(bias.begin() + 9, bias.end()) : Vec(9, 0.0);
        const tf::Tensor y = gru(x);
        const Reference ref = gru_reference(x, gru.kernel().value(), gru.recurrent_kernel().value(),
                                            input_bias, recurrent_bias, Vec(6, 0.0), reset_after, backwards);
        EXPECT_EQ(y.shape(), sequences ? tf::Shape({2, 5, 3}) : tf::Shape({2, 3}));
        EXPECT_THAT(y.to_vector<double>(), Pointwise(DoubleNear(1e-10), sequences ? ref.sequence : ref.h));
      }
}

TEST(GRU, StartsFromTheInitialStateAndReturnsTheFinalState) {
  for (const bool reset_after : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "reset_after " << reset_after);
    tf::layers::GRU gru(2, {.return_state = true, .reset_after = reset_after, .seed = 12});
    const tf::Tensor x = inputs(3, 3, 2, 13);
    const tf::Tensor h0 = tf::random::normal({3, 2}, 0.0, 1.0, tf::float64, 14);
    const tf::layers::GRUState s = gru.call_with_state(x, h0);
    randomize(gru.bias(), 15);
    const tf::layers::GRUState s2 = gru.call_with_state(x, h0);
    const Vec bias = values(gru.bias());
    const Vec input_bias(bias.begin(), bias.begin() + 6);
    const Vec recurrent_bias = reset_after ? Vec(bias.begin() + 6, bias.end()) : Vec(6, 0.0);
    const Reference ref = gru_reference(x, gru.kernel().value(), gru.recurrent_kernel().value(), input_bias,
                                        recurrent_bias, h0.to_vector<double>(), reset_after, false);
    EXPECT_EQ(s.output.shape(), tf::Shape({3, 2}));
    EXPECT_EQ(s.h.shape(), tf::Shape({3, 2}));
    EXPECT_THAT(s2.output.to_vector<double>(), Pointwise(DoubleNear(1e-10), ref.h));
    EXPECT_THAT(s2.h.to_vector<double>(), Pointwise(DoubleNear(1e-10), ref.h));
  }
}

TEST(GRU, IsBuiltLazilyWithKerasWeightNamesAndShapes) {
  tf::layers::GRU gru(3);
  EXPECT_FALSE(gru.built());
  EXPECT_EQ(gru(tf::zeros({2, 5, 4})).shape(), tf::Shape({2, 3}));
  EXPECT_EQ(gru.kernel().shape(), tf::Shape({4, 9}));
  EXPECT_EQ(gru.recurrent_kernel().shape(), tf::Shape({3, 9}));
  EXPECT_EQ(gru.bias().shape(), tf::Shape({2, 9}));  // reset_after: input and recurrent biases
  EXPECT_EQ(gru.name(), "gru");
  EXPECT_THAT(tf::testing::names(gru.trainable_variables()),
              ElementsAre("kernel", "recurrent_kernel", "bias"));
  tf::layers::GRU before(3, {.reset_after = false});
  before(tf::zeros({2, 5, 4}));
  EXPECT_EQ(before.bias().shape(), tf::Shape({9}));
}

/// A dropout mask of one example read from a gradient (rows x cols): element i is 0 where row i
/// is all zeros (what the mask dropped gets no gradient), else 1 / (1 - rate).
Vec mask_from_rows(const tf::Tensor& grad, double rate) {
  const std::int64_t rows = grad.shape()[0], cols = grad.shape()[1];
  const Vec g = grad.to_vector<double>();
  Vec mask(idx(rows));
  for (std::int64_t i = 0; i < rows; ++i) {
    bool zero = true;
    for (std::int64_t j = 0; j < cols; ++j) zero = zero && g[idx(i * cols + j)] == 0.0;
    mask[idx(i)] = zero ? 0.0 : 1.0 / (1.0 - rate);
  }
  return mask;
}

/// `x` (1, steps, features) with its features scaled by `mask`, the same at every step.
tf::Tensor masked_features(const tf::Tensor& x, const Vec& mask) {
  return x * tf::reshape(tf::constant(mask, {static_cast<std::int64_t>(mask.size())}), {1, 1, x.shape()[2]});
}

// One example, so each mask is one row: a feature the input mask drops leaves its kernel row
// without gradient, a unit the recurrent mask drops leaves its recurrent-kernel row without
// gradient. With the masks read from those, a training call is the step reference on the masked
// input with the masked h in the recurrent products, at every step; an inference call is the
// plain reference; each training call draws new masks.
TEST(LSTM, DropoutMasksTheFeaturesAndTheRecurrentUnitsAlikeAtEveryStep) {
  const double rate = 0.5;
  tf::layers::LSTM lstm(6,
                        {.return_sequences = true, .dropout = rate, .recurrent_dropout = rate, .seed = 21});
  const tf::Tensor x = inputs(1, 5, 8, 22);
  lstm.build(x.shape(), tf::float64);
  randomize(lstm.bias(), 23);
  tf::GradientTape tape;
  const tf::Tensor y = lstm.call_with_state(x, {}, /*training=*/true).output;
  const auto grads = tape.gradient(tf::reduce_sum(y), {lstm.kernel(), lstm.recurrent_kernel()});
  const Vec input_mask = mask_from_rows(*grads[0], rate), recurrent_mask = mask_from_rows(*grads[1], rate);
  for (const Vec& mask : {input_mask, recurrent_mask}) {
    EXPECT_THAT(mask, Contains(0.0));
    EXPECT_THAT(mask, Contains(2.0));
  }
  const tf::Tensor kernel = lstm.kernel().value(), recurrent = lstm.recurrent_kernel().value();
  const Reference dropped =
      lstm_reference(masked_features(x, input_mask), kernel, recurrent, values(lstm.bias()), Vec(6, 0.0),
                     Vec(6, 0.0), false, recurrent_mask);
  EXPECT_THAT(y.to_vector<double>(), Pointwise(DoubleNear(1e-10), dropped.sequence));
  const Reference plain =
      lstm_reference(x, kernel, recurrent, values(lstm.bias()), Vec(6, 0.0), Vec(6, 0.0), false);
  EXPECT_THAT(lstm(x).to_vector<double>(), Pointwise(DoubleNear(1e-10), plain.sequence));
  EXPECT_NE(lstm.call(x, /*training=*/true).to_vector<double>(), y.to_vector<double>());
}

TEST(GRU, DropoutMasksTheFeaturesAndTheRecurrentUnitsAlikeAtEveryStep) {
  const double rate = 0.4;
  for (const bool reset_after : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "reset_after " << reset_after);
    tf::layers::GRU gru(6, {.return_sequences = true,
                            .reset_after = reset_after,
                            .dropout = rate,
                            .recurrent_dropout = rate,
                            .seed = 24});
    const tf::Tensor x = inputs(1, 5, 8, 25);
    gru.build(x.shape(), tf::float64);
    randomize(gru.bias(), 26);
    const Vec bias = values(gru.bias());
    const Vec input_bias(bias.begin(), bias.begin() + 18);
    const Vec recurrent_bias = reset_after ? Vec(bias.begin() + 18, bias.end()) : Vec(18, 0.0);
    tf::GradientTape tape;
    const tf::Tensor y = gru.call_with_state(x, {}, /*training=*/true).output;
    const auto grads = tape.gradient(tf::reduce_sum(y), {gru.kernel(), gru.recurrent_kernel()});
    const Vec input_mask = mask_from_rows(*grads[0], rate), recurrent_mask = mask_from_rows(*grads[1], rate);
    for (const Vec& mask : {input_mask, recurrent_mask}) {
      EXPECT_THAT(mask, Contains(0.0));
      EXPECT_THAT(mask, Contains(1.0 / (1.0 - rate)));
    }
    const tf::Tensor kernel = gru.kernel().value(), recurrent = gru.recurrent_kernel().value();
    const Reference dropped = gru_reference(masked_features(x, input_mask), kernel, recurrent, input_bias,
                                            recurrent_bias, Vec(6, 0.0), reset_after, false, recurrent_mask);
    EXPECT_THAT(y.to_vector<double>(), Pointwise(DoubleNear(1e-10), dropped.sequence));
    const Reference plain =
        gru_reference(x, kernel, recurrent, input_bias, recurrent_bias, Vec(6, 0.0), reset_after, false);
    EXPECT_THAT(gru(x).to_vector<double>(), Pointwise(DoubleNear(1e-10), plain.sequence));
    EXPECT_NE(gru.call(x, /*training=*/true).to_vector<double>(), y.to_vector<double>());
  }
}

TEST(OrthogonalInitializer, GivesOrthonormalColumnsOrRows) {
  // Square: Q^T Q = Q Q^T = I.
  tf::layers::Dense square(4, {.seed = 1, .kernel_initializer = "orthogonal"});
  square(tf::ones({1, 4}, tf::float64));
  expect_orthonormal(values(square.kernel()), 4, 4, false);
  expect_orthonormal(values(square.kernel()), 4, 4, true);
  // Tall (6, 3): orthonormal columns. Wide (3, 5): orthonormal rows.
  tf::layers::Dense tall(3, {.seed = 2, .kernel_initializer = "orthogonal"});
  tall(tf::ones({1, 6}, tf::float64));
  expect_orthonormal(values(tall.kernel()), 6, 3, false);
  tf::layers::Dense wide(5, {.seed = 3, .kernel_initializer = "orthogonal"});
  wide(tf::ones({1, 3}, tf::float64));
  expect_orthonormal(values(wide.kernel()), 3, 5, true);
  // The recurrent kernels' default: (units, 4 units) and (units, 3 units), orthonormal rows.
  tf::layers::LSTM lstm(3, {.seed = 4});
  lstm.build({1, 2, 2}, tf::float64);
  expect_orthonormal(values(lstm.recurrent_kernel()), 3, 12, true);
  tf::layers::GRU gru(4, {.seed = 5});
  gru.build({1, 2, 2}, tf::float64);
  expect_orthonormal(values(gru.recurrent_kernel()), 4, 12, true);
  // Seeded: the same seed gives the same matrix, another seed another one.
  tf::layers::Dense again(4, {.seed = 1, .kernel_initializer = "orthogonal"});
  again(tf::ones({1, 4}, tf::float64));
  EXPECT_EQ(values(again.kernel()), values(square.kernel()));
  tf::layers::Dense other(4, {.seed = 9, .kernel_initializer = "orthogonal"});
  other(tf::ones({1, 4}, tf::float64));
  EXPECT_NE(values(other.kernel()), values(square.kernel()));
}

TEST(Recurrent, MixedBFloat16ComputesInBFloat16WithFloat32Weights) {
  const tf::mixed_precision::Policy mixed("mixed_bfloat16");
  const tf::Tensor x = tf::random::normal({2, 4, 3}, 0.0, 1.0, tf::float32, 16);
  tf::layers::LSTM lstm(4, {.seed = 17, .dtype_policy = mixed}), lstm32(4, {.seed = 17});
  const tf::layers::LSTMState s = lstm.call_with_state(x);
  EXPECT_EQ(s.output.dtype(), tf::bfloat16);
  EXPECT_EQ(s.h.dtype(), tf::bfloat16);
  EXPECT_EQ(s.c.dtype(), tf::bfloat16);
  EXPECT_EQ(lstm.kernel().dtype(), tf::float32);
  EXPECT_EQ(lstm.recurrent_kernel().dtype(), tf::float32);
  EXPECT_EQ(lstm.bias().dtype(), tf::float32);
  EXPECT_THAT(tf::cast(s.output, tf::float32).to_vector<float>(),
              Pointwise(::testing::FloatNear(0.05f), lstm32(x).to_vector<float>()));
  tf::layers::GRU gru(4, {.seed = 18, .dtype_policy = mixed}), gru32(4, {.seed = 18});
  // A float32 initial state is cast to the compute dtype, as the input is.
  const tf::layers::GRUState g = gru.call_with_state(x, tf::zeros({2, 4}));
  EXPECT_EQ(g.output.dtype(), tf::bfloat16);
  EXPECT_EQ(gru.kernel().dtype(), tf::float32);
  EXPECT_EQ(gru.bias().dtype(), tf::float32);
  EXPECT_THAT(tf::cast(g.output, tf::float32).to_vector<float>(),
              Pointwise(::testing::FloatNear(0.05f), gru32(x).to_vector<float>()));
}

TEST(Recurrent, TfFunctionTracesTheUnrolledStepsAndComputesTheSameValues) {
  tf::layers::LSTM lstm(3, {.return_sequences = true, .seed = 24});
  tf::layers::GRU gru(2, {.seed = 25});
  const tf::Tensor x = inputs(2, 4, 2, 26);
  const tf::Tensor want = gru(lstm(x));  // eager; builds both layers outside the trace
  auto f = tf::function([&](const tf::Tensor& in) { return gru(lstm(in)); }, {.name = "recurrent"});
  for (int call = 0; call < 2; ++call)  // the trace, then the graph
    EXPECT_THAT(f(x).to_vector<double>(), Pointwise(DoubleNear(1e-9), want.to_vector<double>())) << call;
}

/// Trains `model` (a recurrent layer then Dense(1)) for 40 Adam steps to output the sign of
/// each sequence's sum; returns the mean squared error before and after.
std::pair<float, float> train_on_sum_signs(tf::layers::Sequential& model) {
  const tf::Tensor x = tf::random::normal({32, 5, 1}, 0.0, 1.0, tf::float32, 19);
  std::vector<float> signs;
  const std::vector<float> xv = x.to_vector<float>();
  for (std::size_t b = 0; b < 32; ++b) {
    float sum = 0.f;
    for (std::size_t t = 0; t < 5; ++t) sum += xv[b * 5 + t];
    signs.push_back(sum > 0.f ? 1.f : -1.f);
  }
  const tf::Tensor target = tf::constant(signs, tf::Shape{32, 1});
  auto loss_of = [&] { return tf::reduce_mean(tf::square(model.call(x, true) - target)); };
  const float first = loss_of().item<float>();
  tf::optimizers::Adam adam(0.05);
  for (int step = 0; step < 40; ++step) {
    tf::GradientTape tape;
    const tf::Tensor loss = loss_of();
    const std::vector<tf::Variable> vars = model.trainable_variables();
    adam.apply_gradients(tape.gradient(loss, vars), vars);
  }
  return {first, loss_of().item<float>()};
}

TEST(Recurrent, TrainingOnASequenceTaskLowersTheLoss) {
  tf::layers::Sequential lstm_model{tf::layers::lstm(8, {.seed = 20}),
                                    tf::layers::dense(1, tf::layers::DenseOptions{.seed = 21})};
  const auto [lstm_first, lstm_last] = train_on_sum_signs(lstm_model);
  EXPECT_LT(lstm_last, 0.7f * lstm_first);
  tf::layers::Sequential gru_model{tf::layers::gru(8, {.seed = 22}),
                                   tf::layers::dense(1, tf::layers::DenseOptions{.seed = 23})};
  const auto [gru_first, gru_last] = train_on_sum_signs(gru_model);
  EXPECT_LT(gru_last, 0.7f * gru_first);
}

TEST(Recurrent, BadArgumentsAndInputsNameTheLayerAndShapes) {
  EXPECT_THAT([] { tf::layers::LSTM(0); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[LSTM] units must be positive, got 0")));
  EXPECT_THAT([] { tf::layers::GRU(-1); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[GRU] units must be positive, got -1")));
  EXPECT_THAT([] { tf::layers::LSTM(2, {.activation = "nope"}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[LSTM] unknown activation 'nope'")));
  EXPECT_THAT([] { tf::layers::GRU(2, {.recurrent_activation = "nope"}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[GRU] unknown activation 'nope'")));
  EXPECT_THAT(
      [] { tf::layers::GRU(2, {.recurrent_initializer = "ones"}); },
      ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[GRU] unknown recurrent_initializer 'ones'")));
  EXPECT_THAT([] { tf::layers::LSTM(2, {.kernel_initializer = "ones"}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[LSTM] unknown kernel_initializer 'ones'")));
  EXPECT_THAT([] { tf::layers::LSTM(2, {.dropout = 1.0}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[LSTM] dropout must be in [0, 1), got 1")));
  EXPECT_THAT([] { tf::layers::GRU(2, {.recurrent_dropout = -0.5}); },
              ThrowsMessage<tf::InvalidArgumentError>(
                  HasSubstr("[GRU] recurrent_dropout must be in [0, 1), got -0.5")));
  EXPECT_THAT([] { tf::layers::GRU(2, {.dropout = std::nan("")}); },
              ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("[GRU] dropout must be in [0, 1), got nan")));

  tf::layers::LSTM lstm(2);
  EXPECT_THAT(
      [&] {
        lstm(tf::zeros({2, 3}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[LSTM]"), HasSubstr("rank 3"), HasSubstr("(2, 3)"))));
  EXPECT_THAT(
      [&] {
        lstm(tf::zeros({2, 3, 4}, tf::int32));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[LSTM]"), HasSubstr("needs floating inputs"), HasSubstr("int32"))));
  EXPECT_THAT(
      [&] {
        lstm(tf::zeros({2, 0, 4}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[LSTM]"), HasSubstr("at least one step"), HasSubstr("(2, 0, 4)"))));
  EXPECT_FALSE(lstm.built());  // the bad calls did not build it
  lstm(tf::zeros({2, 3, 4}));
  EXPECT_THAT(
      [&] {
        lstm(tf::zeros({2, 3, 5}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[LSTM]"), HasSubstr("built for inputs with 4 features"), HasSubstr("(2, 3, 5)"))));
  EXPECT_THAT(
      [&] {
        lstm(tf::zeros({2, 3, 4}, tf::float64));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("built for float32 inputs"), HasSubstr("float64"))));
  EXPECT_THAT(
      [&] {
        lstm.call_with_state(tf::zeros({2, 3, 4}), std::pair{tf::zeros({2, 3}), tf::zeros({2, 2})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[LSTM]"), HasSubstr("initial state h of shape (batch, units) = (2, 2)"),
                HasSubstr("got one of shape (2, 3)"))));
  EXPECT_THAT(
      [&] {
        lstm.call_with_state(tf::zeros({2, 3, 4}), std::pair{tf::zeros({2, 2}), tf::zeros({1, 2})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("initial state c of shape (batch, units) = (2, 2)"), HasSubstr("(1, 2)"))));
  EXPECT_THAT(
      [&] {
        lstm.call_with_state(tf::zeros({2, 3, 4}),
                             std::pair{tf::zeros({2, 2}, tf::float64), tf::zeros({2, 2})});
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("computes in float32"), HasSubstr("float64"))));

  tf::layers::GRU gru(2);
  EXPECT_THAT(
      [&] {
        gru.call_with_state(tf::zeros({3, 2, 1}), tf::zeros({2, 2}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(
          AllOf(HasSubstr("[GRU]"), HasSubstr("initial state h of shape (batch, units) = (3, 2)"),
                HasSubstr("(2, 2)"))));
  EXPECT_THAT(
      [&] {
        gru(tf::zeros({1, 0, 1}));
      },
      ThrowsMessage<tf::InvalidArgumentError>(AllOf(HasSubstr("[GRU]"), HasSubstr("(1, 0, 1)"))));
}

}  // namespace
