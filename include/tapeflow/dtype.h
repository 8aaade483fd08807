#pragma once
/// \file dtype.h
/// The element types a Tensor can hold, and compile-time helpers to map C++ types onto them.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Element type of a tensor. Names and semantics follow TensorFlow: only the floating dtypes
/// (float32, float64, bfloat16) carry gradients; int32, int64 and bool paths are never recorded
/// on a tape. bfloat16 is a storage type: ops that take it compute in float32 and round their
/// results to bfloat16; an op without a bfloat16 kernel rejects it with InvalidArgumentError
/// naming the op (docs/design/bfloat16.md, "How each op takes bfloat16").
enum class DType : std::uint8_t { Float32, Float64, Int32, Int64, Bool, BFloat16 };

/// The dtypes by TensorFlow's names (tf::float32, ...); `bool_` because `bool` is a C++ keyword.
///@{
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType bool_ = DType::Bool;
inline constexpr DType bfloat16 = DType::BFloat16;
///@}

/// One bfloat16 element: float32's sign, exponent and top 7 mantissa bits (TensorFlow's
/// tf.bfloat16). From float it rounds to nearest even, and a NaN stays a (quiet) NaN; back to
/// float it is exact. Read a bfloat16 tensor with `t.values<tf::bfloat16_t>()` and
/// `static_cast<float>(v)`.
struct bfloat16_t {
  /// The bit pattern: float32's upper half.
  std::uint16_t bits = 0;

  constexpr bfloat16_t() = default;
  /// `f` rounded to the nearest bfloat16, ties to even.
  constexpr explicit bfloat16_t(float f) : bits(round(f)) {}
  /// The element with bit pattern `bits`.
  static constexpr bfloat16_t from_bits(std::uint16_t bits) {
    bfloat16_t b;
    b.bits = bits;
    return b;
  }
  /// The value, exactly.
  constexpr explicit operator float() const {
    return std::bit_cast<float>(static_cast<std::uint32_t>(bits) << 16);
  }

 private:
  static constexpr std::uint16_t round(float f) {
    const auto x = std::bit_cast<std::uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
    return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
  }
};

/// TensorFlow's name of a dtype: "float32", "int64", "bool", ...
constexpr std::string_view dtype_name(DType d) {
  switch (d) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int32:
      return "int32";
    case DType::Int64:
      return "int64";
    case DType::Bool:
      return "bool";
    case DType::BFloat16:
      return "bfloat16";
  }
  return "invalid";
}

/// Bytes per element.
constexpr std::size_t dtype_size(DType d) {
  switch (d) {
    case DType::Float32:
      return 4;
    case DType::Float64:
      return 8;
    case DType::Int32:
      return 4;
    case DType::Int64:
      return 8;
    case DType::Bool:
      return 1;
    case DType::BFloat16:
      return 2;
  }
  return 0;
}

/// True for float32, float64 and bfloat16: the dtypes that carry gradients (TensorFlow's
/// "trainable" dtypes).
constexpr bool is_floating(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::BFloat16;
}
/// True for int32 and int64 (bool is neither an integer nor a floating dtype).
constexpr bool is_integer(DType d) { return d == DType::Int32 || d == DType::Int64; }

/// The C++ types a tensor's elements can have: float, double, std::int32_t, std::int64_t, bool and
/// bfloat16_t (the dtypes of DType).
template <class T>
concept Element = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool> || std::is_same_v<T, bfloat16_t>;

/// The DType of a C++ element type: dtype_of<float>() == DType::Float32.
template <Element T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::Float32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::Float64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::Int32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::Int64;
  else if constexpr (std::is_same_v<T, bfloat16_t>)
    return DType::BFloat16;
  else
    return DType::Bool;
}

namespace detail {
/// Throws InvalidArgumentError: a bfloat16 tensor reached code that computes only in the five
/// dtypes visit_dtype dispatches.
[[noreturn]] void throw_no_bfloat16(std::string_view where);
}  // namespace detail

/// Calls `fn.template operator()<T>()` with the C++ type of `d`:
///   visit_dtype(t.dtype(), [&]<class T>() { use(t.values<T>()); });
/// bfloat16 is not dispatched (it has no arithmetic of its own): InvalidArgumentError. Convert
/// with tf::cast first.
template <class Fn>
decltype(auto) visit_dtype(DType d, Fn&& fn) {
  switch (d) {
    case DType::BFloat16:
      detail::throw_no_bfloat16("visit_dtype");
    case DType::Float32:
      return fn.template operator()<float>();
    case DType::Float64:
      return fn.template operator()<double>();
    case DType::Int32:
      return fn.template operator()<std::int32_t>();
    case DType::Int64:
      return fn.template operator()<std::int64_t>();
    case DType::Bool:
      break;
  }
  return fn.template operator()<bool>();
}

}  // namespace tapeflow
#pragma GCC visibility pop
