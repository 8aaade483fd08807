// The public ways to build a tensor from bytes (tensor.h): a copy of bytes in memory, a new
// tensor that the caller fills in place (both allocate through detail::empty, so the allocation
// limit applies as to every tensor), or a view of memory another library owns.

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/block_pool.h"
#include "core/check.h"
#include "core/tensor_impl.h"

namespace tapeflow {
namespace {

// A bool element is one byte holding 0 or 1; anything else is undefined behaviour to read as bool.
void check_bool_bytes(std::span<const std::byte> bytes, const Shape& shape, std::string_view op) {
  const auto bad = std::find_if(bytes.begin(), bytes.end(), [](std::byte b) { return b > std::byte{1}; });
  TAPEFLOW_REQUIRE(bad == bytes.end(), InvalidArgumentError,
                   "[{}] a bool tensor of shape {} holds byte {} at element {}; bool elements must be 0 or 1",
                   op, shape.to_string(), std::to_integer<int>(*bad), bad - bytes.begin());
}

std::span<std::byte> writable_bytes(const Tensor& t) {
  return {static_cast<std::byte*>(const_cast<void*>(t.raw_data())), t.nbytes()};
}

}  // namespace

Tensor tensor_from_bytes(const Shape& shape, DType dtype, std::span<const std::byte> bytes,
                         std::string_view op) {
  // Compared by division: num_elements (<= 2^62) x 8 would overflow 64 bits.
  const std::size_t elem = dtype_size(dtype);
  TAPEFLOW_REQUIRE(
      bytes.size() % elem == 0 && bytes.size() / elem == static_cast<std::uint64_t>(shape.num_elements()),
      InvalidArgumentError,
      "[{}] {} bytes given for a {} tensor of shape {}, which needs {} elements x {} bytes", op, bytes.size(),
      dtype_name(dtype), shape.to_string(), shape.num_elements(), elem);
  if (dtype == DType::Bool) check_bool_bytes(bytes, shape, op);
  Tensor t = detail::empty(shape, dtype, op);
  if (!bytes.empty()) std::memcpy(writable_bytes(t).data(), bytes.data(), bytes.size());
  return t;
}

Tensor tensor_for_overwrite(const Shape& shape, DType dtype,
                            const std::function<void(std::span<std::byte>)>& write, std::string_view op) {
  TAPEFLOW_REQUIRE(static_cast<bool>(write), InvalidArgumentError,
                   "[{}] write is an empty std::function (for a {} tensor of shape {})", op,
                   dtype_name(dtype), shape.to_string());
  Tensor t = detail::empty(shape, dtype, op);
  const std::span<std::byte> bytes = writable_bytes(t);
  write(bytes);
  if (dtype == DType::Bool) check_bool_bytes(bytes, shape, op);
  return t;
}

Tensor tensor_from_external(const Shape& shape, DType dtype, const void* data,
                            std::shared_ptr<const void> owner, std::string_view op) {
  const std::size_t elem = dtype_size(dtype);
  if (shape.num_elements() > 0) {
    TAPEFLOW_REQUIRE(
        data != nullptr && owner != nullptr, InvalidArgumentError,
        "[{}] a {} tensor of shape {} needs its data and an owner that keeps it alive, got {} data "
        "and {} owner",
        op, dtype_name(dtype), shape.to_string(), data ? "the" : "null", owner ? "an" : "a null");
    TAPEFLOW_REQUIRE(reinterpret_cast<std::uintptr_t>(data) % elem == 0, InvalidArgumentError,
                     "[{}] the data of a {} tensor of shape {} is not aligned to its {}-byte elements", op,
                     dtype_name(dtype), shape.to_string(), elem);
    if (dtype == DType::Bool)
      check_bool_bytes({static_cast<const std::byte*>(data), static_cast<std::size_t>(shape.num_elements())},
                       shape, op);
  }
  return Tensor(std::allocate_shared<detail::TensorImpl>(
      detail::PoolAllocator<detail::TensorImpl>(),
      detail::TensorImpl{{shape, dtype, detail::next_tensor_id(), const_cast<void*>(data)},
                         std::move(owner)}));
}

}  // namespace tapeflow
