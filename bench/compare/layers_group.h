// compare --group layers: the sequence models' layers against LibTorch's modules, forward and
// backward at one realistic size. Implemented in layers_group.cpp; compare.cpp dispatches to it.
#pragma once

#include <vector>

#include "common.h"

namespace compare {

struct Options;

/// Appends one row per layer (LSTM, GRU, MultiHeadAttention, LayerNormalization, Conv1D,
/// Embedding) at batch 64, 128 steps, width 256, float32: the median seconds of a forward pass and
/// the gradients, for a random gradient of its output, with respect to the layer's weights and its
/// input (the ids excepted), each library's layer in its own layout; then the SGD step of an
/// Embedding of 100,000 ids with a row-sparse gradient (IndexedSlices; LibTorch's sparse(true))
/// and with a dense one.
void layers_group(const Options& o, std::vector<Row>& rows);

}  // namespace compare
