// A program that never calls a tf::debug:: function links no part of src/debug, so no recording
// listener is installed and the tapes keep no trace for explain (src/debug/trace.cpp, "Costs").
// Built without GoogleTest so that nothing else pulls the diagnostics in; run by ctest.

#include <cstdio>

#include "autodiff/recording_listener.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

int main() {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::GradientTape tape;
  const tf::Tensor y = tf::reduce_sum(w * w);
  const tf::Tensor n = tf::cast(y, tf::int32) + 1;  // an op the tape does not record
  w.assign_add(tf::constant({1.0f, 1.0f}));         // an assignment under the tape
  const auto g = tape.gradient(y, w);
  const bool no_listener = tf::autodiff::recording_listener() == nullptr;
  const bool gradient_right = g && g->to_vector<float>() == std::vector<float>{2.0f, 4.0f};
  std::printf("recording listener: %s; gradient: %s\n", no_listener ? "none" : "installed",
              gradient_right ? "right" : "wrong");
  return no_listener && gradient_right && n.defined() ? 0 : 1;
}
