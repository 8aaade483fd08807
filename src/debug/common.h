#pragma once
// What more than one diagnostic needs: the check that a tape may still be read, the elements of
// a gradient of any floating dtype, and its L2 norm (gradient_report's rows, to_dot's edge widths).

#include <cmath>
#include <string_view>
#include <type_traits>

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

/// Calls `fn(values)` with the elements of a floating tensor (float32, float64 or bfloat16) as a
/// span of their C++ type (widen() reads one as a double); returns `otherwise` for any other dtype.
template <class R, class Fn>
R with_floating_values(const Tensor& t, Fn&& fn, R otherwise) {
  switch (t.dtype()) {
    case DType::Float32:
      return fn(t.values<float>());
    case DType::Float64:
      return fn(t.values<double>());
    case DType::BFloat16:  // gradients of bfloat16 sources are bfloat16 too
      return fn(t.values<bfloat16_t>());
    default:
      return otherwise;
  }
}
/// An element of a floating tensor as a double (exact for each floating dtype).
template <class T>
double widen(T v) {
  if constexpr (std::is_same_v<T, bfloat16_t>)
    return static_cast<double>(static_cast<float>(v));
  else
    return static_cast<double>(v);
}

/// L2 norm in double precision; NaN or Inf if the tensor holds one; 0 for a non-floating tensor.
inline double l2_norm(const Tensor& t) {
  const double sum = with_floating_values(
      t,
      [](auto values) {
        double s = 0;
        for (auto v : values) s += widen(v) * widen(v);
        return s;
      },
      0.0);
  return std::sqrt(sum);
}

}  // namespace tapeflow::debug
