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

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

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
  /// A missing gradient that explains itself: `source` names it ("variable 'w:0' with shape (2,)
  /// and dtype float32"), `reason` says why it has none ("the tape never watched it").
  static Gradient missing(std::string_view source, std::string_view reason);

  /// Whether the gradient is present (TensorFlow: not None); `if (g)` reads the same.
  ///@{
  bool has_value() const noexcept { return value_.defined(); }
  explicit operator bool() const noexcept { return value_.defined(); }
  ///@}

  /// The tensor; throws FailedPreconditionError naming the source and the reason when missing.
  ///@{
  const Tensor& value() const& {
    if (!has_value()) throw_missing();
    return value_;
  }
  Tensor& value() & {
    if (!has_value()) throw_missing();
    return value_;
  }
  Tensor value() && {
    if (!has_value()) throw_missing();
    return std::move(value_);
  }
  ///@}
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
  Tensor value_or(Tensor fallback) const { return has_value() ? value_ : std::move(fallback); }

  /// Why the gradient is missing ("no gradient for <source>: <reason>"); empty when present.
  std::string why_missing() const;
  /// Makes this a missing gradient with no reason.
  void reset() noexcept { *this = Gradient(); }

  /// For a gradient function's result (registry.h's Grads), e.g. one computed on a nested tape.
  explicit operator std::optional<Tensor>() const {
    return has_value() ? std::optional<Tensor>(value_) : std::nullopt;
  }

  /// `g == std::nullopt`: whether the gradient is missing.
  friend bool operator==(const Gradient& g, std::nullopt_t) noexcept { return !g.has_value(); }

 private:
  [[noreturn]] void throw_missing() const;

  Tensor value_;
  // "no gradient for <source>: <reason>", written once, only for a missing gradient; shared so
  // that copies stay two pointers.
  std::shared_ptr<const std::string> why_missing_;
};

/// A gradient as Python prints it: "None" when missing, to_string(tensor) otherwise.
std::string to_string(const Gradient& g);
/// Writes to_string(g) to `os`.
std::ostream& operator<<(std::ostream& os, const Gradient& g);

}  // namespace tapeflow
#pragma GCC visibility pop
