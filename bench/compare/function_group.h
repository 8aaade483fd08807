// compare --group function: the peers and hardware bounds of tf::function's targets.
// Implemented in function_group.cpp; compare.cpp dispatches to it.
#pragma once

#include <string>
#include <vector>

#include "common.h"

namespace compare {

struct Options;

/// Appends the group's rows (F1 ADOL-C tiny chain, F2 TorchScript elementwise chain, F3 MLP step
/// against its GEMM time, with its peak memory, and the MLP's variable gradients through a recorded
/// call against LibTorch eager) to `rows`.
void function_group(const Options& o, std::vector<Row>& rows);

/// The child processes the group starts (this program re-executed with --function-child WHAT);
/// returns the process's exit status.
int function_child(const std::string& what);

}  // namespace compare
