#pragma once
// How an op family registers its ops: one line per op, which adds the op to autodiff's gradient
// registry and its raw_ops::call adapter to the raw-op table, so the two cannot disagree.
//
//   r.add<Exp>(exp);                  // inputs are tensors only: the adapter calls exp(x)
//   r.add<Tile>();                    // attributes: Tile::raw(const raw_ops::Args&) reads them
//   r.add_non_differentiable<Less>(less);
//
// An op with attributes declares in its struct
//
//   static std::vector<Tensor> raw(const raw_ops::Args& a) {
//     a.expect(1, {"multiples"});  // number of inputs (-1: a list) and attribute names
//     return {tile(a.in(0), a.ints("multiples"))};
//   }
//
// and an internal gradient op that users cannot call declares `kNotCallable` (the reason). An op
// whose forward trusts its normalised attributes (an axis, sizes, a permutation) declares
//
//   static void check_attrs(const Attrs& a, const Tensor& x);  // the forward's arguments
//
// which a graph node's run calls first (autodiff/op_def.h, forward_entry).
// Both entry points call the public function, so they validate and throw identically.

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autodiff/op_def.h"
#include "core/check.h"
#include "kernels/cpu/block_op.h"
#include "tapeflow/ops/raw.h"

namespace tapeflow::raw_ops {

using Ints = std::vector<std::int64_t>;

/// The arguments of one raw_ops::call, with typed attribute readers that name the op in their
/// errors.
class Args {
 public:
  Args(std::string_view op, std::span<const Tensor> inputs, const AttrMap& attrs)
      : op_(op), inputs_(inputs), attrs_(attrs) {}

  /// Throws InvalidArgumentError naming the op unless there are `arity` inputs (-1: a list,
  /// checked by the public function) and every attribute given is one of `attrs`.
  void expect(int arity, std::initializer_list<std::string_view> attrs) const;

  const Tensor& in(std::size_t i) const { return inputs_[i]; }
  std::vector<Tensor> all() const { return {inputs_.begin(), inputs_.end()}; }

  std::int64_t i(std::string_view name, std::optional<std::int64_t> dflt = std::nullopt) const {
    return get<std::int64_t>(name, dflt, "an int");
  }
  bool b(std::string_view name, bool dflt) const { return get<bool>(name, dflt, "a bool"); }
  std::string s(std::string_view name, std::optional<std::string> dflt = std::nullopt) const {
    return get<std::string>(name, dflt, "a string");
  }
  Ints ints(std::string_view name, std::optional<Ints> dflt = std::nullopt) const {
    return get<Ints>(name, dflt, "a list of ints");
  }
  DType dtype(std::string_view name, std::optional<DType> dflt = std::nullopt) const {
    return get<DType>(name, dflt, "a dtype");
  }
  double f(std::string_view name, double dflt) const;
  /// A shape given as a Shape or as a list of ints (checked like every shape: dims >= 0, rank,
  /// element count), so hostile dims reach the op's own validation through one path.
  Shape shape(std::string_view name) const;

 private:
  const AttrValue* find(std::string_view name) const {
    auto it = attrs_.find(name);
    return it == attrs_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void throw_type(std::string_view name, std::string_view want, const AttrValue& got) const;
  template <class T>
  T get(std::string_view name, const std::optional<T>& dflt, std::string_view want) const {
    const AttrValue* v = find(name);
    if (v == nullptr) {
      TAPEFLOW_REQUIRE(dflt.has_value(), InvalidArgumentError, "[{}] missing attribute '{}'", op_, name);
      return *dflt;
    }
    if (const T* t = std::get_if<T>(v)) return *t;
    throw_type(name, want, *v);
  }

  std::string_view op_;
  std::span<const Tensor> inputs_;
  const AttrMap& attrs_;
};

/// One op's raw_ops::call adapter.
using Adapter = std::function<std::vector<Tensor>(const Args&)>;

/// Adds `op`'s adapter to the table raw_ops::call reads (src/ops/raw_ops.cpp). Called only while
/// the registry is being built.
void add_adapter(std::string_view op, Adapter adapter);

/// An adapter that throws UnimplementedError(`why`) (after the attribute check every op makes).
Adapter not_callable(std::string_view why);

}  // namespace tapeflow::raw_ops

namespace tapeflow::ops {

/// An op's public function when it takes only tensors (one, two or three, TensorFlow's order):
/// its raw_ops adapter checks the input count and calls it. Built from an overloaded name too
/// (`pow`): the overload whose parameters are all tensors is the one taken.
class TensorFunction {
 public:
  TensorFunction(Tensor (*fn)(const Tensor&)) : adapter(tensors(fn)) {}
  TensorFunction(Tensor (*fn)(const Tensor&, const Tensor&)) : adapter(tensors(fn)) {}
  TensorFunction(Tensor (*fn)(const Tensor&, const Tensor&, const Tensor&)) : adapter(tensors(fn)) {}
  raw_ops::Adapter adapter;

 private:
  template <class... In>
  static raw_ops::Adapter tensors(Tensor (*fn)(const In&...)) {
    return [fn](const raw_ops::Args& a) {
      a.expect(sizeof...(In), {});
      return [&]<std::size_t... I>(std::index_sequence<I...>) { return std::vector<Tensor>{fn(a.in(I)...)}; }
      (std::index_sequence_for<In...>{});
    };
  }
};

/// What a family's register_*_ops receives (see the top of this file).
class Registrar {
 public:
  explicit Registrar(autodiff::Registry& r) : r_(r) {}

  /// A differentiable op, called by raw_ops through `fn` or, without one, through Op::raw.
  template <class Op>
  void add(TensorFunction fn) {
    r_.add<Op>();
    set_block<Op>();
    raw_ops::add_adapter(Op::kName, std::move(fn.adapter));
  }
  template <class Op>
  void add() {
    r_.add<Op>();
    set_block<Op>();
    raw_ops::add_adapter(Op::kName, adapter<Op>());
  }
  /// An op with no gradient by design (comparisons, argmax, StopGradient).
  template <class Op>
  void add_non_differentiable(TensorFunction fn) {
    r_.add_non_differentiable<Op>();
    set_block<Op>();
    raw_ops::add_adapter(Op::kName, std::move(fn.adapter));
  }
  template <class Op>
  void add_non_differentiable() {
    r_.add_non_differentiable<Op>();
    set_block<Op>();
    raw_ops::add_adapter(Op::kName, adapter<Op>());
  }
  /// An op whose gradient is deliberately not registered (AdjustContrastv2).
  template <class Op>
  void add_without_gradient(TensorFunction fn) {
    r_.define_without_gradient(Op::kName);
    r_.set_forward<Op>();  // a graph node runs it like any other op
    set_block<Op>();
    raw_ops::add_adapter(Op::kName, std::move(fn.adapter));
  }

 private:
  /// The op's BlockOp (kernels/cpu/block_op.h), from its kElement (a per-element function),
  /// kArray (an array function) or kBlock (a reduction): what lets the fusion pass fuse it; and
  /// an elementwise op's default batching rule (autodiff/batching.h).
  template <class Op>
  void set_block() {
    using Sig = autodiff::forward_detail::Signature<decltype(&Op::forward)>;
    // Tensor operands: forward's parameters, less the attributes.
    constexpr int arity =
        static_cast<int>(Sig::kArity) - (std::is_same_v<typename Sig::FirstArg, Tensor> ? 0 : 1);
    const cpu::BlockOp* block = nullptr;
    if constexpr (requires { Op::kBlock; })
      block = &Op::kBlock;
    else if constexpr (requires { Op::kElement; })
      block = &cpu::kElementBlock<arity, std::remove_cvref_t<decltype(Op::kElement)>>;
    else if constexpr (requires { Op::kArray; } && arity == 1)
      block = &cpu::kArrayBlock<std::remove_cvref_t<decltype(Op::kArray)>>;
    else if constexpr (requires { Op::kArray; })
      block = &cpu::kArray2Block<std::remove_cvref_t<decltype(Op::kArray)>>;
    autodiff::OpDef& def = r_.get(Op::kName);
    def.block = block;
    // An elementwise op without attributes batches by broadcasting; one with attributes
    // (BroadcastTo's shape, Cast's dtype) declares its own rule.
    if (def.batch == nullptr && block != nullptr && block->kind == cpu::BlockOp::Kind::kElementwise &&
        def.attrs_codec == nullptr)
      def.batch = &autodiff::batch_broadcasting;
  }

  template <class Op>
  static raw_ops::Adapter adapter() {
    if constexpr (requires { Op::kNotCallable; }) {
      return raw_ops::not_callable(Op::kNotCallable);
    } else {
      static_assert(
          requires(const raw_ops::Args& a) { Op::raw(a); },
          "an op registered without its public function declares static raw(const raw_ops::Args&) "
          "or kNotCallable (src/ops/registrar.h)");
      return [](const raw_ops::Args& a) { return Op::raw(a); };
    }
  }

  autodiff::Registry& r_;
};

}  // namespace tapeflow::ops
