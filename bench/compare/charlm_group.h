// compare --group charlm: the command-line program's char-lstm (tools/cli/text_models.h) trained
// on the same text as the same network in LibTorch. Implemented in charlm_group.cpp; compare.cpp
// dispatches to it.
#pragma once

#include <vector>

#include "common.h"

namespace compare {

struct Options;

/// Trains both from the same initial weights for --lm-epochs epochs on fortunes-min's text
/// (windows of 64 characters, the last tenth for validation, batch 64, Adam at 0.005 with epsilon
/// 1e-12, where Keras's and PyTorch's formulas agree, each epoch in the order
/// data::shuffled_indices gives, the partial last batch included), epochs alternating between the
/// sides, tapeflow's through Model::fit in float32 and in mixed_bfloat16. Appends the median
/// epoch time of each tapeflow configuration against LibTorch's float32 epoch, and the validation
/// perplexity each side reaches.
void charlm_group(const Options& o, std::vector<Row>& rows);

}  // namespace compare
