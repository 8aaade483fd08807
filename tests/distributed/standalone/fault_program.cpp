// A training loop whose rank 1 misbehaves, for the fault tests CTest runs under mpirun
// (tests/CMakeLists.txt checks what the job prints):
//   fault_program stall  rank 1 stops taking part (sleeps); the others must fail within the
//                        timeout, naming rank 1, instead of hanging;
//   fault_program kill   rank 1 is killed with SIGKILL in the middle of an epoch; mpirun ends
//                        the job, naming rank 1;
//   fault_program midstep  rank 1 stops inside its backward pass, after the step's negotiation
//                        (buckets sent during the pass: Overlap::Always), while the others wait
//                        in the all-reduce of a bucket: their watchdog must end the job after the
//                        timeout.

#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include "tapeflow/distributed.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const bool stall = mode == "stall";
  dist::init({.stall_warning_seconds = 1, .timeout_seconds = 3});
  std::vector<tf::Variable> v = {tf::Variable(tf::zeros({4}), {.name = "w"})};
  tf::optimizers::SGD sgd(0.1);
  try {
    for (int step = 0; step < 20; ++step) {
      if (dist::rank() == 1 && step == 5 && stall) {
        std::this_thread::sleep_for(std::chrono::seconds(10));
        return 0;
      }
      if (dist::rank() == 1 && step == 5 && mode == "kill") std::raise(SIGKILL);
      dist::DistributedGradientTape tape(
          {.overlap = mode == "midstep" ? dist::Overlap::Always : dist::Overlap::Auto});
      tf::Tensor loss = tf::reduce_sum(tf::square(v[0].read_value() - 1.0f));
      if (mode == "midstep" && step == 5)
        loss = tf::custom_gradient({loss}, [](const std::vector<tf::Tensor>& in) {
          return tf::CustomGradientResult{
              {tf::identity(in[0])}, [](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) {
                if (dist::rank() == 1) std::this_thread::sleep_for(std::chrono::seconds(30));
                return tf::Grads{dy[0]};
              }};
        })[0];
      sgd.apply_gradients(tape.gradient(loss, v), v);
    }
  } catch (const tf::UnavailableError& e) {
    std::printf("rank %d stopped: %s\n", dist::rank(), e.what());
    std::fflush(stdout);
    return 3;
  }
  std::printf("rank %d finished every step\n", dist::rank());
  return 0;
}
