#pragma once
// BlockOp: an elementwise op's kernel over one block of elements, the form in which tf::function's
// fusion pass (src/graph/fusion.h) strings ops together so that a chain of them is one pass
// over memory (kernels/cpu/fused_eval.h runs the blocks).
//
// An op struct that can be fused declares its per-element function or its array function, and its
// forward runs the same function through the ordinary loops (elementwise.h), so a fused kernel
// computes every element exactly as the op does:
//
//   static constexpr auto kElement = [](auto a, auto b) { return a + b; };     // zip / map
//   static constexpr auto kArray = [](const auto* x, auto* y, std::int64_t n) { vmath::exp(x, y, n); };
//
// The registration (src/ops/registrar.h) turns it into a BlockOp for float and double. In a fused
// kernel every value of a block is an array of the kernel's floating type T; a bool value
// (comparisons, where's condition) is held as T(0) or T(1), which every element function that
// takes or returns bool reads and writes correctly (`c ? a : b` and `a && b` on T(0)/T(1) are the
// bool results).
//
// Strides: an operand is either a full block (stride 1) or one element broadcast over the block
// (stride 0). A unary op always gets a full block or a single element with n == 1, so its array
// function needs no stride.

#include <array>
#include <cstdint>

#include "tapeflow/shape.h"

namespace tapeflow::cpu {

/// out[i] = f(in[0][i * stride[0]], in[1][i * stride[1]], ...) for i in [0, n).
template <class T>
using BlockKernel = void (*)(const T* const* in, const std::int64_t* stride, T* out, std::int64_t n);

struct BlockOp {
  enum class Kind : std::uint8_t {
    kElementwise,  // the kernels below
    kSum,          // a reduction a fused kernel can end with (no kernel: the evaluator sums)
    kMean,
  };
  Kind kind = Kind::kElementwise;
  int arity = 1;
  BlockKernel<float> f32 = nullptr;
  BlockKernel<double> f64 = nullptr;
  /// A few instructions per element (a per-element function: arithmetic, comparisons, select),
  /// as opposed to an array function (exp, sin, tanh, ... through SLEEF): cheaper to compute
  /// again than to store and load back (graph/recompute.h).
  bool cheap = false;
  /// kSum, kMean: which axes of its operand the op's attributes reduce (one flag per axis).
  std::array<bool, kMaxRank> (*reduced_axes)(const void* attrs) = nullptr;

  template <class T>
  BlockKernel<T> kernel() const {
    if constexpr (sizeof(T) == sizeof(float))
      return f32;
    else
      return f64;
  }
};

namespace block_detail {

/// The BlockKernel of a per-element function F (a captureless lambda) of `Arity` operands.
template <class T, int Arity, class F>
void element_kernel(const T* const* in, const std::int64_t* stride, T* out, std::int64_t n) {
  constexpr F f{};
  const T* a = in[0];
  if constexpr (Arity == 1) {
    for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(a[i]));
  } else if constexpr (Arity == 2) {
    const T* b = in[1];
    // One loop per stride pattern, so each is a plain loop the compiler vectorises.
    if (stride[0] == 1 && stride[1] == 1) {
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(a[i], b[i]));
    } else if (stride[0] == 0 && stride[1] == 1) {
      const T av = a[0];
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(av, b[i]));
    } else if (stride[0] == 1) {
      const T bv = b[0];
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(a[i], bv));
    } else {
      const T v = static_cast<T>(f(a[0], b[0]));
      for (std::int64_t i = 0; i < n; ++i) out[i] = v;
    }
  } else {
    static_assert(Arity == 3, "element functions take one, two or three operands");
    const T* b = in[1];
    const T* c = in[2];
    if (stride[0] == 1 && stride[1] == 1 && stride[2] == 1) {
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(a[i], b[i], c[i]));
    } else {
      const std::int64_t sa = stride[0], sb = stride[1], sc = stride[2];
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(f(a[i * sa], b[i * sb], c[i * sc]));
    }
  }
}

/// The BlockKernel of a unary array function F: F{}(x, y, n).
template <class T, class F>
void array_kernel(const T* const* in, const std::int64_t*, T* out, std::int64_t n) {
  constexpr F f{};
  f(in[0], out, n);
}

/// The BlockKernel of a binary array function F with strides: F{}(a, sa, b, sb, y, n).
template <class T, class F>
void array2_kernel(const T* const* in, const std::int64_t* stride, T* out, std::int64_t n) {
  constexpr F f{};
  f(in[0], stride[0], in[1], stride[1], out, n);
}

}  // namespace block_detail

/// The BlockOp of a per-element function of `Arity` operands.
template <int Arity, class F>
inline constexpr BlockOp kElementBlock{BlockOp::Kind::kElementwise, Arity,
                                       &block_detail::element_kernel<float, Arity, F>,
                                       &block_detail::element_kernel<double, Arity, F>, /*cheap=*/true};

/// The BlockOp of a unary array function (x, y, n).
template <class F>
inline constexpr BlockOp kArrayBlock{BlockOp::Kind::kElementwise, 1, &block_detail::array_kernel<float, F>,
                                     &block_detail::array_kernel<double, F>};

/// The BlockOp of a binary array function (a, sa, b, sb, y, n).
template <class F>
inline constexpr BlockOp kArray2Block{BlockOp::Kind::kElementwise, 2, &block_detail::array2_kernel<float, F>,
                                      &block_detail::array2_kernel<double, F>};

/// The BlockOp of a reduction (kSum or kMean) whose attributes say which axes it reduces.
constexpr BlockOp reduction_block(BlockOp::Kind kind,
                                  std::array<bool, kMaxRank> (*reduced_axes)(const void*)) {
  return {kind, 1, nullptr, nullptr, false, reduced_axes};
}

}  // namespace tapeflow::cpu
