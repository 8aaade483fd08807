#pragma once
// Turns off tapeflow's flushing of subnormal numbers (denormals.h) for a scope, restoring the
// setting after, for tests about results in the subnormal range:
//
//   const tf::testing::KeepSubnormals keep;
//   EXPECT_FLOAT_EQ(tf::sigmoid(tf::constant(-100.f)).item<float>(), 3.7200760e-44f);

#include "tapeflow/denormals.h"

namespace tapeflow::testing {

class KeepSubnormals {
 public:
  KeepSubnormals() : before_(flush_denormal()) { set_flush_denormal(false); }
  ~KeepSubnormals() { set_flush_denormal(before_); }
  KeepSubnormals(const KeepSubnormals&) = delete;
  KeepSubnormals& operator=(const KeepSubnormals&) = delete;

 private:
  bool before_;
};

}  // namespace tapeflow::testing
