// compare --group science: per-point derivatives of a physical model (the Müller-Brown potential
// at 100,000 points): tf::vectorized_map of a Hessian against PyTorch's vmap(hessian) and a C++
// loop over the points, and the energies, forces and Hessians of nested tapes traced by
// tf::function against eager. Implemented in science_group.cpp; compare.cpp dispatches to it.
#pragma once

#include <vector>

#include "common.h"

namespace compare {

struct Options;

/// Appends the rows S1 (vectorized_map of the per-point Hessian; peer: PyTorch's
/// functorch.vmap(hessian) from hessian_torch.py, run with --python) and S2 (energies, forces and
/// Hessians through tf::function; peer: the same computation eagerly).
void science_group(const Options& o, std::vector<Row>& rows);

}  // namespace compare
