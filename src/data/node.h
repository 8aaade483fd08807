#pragma once
// The pipeline inside a Dataset. A Dataset holds the last of a chain of DatasetNode: immutable,
// shared by every Dataset built on it, each holding its input's node. Iterating builds the
// matching chain of NodeIterator, the running state of one iteration, each pulling elements from
// its input's. Each source and transformation defines its Dataset member function, its node and
// its iterator in one file of src/data/.

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>

#include "tapeflow/data/dataset.h"

namespace tapeflow::data::detail {

/// One iteration's state of a node.
class NodeIterator {
 public:
  virtual ~NodeIterator() = default;
  /// The next element, std::nullopt at the end.
  virtual std::optional<Element> next() = 0;
  /// Passes over up to n >= 0 positions exactly as n calls of next() would, and returns how many
  /// there were (fewer at the end). A position is an element or an error next() threw in its
  /// place. This default pulls them; nodes that can count override it.
  virtual std::int64_t skip(std::int64_t n) {
    std::int64_t skipped = 0;
    for (; skipped < n; ++skipped) {
      try {
        if (!next()) break;
      } catch (const std::exception&) {  // an error is a position too
      }
    }
    return skipped;
  }
};

/// A source or transformation.
class DatasetNode {
 public:
  virtual ~DatasetNode() = default;
  /// A new iteration. `iteration` tells iterations apart (the epoch, mixed with the repetition
  /// under a repeat): shuffle mixes it into its seed. The node outlives the iterator.
  virtual std::unique_ptr<NodeIterator> iterate(std::uint64_t iteration) const = 0;
  /// As Dataset::cardinality.
  virtual std::int64_t cardinality() const = 0;
};

/// A node's input and the node itself, as the transformations hold them.
using NodePtr = std::shared_ptr<const DatasetNode>;

}  // namespace tapeflow::data::detail
