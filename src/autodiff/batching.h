#pragma once
// Batching rules: how tf::vectorized_map (src/function/vectorized_map.cpp) runs an op once for a
// whole batch of elements instead of once per element (TensorFlow's pfor converters, JAX's
// batching rules). The map traces its body on one element, then runs each traced op on the batch:
// an input that depends on the mapped elements carries the batch as its leading axis ("batched"),
// any other (a constant, a variable read) has the element's shape. A rule gets both kinds and
// returns every output batched. It runs public ops, so tapes, forward accumulators and an
// enclosing trace see the batched computation.
//
// An op declares its rule as `static std::vector<Tensor> batch(const autodiff::BatchContext& c)`
// in its struct; an elementwise op without attributes (a kElement or kArray op) gets
// batch_broadcasting without declaring it. A rule returns nothing for a case it does not cover
// (GatherV2 with both inputs batched), and an op without a rule runs once per element: the map's
// fallback loop.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "tapeflow/tensor.h"

namespace tapeflow::autodiff {

class OpDef;

class BatchContext {
 public:
  BatchContext(const OpDef& op, const std::shared_ptr<const void>& attrs, std::span<const Tensor> inputs,
               std::span<const bool> batched, std::int64_t size)
      : op_(op), attrs_(attrs), inputs_(inputs), batched_(batched), size_(size) {}

  /// The number of elements in the batch.
  std::int64_t size() const { return size_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  /// Whether input `i` carries the batch as its leading axis.
  bool batched(int i) const { return batched_[static_cast<std::size_t>(i)]; }
  /// Input `i` as it is: [size, element dims...] if batched, the element's shape otherwise.
  const Tensor& input(int i) const { return inputs_[static_cast<std::size_t>(i)]; }
  /// The rank of input `i` as one element sees it.
  int element_rank(int i) const { return input(i).rank() - (batched(i) ? 1 : 0); }
  /// The largest element rank among the inputs.
  int max_element_rank() const;
  /// Input `i` with the batch leading: as it is if batched, else broadcast to [size, dims...].
  Tensor stacked(int i) const;
  /// Every input stacked.
  std::vector<Tensor> all_stacked() const;
  /// Input `i` ready to broadcast with the others at element rank `rank`: a batched one
  /// reshaped to [size, 1, ..., 1, element dims...] (rank + 1 dims), an unbatched one as it is
  /// (broadcasting aligns it on the right, after the batch).
  Tensor aligned(int i, int rank) const;
  /// The op's attributes as the trace recorded them (for one element).
  template <class A>
  const A& attrs() const {
    return *static_cast<const A*>(attrs_.get());
  }
  /// Runs the op itself, with the trace's attributes, on `inputs` (through the dispatch path).
  std::vector<Tensor> run(std::span<const Tensor> inputs) const;

 private:
  const OpDef& op_;
  const std::shared_ptr<const void>& attrs_;
  std::span<const Tensor> inputs_;
  std::span<const bool> batched_;
  std::int64_t size_;
};

/// A batching rule: the op's outputs for the whole batch, each with the batch leading.
using BatchFunction = std::vector<Tensor> (*)(const BatchContext&);

/// The rule of an op that broadcasts its inputs against each other and whose attributes name no
/// axis or shape (the elementwise ops, the solves): the batched inputs aligned to the largest
/// element rank, then the op itself.
std::vector<Tensor> batch_broadcasting(const BatchContext& c);

/// The rule of an op that treats leading dimensions as a batch, the same for every input, and
/// whose attributes name only trailing ones (a decomposition, set_diag, top_k): every input
/// stacked, then the op itself.
std::vector<Tensor> batch_leading_dims(const BatchContext& c);

/// An axis of one element as an axis of the batch: `axis` + 1.
inline std::int64_t batch_axis(std::int64_t axis) { return axis + 1; }

/// [size, dims...]: a shape of one element with the batch leading.
std::vector<std::int64_t> batch_dims(std::int64_t size, std::span<const std::int64_t> dims);

/// Mixins for an op struct whose rule is one of the two above.
struct BatchBroadcasting {
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_broadcasting(c); }
};
struct BatchLeadingDims {
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_leading_dims(c); }
};

}  // namespace tapeflow::autodiff
