#include "ops/index_util.h"

#include <fmt/ranges.h>

namespace tapeflow::ops {

std::string position(const Shape& shape, std::int64_t flat) {
  std::vector<std::int64_t> idx(static_cast<std::size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<std::size_t>(d)] = flat % shape[d];
    flat /= shape[d];
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

std::vector<std::int64_t> dims_between(const Shape& s, int from, int to) {
  const auto d = s.dims();
  return {d.begin() + from, d.begin() + to};
}

std::int64_t product(const Shape& s, int from, int to) {
  std::int64_t n = 1;
  for (int i = from; i < to; ++i) n *= s[i];
  return n;
}

void check_indices_in_range(const Tensor& indices, std::int64_t limit, std::string_view op,
                            std::string_view what) {
  visit_index(indices, op, [&]<class I>() {
    const auto v = indices.values<I>();
    for (std::size_t p = 0; p < v.size(); ++p) {
      if (v[p] >= 0 && v[p] < limit) [[likely]]
        continue;
      throw InvalidArgumentError(fmt::format("[{}] indices{} = {} is not in [0, {}) ({})", op,
                                             position(indices.shape(), static_cast<std::int64_t>(p)), v[p],
                                             limit, what));
    }
  });
}

}  // namespace tapeflow::ops
