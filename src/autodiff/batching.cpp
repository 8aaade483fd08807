#include "autodiff/batching.h"

#include <algorithm>

#include "autodiff/dispatch.h"
#include "tapeflow/ops/array.h"

namespace tapeflow::autodiff {

int BatchContext::max_element_rank() const {
  int rank = 0;
  for (int i = 0; i < num_inputs(); ++i) rank = std::max(rank, element_rank(i));
  return rank;
}

Tensor BatchContext::stacked(int i) const {
  if (batched(i)) return input(i);
  const auto d = input(i).shape().dims();
  return broadcast_to(input(i), Shape(batch_dims(size_, d)));
}

std::vector<Tensor> BatchContext::all_stacked() const {
  std::vector<Tensor> out;
  for (int i = 0; i < num_inputs(); ++i) out.push_back(stacked(i));
  return out;
}

Tensor BatchContext::aligned(int i, int rank) const {
  const Tensor& x = input(i);
  if (!batched(i) || element_rank(i) == rank) return x;
  const auto d = x.shape().dims();
  std::vector<std::int64_t> dims(static_cast<std::size_t>(rank + 1), 1);
  dims[0] = size_;
  std::copy(d.begin() + 1, d.end(), dims.end() - (d.size() - 1));
  return reshape(x, dims);
}

std::vector<Tensor> BatchContext::run(std::span<const Tensor> inputs) const {
  return run_op(op_, attrs_, inputs);
}

std::vector<std::int64_t> batch_dims(std::int64_t size, std::span<const std::int64_t> dims) {
  std::vector<std::int64_t> out{size};
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

std::vector<Tensor> batch_broadcasting(const BatchContext& c) {
  const int rank = c.max_element_rank();
  std::vector<Tensor> in;
  for (int i = 0; i < c.num_inputs(); ++i) in.push_back(c.aligned(i, rank));
  return c.run(in);
}

std::vector<Tensor> batch_leading_dims(const BatchContext& c) { return c.run(c.all_stacked()); }

}  // namespace tapeflow::autodiff
