#pragma once
// What more than one diagnostic needs: the check that a tape may still be read, and the L2 norm
// of a gradient (gradient_report's rows, to_dot's edge widths).

#include <cmath>
#include <string_view>

#include "autodiff/tape_access.h"
#include "core/check.h"
#include "tapeflow/tensor.h"

namespace tapeflow::debug {

/// Throws FailedPreconditionError naming `what` ("debug::explain", ...) unless the tape's records can be
/// read now: from the thread that created it (a tape records that thread only), and not consumed
/// (a non-persistent tape's gradient() dropped its records). `advice` says what to do instead.
inline void require_readable(const detail::TapeState& tape, std::string_view what, std::string_view advice) {
  autodiff::require_owner(tape, what);
  TAPEFLOW_REQUIRE(!tape.consumed, FailedPreconditionError,
                   "[{}] this non-persistent tape was consumed by its gradient() call and its "
                   "records are gone; {}, or use a persistent tape",
                   what, advice);
}

/// L2 norm in double precision; NaN or Inf if the tensor holds one; 0 for a non-floating tensor.
inline double l2_norm(const Tensor& t) {
  double sum = 0;
  if (t.dtype() == DType::Float32)
    for (float v : t.values<float>()) sum += static_cast<double>(v) * static_cast<double>(v);
  else if (t.dtype() == DType::Float64)
    for (double v : t.values<double>()) sum += v * v;
  return std::sqrt(sum);
}

}  // namespace tapeflow::debug
