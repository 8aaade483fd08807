#pragma once
/// \file data/dataset.h
/// tf.data in C++: an input pipeline built from a source and transformations, iterated epoch
/// after epoch, with a position that can be checkpointed.
///
///   namespace tf = tapeflow;
///   tf::data::Dataset ds = tf::data::Dataset::from_tensor_slices({images, labels})   // (x, y)
///                              .shuffle(10000, /*seed=*/1)
///                              .map([](const tf::data::Element& e) {
///                                     return tf::data::Element{e[0] / 255.f, e[1]};
///                                   }, /*num_parallel_calls=*/tf::data::kAutotune)
///                              .batch(64)
///                              .prefetch(2);
///   for (int epoch = 0; epoch < 5; ++epoch)
///     for (const tf::data::Element& batch : ds) train_step(batch[0], batch[1]);  // reshuffled
///
/// An element is a tuple of tensors (its components): `(x, y)` is an Element of two. A Dataset is
/// an immutable description of a pipeline: every transformation returns a new Dataset sharing the
/// nodes before it, so copies are cheap. Iterating it (make_iterator(), or a range-for) starts an
/// iteration, numbered from 0 by a counter the copies of a Dataset share: each new iteration is a
/// new epoch, and shuffle(..., reshuffle_each_iteration = true) draws a new order for it (from
/// its seed mixed with the epoch, as TensorFlow does), the same for the same seed on every run.
///
/// Resuming an epoch: Iterator::save_state() is a tensor (int64, shape (2,): the epoch and the
/// number of elements produced) that a checkpoint can hold; restore_state() rebuilds the
/// epoch's pipeline and skips that many elements, so the resumed iterator produces exactly the
/// elements an uninterrupted one would. Skipping is cheap where the counts allow it: sources,
/// map, batch, take, skip and shard skip their inputs without materialising the skipped elements
/// (a map function is not called for them, so it must depend on its element only). A shuffle
/// replays its draws: it pulls the elements it skips from its input, so everything upstream of it
/// runs again for them, a map function included (restoring position k of an epoch then costs
/// about k elements' work, up to a whole epoch's).
///
/// Errors are typed tapeflow exceptions whose message names the op ("[Dataset.batch] ..."), the
/// shapes and the dtypes: InvalidArgumentError for bad arguments and elements that do not fit,
/// DataLossError for malformed files, OutOfRangeError for a state past the dataset's end. An
/// exception thrown while producing an element (by a map function, on a worker thread or not)
/// reaches the caller of next(); the iterator stays usable and goes on with the next element.
///
/// Threads: an Iterator is used from one thread at a time. map(fn, n > 1) calls fn from n worker
/// threads at once (fn must be thread-safe) and prefetch produces on a background thread; both
/// keep the elements in their input's order and join their threads when the iterator is destroyed.

#include <atomic>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::data {

/// One element of a dataset: its components, e.g. {features, labels}.
using Element = std::vector<Tensor>;

/// cardinality() of a dataset without end (repeat() of a non-empty one), tf.data.INFINITE_CARDINALITY.
inline constexpr std::int64_t kInfiniteCardinality = -1;
/// cardinality() when the size is known only by iterating (a text file), tf.data.UNKNOWN_CARDINALITY.
inline constexpr std::int64_t kUnknownCardinality = -2;
/// num_parallel_calls or buffer size chosen by tapeflow, tf.data.AUTOTUNE: map uses the hardware's
/// concurrency, prefetch a buffer of 2.
inline constexpr std::int64_t kAutotune = -1;

/// How from_csv reads a file.
struct CsvOptions {
  /// The first line names the columns and is skipped.
  bool header = false;
  /// The field separator.
  char field_delim = ',';
  /// One dtype per column (float32, float64, int32 or int64). Empty: each column is int32 when all
  /// of its fields are integers that fit, else float32.
  std::vector<DType> column_types = {};
};

namespace detail {
class DatasetNode;   // one transformation or source (src/data/node.h)
class NodeIterator;  // its running state
}  // namespace detail

class Iterator;

/// A pipeline of elements (tf.data.Dataset). See the file comment.
class Dataset {
 public:
  /// Sources
  ///@{
  /// The slices of `components` along their first dimension: element i is {c[i] for c in
  /// components}. Throws InvalidArgumentError for no components, an undefined or rank-0 tensor, or
  /// first dimensions that differ (the message lists the shapes).
  static Dataset from_tensor_slices(std::vector<Tensor> components);
  /// One element: `components` as they are.
  static Dataset from_tensors(std::vector<Tensor> components);
  /// The int64 scalars start, start + step, ... before stop (tf.data.Dataset.range); step != 0.
  static Dataset range(std::int64_t start, std::int64_t stop, std::int64_t step = 1);
  /// range(0, stop).
  static Dataset range(std::int64_t stop) { return range(0, stop); }
  /// The slices of read_idx(path) (tapeflow/data.h): one image or label per element. Throws what
  /// read_idx throws, at once.
  static Dataset from_idx(const std::string& path);
  /// One element per line of a CSV file: a scalar per column, of the column's dtype (see
  /// CsvOptions). Empty lines are passed over. The file is read and converted at once. Throws
  /// FailedPreconditionError when it cannot be read; DataLossError naming the file, the line and the column
  /// for a field that is not a number of the column's dtype, a line with another number of fields than the
  /// first, or a file without rows; InvalidArgumentError for a column type that is not numeric or a count of
  /// column_types that differs from the file's.
  static Dataset from_csv(const std::string& path, const CsvOptions& options = {});
  /// One element per line of a text file (tf.data.TextLineDataset), without its "\n" (or "\r\n"):
  /// the line's Unicode code points as an int32 tensor of shape (length,), since tapeflow has no
  /// string dtype (code points, not bytes, so "é" is one element, 233). Read lazily, line by line.
  /// next() throws FailedPreconditionError when the file cannot be opened, DataLossError naming
  /// the file and the byte offset of a sequence that is not UTF-8 (the line is then passed over).
  static Dataset text_line_dataset(const std::string& path);
  ///@}

  /// Transformations: each returns a new Dataset and leaves this one as it is.
  ///@{
  /// fn applied to every element. num_parallel_calls > 1 (or kAutotune) runs fn on that many
  /// worker threads, up to that many elements ahead, and still yields the results in the input's
  /// order (TensorFlow's deterministic=true). An exception from fn reaches next(). Throws
  /// InvalidArgumentError for an empty fn or num_parallel_calls 0 or below -1.
  Dataset map(std::function<Element(const Element&)> fn, std::int64_t num_parallel_calls = 1) const;
  /// A random order drawn through a buffer (TensorFlow's semantics): the buffer is filled with
  /// the first buffer_size elements, then each step yields a uniformly chosen buffer element and
  /// puts the next input element in its place. buffer_size 1 keeps the order; a buffer as large
  /// as the dataset gives a uniform permutation. The same seed gives the same order; without one a
  /// seed is drawn once, when shuffle() is called. With reshuffle_each_iteration the seed is mixed
  /// with the iteration (epoch) number, else every iteration has the first one's order.
  /// Throws InvalidArgumentError for buffer_size < 1.
  Dataset shuffle(std::int64_t buffer_size, std::optional<std::uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;
  /// Consecutive elements stacked in groups of batch_size: each component gets a new first
  /// dimension. The last batch may be smaller unless drop_remainder. next() throws
  /// InvalidArgumentError naming the shapes or dtypes when a component differs within a batch
  /// (use padded_batch for sequences of different lengths); batch() throws it for batch_size < 1.
  Dataset batch(std::int64_t batch_size, bool drop_remainder = false) const;
  /// batch() for components whose shapes differ in their dimensions (not their rank): each is
  /// padded at the end of every dimension with its padding value (0 by default) to
  /// padded_shapes[component] (a -1 dimension, or no padded_shapes at all, pads to the longest in
  /// the batch). Throws InvalidArgumentError for batch_size < 1 or a padded dimension below -1;
  /// next() throws it for counts of padded_shapes or padding_values other than the components',
  /// a rank or dtype that differs within a batch, or a dimension longer than its padded shape.
  Dataset padded_batch(std::int64_t batch_size,
                       std::optional<std::vector<std::vector<std::int64_t>>> padded_shapes = std::nullopt,
                       std::optional<std::vector<double>> padding_values = std::nullopt,
                       bool drop_remainder = false) const;
  /// Produces up to buffer_size elements ahead on a background thread (kAutotune: 2). An exception
  /// the producer meets is rethrown by next() in its place. Throws InvalidArgumentError for
  /// buffer_size 0 or below -1.
  Dataset prefetch(std::int64_t buffer_size) const;
  /// The dataset count times (-1: forever), each repetition a new iteration of the input (so a
  /// shuffle before repeat reshuffles). Throws InvalidArgumentError for count < -1.
  Dataset repeat(std::int64_t count = -1) const;
  /// The first count elements (-1: all). Throws InvalidArgumentError for count < -1.
  Dataset take(std::int64_t count) const;
  /// All but the first count elements (-1: none left). Throws InvalidArgumentError for count < -1.
  Dataset skip(std::int64_t count) const;
  /// Every num_shards-th element starting at index (elements index, index + num_shards, ...), for
  /// one of num_shards workers. Throws InvalidArgumentError unless 0 <= index < num_shards.
  Dataset shard(std::int64_t num_shards, std::int64_t index) const;
  ///@}

  /// The number of elements, kInfiniteCardinality or kUnknownCardinality, as TensorFlow computes
  /// it from the sources' sizes without iterating.
  std::int64_t cardinality() const;

  /// Starts the next iteration (epoch) of the dataset.
  Iterator make_iterator() const;

  /// A range-for runs one iteration: `for (const Element& e : ds)`.
  class RangeIterator;
  /// Starts the next iteration, as make_iterator() does, for a range-for.
  RangeIterator begin() const;
  /// The end of any iteration.
  std::default_sentinel_t end() const { return {}; }

 private:
  friend class Iterator;
  explicit Dataset(std::shared_ptr<const detail::DatasetNode> node);
  std::shared_ptr<const detail::DatasetNode> node_;
  // Iterations started, shared by the copies of this Dataset (not by datasets built from it).
  std::shared_ptr<std::atomic<std::int64_t>> iterations_;
};

/// One iteration over a Dataset (tf.data.Iterator). Move-only; a moved-from iterator may only be
/// assigned or destroyed.
class Iterator {
 public:
  /// Takes over `other`'s iteration; `other` may then only be assigned or destroyed.
  Iterator(Iterator&& other) noexcept;
  /// Takes over `other`'s iteration, ending this one's.
  Iterator& operator=(Iterator&& other) noexcept;
  ~Iterator();

  /// The next element, std::nullopt at the end (and at every later call). Rethrows an error met
  /// producing the element; the next call goes on after it.
  std::optional<Element> next();

  /// The iteration (epoch) this iterator runs, counted from 0.
  std::int64_t epoch() const { return epoch_; }

  /// The position: an int64 tensor of shape (2,), {epoch, positions passed}, where a position is
  /// an element next() returned or an error it threw in an element's place; e.g. to save in a
  /// checkpoint as a Variable's value: save_checkpoint(path, {{"iterator", Variable(it.save_state())}}).
  /// NOTE: batch and padded_batch skip by counting their input's elements, so a position after an
  /// error raised upstream of a batch (which drops the elements the batch had pulled) resumes
  /// elsewhere.
  Tensor save_state() const;
  /// Moves to a position save_state() gave, for this dataset or one built the same way: rebuilds
  /// that epoch's pipeline and skips the elements produced (see the file comment for the cost).
  /// The dataset's iteration counter moves past that epoch, so the iteration after this one is the
  /// next epoch. Throws InvalidArgumentError for a tensor that is not int64 (2,) or holds negative
  /// numbers; OutOfRangeError when the dataset ends before the position.
  void restore_state(const Tensor& state);

 private:
  friend class Dataset;
  Iterator(Dataset dataset, std::int64_t epoch);

  Dataset dataset_;
  std::int64_t epoch_ = 0;
  std::int64_t produced_ = 0;
  std::unique_ptr<detail::NodeIterator> impl_;
};

/// What a range-for over a Dataset steps with: an input iterator over one iteration.
class Dataset::RangeIterator {
 public:
  using value_type = Element;              ///< what the iterator yields
  using difference_type = std::ptrdiff_t;  ///< required of an input iterator, never used

  /// The current element.
  const Element& operator*() const { return *current_; }
  /// The current element's members.
  const Element* operator->() const { return &*current_; }
  /// Fetches the next element.
  RangeIterator& operator++();
  /// Fetches the next element (postfix: returns nothing, as an input iterator may).
  void operator++(int) { ++*this; }
  /// True at the end of the iteration.
  friend bool operator==(const RangeIterator& it, std::default_sentinel_t) { return !it.current_; }

 private:
  friend class Dataset;
  explicit RangeIterator(Iterator it);
  std::shared_ptr<Iterator> it_;  // shared: input iterators must be copyable
  std::optional<Element> current_;
};

}  // namespace tapeflow::data
#pragma GCC visibility pop
