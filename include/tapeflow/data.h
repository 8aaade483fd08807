#pragma once
/// \file data.h
/// Reading data sets and feeding them to a training loop: IDX files (the MNIST family's format),
/// the Fashion-MNIST data set as Debian ships it, and a seeded, shuffling batch iterator.
///
///   namespace tf = tapeflow;
///   tf::data::FashionMnist ds = tf::data::load_fashion_mnist();   // /usr/share/datasets/...
///   tf::data::BatchIterator batches(ds.train_images, ds.train_labels, {.batch_size = 64, .seed = 1});
///   for (int epoch = 0; epoch < 5; ++epoch)
///     while (auto b = batches.next()) train_step(b->features, b->labels);   // next() ends each epoch
///
/// Every reader validates the whole header before it allocates and never reads past the data it
/// has: a malformed file ends in a typed exception (DataLossError for corrupt or truncated bytes),
/// never in a crash.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::data {

/// Reads an IDX file (http://yann.lecun.com/exdb/mnist/ format), gzip-compressed or raw; gzip is
/// detected by its magic bytes 1f 8b, not by the file name.
///
/// The file is `00 00 <type> <ndims>`, then `ndims` big-endian uint32 dimensions, then the
/// elements in big-endian row-major order. Element types and the dtype they are returned as:
///   0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32 -> int32 (values kept exactly; uint8 pixels
///        come back as 0..255 — see pixels_to_float for the usual [0, 1] float32 conversion)
///   0x0D float32 -> float32,  0x0E float64 -> float64.
/// The shape is the file's dimensions, 1 <= rank <= kMaxRank.
///
/// Throws FailedPreconditionError if the file cannot be opened or read or is not a regular file
/// (a FIFO is refused at once, never waited on; a directory, a device); DataLossError naming the
/// file for a bad magic number, an unknown type code, ndims outside 1..kMaxRank, dimensions whose
/// product overflows kMaxElements, data shorter or longer than the header declares (the message
/// gives the expected and actual byte counts) and a corrupt gzip stream (with zlib's message);
/// ResourceExhaustedError if the tensor would exceed the allocation limit (checked before
/// allocating).
Tensor read_idx(const std::string& path);

/// Pixels in 0..255 (int32, rank >= 1, as read_idx returns uint8 images) as float32 in [0, 1]
/// (divided by 255) with a trailing channel axis: [n, h, w] -> [n, h, w, 1] (NHWC).
/// Throws InvalidArgumentError for another dtype, a rank above kMaxRank - 1 or a value outside
/// 0..255 (the message gives the first such value and its position).
Tensor pixels_to_float(const Tensor& pixels);

/// Where Debian's package `dataset-fashion-mnist` installs the four .gz IDX files.
inline constexpr std::string_view kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

/// Fashion-MNIST: 28x28 grey images of clothes in 10 classes (see class_names()).
struct FashionMnist {
  Tensor train_images;  ///< float32 [60000, 28, 28, 1], values in [0, 1]
  Tensor train_labels;  ///< int32 [60000], values 0..9
  Tensor test_images;   ///< float32 [10000, 28, 28, 1]
  Tensor test_labels;   ///< int32 [10000]
};

/// Loads train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and
/// t10k-labels-idx1-ubyte.gz (raw files without .gz are accepted too) from `dir`.
/// Throws FailedPreconditionError naming the package and `apt-get install dataset-fashion-mnist`
/// when a file is missing; DataLossError when a file is malformed, holds images that are not
/// uint8 [n, 28, 28], labels that are not uint8 [n] in 0..9, or counts that disagree.
FashionMnist load_fashion_mnist(const std::string& dir = std::string(kFashionMnistDir));

/// The 10 Fashion-MNIST class names, indexed by label: "T-shirt/top", "Trouser", ... "Ankle boot".
const std::array<std::string_view, 10>& class_names();

/// The order of `n` examples in epoch `epoch` of a shuffle seeded with `seed`: a permutation of
/// 0..n-1 that depends only on (n, seed, epoch), identical on every platform and standard library.
///
/// Generator (fixed, part of the API): SplitMix64 seeded with
/// `seed ^ (0x9E3779B97F4A7C15 * (epoch + 1))`; Fisher-Yates from the back, swapping position i
/// with j uniform in [0, i], drawn as `r % (i + 1)` after rejecting the r below
/// `2^64 mod (i + 1)` (no modulo bias). Throws InvalidArgumentError for n < 0 or epoch < 0, and
/// ResourceExhaustedError when n indices (8 bytes each) exceed the allocation limit (memory.h).
std::vector<std::int64_t> shuffled_indices(std::int64_t n, std::uint64_t seed, std::int64_t epoch);

/// How BatchIterator walks the examples.
struct BatchOptions {
  std::int64_t batch_size = 32;  ///< >= 1
  bool shuffle = true;           ///< a new order every epoch (shuffled_indices); false: 0..n-1
  /// Seed of the shuffle: the same (seed, epoch) gives the same order on every run and platform.
  std::uint64_t seed = 0;
  bool drop_remainder = false;  ///< drop a last batch smaller than batch_size (like tf.data)
  /// Data-parallel sharding (tapeflow/distributed.h): with num_shards ranks, the epoch's order is
  /// cut into global batches of num_shards * batch_size examples and shard `shard_index` takes
  /// the shard_index-th batch_size of each, so the shards are disjoint, cover the epoch together
  /// and are the same on every run with the same seed, and N ranks with batch B see exactly the
  /// examples one process sees with batch N * B. A last, smaller global batch is split evenly
  /// (shards differ by at most one example), or dropped when it has fewer examples than shards
  /// (or with drop_remainder): every shard takes the same number of steps. Typically
  /// {.num_shards = distributed::size(), .shard_index = distributed::rank()}.
  std::int64_t num_shards = 1;
  std::int64_t shard_index = 0;  ///< 0 <= shard_index < num_shards
};

/// One batch: the selected rows of the features and of the labels, in the same order.
struct Batch {
  Tensor features;  ///< [b, ...] with the features' dtype and trailing dims
  Tensor labels;    ///< [b, ...] with the labels' dtype and trailing dims
};

/// Batches over (features, labels) pairs, epoch after epoch, like
/// `tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n, seed).batch(b)`.
/// Each epoch visits every example exactly once (every example but the remainder with
/// drop_remainder). Rows are copied with memcpy (a contiguous run of rows in one call).
class BatchIterator {
 public:
  /// `features` and `labels` have rank >= 1 and the same first dimension (the example count).
  /// Throws InvalidArgumentError for an undefined tensor, a rank-0 tensor, disagreeing first
  /// dimensions or batch_size < 1, and ResourceExhaustedError when the example order (8 bytes per
  /// example) exceeds the allocation limit (an empty tensor of shape (2^40, 0) has 2^40 examples).
  BatchIterator(Tensor features, Tensor labels, BatchOptions options = {});

  /// The next batch of the current epoch, or std::nullopt when the epoch is over; the call after
  /// std::nullopt starts the next epoch (with a new order when shuffling). Throws OutOfRangeError,
  /// changing nothing, at the end of epoch 2^63 - 1 (reachable only through reset()): there is
  /// no next epoch.
  std::optional<Batch> next();

  /// The epoch next() is in (0 for the first).
  std::int64_t epoch() const { return epoch_; }
  /// Restarts at the beginning of epoch `epoch` (>= 0); throws InvalidArgumentError otherwise.
  void reset(std::int64_t epoch = 0);

  /// The number of examples: the first dimension of the features and labels.
  std::int64_t num_examples() const { return n_; }
  /// Batches per epoch: ceil(n / b), or floor(n / b) with drop_remainder (b: num_shards *
  /// batch_size; a last batch with fewer examples than shards does not count).
  std::int64_t num_batches() const;
  /// The options given at construction.
  const BatchOptions& options() const { return options_; }

 private:
  void start_epoch(std::int64_t epoch);

  Tensor features_;
  Tensor labels_;
  BatchOptions options_;
  std::int64_t n_ = 0;
  std::int64_t global_batch_ = 1;  // num_shards * batch_size
  std::int64_t epoch_ = 0;
  std::int64_t position_ = 0;        // index into order_ of the next example
  std::vector<std::int64_t> order_;  // this epoch's order
};

}  // namespace tapeflow::data
#pragma GCC visibility pop
