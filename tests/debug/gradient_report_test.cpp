// tf::debug::gradient_report: one row per variable with its gradient norm or the reason it has
// none, and the vanishing / exploding flags.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "support/gradient_callback.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

namespace {

class TwoVariables : public tf::Module {
 public:
  TwoVariables() : tf::Module("two") {
    w_ = track(tf::Variable(tf::constant({3.0f, 4.0f}), {.name = "w"}));
    frozen_ = track(tf::Variable(1.0f, {.name = "frozen", .trainable = false}));
  }
  tf::Tensor operator()(const tf::Tensor& x) const { return tf::reduce_sum(x * w_) * frozen_; }

 private:
  tf::Variable w_{0.0f};
  tf::Variable frozen_{0.0f};
};

TEST(GradientReport, NormOfEachVariable) {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::Variable b(0.5f, {.name = "b"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(tf::constant({3.0f, 4.0f}) * w) + b;  // dw = (3, 4), db = 1
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {w, b});
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_EQ(r.rows[0].name, "w:0");
  EXPECT_EQ(r.rows[0].shape, tf::Shape({2}));
  EXPECT_DOUBLE_EQ(*r.rows[0].norm, 5.0);
  EXPECT_DOUBLE_EQ(*r.rows[1].norm, 1.0);
  EXPECT_FALSE(r.rows[0].vanishing || r.rows[0].exploding);
  EXPECT_TRUE(r.ok());
}

TEST(GradientReport, MissingGradientCarriesTheExplanation) {
  tf::Variable used(2.0f, {.name = "used"});
  tf::Variable unused(2.0f, {.name = "unused"});
  tf::GradientTape tape;
  tape.watch(unused);
  tf::Tensor loss = used * used;
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {used, unused});
  EXPECT_FALSE(r.rows[1].norm.has_value());
  ASSERT_TRUE(r.rows[1].why.has_value());
  EXPECT_EQ(r.rows[1].why->cause, tf::GradientCause::SourceNotUsed);
  EXPECT_FALSE(r.ok());
  EXPECT_THAT(r.to_string(), HasSubstr("unused:0"));
}

TEST(GradientReport, AcceptsAModuleAndReportsItsTrainableVariables) {
  TwoVariables model;
  tf::GradientTape tape;
  tf::Tensor loss = model(tf::constant({1.0f, 1.0f}));
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, model);
  ASSERT_EQ(r.rows.size(), 1u);  // frozen is not trainable
  EXPECT_EQ(r.rows[0].name, "w:0");
  EXPECT_DOUBLE_EQ(*r.rows[0].norm, std::sqrt(2.0));
}

TEST(GradientReport, NotTrainableVariableListedExplicitly) {
  tf::Variable frozen(1.0f, {.name = "frozen", .trainable = false});
  tf::GradientTape tape;
  tf::Tensor loss = frozen * 2.0f;
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {frozen});
  EXPECT_EQ(r.rows[0].why->cause, tf::GradientCause::VariableNotTrainable);
  EXPECT_THAT(r.to_string(), HasSubstr("not trainable"));
}

TEST(GradientReport, ZeroGradientIsVanishingAndSaysWhereItBecameZero) {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(tf::nn::relu(w - 10.0f));  // dead ReLU
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {w});
  EXPECT_DOUBLE_EQ(*r.rows[0].norm, 0.0);
  EXPECT_TRUE(r.rows[0].vanishing);
  ASSERT_TRUE(r.rows[0].why.has_value());
  EXPECT_EQ(r.rows[0].why->cause, tf::GradientCause::ZeroGradient);
  EXPECT_EQ(r.rows[0].why->op, "Relu");
  EXPECT_THAT(r.to_string(), HasSubstr("VANISHING"));
}

TEST(GradientReport, TinyGradientRelativeToTheVariableIsVanishing) {
  tf::Variable w(1000.0, {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor loss = w * 1e-8;  // |dw| = 1e-8 < 1e-7 * 1000
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {w});
  EXPECT_TRUE(r.rows[0].vanishing);
  EXPECT_FALSE(r.rows[0].exploding);
}

TEST(GradientReport, LargeGradientIsExploding) {
  tf::Variable w(1.0f, {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor loss = w * 5000.0f;
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {w});
  EXPECT_TRUE(r.rows[0].exploding);
  EXPECT_THAT(r.to_string(), HasSubstr("EXPLODING"));
  EXPECT_FALSE(r.ok());
}

TEST(GradientReport, NonFiniteGradientIsExploding) {
  tf::Variable w(0.0f, {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::sqrt(w);  // d sqrt(w) / dw = inf at 0
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {w});
  EXPECT_TRUE(r.rows[0].exploding);
  EXPECT_THAT(r.to_string(), HasSubstr("not finite"));
}

TEST(GradientReport, ThresholdsAreOptions) {
  tf::Variable w(1.0f, {.name = "w"});
  tf::GradientTape tape({.persistent = true});
  tf::Tensor loss = w * 50.0f;
  EXPECT_FALSE(tf::debug::gradient_report(tape, loss, {w}).rows[0].exploding);
  EXPECT_TRUE(tf::debug::gradient_report(tape, loss, {w}, {.exploding = 10.0}).rows[0].exploding);
}

TEST(GradientReport, ConsumesANonPersistentTapeLikeGradient) {
  tf::Variable w(1.0f);
  tf::GradientTape tape;
  tf::Tensor loss = w * 2.0f;
  (void)tf::debug::gradient_report(tape, loss, {w});
  EXPECT_EQ(tape.num_recorded_ops(), 0u);
  EXPECT_THROW((void)tape.gradient(loss, w), tf::FailedPreconditionError);
}

TEST(GradientReport, TableIsAligned) {
  tf::Variable a(tf::constant({1.0f, 2.0f}), {.name = "a_long_name"});
  tf::Variable b(1.0f, {.name = "b"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(a) * b;
  const std::string table = tf::debug::gradient_report(tape, loss, {a, b}).to_string();
  // Every line starts its shape column at the same offset.
  std::vector<std::string> lines;
  for (std::size_t start = 0; start < table.size();) {
    const std::size_t end = table.find('\n', start);
    lines.push_back(table.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].find("shape"), lines[1].find("(2,)"));
  EXPECT_EQ(lines[0].find("shape"), lines[2].find("()"));
}

TEST(GradientReport, ATapeDestroyedByAGradientFunctionIsAnErrorNotAUseAfterFree) {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::Variable unused(1.0f, {.name = "unused"});  // its row needs explain(), after the pass
  auto tape = std::make_unique<tf::GradientTape>();
  tf::Tensor loss = tf::reduce_sum(tf::testing::square_calling(w, [&] { tape.reset(); }));
  tf::GradientTape* const running = tape.get();
  try {
    (void)tf::debug::gradient_report(*running, loss, {w, unused});
    FAIL() << "a report on a tape destroyed mid-pass must throw";
  } catch (const tf::FailedPreconditionError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("destroyed this GradientTape"));
  }
  EXPECT_EQ(tape, nullptr);
}

}  // namespace

// A bfloat16 variable's gradient is bfloat16: its norm is read as such, not as 0 (which reported
// every bfloat16 gradient as VANISHING and hid its NaNs and Infs).
TEST(GradientReport, BFloat16GradientsHaveTheirNorm) {
  tf::Variable w(tf::cast(tf::constant({3.0f, 4.0f}), tf::bfloat16), {.name = "w"});
  tf::Variable z(tf::cast(tf::constant(0.0f), tf::bfloat16), {.name = "z"});
  tf::GradientTape tape;
  tf::Tensor loss = tf::reduce_sum(w * w) + tf::sqrt(z);  // dw = (6, 8), dz = inf
  const tf::GradientReport r = tf::debug::gradient_report(tape, loss, {w, z});
  EXPECT_DOUBLE_EQ(*r.rows[0].norm, 10.0);
  EXPECT_DOUBLE_EQ(r.rows[0].variable_norm, 5.0);
  EXPECT_FALSE(r.rows[0].vanishing || r.rows[0].exploding);
  EXPECT_TRUE(r.rows[1].exploding);
}
