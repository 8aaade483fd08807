// Fuzzes the reductions (sum, mean, max, min, prod, logsumexp, argmax, argmin) with random axes
// lists (empty, repeated, negative, out of range, extreme), keepdims, any dtype and empty axes.

#include "fuzz_input.h"

namespace tf = tapeflow;

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 8;
  const bool keepdims = in.boolean();
  const tf::Tensor x = in.any_tensor();
  const tf::Axes axes = in.axes(x.rank());
  const std::int64_t axis = in.axis(x.rank());
  tf::fuzz::run_op(in, {x}, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    switch (op) {
      case 0:
        return tf::reduce_sum(v[0], axes, keepdims);
      case 1:
        return tf::reduce_mean(v[0], axes, keepdims);
      case 2:
        return tf::reduce_max(v[0], axes, keepdims);
      case 3:
        return tf::reduce_min(v[0], axes, keepdims);
      case 4:
        return tf::reduce_prod(v[0], axes, keepdims);
      case 5:
        return tf::reduce_logsumexp(v[0], axes, keepdims);
      case 6:
        return tf::argmax(v[0], axis);
      default:
        return tf::argmin(v[0], axis);
    }
  });
}
