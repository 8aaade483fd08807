// Creating tensors: constants, fills, ranges, identity matrices, seeded random values.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

TEST(Constant, ScalarsMapCppTypesToDtypes) {
  EXPECT_EQ(tf::constant(1.f).dtype(), tf::DType::Float32);
  EXPECT_EQ(tf::constant(1.0).dtype(), tf::DType::Float64);
  EXPECT_EQ(tf::constant(1).dtype(), tf::DType::Int32);
  EXPECT_EQ(tf::constant(std::int64_t{1}).dtype(), tf::DType::Int64);
  EXPECT_EQ(tf::constant(true).dtype(), tf::DType::Bool);
  EXPECT_EQ(tf::constant(2.5f).shape(), tf::Shape());
}

TEST(Constant, NestedListsGiveRowMajorValues) {
  tf::Tensor m = tf::constant({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(m.shape(), (tf::Shape{2, 3}));
  EXPECT_EQ(m.to_vector<std::int32_t>(), (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
  tf::Tensor c = tf::constant({{{1.f}, {2.f}}, {{3.f}, {4.f}}});
  EXPECT_EQ(c.shape(), (tf::Shape{2, 2, 1}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
}

TEST(Constant, RaggedListsThrow) {
  try {
    (void)tf::constant({{1.f, 2.f}, {3.f}});
    FAIL();
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("[Const] ragged nested list: row 0 has 2 elements but row 1 has 1"));
  }
  EXPECT_THROW((void)tf::constant({{{1.f}, {2.f}}, {{3.f}}}), tf::InvalidArgumentError);
}

TEST(Constant, VectorWithShapeMustHaveMatchingCount) {
  EXPECT_EQ(tf::constant(std::vector<double>{1, 2, 3, 4, 5, 6}, tf::Shape{3, 2}).shape(), (tf::Shape{3, 2}));
  EXPECT_THROW((void)tf::constant(std::vector<double>{1, 2, 3}, tf::Shape{2, 2}), tf::InvalidArgumentError);
  EXPECT_EQ(tf::constant(std::vector<bool>{true, false}).to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(Constant, ConvertsToARequestedDtypeOnlyWhenRepresentable) {
  EXPECT_EQ(tf::constant(3.0, tf::int64).item<std::int64_t>(), 3);
  EXPECT_THROW((void)tf::constant(3.5, tf::int32), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::constant(NAN, tf::int32), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::constant(1e10, tf::int32), tf::InvalidArgumentError);
  EXPECT_FLOAT_EQ(tf::constant(0.1, tf::float32).item<float>(), 0.1f);
}

TEST(Fill, ZerosOnesAndLikes) {
  EXPECT_EQ(tf::zeros({2, 2}).to_vector<float>(), (std::vector<float>(4, 0.f)));
  EXPECT_EQ(tf::ones({3}, tf::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>(3, 1)));
  tf::Tensor x = tf::constant({{1.0, 2.0}});
  EXPECT_EQ(tf::zeros_like(x).shape(), x.shape());
  EXPECT_EQ(tf::ones_like(x).dtype(), tf::DType::Float64);
  EXPECT_EQ(tf::fill({0, 3}, 7).num_elements(), 0);
  EXPECT_EQ(tf::fill({2}, 7, tf::bool_).to_vector<bool>(), (std::vector<bool>{true, true}));
}

TEST(Fill, NegativeOrOverflowingShapesThrow) {
  EXPECT_THROW((void)tf::zeros({-1}), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::zeros({std::int64_t{1} << 40, std::int64_t{1} << 40}), tf::ResourceExhaustedError);
  EXPECT_THROW((void)tf::zeros({1, 1, 1, 1, 1, 1, 1, 1, 1}), tf::InvalidArgumentError);  // rank 9 > kMaxRank
}

TEST(Range, LikeTensorFlow) {
  EXPECT_EQ(tf::range(5).to_vector<std::int32_t>(), (std::vector<std::int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(tf::range(1, 2, 0.25, tf::float32).to_vector<float>(), (std::vector<float>{1, 1.25, 1.5, 1.75}));
  EXPECT_EQ(tf::range(5, 0, -2, tf::int64).to_vector<std::int64_t>(), (std::vector<std::int64_t>{5, 3, 1}));
  EXPECT_EQ(tf::range(3, 3).num_elements(), 0);
}

TEST(Range, RejectsBadArguments) {
  EXPECT_THROW((void)tf::range(0, 10, 0), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::range(0, NAN, 1), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::range(0, 10, -1), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::range(0, 1e20, 1e-3, tf::float32), tf::ResourceExhaustedError);
  EXPECT_THROW((void)tf::range(0.5, 3, 1, tf::int32), tf::InvalidArgumentError);
}

TEST(Linspace, IncludesBothEnds) {
  tf::Tensor x = tf::linspace(-10.0, 10.0, 201);
  EXPECT_EQ(x.shape(), tf::Shape{201});
  EXPECT_EQ(x.values<float>()[0], -10.f);
  EXPECT_EQ(x.values<float>()[200], 10.f);
  EXPECT_NEAR(x.values<float>()[100], 0.f, 1e-6);
  EXPECT_EQ(tf::linspace(1, 2, 1).to_vector<float>(), (std::vector<float>{1.f}));
  EXPECT_THROW((void)tf::linspace(0, 1, -1), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::linspace(0, 1, 3, tf::int32), tf::InvalidArgumentError);
}

TEST(Eye, SquareAndRectangular) {
  EXPECT_EQ(tf::eye(2).to_vector<float>(), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_EQ(tf::eye(2, 3, tf::int32).to_vector<std::int32_t>(),
            (std::vector<std::int32_t>{1, 0, 0, 0, 1, 0}));
  EXPECT_THROW((void)tf::eye(-1), tf::InvalidArgumentError);
}

TEST(Random, SameSeedSameValuesAndSensibleMoments) {
  tf::Tensor a = tf::random::normal({10000}, 1.0, 2.0, tf::float64, 42);
  tf::Tensor b = tf::random::normal({10000}, 1.0, 2.0, tf::float64, 42);
  EXPECT_EQ(a.to_vector<double>(), b.to_vector<double>());
  double mean = 0, var = 0;
  for (double v : a.values<double>()) mean += v / 10000;
  for (double v : a.values<double>()) var += (v - mean) * (v - mean) / 10000;
  EXPECT_NEAR(mean, 1.0, 0.1);
  EXPECT_NEAR(std::sqrt(var), 2.0, 0.1);
  EXPECT_NE(tf::random::normal({4}, 0, 1, tf::float32, 1).to_vector<float>(),
            tf::random::normal({4}, 0, 1, tf::float32, 2).to_vector<float>());
}

TEST(Random, UniformStaysInRange) {
  const tf::Tensor u = tf::random::uniform({5000}, -2, 3, tf::float32, 9);
  for (float v : u.values<float>()) {
    EXPECT_GE(v, -2.f);
    EXPECT_LT(v, 3.f);
  }
  EXPECT_THROW((void)tf::random::uniform({2}, 1, 1), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::random::normal({2}, 0, -1), tf::InvalidArgumentError);
  EXPECT_THROW((void)tf::random::normal({2}, 0, 1, tf::int32), tf::InvalidArgumentError);
}

namespace {
/// The seed StatelessRandomUniform draws from for (key, counter), written out here so the test
/// pins it: SplitMix64's finaliser of key + (counter + 1) * golden gamma (Dropout's mask seed).
std::uint64_t mixed_seed(std::uint64_t key, std::uint64_t counter) {
  std::uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

tf::Tensor seed_tensor(std::int64_t key, std::int64_t counter) { return tf::constant({key, counter}); }
}  // namespace

TEST(StatelessUniform, EqualsRandomUniformForTheMixedSeed) {
  const std::int64_t keys[] = {0, 9, -1, std::numeric_limits<std::int64_t>::min(), 123456789012345};
  for (std::int64_t key : keys)
    for (std::int64_t counter : {0, 1, 2, 1000}) {
      SCOPED_TRACE(testing::Message() << "key " << key << ", counter " << counter);
      const std::uint64_t s =
          mixed_seed(static_cast<std::uint64_t>(key), static_cast<std::uint64_t>(counter));
      const tf::Tensor f = tf::random::stateless_uniform({7, 5}, seed_tensor(key, counter));
      EXPECT_EQ(f.dtype(), tf::DType::Float32);
      EXPECT_EQ(f.shape(), (tf::Shape{7, 5}));
      EXPECT_EQ(f.to_vector<float>(),
                tf::random::uniform({7, 5}, 0.0, 1.0, tf::float32, s).to_vector<float>());
      const tf::Tensor d = tf::random::stateless_uniform({300}, seed_tensor(key, counter), tf::float64);
      EXPECT_EQ(d.to_vector<double>(),
                tf::random::uniform({300}, 0.0, 1.0, tf::float64, s).to_vector<double>());
    }
}

TEST(StatelessUniform, TheCounterGivesUnrelatedValuesAndTheSameSeedTheSameOnes) {
  const auto a = tf::random::stateless_uniform({64}, seed_tensor(5, 0)).to_vector<float>();
  EXPECT_EQ(a, tf::random::stateless_uniform({64}, seed_tensor(5, 0)).to_vector<float>());
  EXPECT_NE(a, tf::random::stateless_uniform({64}, seed_tensor(5, 1)).to_vector<float>());
  EXPECT_NE(a, tf::random::stateless_uniform({64}, seed_tensor(6, 0)).to_vector<float>());
  for (float v : a) {
    EXPECT_GE(v, 0.f);
    EXPECT_LT(v, 1.f);
  }
}

TEST(StatelessUniform, ScalarAndEmptyShapes) {
  EXPECT_EQ(tf::random::stateless_uniform({}, seed_tensor(1, 2)).shape(), tf::Shape());
  EXPECT_EQ(tf::random::stateless_uniform({0, 4}, seed_tensor(1, 2), tf::float64).shape(), (tf::Shape{0, 4}));
}

TEST(StatelessUniform, IsANonDifferentiableOpThatRawOpsCalls) {
  EXPECT_EQ(tf::gradient_status("StatelessRandomUniform"), tf::GradientStatus::NotDifferentiable);
  const tf::Tensor seed = seed_tensor(3, 4);
  const tf::Tensor raw = tf::raw_ops::call("StatelessRandomUniform", std::vector<tf::Tensor>{seed},
                                           {{"shape", tf::Shape{2, 3}}, {"dtype", tf::DType::Float64}})[0];
  EXPECT_EQ(raw.to_vector<double>(),
            tf::random::stateless_uniform({2, 3}, seed, tf::float64).to_vector<double>());
}

TEST(StatelessUniform, BadSeedOrDtypeThrowsNamingTheOp) {
  EXPECT_THAT(
      [] {
        tf::random::stateless_uniform({2}, tf::constant({1, 2}));
      },
      testing::ThrowsMessage<tf::InvalidArgumentError>(
          testing::AllOf(HasSubstr("[StatelessRandomUniform]"), HasSubstr("int32 tensor of shape (2,)"))));
  EXPECT_THAT([] { tf::random::stateless_uniform({2}, seed_tensor(1, 2), tf::int64); },
              testing::ThrowsMessage<tf::InvalidArgumentError>(
                  testing::AllOf(HasSubstr("[StatelessRandomUniform]"), HasSubstr("int64"))));
}
