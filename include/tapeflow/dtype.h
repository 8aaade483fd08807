#pragma once
/// \file dtype.h
/// The element types a Tensor can hold, and compile-time helpers to map C++ types onto them.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// Element type of a tensor. Names and semantics follow TensorFlow: only float32 and float64
/// carry gradients; int32, int64 and bool paths are never recorded on a tape.
enum class DType : std::uint8_t { Float32, Float64, Int32, Int64, Bool };

/// The dtypes by TensorFlow's names (tf::float32, ...); `bool_` because `bool` is a C++ keyword.
///@{
inline constexpr DType float32 = DType::Float32;
inline constexpr DType float64 = DType::Float64;
inline constexpr DType int32 = DType::Int32;
inline constexpr DType int64 = DType::Int64;
inline constexpr DType bool_ = DType::Bool;
///@}

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
  }
  return 0;
}

/// True for float32 and float64: the dtypes that carry gradients (TensorFlow's "trainable" dtypes).
constexpr bool is_floating(DType d) { return d == DType::Float32 || d == DType::Float64; }
/// True for int32 and int64 (bool is neither an integer nor a floating dtype).
constexpr bool is_integer(DType d) { return d == DType::Int32 || d == DType::Int64; }

template <class T>
concept Element = std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, std::int32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, bool>;

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
  else
    return DType::Bool;
}

/// Calls `fn.template operator()<T>()` with the C++ type of `d`:
///   visit_dtype(t.dtype(), [&]<class T>() { use(t.values<T>()); });
template <class Fn>
decltype(auto) visit_dtype(DType d, Fn&& fn) {
  switch (d) {
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
