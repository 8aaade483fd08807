// Data-parallel training (tapeflow/distributed.h): fits y = 3 x0 - 2 x1 + 1 with a Dense layer.
// Run alone it is one rank of one; under `mpirun -np N` every rank trains on its shard of each
// batch of 16 * N examples and a DistributedGradientTape averages the gradients, so the printed
// losses are those of one process with batch 16 * N, up to float rounding. Rank 0 prints.
//
//   ./data_parallel
//   mpirun --allow-run-as-root -np 2 ./data_parallel
#include <cstdio>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;

int main() {
  dist::init();
  // The same data set on every rank; each rank takes its shard of every step's batch.
  const tf::Tensor x = tf::random::uniform({256, 2}, -1.0, 1.0, tf::float32, /*seed=*/3);
  const tf::Tensor y = tf::matmul(x, tf::constant({{3.0f}, {-2.0f}})) + 1.0f;
  tf::data::BatchIterator batches(
      x, y, {.batch_size = 16, .seed = 1, .num_shards = dist::size(), .shard_index = dist::rank()});

  tf::layers::Dense model(1, {.seed = 7});
  model(x);                                      // builds the kernel and bias
  dist::broadcast_variables(model.variables());  // every rank starts from rank 0's weights
  tf::optimizers::SGD sgd(0.1);

  for (int epoch = 1; epoch <= 5; ++epoch) {
    double loss_sum = 0, steps = 0;
    while (auto b = batches.next()) {
      dist::DistributedGradientTape tape;  // gradient() is averaged over the ranks
      const tf::Tensor loss = tf::reduce_mean(tf::square(model(b->features) - b->labels));
      auto vars = model.trainable_variables();
      sgd.apply_gradients(tape.gradient(loss, vars), vars);
      loss_sum += loss.item<float>();
      steps += 1;
    }
    // Each rank's mean loss, averaged over the ranks for the report.
    const double loss = dist::allreduce(loss_sum / steps, dist::ReduceOp::Average, "loss");
    if (dist::rank() == 0) std::printf("epoch %d: loss %.4f\n", epoch, loss);
  }
  if (dist::rank() == 0)
    std::printf("kernel %s, bias %s\n", tf::numpy_str(model.trainable_variables()[0].read_value()).c_str(),
                tf::numpy_str(model.trainable_variables()[1].read_value()).c_str());
}
