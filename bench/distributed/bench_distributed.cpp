// Data-parallel figures (tapeflow/distributed.h), run under mpirun by scripts/bench_distributed.sh:
//
//   bench_distributed allreduce [--max-bytes B] [--reps R]
//     tf::distributed::allreduce (the op: negotiation, the hand-off to the communication thread,
//     a copy) against MPI_Allreduce called directly (on the communication thread) on as many bytes, for
//     float32 buffers of 4 B up to B; the median of R calls each, alternating, and the bus bandwidth MPI's
//     call reaches (2 (N - 1) / N bytes / time, what a ring all-reduce moves per rank).
//
//   bench_distributed train [--model mlp|cnn] [--steps S] [--batch-size B] [--bucket-bytes K]
//     S training steps of the CLI's model with B examples per rank, three ways, alternating step
//     by step (medians):
//       local       GradientTape + apply_gradients, no communication (the compute alone);
//       overlapped  DistributedGradientTape with buckets of K bytes, sent while the pass runs
//                   (Overlap::Always);
//       after pass  the same buckets, exchanged in one job after the pass (Overlap::Never);
//       MPI alone   GradientTape, then MPI_Allreduce in place on each gradient and nothing else
//                   (no negotiation, buckets, copies or flags): the floor of a step that does
//                   not overlap, the peer of the two rows above.
//     Prints each median step time, the examples per second of the job, how much of the
//     communication the overlap hid, (after - overlapped) / (after - local), and which of the two
//     Overlap::Auto, the default, picks on this machine.
//
// Every rank runs the same fixed number of calls (a collective must be called by all); rank 0
// prints. Use one thread per rank (the script sets it).

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "distributed/world.h"
#include "models.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

void bench_allreduce(std::int64_t max_bytes, int reps) {
  const int n = dist::size();
  tf::distributed::detail::World& world = tf::distributed::detail::World::get("bench_distributed");
  if (dist::rank() == 0)
    std::printf("%12s %14s %14s %8s %14s\n", "bytes", "tapeflow us", "MPI us", "ratio", "MPI busbw GB/s");
  for (std::int64_t bytes = 4; bytes <= max_bytes; bytes *= 4) {
    const std::int64_t count = bytes / 4;
    const tf::Tensor t = tf::fill({count}, 1.0, tf::float32);
    std::vector<float> raw(static_cast<std::size_t>(count), 1.0f);
    std::vector<double> ours, theirs;
    for (int r = 0; r < reps; ++r) {
      dist::barrier();
      auto start = Clock::now();
      (void)dist::allreduce(t, dist::ReduceOp::Sum);
      ours.push_back(seconds_since(start));
      dist::barrier();
      // MPI directly, timed on the communication thread (the one thread that may call MPI).
      world.run([&] {
        const auto mpi_start = Clock::now();
        MPI_Allreduce(MPI_IN_PLACE, raw.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        theirs.push_back(seconds_since(mpi_start));
      });
    }
    const double a = median(ours), b = median(theirs);
    if (dist::rank() == 0)
      std::printf("%12lld %14.1f %14.1f %8.2f %14.3f\n", static_cast<long long>(bytes), a * 1e6, b * 1e6,
                  a / b, n > 1 ? 2.0 * (n - 1) / n * static_cast<double>(bytes) / b / 1e9 : 0.0);
  }
}

void bench_train(const std::string& model_kind, int steps, std::int64_t batch, std::int64_t bucket_bytes) {
  tf::cli::Model model = tf::cli::make_model(model_kind, 1);
  const std::vector<tf::Variable> vars = model.net->trainable_variables();
  tf::optimizers::SGD sgd(0.01);
  const tf::Shape image{batch, 28, 28, 1};
  const tf::Tensor x = tf::random::uniform(image, 0.0, 1.0, tf::float32, 7 + dist::rank());
  std::vector<std::int32_t> labels;
  for (std::int64_t i = 0; i < batch; ++i)
    labels.push_back(static_cast<std::int32_t>((i * 7 + dist::rank()) % 10));
  const tf::Tensor y = tf::constant(labels);
  std::int64_t params = 0;
  for (const auto& v : vars) params += v.shape().num_elements();

  dist::GradientReducer overlapped({.bucket_bytes = bucket_bytes, .overlap = dist::Overlap::Always});
  dist::GradientReducer after({.bucket_bytes = bucket_bytes, .overlap = dist::Overlap::Never});
  dist::GradientReducer automatic({.bucket_bytes = bucket_bytes});
  auto loss_of = [&] {
    return tf::losses::sparse_categorical_crossentropy(y, (*model.net)(x, true), /*from_logits=*/true);
  };
  // One step's wall time, started together on every rank.
  auto timed = [&](auto&& step) {
    dist::barrier();
    const auto start = Clock::now();
    step();
    return seconds_since(start);
  };
  auto distributed_step = [&](dist::GradientReducer& reducer) {
    return timed([&] {
      dist::DistributedGradientTape tape(reducer);
      const tf::Tensor loss = loss_of();
      sgd.apply_gradients(tape.gradient(loss, vars), vars);
    });
  };
  tf::distributed::detail::World& world = tf::distributed::detail::World::get("bench_distributed");
  auto mpi_step = [&] {
    return timed([&] {
      tf::GradientTape tape;
      const tf::Tensor loss = loss_of();
      std::vector<tf::Gradient> g = tape.gradient(loss, vars);
      world.run([&] {
        for (tf::Gradient& gi : g)
          MPI_Allreduce(MPI_IN_PLACE, const_cast<void*>(gi->raw_data()), static_cast<int>(gi->num_elements()),
                        MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      });
      sgd.apply_gradients(g, vars);
    });
  };
  std::vector<double> local, over, serial, floor, over_wait, serial_wait;
  distributed_step(automatic);
  for (int step = 0; step <= steps; ++step) {
    const double t_local = timed([&] {
      tf::GradientTape tape;
      const tf::Tensor loss = loss_of();
      sgd.apply_gradients(tape.gradient(loss, vars), vars);
    });
    const double t_over = distributed_step(overlapped);
    const double t_serial = distributed_step(after);
    const double t_floor = mpi_step();
    if (step == 0) continue;  // warm-up
    local.push_back(t_local);
    over.push_back(t_over);
    serial.push_back(t_serial);
    floor.push_back(t_floor);
    over_wait.push_back(overlapped.last_stats().wait_seconds);
    serial_wait.push_back(after.last_stats().wait_seconds);
  }
  const double l = median(local), o = median(over), s = median(serial);
  if (dist::rank() != 0) return;
  const int n = dist::size();
  std::printf(
      "%s, %lld parameters (%.2f MB of float32 gradients), batch %lld per rank, %d rank%s, %d thread%s "
      "each\n",
      model_kind.c_str(), static_cast<long long>(params), static_cast<double>(params) * 4 / 1e6,
      static_cast<long long>(batch), n, n == 1 ? "" : "s", tf::num_threads(),
      tf::num_threads() == 1 ? "" : "s");
  std::printf("  %d buckets of <= %lld bytes; Overlap::Auto here: %s (%u cores, %d ranks on this machine)\n",
              overlapped.last_stats().buckets, static_cast<long long>(bucket_bytes),
              automatic.last_stats().overlapped ? "overlapped" : "after the pass",
              std::thread::hardware_concurrency(), dist::local_size());
  auto row = [&](const char* name, double t, double wait) {
    std::printf("  %-11s %9.3f ms/step  %9.0f examples/s (job)  wait after the pass %7.3f ms\n", name,
                t * 1e3, static_cast<double>(batch * n) / t, wait * 1e3);
  };
  row("local", l, 0);
  row("overlapped", o, median(over_wait));
  row("after pass", s, median(serial_wait));
  row("MPI alone", median(floor), 0);
  if (s > l)
    std::printf("  overlap hid %.0f%% of the communication time (after pass - local)\n",
                100 * (s - o) / (s - l));
}

}  // namespace

int main(int argc, char** argv) {
  dist::init();
  tf::set_num_threads(std::atoi(arg(argc, argv, "--threads", "1").c_str()));
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "allreduce") {
    bench_allreduce(std::atoll(arg(argc, argv, "--max-bytes", "67108864").c_str()),
                    std::atoi(arg(argc, argv, "--reps", "21").c_str()));
  } else if (mode == "train") {
    bench_train(arg(argc, argv, "--model", "mlp"), std::atoi(arg(argc, argv, "--steps", "30").c_str()),
                std::atoll(arg(argc, argv, "--batch-size", "64").c_str()),
                std::atoll(arg(argc, argv, "--bucket-bytes", "262144").c_str()));
  } else {
    std::fprintf(stderr, "usage: bench_distributed allreduce|train [options] (see the file's comment)\n");
    return 2;
  }
  return 0;
}
