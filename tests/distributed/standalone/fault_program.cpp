// A training loop whose rank 1 misbehaves, for the fault tests CTest runs under mpirun
// (tests/CMakeLists.txt checks what the job prints):
//   fault_program stall  rank 1 stops taking part (sleeps); the others must fail within the
//                        timeout, naming rank 1, instead of hanging;
//   fault_program kill   rank 1 is killed with SIGKILL in the middle of an epoch; mpirun ends
//                        the job, naming rank 1.

#include <csignal>
#include <cstdio>
#include <cstring>
#include <thread>

#include "tapeflow/distributed.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;

int main(int argc, char** argv) {
  const bool stall = argc > 1 && std::strcmp(argv[1], "stall") == 0;
  dist::init({.stall_warning_seconds = 1, .timeout_seconds = 3});
  std::vector<tf::Variable> v = {tf::Variable(tf::zeros({4}), {.name = "w"})};
  tf::optimizers::SGD sgd(0.1);
  try {
    for (int step = 0; step < 20; ++step) {
      if (dist::rank() == 1 && step == 5) {
        if (stall) {
          std::this_thread::sleep_for(std::chrono::seconds(10));
          return 0;
        }
        std::raise(SIGKILL);
      }
      dist::DistributedGradientTape tape;
      const tf::Tensor loss = tf::reduce_sum(tf::square(v[0].read_value() - 1.0f));
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
