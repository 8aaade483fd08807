#pragma once
/// \file gradient.h
/// Gradient: what GradientTape::gradient(), jacobian() and batch_jacobian() return for each
/// source. It holds a tensor, or says why there is none (TensorFlow's None):
///
///   tf::Gradient g = tape.gradient(y, x);
///   if (g) use(*g);                 // one pointer test, like std::optional
///   tf::Tensor dx = *g;             // throws FailedPreconditionError when g is missing:
///   // "[Gradient] no gradient for tensor #12 with shape (2,) and dtype float32: the tape never
///   //  watched it (call tape.watch(x) before computing the target)"
///
/// It reads like std::optional<Tensor> (has_value, operator bool, *, ->, value, value_or,
/// comparison with std::nullopt), but reading a missing value throws instead of being undefined
/// behaviour, and the message names the source and the reason the tape found at gradient()
/// time: the source's dtype cannot carry a gradient, the tape never watched it, or no recorded
/// op connects it to the target(s) (tf::debug::explain says where such a path breaks).
/// A present Gradient always holds a defined tensor.
///
/// The gradient of a table read by gather along axis 0 (an Embedding) is row-sparse, as
/// TensorFlow's IndexedSlices (indexed_slices.h): indexed_slices() gives the rows, and value()
/// gives the dense tensor, made on its first read.

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "tapeflow/indexed_slices.h"
#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A gradient result: a tensor, or TensorFlow's None together with why (see above).
class Gradient {
 public:
  /// A missing gradient with no known reason.
  Gradient() noexcept = default;
  /// A missing gradient with no known reason, so that `std::nullopt` converts to a Gradient.
  Gradient(std::nullopt_t) noexcept {}
  /// A present gradient. Throws InvalidArgumentError for an undefined (default-constructed)
  /// Tensor: a missing gradient is std::nullopt.
  Gradient(Tensor value);
  /// A present row-sparse gradient (TensorFlow's IndexedSlices).
  Gradient(IndexedSlices slices);
  /// A missing gradient that explains itself: `source` names it ("variable 'w:0' with shape (2,)
  /// and dtype float32"), `reason` says why it has none ("the tape never watched it").
  static Gradient missing(std::string_view source, std::string_view reason);

  /// Whether the gradient is present (TensorFlow: not None); `if (g)` reads the same.
  ///@{
  bool has_value() const noexcept { return value_.defined() || rows_ != nullptr; }
  explicit operator bool() const noexcept { return has_value(); }
  ///@}

  /// The tensor; throws FailedPreconditionError naming the source and the reason when missing.
  /// A row-sparse gradient gives its dense form, made once and shared by copies; it stays
  /// row-sparse unless the tensor is replaced through the non-const reference.
  ///@{
  const Tensor& value() const& {
    if (value_.defined()) return value_;
    if (rows_ == nullptr) throw_missing();
    return dense_rows();
  }
  Tensor& value() & {
    if (!value_.defined()) make_dense();
    return value_;
  }
  Tensor value() && {
    if (!value_.defined()) make_dense();
    return std::move(value_);
  }
  ///@}
  /// The rows of a row-sparse gradient; nullptr for a dense or missing one.
  const IndexedSlices* indexed_slices() const noexcept;
  /// The tensor, as value() returns it: `*g`, `g->shape()`. Throws FailedPreconditionError naming
  /// the source and the reason when the gradient is missing.
  ///@{
  const Tensor& operator*() const& { return value(); }
  Tensor& operator*() & { return value(); }
  Tensor operator*() && { return std::move(*this).value(); }
  const Tensor* operator->() const { return &value(); }
  Tensor* operator->() { return &value(); }
  ///@}
  /// The tensor, or `fallback` when the gradient is missing (never throws).
  Tensor value_or(Tensor fallback) const { return has_value() ? value() : std::move(fallback); }

  /// Why the gradient is missing ("no gradient for <source>: <reason>"); empty when present.
  std::string why_missing() const;
  /// Makes this a missing gradient with no reason.
  void reset() noexcept { *this = Gradient(); }

  /// For a gradient function's result (registry.h's Grads), e.g. one computed on a nested tape.
  explicit operator std::optional<Tensor>() const {
    return has_value() ? std::optional<Tensor>(value()) : std::nullopt;
  }

  /// `g == std::nullopt`: whether the gradient is missing.
  friend bool operator==(const Gradient& g, std::nullopt_t) noexcept { return !g.has_value(); }

 private:
  struct Rows;  // the slices and their dense form, made once (gradient.cpp)
  [[noreturn]] void throw_missing() const;
  const Tensor& dense_rows() const;
  /// Makes value_ the dense form; throws when missing.
  void make_dense();

  Tensor value_;  // the dense gradient (for rows: their dense form once read); undefined if missing
  std::shared_ptr<Rows> rows_;
  // "no gradient for <source>: <reason>", written once, only for a missing gradient; shared so
  // that copies stay two pointers.
  std::shared_ptr<const std::string> why_missing_;
};

/// A gradient as Python prints it: "None" when missing, to_string of its IndexedSlices or tensor
/// otherwise.
std::string to_string(const Gradient& g);
/// Writes to_string(g) to `os`.
std::ostream& operator<<(std::ostream& os, const Gradient& g);

}  // namespace tapeflow
#pragma GCC visibility pop
