#pragma once
// tf::vectorized_map (include/tapeflow/vectorized_map.h): the body traced once on one element
// (trace.h's GraphTracer), then its graph run once on the whole batch, each node through its
// op's batching rule (autodiff/batching.h) or, without one, once per element.

#include <string>
#include <vector>

#include "tapeflow/vectorized_map.h"

namespace tapeflow::graph {

struct VectorizedRun {
  std::vector<Tensor> outputs;
  /// The ops that ran once per element (no batching rule, or none for their inputs), in the
  /// order first met; "fn" if the whole body did (a custom gradient inside it).
  std::vector<std::string> looped;
};

/// vectorized_map, with what it looped: the public functions' one implementation.
VectorizedRun vectorize(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                        const std::vector<Tensor>& elems, const VectorizedMapOptions& options);

}  // namespace tapeflow::graph
