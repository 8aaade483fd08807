// GEMM through OpenBLAS (src/kernels/cpu/gemm.h): a large product is split into blocks of rows over
// tapeflow's pool, OpenBLAS single-threaded. Each block must be computed exactly as in the whole
// product, at every transpose and dtype, and land in the right rows of C.

#include "kernels/cpu/gemm.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

/// The thread count tapeflow starts with, restored when a test ends.
class RestoreThreads {
 public:
  ~RestoreThreads() {
    tf::set_num_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  }
};

template <class T>
std::vector<T> random_values(std::int64_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> v(static_cast<std::size_t>(count));
  for (T& x : v) x = static_cast<T>(u(gen));
  return v;
}

/// C = op(A) @ op(B) in double, element by element.
template <class T>
std::vector<double> reference(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k,
                              const std::vector<T>& a, const std::vector<T>& b) {
  std::vector<double> c(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::int64_t p = 0; p < k; ++p)
        s += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) *
             static_cast<double>(tb ? b[j * k + p] : b[p * n + j]);
      c[i * n + j] = s;
    }
  return c;
}

template <class T>
void expect_split_products_equal_whole_ones() {
  const RestoreThreads restore;
  // Row counts around the 24-row unit (one unit, a short last unit, several), each product above
  // kParallelGemmWork so that with more than one thread it is split.
  for (const std::int64_t m : {23, 25, 48, 77, 128, 200}) {
    const std::int64_t n = 96, k = tf::cpu::kParallelGemmWork / (m * n) + 37;
    for (const bool ta : {false, true})
      for (const bool tb : {false, true}) {
        SCOPED_TRACE(testing::Message() << (sizeof(T) == 4 ? "float" : "double") << " m=" << m << " k=" << k
                                        << (ta ? " A^T" : "") << (tb ? " B^T" : ""));
        const std::vector<T> a = random_values<T>(m * k, 1), b = random_values<T>(k * n, 2);
        std::vector<T> one(static_cast<std::size_t>(m * n)), many(one.size());
        tf::set_num_threads(1);
        tf::cpu::gemm(ta, tb, m, n, k, a.data(), b.data(), one.data());
        tf::set_num_threads(8);  // as many as the machine has
        tf::cpu::gemm(ta, tb, m, n, k, a.data(), b.data(), many.data());
        EXPECT_EQ(one, many) << "the split product's bits differ";
        const std::vector<double> want = reference(ta, tb, m, n, k, a, b);
        const double tolerance = (sizeof(T) == 4 ? 1e-6 : 1e-14) * static_cast<double>(k);
        for (std::size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(static_cast<double>(many[i]), want[i], tolerance) << "element " << i;
      }
  }
}

TEST(Gemm, SplitFloatProductsHaveTheBitsOfTheWholeProduct) {
  expect_split_products_equal_whole_ones<float>();
}

TEST(Gemm, SplitDoubleProductsHaveTheBitsOfTheWholeProduct) {
  expect_split_products_equal_whole_ones<double>();
}

TEST(Gemm, OpenBlasRunsSingleThreadedUnlessTheProgramSaysOtherwise) {
  const RestoreThreads restore;
  tf::set_num_threads(2);
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_TRUE(tf::cpu::gemm_splits_over_pool());
  // Another part of the program threads OpenBLAS (as LibTorch beside tapeflow would): products are
  // left to OpenBLAS's threads, not split again on top of them, and stay right.
  openblas_set_num_threads(2);
  EXPECT_FALSE(tf::cpu::gemm_splits_over_pool());
  const std::int64_t m = 200, n = 96, k = 300;
  const std::vector<float> a = random_values<float>(m * k, 3), b = random_values<float>(k * n, 4);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  tf::cpu::gemm(false, false, m, n, k, a.data(), b.data(), c.data());
  const std::vector<double> want = reference(false, false, m, n, k, a, b);
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(c[i], want[i], 1e-4) << "element " << i;
  tf::set_num_threads(2);
  EXPECT_EQ(openblas_get_num_threads(), 1);
}

}  // namespace
