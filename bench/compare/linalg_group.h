// compare --group linalg: tf::linalg's LAPACK-backed ops against torch::linalg, forward and
// backward. Implemented in linalg_group.cpp; compare.cpp dispatches to it.
#pragma once

#include <vector>

#include "common.h"

namespace compare {

struct Options;

/// Appends one row per op and size (a batch of 64 matrices of 64 x 64, one of 1024 x 1024):
/// cholesky, triangular_solve, solve, inv and slogdet, each the median seconds of the op and its
/// gradient (a tape around the op and a random weighting of its output against LibTorch's
/// autograd), float32.
void linalg_group(const Options& o, std::vector<Row>& rows);

}  // namespace compare
