// Fuzzes the scans, sorting and segment ops: cumsum, cumprod and cumulative_logsumexp with any
// axis and flags, the linear recurrence on operands that may disagree, sort/argsort/top_k with k
// anywhere (extreme included), take_along_axis and the segment reductions with indices and ids
// partly out of range or negative, searchsorted, unique, and bincount with values up to the
// extremes (the allocation limit refuses the huge ones). Every refusal must be a typed error
// naming the op; the gradients run too (run_op).

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

/// dims for the ids of `data`: usually a prefix of its dims, sometimes anything.
std::vector<std::int64_t> prefix_dims(tf::fuzz::FuzzInput& in, const tf::Tensor& data) {
  if (in.u8() < 30) return in.dims();
  const auto d = data.shape().dims();
  const std::size_t n = static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(d.size())));
  return {d.begin(), d.begin() + static_cast<std::ptrdiff_t>(n)};
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 16;
  const bool flag = in.boolean(), flag2 = in.boolean();
  const std::int64_t axis = in.u8() < 230 ? in.range(-3, 3) : in.extreme();
  const tf::DType dtype = in.u8() < 200 ? in.float_dtype() : in.dtype();
  const tf::Tensor x = in.tensor(in.dims(), dtype);
  const std::vector<std::int64_t> x_dims(x.shape().dims().begin(), x.shape().dims().end());
  // Usually y fits x (the linear recurrence's b, searchsorted's values): same dims and dtype.
  const tf::Tensor y =
      in.u8() < 200 ? in.tensor(x_dims, in.u8() < 240 ? dtype : in.dtype()) : in.any_tensor();
  const std::int64_t bound = x.rank() > 0 ? x.shape()[x.rank() - 1] : 1;
  const tf::Tensor ids = in.indices(prefix_dims(in, x), std::max<std::int64_t>(bound, 2));
  const std::int64_t count = in.u8() < 230 ? in.range(-1, 6) : in.extreme();
  const tf::SortDirection direction = flag ? tf::SortDirection::kDescending : tf::SortDirection::kAscending;
  tf::fuzz::run_op(in, {x, y}, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    switch (op) {
      case 0:
        return tf::math::cumsum(v[0], axis, flag, flag2);
      case 1:
        return tf::math::cumprod(v[0], axis, flag, flag2);
      case 2:
        return tf::math::cumulative_logsumexp(v[0], axis, flag, flag2);
      case 3:
        return tf::math::linear_recurrence(v[0], v[1], axis, flag);
      case 4:
        return tf::sort(v[0], axis, direction);
      case 5:
        return tf::argsort(v[0], axis, direction);
      case 6:
        return flag2 ? tf::math::top_k(v[0], count).values : tf::math::top_k(v[0], count).indices;
      case 7:
        return tf::take_along_axis(v[0], in.indices(x_dims, bound), axis);
      case 8:
        return tf::searchsorted(v[0], v[1], flag ? "left" : "right",
                                flag2 ? tf::DType::Int64 : tf::DType::Int32);
      case 9:
        return flag ? tf::unique(v[0]).y : tf::unique(v[0], tf::DType::Int64).idx;
      case 10:
        return flag ? tf::math::unsorted_segment_sum(v[0], ids, count)
                    : tf::math::unsorted_segment_mean(v[0], ids, count);
      case 11:
        return flag ? tf::math::unsorted_segment_max(v[0], ids, count)
                    : tf::math::unsorted_segment_min(v[0], ids, count);
      case 12:
        return flag ? tf::math::segment_sum(v[0], ids) : tf::math::segment_mean(v[0], ids);
      case 13:
        return flag ? tf::math::segment_max(v[0], ids) : tf::math::segment_min(v[0], ids);
      case 14:
        return tf::math::bincount(ids, {.weights = flag ? v[0] : tf::Tensor(),
                                        .minlength = flag2 ? count : 0,
                                        .maxlength = flag2 ? -1 : count});
      default:
        return tf::math::bincount(in.u8() < 128 ? tf::constant<std::int64_t>({in.extreme()}) : ids);
    }
  });
}
