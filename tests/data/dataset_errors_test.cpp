// tf::data::Dataset on bad input: every error is typed and its message names the op, the shapes
// and the dtypes. One row per mistake.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "support/errors.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::AllOf;
using ::testing::HasSubstr;
using tf::data::Dataset;
using tf::data::Element;

namespace {

struct BadInput {
  const char* mistake;
  std::function<void()> call;
  std::vector<std::string> message_parts;
};

// The first element of ds: where errors found while iterating appear.
void first(const Dataset& ds) { ds.make_iterator().next(); }

const Dataset kRange = Dataset::range(4);

// Elements of one float32 component of length 2, then of length 3.
Dataset ragged() {
  return Dataset::range(2).map(
      [](const Element& e) { return Element{tf::zeros(tf::Shape{e[0].item<std::int64_t>() + 2})}; });
}

}  // namespace

TEST(DatasetErrors, ArgumentsAreCheckedWhenThePipelineIsBuilt) {
  const std::vector<BadInput> rows = {
      {"no tensors to slice",
       [] { Dataset::from_tensor_slices({}); },
       {"[Dataset.from_tensor_slices]", "at least one"}},
      {"a scalar to slice",
       [] { Dataset::from_tensor_slices({tf::constant(1.f)}); },
       {"[Dataset.from_tensor_slices]", "first dimension", "()"}},
      {"first dimensions that differ",
       [] {
         Dataset::from_tensor_slices({tf::zeros(tf::Shape{3, 2}), tf::zeros(tf::Shape{4})});
       },
       {"[Dataset.from_tensor_slices]", "(3, 2)", "(4,)"}},
      {"no tensors", [] { Dataset::from_tensors({}); }, {"[Dataset.from_tensors]"}},
      {"range step 0", [] { Dataset::range(0, 4, 0); }, {"[Dataset.range]", "step"}},
      {"an empty map function", [] { kRange.map(nullptr); }, {"[Dataset.map]", "empty"}},
      {"num_parallel_calls 0",
       [] { kRange.map([](const Element& e) { return e; }, 0); },
       {"[Dataset.map]", "num_parallel_calls", "got 0"}},
      {"shuffle buffer 0", [] { kRange.shuffle(0, 1); }, {"[Dataset.shuffle]", "buffer_size", "got 0"}},
      {"batch of 0", [] { kRange.batch(0); }, {"[Dataset.batch]", "batch_size", "got 0"}},
      {"batch of -3", [] { kRange.batch(-3); }, {"[Dataset.batch]", "got -3"}},
      {"padded_batch of 0", [] { kRange.padded_batch(0); }, {"[Dataset.padded_batch]", "got 0"}},
      {"padded shape below -1", [] { kRange.padded_batch(2, {{{-2}}}); }, {"[Dataset.padded_batch]", "(-2)"}},
      {"prefetch of 0", [] { kRange.prefetch(0); }, {"[Dataset.prefetch]", "got 0"}},
      {"repeat(-2)", [] { kRange.repeat(-2); }, {"[Dataset.repeat]", "got -2"}},
      {"take(-2)", [] { kRange.take(-2); }, {"[Dataset.take]", "got -2"}},
      {"skip(-2)", [] { kRange.skip(-2); }, {"[Dataset.skip]", "got -2"}},
      {"0 shards", [] { kRange.shard(0, 0); }, {"[Dataset.shard]", "num_shards 0"}},
      {"shard index past the shards", [] { kRange.shard(2, 2); }, {"[Dataset.shard]", "index 2"}},
      {"negative shard index", [] { kRange.shard(2, -1); }, {"[Dataset.shard]", "index -1"}},
  };
  for (const BadInput& row : rows) {
    const std::string message = tf::testing::error_of([&] { row.call(); });
    for (const std::string& part : row.message_parts) EXPECT_THAT(message, HasSubstr(part)) << row.mistake;
  }
}

TEST(DatasetErrors, ElementsThatDoNotFitAreReportedByNext) {
  const std::vector<BadInput> rows = {
      {"ragged elements to batch",
       [] { first(ragged().batch(2)); },
       {"[Dataset.batch]", "component 0", "float32 (2,)", "float32 (3,)", "use padded_batch"}},
      {"dtypes that differ in a batch",
       [] {
         first(Dataset::range(2)
                   .map([](const Element& e) {
                     return e[0].item<std::int64_t>() == 0 ? Element{tf::constant(1.f)}
                                                           : Element{tf::constant(1)};
                   })
                   .batch(2));
       },
       {"[Dataset.batch]", "float32 ()", "int32 ()"}},
      {"ranks that differ in a padded batch",
       [] {
         first(Dataset::range(2)
                   .map([](const Element& e) {
                     return e[0].item<std::int64_t>() == 0 ? Element{tf::zeros(tf::Shape{2})}
                                                           : Element{tf::zeros(tf::Shape{2, 2})};
                   })
                   .padded_batch(2));
       },
       {"[Dataset.padded_batch]", "dtype and rank", "(2,)", "(2, 2)"}},
      {"an element longer than its padded shape",
       [] { first(ragged().padded_batch(2, {{{2}}})); },
       {"[Dataset.padded_batch]", "dimension 3", "axis 0", "(2)"}},
      {"padded_shapes for another number of components",
       [] {
         first(ragged().padded_batch(2, {{{4}, {4}}}));
       },
       {"[Dataset.padded_batch]", "1 components", "padded_shapes has 2"}},
  };
  for (const BadInput& row : rows) {
    const std::string message = tf::testing::error_of([&] { row.call(); });
    for (const std::string& part : row.message_parts) EXPECT_THAT(message, HasSubstr(part)) << row.mistake;
  }
}

TEST(DatasetErrors, RestoringABadStateThrowsAndKeepsThePosition) {
  tf::data::Iterator it = kRange.make_iterator();
  it.next();
  EXPECT_THAT(tf::testing::error_of([&] {
                it.restore_state(tf::constant({0, 1}));
              }),
              AllOf(HasSubstr("[Iterator.restore_state]"), HasSubstr("int32 (2,)")));
  EXPECT_THAT(tf::testing::error_of([&] {
                it.restore_state(tf::constant(std::vector<std::int64_t>{0, -1}));
              }),
              HasSubstr("negative"));
  EXPECT_THAT(tf::testing::error_of<tf::OutOfRangeError>([&] {
                it.restore_state(tf::constant(std::vector<std::int64_t>{0, 9}));
              }),
              AllOf(HasSubstr("element 9"), HasSubstr("only 4")));
  EXPECT_EQ(it.next()->at(0).item<std::int64_t>(), 1);
}
