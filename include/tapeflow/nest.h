#pragma once
/// \file nest.h
/// Nested structures of tensors and variables, like TensorFlow's tf.nest: GradientTape::gradient
/// accepts sources as any nesting of std::vector, std::map, std::pair and std::tuple around
/// Tensor and Variable leaves, and returns the gradients in the same structure, with Gradient
/// leaves (gradient.h: a tensor, or missing where TensorFlow returns None).

#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "tapeflow/gradient.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A gradient source: a tensor or a variable (TensorFlow accepts both in one list).
class Source {
 public:
  /// A tensor or a variable as a source; implicit, so either converts where a Source is expected.
  ///@{
  Source(const Tensor& t) : tensor_(t) {}
  Source(const Variable& v) : variable_(v) {}
  ///@}
  /// Whether the source is a Variable (else a Tensor).
  bool is_variable() const { return variable_.has_value(); }
  /// The variable; only for a source where is_variable() is true.
  const Variable& variable() const { return *variable_; }
  /// The tensor; undefined (default-constructed) for a variable source.
  const Tensor& tensor() const { return tensor_; }
  /// The id the tape knows this source by: the tensor's id or the variable's handle id.
  TensorId id() const;
  /// The source's shape and dtype (a variable's current ones).
  ///@{
  const Shape& shape() const;
  DType dtype() const;
  ///@}

 private:
  Tensor tensor_;
  std::optional<Variable> variable_;
};

namespace nest {

/// `Nest<S>` flattens a structure S into leaves and packs flat results back into S's shape.
/// Specialise it for a structure of your own (with `Result`, `flatten` and `pack` as below) to
/// pass that structure as sources or targets.
template <class S>
struct Nest;

/// A structure that GradientTape takes as sources or targets: one for which `Nest<S>` is
/// specialised.
template <class S>
concept Nestable = requires {
  typename Nest<S>::Result;
};

/// A leaf: a Tensor, Variable or Source is its own single leaf, and its result one Gradient.
template <class S>
requires std::is_same_v<S, Tensor> || std::is_same_v<S, Variable> || std::is_same_v<S, Source>
struct Nest<S> {
  /// `Result`: the structure with Gradient leaves; flatten() appends the leaves to `out` in
  /// order; pack() builds the Result from flat gradients at `it`, advancing it.
  ///@{
  using Result = Gradient;
  static void flatten(const S& s, std::vector<Source>& out) { out.emplace_back(s); }
  template <class It>
  static Result pack(const S&, It& it) {
    return std::move(*it++);
  }
  ///@}
};

/// A vector: its elements' leaves in order; the result is a vector of their results.
template <Nestable S>
struct Nest<std::vector<S>> {
  /// `Result`, flatten() and pack(), as for a leaf.
  ///@{
  using Result = std::vector<typename Nest<S>::Result>;
  static void flatten(const std::vector<S>& v, std::vector<Source>& out) {
    for (const S& s : v) Nest<S>::flatten(s, out);
  }
  template <class It>
  static Result pack(const std::vector<S>& v, It& it) {
    Result r;
    r.reserve(v.size());
    for (const S& s : v) r.push_back(Nest<S>::pack(s, it));
    return r;
  }
  ///@}
};

/// Maps flatten in key order, as tf.nest flattens dicts in sorted-key order.
template <class K, Nestable S>
struct Nest<std::map<K, S>> {
  /// `Result`, flatten() and pack(), as for a leaf.
  ///@{
  using Result = std::map<K, typename Nest<S>::Result>;
  static void flatten(const std::map<K, S>& m, std::vector<Source>& out) {
    for (const auto& [k, s] : m) Nest<S>::flatten(s, out);
  }
  template <class It>
  static Result pack(const std::map<K, S>& m, It& it) {
    Result r;
    for (const auto& [k, s] : m) r.emplace(k, Nest<S>::pack(s, it));
    return r;
  }
  ///@}
};

/// A pair: `first`'s leaves, then `second`'s; the result is a pair.
template <Nestable A, Nestable B>
struct Nest<std::pair<A, B>> {
  /// `Result`, flatten() and pack(), as for a leaf.
  ///@{
  using Result = std::pair<typename Nest<A>::Result, typename Nest<B>::Result>;
  static void flatten(const std::pair<A, B>& p, std::vector<Source>& out) {
    Nest<A>::flatten(p.first, out);
    Nest<B>::flatten(p.second, out);
  }
  template <class It>
  static Result pack(const std::pair<A, B>& p, It& it) {
    auto a = Nest<A>::pack(p.first, it);  // sequenced: first before second
    auto b = Nest<B>::pack(p.second, it);
    return {std::move(a), std::move(b)};
  }
  ///@}
};

/// A tuple: each element's leaves in order; the result is a tuple.
template <Nestable... Ts>
struct Nest<std::tuple<Ts...>> {
  /// `Result`, flatten() and pack(), as for a leaf.
  ///@{
  using Result = std::tuple<typename Nest<Ts>::Result...>;
  static void flatten(const std::tuple<Ts...>& t, std::vector<Source>& out) {
    std::apply([&](const Ts&... e) { (Nest<Ts>::flatten(e, out), ...); }, t);
  }
  template <class It>
  static Result pack(const std::tuple<Ts...>& t, It& it) {
    // Braced initialisation evaluates left to right, keeping the flat order.
    return std::apply([&](const Ts&... e) { return Result{Nest<Ts>::pack(e, it)...}; }, t);
  }
  ///@}
};

/// The leaves of `s` in flattening order: the flat list gradient() differentiates for.
template <Nestable S>
std::vector<Source> flatten(const S& s) {
  std::vector<Source> out;
  Nest<S>::flatten(s, out);
  return out;
}

}  // namespace nest
}  // namespace tapeflow
#pragma GCC visibility pop
