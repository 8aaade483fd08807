// compare --group openmp: OpenMP's wait policy. oneDNN's convolutions (tapeflow) and LibTorch's
// intra-op parallelism run on libgomp's threads, whose idle workers spin before they sleep unless
// OMP_WAIT_POLICY=PASSIVE. libgomp reads the policy once, when it is loaded, so every measurement
// is its own process: this program re-executed with --openmp-child. Implemented in
// openmp_group.cpp; compare.cpp dispatches to it.
#pragma once

#include <string>
#include <vector>

#include "common.h"

namespace compare {

struct Options;

/// Appends rows O1-O4: the CNN's training steps (batch 128, Adam) with OMP_WAIT_POLICY=PASSIVE
/// and unset, on the idle machine and beside one busy process, tapeflow against LibTorch, wall
/// time in the columns and CPU time in the note (medians of 3 processes each, alternating).
void openmp_group(const Options& o, std::vector<Row>& rows);

/// The child: `side` ("tapeflow" or "torch") runs --epoch-batches steps (default 40) after two
/// of warm-up and prints "openmp WALL_SECONDS CPU_SECONDS".
int openmp_child(const Options& o, const std::string& side);

}  // namespace compare
