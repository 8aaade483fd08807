// tf::debug::memory_report(): exactly the tensors each op's Saves declares, with their bytes,
// deduplicated by buffer, totalling saved_bytes().

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <thread>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

namespace {

TEST(MemoryReport, ExpSavesItsOutput) {
  tf::Tensor x = tf::zeros({2, 3}, tf::float32);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::exp(x);
  const tf::MemoryReport r = tf::debug::memory_report(tape);
  ASSERT_EQ(r.rows.size(), 1u);
  const tf::SavedTensor& s = r.rows[0];
  EXPECT_EQ(s.record, 0u);
  EXPECT_EQ(s.op, "Exp");
  EXPECT_TRUE(s.is_output);
  EXPECT_EQ(s.position, 0);
  EXPECT_EQ(s.shape, tf::Shape({2, 3}));
  EXPECT_EQ(s.dtype, tf::float32);
  EXPECT_EQ(s.bytes, 24);
  EXPECT_EQ(s.origin, "Exp #0");
  EXPECT_FALSE(s.same_buffer_as.has_value());
  EXPECT_EQ(r.total_bytes, 24);
  EXPECT_EQ(r.num_buffers, 1u);
}

TEST(MemoryReport, MulSavesBothInputs) {
  tf::Tensor a = tf::zeros({4}, tf::float64);
  tf::Tensor b = tf::ones({4}, tf::float64);
  tf::GradientTape tape;
  tape.watch(a);
  tf::Tensor y = a * b;
  const tf::MemoryReport r = tf::debug::memory_report(tape);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.rows[0].is_output);
  EXPECT_EQ(r.rows[0].position, 0);
  EXPECT_EQ(r.rows[0].origin, "watched");
  EXPECT_EQ(r.rows[1].position, 1);
  EXPECT_EQ(r.rows[1].origin, "constant");
  EXPECT_EQ(r.rows[0].bytes + r.rows[1].bytes, 64);
  EXPECT_EQ(r.total_bytes, 64);
}

TEST(MemoryReport, AddSavesNothing) {
  tf::Tensor a = tf::zeros({4}, tf::float32);
  tf::GradientTape tape;
  tape.watch(a);
  tf::Tensor y = a + a;
  const tf::MemoryReport r = tf::debug::memory_report(tape);
  EXPECT_TRUE(r.rows.empty());
  EXPECT_EQ(r.num_records, 1u);
  EXPECT_EQ(r.total_bytes, 0);
  EXPECT_EQ(r.to_string(), "The tape holds no tensors (1 recorded op, none saves a value).\n");
}

TEST(MemoryReport, SameBufferSavedTwiceIsCountedOnce) {
  tf::Tensor x = tf::zeros({2, 3}, tf::float32);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = x * x;
  const tf::MemoryReport r = tf::debug::memory_report(tape);
  ASSERT_EQ(r.rows.size(), 2u);
  EXPECT_FALSE(r.rows[0].same_buffer_as.has_value());
  EXPECT_EQ(r.rows[1].same_buffer_as, 0u);
  EXPECT_EQ(r.total_bytes, 24);
  EXPECT_EQ(r.shared_bytes, 24);
  EXPECT_EQ(r.num_buffers, 1u);
  EXPECT_EQ(r.total_bytes, tape.saved_bytes());
  EXPECT_THAT(r.to_string(), HasSubstr("(same buffer as row 0: counted once)"));
  EXPECT_THAT(r.to_string(), HasSubstr("24 bytes saved more than once are counted once"));
}

TEST(MemoryReport, TotalEqualsSavedBytesForAModel) {
  tf::Variable w(tf::ones({3, 4}, tf::float32), {.name = "w"});
  tf::Variable b(tf::zeros({4}, tf::float32), {.name = "b"});
  tf::Tensor x = tf::ones({5, 3}, tf::float32);
  tf::GradientTape tape;
  tf::Tensor h = tf::nn::relu(tf::matmul(x, w) + b);
  tf::Tensor loss = tf::reduce_mean(tf::square(tf::tanh(h)));
  const tf::MemoryReport r = tf::debug::memory_report(tape);
  EXPECT_EQ(r.total_bytes, tape.saved_bytes());
  EXPECT_GT(r.total_bytes, 0);
  EXPECT_EQ(r.num_records, tape.num_recorded_ops());
  std::int64_t sum = 0;
  for (const tf::SavedTensor& s : r.rows)
    if (!s.same_buffer_as) sum += s.bytes;
  EXPECT_EQ(sum, r.total_bytes);
}

TEST(MemoryReport, VariableReadsAreNamed) {
  tf::Variable w(tf::ones({2}, tf::float32), {.name = "w"});
  tf::GradientTape tape;
  tf::Tensor y = tf::square(w);
  const tf::MemoryReport r = tf::debug::memory_report(tape);
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].op, "Square");
  EXPECT_EQ(r.rows[0].origin, "read of w:0");
}

TEST(MemoryReport, TableColumnsAreAligned) {
  tf::Tensor x = tf::zeros({200, 3}, tf::float64);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::exp(x) * x;
  const std::string text = tf::debug::memory_report(tape).to_string();
  std::istringstream lines(text);
  std::vector<std::string> table;
  for (std::string l; std::getline(lines, l);) table.push_back(l);
  ASSERT_EQ(table.size(), 5u);  // header, Exp output, Mul input 0, Mul input 1, total
  const std::size_t dtype_col = table[0].find("dtype");
  const std::size_t bytes_end = table[0].find("bytes") + 5;
  for (std::size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(table[i].find("float64"), dtype_col) << table[i];
    EXPECT_EQ(table[i].find("4800") + 4, bytes_end) << table[i];
  }
  EXPECT_THAT(table[4],
              HasSubstr("total: 9600 bytes (9.4 KiB) in 2 buffers, 3 saved tensors from 2 recorded ops; "
                        "4800 bytes saved more than once are counted once"));
}

TEST(MemoryReport, NonPersistentTapeHoldsNothingAfterGradient) {
  tf::Tensor x = tf::zeros({3}, tf::float32);
  tf::GradientTape tape;
  tape.watch(x);
  tf::Tensor y = tf::exp(x);
  (void)tape.gradient(y, x);
  EXPECT_TRUE(tf::debug::memory_report(tape).rows.empty());
}

}  // namespace

// Like explain() and to_dot(): the records belong to the thread that appends them.
TEST(MemoryReport, FromAnotherThreadThrows) {
  const tf::Tensor x = tf::constant(2.0f);
  tf::GradientTape tape;
  tape.watch(x);
  const tf::Tensor y = tf::exp(x);
  std::thread([&] {
    EXPECT_THROW((void)tf::debug::memory_report(tape), tf::FailedPreconditionError);
  }).join();
}
