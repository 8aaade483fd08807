// tapeflow/distributed.h across ranks. CTest starts this program with `mpirun -np 2` and
// `mpirun -np 4` (tests/CMakeLists.txt); every rank runs every test, so each test makes the same
// collective calls on every rank, as a training program would.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "tapeflow/distributed.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;
using ::testing::HasSubstr;

namespace {

int rank() { return dist::rank(); }
int size() { return dist::size(); }

std::vector<float> floats(const tf::Tensor& t) { return t.to_vector<float>(); }

/// A linear model's mean squared error on rows [first, first + n) of a fixed data set.
struct Regression {
  static constexpr std::int64_t kRows = 48, kIn = 5;
  tf::Tensor x, y;
  Regression() {
    std::vector<float> xs, ys;
    for (std::int64_t i = 0; i < kRows; ++i) {
      float t = 0;
      for (std::int64_t j = 0; j < kIn; ++j) {
        const float v = std::sin(static_cast<float>(i * kIn + j) * 0.37f);
        xs.push_back(v);
        t += v * static_cast<float>(j + 1);
      }
      ys.push_back(t + 0.1f * std::cos(static_cast<float>(i)));
    }
    x = tf::constant(xs, {kRows, kIn});
    y = tf::constant(ys, {kRows, 1});
  }
  tf::Tensor loss(const std::vector<tf::Variable>& v, std::int64_t first, std::int64_t n) const {
    const tf::Tensor xb = tf::slice(x, {first, 0}, {n, kIn}), yb = tf::slice(y, {first, 0}, {n, 1});
    const tf::Tensor pred = tf::matmul(xb, v[0].read_value()) + v[1].read_value();
    return tf::reduce_mean(tf::square(pred - yb));
  }
};

std::vector<tf::Variable> regression_variables() {
  return {tf::Variable(tf::zeros({Regression::kIn, 1}), {.name = "kernel"}),
          tf::Variable(tf::zeros({1}), {.name = "bias"})};
}

/// Trains `steps` SGD steps; with `distributed`, each rank takes its shard of each batch and the
/// DistributedGradientTape averages, else this process takes the whole batch.
std::vector<float> train(bool distributed, int steps, dist::GradientOptions options = {}) {
  const Regression data;
  auto v = regression_variables();
  tf::optimizers::SGD sgd(0.05);
  const std::int64_t batch = Regression::kRows;  // one global batch per step
  for (int step = 0; step < steps; ++step) {
    if (distributed) {
      const std::int64_t per = batch / size();
      dist::DistributedGradientTape tape(options);
      const tf::Tensor loss = data.loss(v, rank() * per, per);
      sgd.apply_gradients(tape.gradient(loss, v), v);
    } else {
      tf::GradientTape tape;
      const tf::Tensor loss = data.loss(v, 0, batch);
      sgd.apply_gradients(tape.gradient(loss, v), v);
    }
  }
  std::vector<float> out = floats(v[0].read_value());
  out.push_back(floats(v[1].read_value())[0]);
  return out;
}

}  // namespace

TEST(Mpi, RanksAndSize) {
  EXPECT_TRUE(dist::is_mpi());
  EXPECT_EQ(size(), std::atoi(std::getenv("OMPI_COMM_WORLD_SIZE")));
  EXPECT_GE(rank(), 0);
  EXPECT_LT(rank(), size());
  EXPECT_EQ(dist::local_size(), size());  // one machine
}

TEST(Mpi, AllreduceCombinesEveryRank) {
  const float r = static_cast<float>(rank());
  const tf::Tensor x = tf::constant({r, -r, 1.0f});
  const float n = static_cast<float>(size()), sum = n * (n - 1) / 2;
  EXPECT_EQ(floats(dist::allreduce(x, dist::ReduceOp::Sum)), (std::vector<float>{sum, -sum, n}));
  EXPECT_EQ(floats(dist::allreduce(x, dist::ReduceOp::Average)), (std::vector<float>{sum / n, -sum / n, 1}));
  EXPECT_EQ(floats(dist::allreduce(x, dist::ReduceOp::Min)), (std::vector<float>{0, 1 - n, 1}));
  EXPECT_EQ(floats(dist::allreduce(x, dist::ReduceOp::Max)), (std::vector<float>{n - 1, 0, 1}));
  EXPECT_EQ(dist::allreduce(tf::constant(std::int64_t{rank()}), dist::ReduceOp::Sum).item<std::int64_t>(),
            static_cast<std::int64_t>(sum));
  EXPECT_EQ(dist::allreduce(static_cast<double>(rank()), dist::ReduceOp::Average, "metric"), sum / n);
}

TEST(Mpi, AllgatherConcatenatesRowsOfDifferentCounts) {
  // Rank r has r + 1 rows of the value r.
  const std::int64_t rows = rank() + 1;
  const tf::Tensor x = tf::fill({rows, 2}, static_cast<float>(rank()));
  const tf::Tensor all = dist::allgather(x);
  std::vector<float> expected;
  for (int r = 0; r < size(); ++r)
    for (int k = 0; k < 2 * (r + 1); ++k) expected.push_back(static_cast<float>(r));
  EXPECT_EQ(all.shape(), (tf::Shape{static_cast<std::int64_t>(size()) * (size() + 1) / 2, 2}));
  EXPECT_EQ(floats(all), expected);
}

TEST(Mpi, BroadcastFromTheLastRank) {
  const int root = size() - 1;
  const tf::Tensor x = tf::constant({static_cast<double>(rank()), 2.0});
  EXPECT_EQ(dist::broadcast(x, root).to_vector<double>(),
            (std::vector<double>{static_cast<double>(root), 2.0}));
}

TEST(Mpi, AlltoallSendsEachRankItsRows) {
  // Rank s sends r + 1 rows to rank r, each row holding 10 * s + r.
  std::vector<std::int64_t> splits;
  std::vector<float> values;
  for (int r = 0; r < size(); ++r) {
    splits.push_back(r + 1);
    for (int k = 0; k <= r; ++k) values.push_back(static_cast<float>(10 * rank() + r));
  }
  const tf::Tensor got =
      dist::alltoall(tf::constant(values, {static_cast<std::int64_t>(values.size()), 1}), splits);
  std::vector<float> expected;
  for (int s = 0; s < size(); ++s)
    for (int k = 0; k <= rank(); ++k) expected.push_back(static_cast<float>(10 * s + rank()));
  EXPECT_EQ(floats(got), expected);
}

TEST(Mpi, GradientOfASumIsTheSumOfEveryRanksCotangent) {
  // loss_r = sum(allreduce_sum(x_r) * (r + 1)): d loss_total / d x_r = sum over r' of (r' + 1).
  tf::Tensor x = tf::constant({1.0, 2.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss =
      tf::reduce_sum(dist::allreduce(x, dist::ReduceOp::Sum) * static_cast<double>(rank() + 1));
  const double n = size();
  EXPECT_EQ(tape.gradient(loss, x)->to_vector<double>(),
            (std::vector<double>{n * (n + 1) / 2, n * (n + 1) / 2}));
}

TEST(Mpi, GradientOfAnAllgatherIsThisRanksRowsOfTheSum) {
  const std::int64_t rows = rank() + 1;
  tf::Tensor x = tf::ones({rows}, tf::float64);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor all = dist::allgather(x);
  // Every rank weighs row i of the gathered tensor by i.
  std::vector<double> w;
  for (std::int64_t i = 0; i < all.shape()[0]; ++i) w.push_back(static_cast<double>(i));
  const tf::Tensor loss = tf::reduce_sum(all * tf::constant(w));
  const std::int64_t first = static_cast<std::int64_t>(rank()) * (rank() + 1) / 2;
  std::vector<double> expected;
  for (std::int64_t i = 0; i < rows; ++i) expected.push_back(static_cast<double>((first + i) * size()));
  EXPECT_EQ(tape.gradient(loss, x)->to_vector<double>(), expected);
}

TEST(Mpi, GradientOfABroadcastGoesToTheRoot) {
  tf::Tensor x = tf::constant({1.0, 1.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(dist::broadcast(x, 0) * 2.0);
  const double expected = rank() == 0 ? 2.0 * size() : 0.0;
  EXPECT_EQ(tape.gradient(loss, x)->to_vector<double>(), (std::vector<double>{expected, expected}));
}

TEST(Mpi, GradientOfAMaxGoesToTheRanksHoldingIt) {
  // Element 0: rank r holds r, so the last rank holds the max. Element 1: every rank ties.
  tf::Tensor x = tf::constant({static_cast<double>(rank()), 5.0});
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor loss = tf::reduce_sum(dist::allreduce(x, dist::ReduceOp::Max));
  const double n = size();
  EXPECT_EQ(tape.gradient(loss, x)->to_vector<double>(),
            (std::vector<double>{rank() == size() - 1 ? n : 0.0, 1.0}));
}

TEST(Mpi, GradientOfAnAlltoallIsTheReverseExchange) {
  std::vector<std::int64_t> splits(static_cast<std::size_t>(size()), 1);
  tf::Tensor x = tf::ones({static_cast<std::int64_t>(size())}, tf::float64);
  tf::GradientTape tape;
  tape.watch(x);
  // The row from rank s is weighted by s + 10 * rank: it goes back to rank s's row `rank`.
  std::vector<double> w;
  for (int s = 0; s < size(); ++s) w.push_back(s + 10.0 * rank());
  const tf::Tensor loss = tf::reduce_sum(dist::alltoall(x, splits) * tf::constant(w));
  std::vector<double> expected;
  for (int r = 0; r < size(); ++r) expected.push_back(rank() + 10.0 * r);
  EXPECT_EQ(tape.gradient(loss, x)->to_vector<double>(), expected);
}

TEST(Mpi, DistributedTrainingMatchesOneProcessOnTheWholeBatch) {
  // N ranks x batch B/N against one process x batch B: the gradient of a mean over B rows is the
  // average of N means over B/N rows; only the order of float32 additions differs, so after 20
  // steps the weights agree to a few float32 ulps of their size (tolerance 1e-5 relative).
  const std::vector<float> one = train(false, 20), many = train(true, 20);
  ASSERT_EQ(one.size(), many.size());
  for (std::size_t i = 0; i < one.size(); ++i)
    EXPECT_NEAR(many[i], one[i], 1e-5 * (1 + std::abs(one[i]))) << i;
  // Bitwise the same when run again with the same number of ranks, with small buckets too.
  EXPECT_EQ(train(true, 20), many);
  const std::vector<float> small = train(true, 20, {.bucket_bytes = 4});
  EXPECT_EQ(train(true, 20, {.bucket_bytes = 4}), small);
}

TEST(Mpi, ATracedDistributedStepTrainsBitwiseAsTheEagerOne) {
  // The step (forward, DistributedGradientTape, SGD update) traced once by tf::function: the
  // reduction runs as Allreduce ops in the graph.
  const Regression data;
  auto v = regression_variables();
  tf::optimizers::SGD sgd(0.05);
  const std::int64_t per = Regression::kRows / size();
  auto step = tf::function([&](const tf::Tensor& first) {
    (void)first;
    dist::DistributedGradientTape tape;
    const tf::Tensor loss = data.loss(v, rank() * per, per);
    sgd.apply_gradients(tape.gradient(loss, v), v);
    return loss;
  });
  for (int i = 0; i < 20; ++i) (void)step(tf::constant(0.0f));
  std::vector<float> traced = floats(v[0].read_value());
  traced.push_back(floats(v[1].read_value())[0]);
  EXPECT_EQ(traced, train(true, 20));
  EXPECT_EQ(step.stats().traces, 1);
}

TEST(Mpi, EveryRankEndsWithTheSameWeights) {
  const std::vector<float> mine = train(true, 5);
  tf::Tensor t = tf::constant(mine);
  EXPECT_EQ(floats(dist::allreduce(t, dist::ReduceOp::Max)), mine);
  EXPECT_EQ(floats(dist::allreduce(t, dist::ReduceOp::Min)), mine);
}

TEST(Mpi, CompressedGradientsAreSumsOfRoundedValues) {
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f}), {.name = "v"})};
  const float c = 1.0f + std::ldexp(1.0f, -9) * static_cast<float>(rank());
  dist::DistributedGradientTape tape({.op = dist::ReduceOp::Sum, .compression = dist::Compression::Float16});
  auto g = tape.gradient(tf::reduce_sum(v[0].read_value() * c), v);
  // Each c is exact in float16, and so is their sum for up to 4 ranks.
  float expected = 0;
  for (int r = 0; r < size(); ++r) expected += 1.0f + std::ldexp(1.0f, -9) * static_cast<float>(r);
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{expected}));
}

TEST(Mpi, BroadcastVariablesStartsEveryRankFromTheRoots) {
  std::vector<tf::Variable> v = {tf::Variable(tf::fill({3}, static_cast<float>(rank() + 7)), {.name = "w"})};
  dist::broadcast_variables(v, 0);
  EXPECT_EQ(floats(v[0].read_value()), (std::vector<float>{7, 7, 7}));
  tf::optimizers::Adam adam(0.1);
  adam.build(v);
  if (rank() == 0) adam.slot(v[0], "m").assign(tf::fill({3}, 0.25f));
  dist::broadcast_optimizer_state(adam, 0);
  EXPECT_EQ(floats(adam.slot(v[0], "m").read_value()), (std::vector<float>{0.25f, 0.25f, 0.25f}));
}

TEST(Mpi, AShapeMismatchIsAnErrorOnEveryRankNamingTheRanks) {
  const std::int64_t n = rank() == 1 ? 4 : 3;
  EXPECT_THAT([&] { (void)dist::allreduce(tf::zeros({n}), dist::ReduceOp::Sum, "grad"); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(AllOf(
                  HasSubstr("[Allreduce]"), HasSubstr("rank 1 calls allreduce(sum) 'grad' float32 (4,)"),
                  HasSubstr("float32 (3,)"))));
  // The job goes on: every rank saw the same error.
  EXPECT_EQ(dist::allreduce(tf::ones({2}), dist::ReduceOp::Sum).to_vector<float>()[0],
            static_cast<float>(size()));
}

TEST(Mpi, ATapeWhoseModelDiffersIsAnErrorNamingTheVariable) {
  // Mismatched model configs: rank 1 builds a wider layer.
  std::vector<tf::Variable> v = {tf::Variable(tf::zeros({2}), {.name = "bias"}),
                                 tf::Variable(tf::zeros({rank() == 1 ? 5 : 4}), {.name = "kernel"})};
  dist::DistributedGradientTape tape;
  const tf::Tensor loss = tf::reduce_sum(v[0].read_value()) + tf::reduce_sum(v[1].read_value());
  EXPECT_THAT([&] { (void)tape.gradient(loss, v); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(
                  AllOf(HasSubstr("[DistributedGradientTape]"), HasSubstr("'kernel:0'"), HasSubstr("(5,)"),
                        HasSubstr("rank 1"))));
  dist::barrier();
}

TEST(Mpi, AVariableUnusedOnSomeRanksIsAveragedWithZerosAndNamed) {
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f}), {.name = "always"}),
                                 tf::Variable(tf::constant({1.0f}), {.name = "rank0_only"})};
  dist::GradientReducer reducer;
  dist::DistributedGradientTape tape(reducer);
  tf::Tensor loss = tf::reduce_sum(v[0].read_value() * 2.0f);
  if (rank() == 0) loss = loss + tf::reduce_sum(v[1].read_value() * 4.0f);
  auto g = tape.gradient(loss, v);
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{2}));
  EXPECT_EQ(floats(*g[1]), (std::vector<float>{4.0f / static_cast<float>(size())}));
  ASSERT_EQ(reducer.last_stats().unused.size(), 1u);
  EXPECT_THAT(reducer.last_stats().unused[0], HasSubstr("'rank0_only:0'"));
  EXPECT_THAT(reducer.last_stats().unused[0], HasSubstr(size() == 2 ? "(rank 1)" : "(ranks 1, 2, 3)"));
}

TEST(Mpi, ABackwardPassThatThrowsOnOneRankFailsTheStepOnEveryRank) {
  // Rank 1's gradient function throws in the middle of the pass: the other ranks must not wait
  // for its buckets forever, and must learn which rank failed.
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f, 2.0f}), {.name = "first"}),
                                 tf::Variable(tf::constant({3.0f}), {.name = "second"})};
  dist::GradientReducer reducer({.bucket_bytes = 4});  // a bucket per element: some go before the throw
  dist::DistributedGradientTape tape(reducer);
  const tf::Tensor y = tf::custom_gradient({v[0].read_value()}, [](const std::vector<tf::Tensor>& in) {
    return tf::CustomGradientResult{
        {in[0] * 2.0f}, [](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
          if (dist::rank() == 1) throw tf::InvalidArgumentError("rank 1's bad gradient");
          return {dy[0] * 2.0f};
        }};
  })[0];
  const tf::Tensor loss = tf::reduce_sum(y) + tf::reduce_sum(v[1].read_value());
  if (rank() == 1) {
    EXPECT_THAT([&] { (void)tape.gradient(loss, v); },
                ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("rank 1's bad gradient")));
  } else {
    EXPECT_THAT([&] { (void)tape.gradient(loss, v); },
                ::testing::ThrowsMessage<tf::UnavailableError>(
                    AllOf(HasSubstr("[DistributedGradientTape]"), HasSubstr("failed on rank 1"))));
  }
  // The job goes on.
  EXPECT_EQ(dist::allreduce(tf::ones({1}), dist::ReduceOp::Sum).to_vector<float>()[0],
            static_cast<float>(size()));
}

TEST(Mpi, BucketsHoldAtMostTheThreshold) {
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f, 2.0f, 3.0f}), {.name = "w"}),
                                 tf::Variable(tf::constant({0.5f}), {.name = "b"})};
  dist::GradientReducer small({.bucket_bytes = 8}), large;
  for (dist::GradientReducer* r : {&small, &large}) {
    dist::DistributedGradientTape tape(*r);
    auto g = tape.gradient(tf::reduce_sum(v[0].read_value() * 2.0f) + tf::reduce_sum(v[1].read_value()), v);
    EXPECT_EQ(floats(*g[0]), (std::vector<float>{2, 2, 2}));
  }
  EXPECT_EQ(small.last_stats().buckets, 2);  // 12 bytes alone, then 4
  EXPECT_EQ(large.last_stats().buckets, 1);
  EXPECT_EQ(small.last_stats().wire_bytes, 16);
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  dist::init({.stall_warning_seconds = 10, .timeout_seconds = 60});
  tf::set_num_threads(1);
  // Only rank 0 prints gtest's progress; every rank's failures still reach the exit code.
  if (dist::rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  const int failed = RUN_ALL_TESTS();
  // The job passes only if every rank passed.
  return dist::allreduce(static_cast<double>(failed), dist::ReduceOp::Max, "failures") > 0 ? 1 : 0;
}
