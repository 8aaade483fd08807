// tapeflow/distributed.h across ranks. CTest starts this program with `mpirun -np 2`, `-np 3` and
// `-np 4` (tests/CMakeLists.txt); every rank runs every test, so each test makes the same
// collective calls on every rank, as a training program would.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>

#include "support/mpi_main.h"
#include "tapeflow/distributed.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace dist = tapeflow::distributed;
using ::testing::HasSubstr;

namespace {

int rank() { return dist::rank(); }
int size() { return dist::size(); }

std::vector<float> floats(const tf::Tensor& t) { return t.to_vector<float>(); }

/// Whether rank r is in the set `mask` (bit r): the ranks a test leaves without rows.
bool in(unsigned mask, int r) { return (mask >> r) & 1u; }

/// Every set of ranks, as a bit mask: 2^size() of them.
unsigned rank_sets() { return 1u << size(); }

/// The message of the InvalidArgumentError `body` throws on a thread of its own, or "" when it
/// throws none.
std::string error_on_a_new_thread(const std::function<void()>& body) {
  std::string message;
  std::thread([&] {
    try {
      body();
    } catch (const tf::InvalidArgumentError& e) {
      message = e.what();
    }
  }).join();
  return message;
}

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

TEST(Mpi, AllgatherWithEmptyShardsGathersTheOtherRanksRows) {
  // For every set of ranks that hold no rows: rank r holds r + 1 rows of the value r, or none.
  for (unsigned empty = 0; empty < rank_sets(); ++empty) {
    const std::int64_t rows = in(empty, rank()) ? 0 : rank() + 1;
    const tf::Tensor all = dist::allgather(tf::fill({rows, 2}, static_cast<float>(rank())));
    std::vector<float> expected;
    for (int r = 0; r < size(); ++r)
      if (!in(empty, r)) expected.insert(expected.end(), 2 * (r + 1), static_cast<float>(r));
    EXPECT_EQ(all.shape(), (tf::Shape{static_cast<std::int64_t>(expected.size()) / 2, 2})) << empty;
    EXPECT_EQ(floats(all), expected) << "empty ranks (mask) " << empty;
  }
}

TEST(Mpi, GradientOfAnAllgatherWithEmptyShardsIsThisRanksRowsOfTheSum) {
  for (unsigned empty = 0; empty < rank_sets(); ++empty) {
    const std::int64_t rows = in(empty, rank()) ? 0 : rank() + 1;
    tf::Tensor x = tf::ones({rows, 2}, tf::float64);
    tf::GradientTape tape;
    tape.watch(x);
    const tf::Tensor all = dist::allgather(x);
    // Rank r weighs gathered row i by i + 1 + 100 r: row i's gradient is the sum over the ranks.
    std::vector<double> w;
    for (std::int64_t i = 0; i < all.shape()[0]; ++i) w.insert(w.end(), 2, i + 1.0 + 100.0 * rank());
    const tf::Tensor loss = tf::reduce_sum(all * tf::constant(w, all.shape()));
    std::int64_t first = 0;
    for (int r = 0; r < rank(); ++r) first += in(empty, r) ? 0 : r + 1;
    const double n = size();
    std::vector<double> expected;
    for (std::int64_t k = 0; k < rows; ++k)
      expected.insert(expected.end(), 2, n * static_cast<double>(first + k + 1) + 100.0 * n * (n - 1) / 2);
    const tf::Gradient g = tape.gradient(loss, x);
    ASSERT_TRUE(g) << empty;
    EXPECT_EQ(g->shape(), x.shape()) << empty;
    EXPECT_EQ(g->to_vector<double>(), expected) << "empty ranks (mask) " << empty;
  }
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

/// Rows rank s sends rank r when the ranks in `no_rows` hold no rows and those in `none_back`
/// receive none: 1 or 2 (by s + r), else 0.
std::int64_t rows_between(int s, int r, unsigned no_rows, unsigned none_back) {
  return in(no_rows, s) || in(none_back, r) ? 0 : 1 + (s + r) % 2;
}

/// This rank's splits for rows_between.
std::vector<std::int64_t> splits_of(unsigned no_rows, unsigned none_back) {
  std::vector<std::int64_t> splits;
  for (int r = 0; r < size(); ++r) splits.push_back(rows_between(rank(), r, no_rows, none_back));
  return splits;
}

TEST(Mpi, AlltoallWithEmptySendersAndReceiversDeliversEveryOtherRow) {
  // Every set of ranks without rows to send, with every set of ranks that receive none; the k-th
  // row from rank s to rank r holds 100 s + 10 r + k in both columns.
  for (unsigned no_rows = 0; no_rows < rank_sets(); ++no_rows)
    for (unsigned none_back = 0; none_back < rank_sets(); ++none_back) {
      std::vector<float> values;
      for (int r = 0; r < size(); ++r)
        for (std::int64_t k = 0; k < rows_between(rank(), r, no_rows, none_back); ++k)
          values.insert(values.end(), 2, static_cast<float>(100 * rank() + 10 * r + k));
      const tf::Tensor x = tf::constant(values, {static_cast<std::int64_t>(values.size()) / 2, 2});
      const tf::Tensor got = dist::alltoall(x, splits_of(no_rows, none_back));
      std::vector<float> expected;
      for (int s = 0; s < size(); ++s)
        for (std::int64_t k = 0; k < rows_between(s, rank(), no_rows, none_back); ++k)
          expected.insert(expected.end(), 2, static_cast<float>(100 * s + 10 * rank() + k));
      EXPECT_EQ(got.shape(), (tf::Shape{static_cast<std::int64_t>(expected.size()) / 2, 2}));
      EXPECT_EQ(floats(got), expected)
          << "senders without rows " << no_rows << ", receivers of none " << none_back;
    }
}

TEST(Mpi, GradientOfAnAlltoallWithEmptySendersAndReceiversIsTheReverseExchange) {
  // The receiver r weighs the k-th row from rank s by 100 r + 10 s + k: that is the gradient of
  // the row on rank s.
  for (unsigned no_rows = 0; no_rows < rank_sets(); ++no_rows)
    for (unsigned none_back = 0; none_back < rank_sets(); ++none_back) {
      const std::vector<std::int64_t> splits = splits_of(no_rows, none_back);
      std::int64_t rows = 0;
      for (std::int64_t s : splits) rows += s;
      tf::Tensor x = tf::ones({rows, 2}, tf::float64);
      tf::GradientTape tape;
      tape.watch(x);
      const tf::Tensor got = dist::alltoall(x, splits);
      std::vector<double> w;
      for (int s = 0; s < size(); ++s)
        for (std::int64_t k = 0; k < rows_between(s, rank(), no_rows, none_back); ++k)
          w.insert(w.end(), 2, 100.0 * rank() + 10.0 * s + static_cast<double>(k));
      const tf::Tensor loss = tf::reduce_sum(got * tf::constant(w, got.shape()));
      std::vector<double> expected;
      for (int r = 0; r < size(); ++r)
        for (std::int64_t k = 0; k < splits[static_cast<std::size_t>(r)]; ++k)
          expected.insert(expected.end(), 2, 100.0 * r + 10.0 * rank() + static_cast<double>(k));
      const tf::Gradient g = tape.gradient(loss, x);
      ASSERT_TRUE(g);
      EXPECT_EQ(g->shape(), x.shape());
      EXPECT_EQ(g->to_vector<double>(), expected)
          << "senders without rows " << no_rows << ", receivers of none " << none_back;
    }
}

TEST(Mpi, AMaxOrMinWithNaNOnOneRankIsNaNOnEveryRankAsMaximumIs) {
  // Element 0 is NaN on one rank (each in turn), element 1 is the rank: NaN propagates as through
  // tf::maximum / tf::minimum, wherever the NaN sits in MPI's reduction order.
  EXPECT_TRUE(std::isnan(tf::maximum(tf::constant(NAN), tf::constant(1.0f)).item<float>()));
  EXPECT_TRUE(std::isnan(tf::minimum(tf::constant(1.0f), tf::constant(NAN)).item<float>()));
  const double n = size();
  for (int holder = 0; holder < size(); ++holder) {
    const double mine = rank() == holder ? std::numeric_limits<double>::quiet_NaN() : rank();
    for (tf::DType dtype : {tf::float32, tf::float64}) {
      const tf::Tensor x = tf::cast(tf::constant({mine, static_cast<double>(rank())}), dtype);
      const std::vector<double> max =
          tf::cast(dist::allreduce(x, dist::ReduceOp::Max), tf::float64).to_vector<double>();
      const std::vector<double> min =
          tf::cast(dist::allreduce(x, dist::ReduceOp::Min), tf::float64).to_vector<double>();
      EXPECT_TRUE(std::isnan(max[0])) << "NaN on rank " << holder << ", " << tf::dtype_name(dtype);
      EXPECT_TRUE(std::isnan(min[0])) << "NaN on rank " << holder << ", " << tf::dtype_name(dtype);
      EXPECT_EQ(max[1], n - 1);
      EXPECT_EQ(min[1], 0);
    }
    EXPECT_TRUE(std::isnan(dist::allreduce(mine, dist::ReduceOp::Max))) << "NaN on rank " << holder;
    EXPECT_TRUE(std::isnan(dist::allreduce(mine, dist::ReduceOp::Min))) << "NaN on rank " << holder;
  }
}

TEST(Mpi, UnnamedCollectivesOfOtherThreadsAreAnErrorOnEveryRankNamingThem) {
  // Two threads, one after the other, in another order on rank 0 than on the others: by their
  // order alone rank 0's `a` would pair with the others' `b` (a sum of 101 where 2 is right).
  const auto a = [] { (void)dist::allreduce(tf::constant({1.0f}), dist::ReduceOp::Sum); };
  const auto b = [] { (void)dist::allreduce(tf::constant({100.0f}), dist::ReduceOp::Sum); };
  const std::string first = error_on_a_new_thread(rank() == 0 ? a : b);
  const std::string second = error_on_a_new_thread(rank() == 0 ? b : a);
  for (const std::string& message : {first, second})
    EXPECT_THAT(message, AllOf(HasSubstr("[Allreduce] allreduce(sum) (unnamed, from a thread other than the "
                                         "one that called distributed::init()) float32 (1,)"),
                               HasSubstr("give a collective issued by another thread a name")));
  // The job goes on, and named collectives work from any thread, their gradients too.
  std::vector<float> sums, gradients;
  EXPECT_EQ(error_on_a_new_thread([&] {
              tf::Tensor x = tf::constant({1.0f});
              tf::GradientTape tape;
              tape.watch(x);
              const tf::Tensor y = dist::allreduce(x, dist::ReduceOp::Sum, "from a thread");
              sums = floats(y);
              gradients = floats(*tape.gradient(tf::reduce_sum(y), x));
            }),
            "");
  EXPECT_EQ(sums, (std::vector<float>{static_cast<float>(size())}));
  EXPECT_EQ(gradients, (std::vector<float>{static_cast<float>(size())}));
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

TEST(Mpi, BucketsSentDuringThePassOrAfterItGiveTheSameBits) {
  const std::vector<float> automatic = train(true, 20, {.bucket_bytes = 4});
  EXPECT_EQ(train(true, 20, {.bucket_bytes = 4, .overlap = dist::Overlap::Always}), automatic);
  EXPECT_EQ(train(true, 20, {.bucket_bytes = 4, .overlap = dist::Overlap::Never}), automatic);
}

TEST(Mpi, RanksThatOverlapAndRanksThatDoNotPairTheSameBuckets) {
  // Auto decides per rank (machines with and without a core to spare), so every all-reduce goes in
  // the order the pass completes the buckets, either way. Here that is not the buckets' order:
  // buckets are filled from the last source, the bias, whose gradient is complete last because it
  // is read first.
  const auto v = regression_variables();
  auto gradients = [&](dist::Overlap overlap) {
    dist::DistributedGradientTape tape({.bucket_bytes = 4, .overlap = overlap});
    const tf::Tensor bias = v[1].read_value();
    const tf::Tensor kernel = v[0].read_value();
    const tf::Tensor x = tf::fill({2, Regression::kIn}, static_cast<float>(rank() + 1));
    const auto g = tape.gradient(tf::reduce_sum(tf::square(tf::matmul(x, kernel) + bias - 1.0f)), v);
    std::vector<float> out = floats(*g[0]);
    out.push_back(floats(*g[1])[0]);
    return out;
  };
  const std::vector<float> overlapped = gradients(dist::Overlap::Always);
  EXPECT_EQ(gradients(rank() % 2 == 0 ? dist::Overlap::Always : dist::Overlap::Never), overlapped);
}

TEST(Mpi, AGradientInMemoryTheUserLentIsReducedInACopy) {
  // A one-gradient bucket is reduced in the gradient's own bytes only when tapeflow allocated
  // them: here the custom gradient is the user's array, which must come out unchanged.
  std::vector<float> lent{1.0f + static_cast<float>(rank()), 2.0f};
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({0.0f, 0.0f}), {.name = "v"})};
  dist::DistributedGradientTape tape({.op = dist::ReduceOp::Sum});
  const tf::Tensor y = tf::custom_gradient({v[0].read_value()}, [&](const std::vector<tf::Tensor>& in) {
    return tf::CustomGradientResult{
        {in[0] * 1.0f}, [&](const std::vector<tf::Tensor>&, const std::vector<tf::Variable>&) -> tf::Grads {
          // The tensor is the only holder of its owner, as a gradient of fresh memory would be.
          return {tf::tensor_from_external({2}, tf::float32, lent.data(),
                                           std::shared_ptr<const void>(lent.data(), [](const void*) {}))};
        }};
  })[0];
  const auto g = tape.gradient(tf::reduce_sum(y), v);
  float sum = 0;
  for (int r = 0; r < size(); ++r) sum += 1.0f + static_cast<float>(r);
  EXPECT_EQ(floats(*g[0]), (std::vector<float>{sum, 2.0f * static_cast<float>(size())}));
  EXPECT_EQ(lent, (std::vector<float>{1.0f + static_cast<float>(rank()), 2.0f}));
}

TEST(Mpi, AutoOverlapNeedsACoreBesideTheComputeThreads) {
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f}), {.name = "v"})};
  auto overlapped = [&](dist::Overlap overlap) {
    dist::GradientReducer reducer({.overlap = overlap});
    dist::DistributedGradientTape tape(reducer);
    (void)tape.gradient(tf::reduce_sum(v[0].read_value()), v);
    return reducer.last_stats().overlapped;
  };
  EXPECT_TRUE(overlapped(dist::Overlap::Always));
  EXPECT_FALSE(overlapped(dist::Overlap::Never));
  // Computing on every core leaves none for the communication thread.
  tf::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_FALSE(overlapped(dist::Overlap::Auto));
  tf::set_num_threads(1);
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
  std::string others = size() == 2 ? "(rank " : "(ranks ";
  for (int r = 1; r < size(); ++r) others += (r > 1 ? ", " : "") + std::to_string(r);
  EXPECT_THAT(reducer.last_stats().unused[0], HasSubstr(others + ")"));
}

TEST(Mpi, ABackwardPassThatThrowsOnOneRankFailsTheStepOnEveryRank) {
  // Rank 1's gradient function throws in the middle of the pass: the other ranks must not wait
  // for its buckets forever, and must learn which rank failed.
  std::vector<tf::Variable> v = {tf::Variable(tf::constant({1.0f, 2.0f}), {.name = "first"}),
                                 tf::Variable(tf::constant({3.0f}), {.name = "second"})};
  for (const dist::Overlap overlap : {dist::Overlap::Always, dist::Overlap::Never}) {
    SCOPED_TRACE(overlap == dist::Overlap::Always ? "buckets sent during the pass" : "sent after it");
    // A bucket per element: with overlap, some go before the throw.
    dist::GradientReducer reducer({.bucket_bytes = 4, .overlap = overlap});
    dist::DistributedGradientTape tape(reducer);
    const tf::Tensor y = tf::custom_gradient({v[0].read_value()}, [](const std::vector<tf::Tensor>& in) {
      return tf::CustomGradientResult{
          {in[0] * 2.0f},
          [](const std::vector<tf::Tensor>& dy, const std::vector<tf::Variable>&) -> tf::Grads {
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

int main(int argc, char** argv) { return tf::testing::run_tests_on_every_rank(argc, argv); }
