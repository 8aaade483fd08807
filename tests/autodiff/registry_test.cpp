// The gradient registry: what register_gradient checks of a user's gradient function.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "autodiff/op_def.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

namespace {

/// Registers `fn` as the gradient of the identity op NoGradient for one test, then declares it
/// non-differentiable again (its built-in state).
struct ScopedNoGradientGradient {
  explicit ScopedNoGradientGradient(tf::GradientFunction fn) {
    tf::register_gradient("NoGradient", std::move(fn));
  }
  ~ScopedNoGradientGradient() { tf::no_gradient("NoGradient"); }
};

/// Differentiates raw_ops::no_gradient(x) at x = [1, 2] and returns the InvalidArgumentError's
/// message ("" if nothing was thrown).
std::string error_of_registered_gradient(tf::GradientFunction fn) {
  const ScopedNoGradientGradient registered(std::move(fn));
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::raw_ops::no_gradient(x);
  try {
    (void)tape.gradient(y, x);
  } catch (const tf::InvalidArgumentError& e) {
    return e.what();
  }
  return "";
}

TEST(GradientRegistry, RegisteredGradientOfTheWrongShapeIsTheUsersErrorNamingTheOpAndShapes) {
  const std::string what =
      error_of_registered_gradient([](const tf::GradContext&) -> tf::Grads { return {tf::zeros({3})}; });
  EXPECT_THAT(
      what, HasSubstr("[NoGradient] the gradient function given to register_gradient returned a gradient of "
                      "shape (3,) and dtype float32 for input 0, which has shape (2,) and dtype float32"));
}

TEST(GradientRegistry, RegisteredGradientOfTheWrongDtypeIsTheUsersError) {
  const std::string what = error_of_registered_gradient(
      [](const tf::GradContext& c) -> tf::Grads { return {tf::cast(c.dy(), tf::float64)}; });
  EXPECT_THAT(what, HasSubstr("[NoGradient]"));
  EXPECT_THAT(what, HasSubstr("dtype float64 for input 0"));
}

TEST(GradientRegistry, RegisteredGradientThatIsUndefinedIsTheUsersError) {
  const std::string what =
      error_of_registered_gradient([](const tf::GradContext&) -> tf::Grads { return {tf::Tensor()}; });
  EXPECT_THAT(what,
              HasSubstr("[NoGradient] the gradient function given to register_gradient returned an undefined "
                        "Tensor as the gradient for input 0"));
}

TEST(GradientRegistry, CorrectRegisteredGradientPassesTheCheck) {
  const std::string what =
      error_of_registered_gradient([](const tf::GradContext& c) -> tf::Grads { return {c.dy() * 3.0f}; });
  EXPECT_EQ(what, "");
}

}  // namespace

// GradContext::has_dy: which outputs a gradient reached, for a gradient function to skip the terms
// of the others (FusedBatchNorm's statistics). Unpack's gradient is wrapped for the test and put
// back after it.
TEST(GradientRegistry, HasDyTellsWhichOutputsAGradientReached) {
  const tf::GradientFunction unpack = tf::autodiff::registry().get("Unpack").gradient()->fn;
  struct Restore {
    const tf::GradientFunction& fn;
    ~Restore() { tf::register_gradient("Unpack", fn); }
  } restore{unpack};
  std::vector<bool> reached;
  tf::register_gradient("Unpack", [&](const tf::GradContext& c) {
    for (int i = 0; i < c.num_outputs(); ++i) reached.push_back(c.has_dy(i));
    return unpack(c);
  });
  const tf::Tensor x = tf::constant({1.0f, 2.0f, 3.0f});
  tf::GradientTape tape;
  tape.watch(x);
  const std::vector<tf::Tensor> parts = tf::unstack(x);
  const auto g = tape.gradient(parts[0] * 2.0f + parts[2], x);
  EXPECT_EQ(reached, (std::vector<bool>{true, false, true}));
  // The unreached output's cotangent is zeros, as before.
  EXPECT_EQ(g->to_vector<float>(), (std::vector<float>{2.0f, 0.0f, 1.0f}));
}
