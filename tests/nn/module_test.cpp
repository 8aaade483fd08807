// Module: variable collection across nested modules, in registration order.

#include "tapeflow/module.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/values.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::testing::names;

namespace {

/// A leaf module owning two variables, one not trainable.
class Leaf : public tf::Module {
 public:
  explicit Leaf(const std::string& prefix) : tf::Module(prefix) {
    w = track(tf::Variable(1.0f, {.name = prefix + "_w"}));
    frozen = track(tf::Variable(2.0f, {.name = prefix + "_frozen", .trainable = false}));
  }
  tf::Variable w{0.0f};
  tf::Variable frozen{0.0f};
};

/// Interleaves its own variables with sub-modules, to show registration order is kept.
class Parent : public tf::Module {
 public:
  Parent() : tf::Module("parent") {
    first = track(tf::Variable(0.5f, {.name = "first"}));
    track(a);
    middle = track(tf::Variable(0.5f, {.name = "middle"}));
    track(b);
  }
  tf::Variable first{0.0f}, middle{0.0f};
  Leaf a{"a"}, b{"b"};
};

}  // namespace

TEST(Module, NameIsTheConstructorArgument) {
  Leaf leaf("encoder");
  EXPECT_EQ(leaf.name(), "encoder");
  EXPECT_EQ(tf::Module().name(), "module");
}

TEST(Module, EmptyModuleHasNoVariables) {
  tf::Module m;
  EXPECT_TRUE(m.variables().empty());
  EXPECT_TRUE(m.trainable_variables().empty());
  EXPECT_TRUE(m.submodules().empty());
}

TEST(Module, VariablesFollowRegistrationOrderDepthFirst) {
  Parent p;
  EXPECT_THAT(names(p.variables()),
              ::testing::ElementsAre("first:0", "a_w:0", "a_frozen:0", "middle:0", "b_w:0", "b_frozen:0"));
}

TEST(Module, TrainableVariablesSkipNonTrainableOnes) {
  Parent p;
  EXPECT_THAT(names(p.trainable_variables()),
              ::testing::ElementsAre("first:0", "a_w:0", "middle:0", "b_w:0"));
}

TEST(Module, CollectedVariablesAreTheSameVariablesNotCopies) {
  Leaf leaf("l");
  leaf.w.assign(tf::constant(7.0f));
  ASSERT_EQ(leaf.variables().size(), 2u);
  EXPECT_TRUE(leaf.variables()[0] == leaf.w);
  EXPECT_FLOAT_EQ(leaf.variables()[0].value().item<float>(), 7.0f);
}

TEST(Module, SharedSubModuleAndVariableAreCollectedOnce) {
  class Shared : public tf::Module {
   public:
    Shared() : tf::Module("shared") {
      track(leaf);
      track(leaf);
      track(leaf.w);  // already reached through leaf
    }
    Leaf leaf{"s"};
  };
  Shared s;
  EXPECT_THAT(names(s.variables()), ::testing::ElementsAre("s_w:0", "s_frozen:0"));
  EXPECT_EQ(s.submodules().size(), 1u);
}

TEST(Module, CyclicTrackingTerminates) {
  class Node : public tf::Module {
   public:
    explicit Node(const std::string& n) : tf::Module(n) { v = track(tf::Variable(1.0f, {.name = n})); }
    void link(Node& other) { track(other); }
    tf::Variable v{0.0f};
  };
  Node x("x"), y("y");
  x.link(y);
  y.link(x);
  EXPECT_THAT(names(x.variables()), ::testing::ElementsAre("x:0", "y:0"));
  EXPECT_THAT(names(y.variables()), ::testing::ElementsAre("y:0", "x:0"));
}

TEST(Module, SubmodulesAreListedDepthFirst) {
  class Outer : public tf::Module {
   public:
    Outer() : tf::Module("outer") {
      track(p);
      track(c);
    }
    Parent p;
    Leaf c{"c"};
  };
  Outer o;
  std::vector<std::string> got;
  for (const tf::Module* m : o.submodules()) got.push_back(m->name());
  EXPECT_THAT(got, ::testing::ElementsAre("parent", "a", "b", "c"));
}

TEST(Module, TrackingItselfThrows) {
  class SelfTracker : public tf::Module {
   public:
    void go() { track(*this); }
  };
  SelfTracker m;
  EXPECT_THAT([&] { m.go(); }, ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                                   ::testing::HasSubstr("cannot track itself")));
}

TEST(Module, GradientsWithRespectToTrainableVariables) {
  Parent p;
  tf::GradientTape tape;
  tf::Tensor y = p.first * p.a.w + p.middle * p.b.w * p.a.frozen;
  auto grads = tape.gradient(y, p.trainable_variables());
  ASSERT_EQ(grads.size(), 4u);
  // y = first*a_w + middle*b_w*a_frozen with first = middle = 0.5, a_w = b_w = 1, a_frozen = 2.
  EXPECT_FLOAT_EQ(grads[0]->item<float>(), 1.0f);  // dy/dfirst  = a_w
  EXPECT_FLOAT_EQ(grads[1]->item<float>(), 0.5f);  // dy/da_w    = first
  EXPECT_FLOAT_EQ(grads[2]->item<float>(), 2.0f);  // dy/dmiddle = b_w * a_frozen
  EXPECT_FLOAT_EQ(grads[3]->item<float>(), 1.0f);  // dy/db_w    = middle * a_frozen
}
