#pragma once
// OpDef: the runtime description of one op type, and the registry that owns all of them.
// An op's C++ struct (kName, kSaves, backward) lives in its family file under src/ops/; the
// registry turns it into an OpDef once, and the tape stores a pointer to that OpDef.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "autodiff/attr_codec.h"
#include "autodiff/batching.h"
#include "tapeflow/registry.h"

namespace tapeflow::cpu {
struct BlockOp;  // kernels/cpu/block_op.h
}  // namespace tapeflow::cpu

namespace tapeflow::autodiff {

/// Which forward values an op's gradient reads, as bitmasks over input and output positions.
/// The tape keeps exactly these (TensorFlow's per-op unused-input/output tables): a ReLU keeps its
/// output, an Add keeps nothing. `kAllInputs` covers variadic ops.
struct Saves {
  std::uint32_t inputs = 0;
  std::uint32_t outputs = 0;
  static constexpr std::uint32_t kAllInputs = 0xFFFFFFFFu;
  bool input(int i) const { return i >= 32 ? inputs == kAllInputs : ((inputs >> i) & 1u) != 0; }
  bool output(int i) const { return i < 32 && ((outputs >> i) & 1u) != 0; }
};
inline constexpr Saves kSavesNothing{};
inline constexpr Saves kSavesInputs{Saves::kAllInputs, 0};
inline constexpr Saves kSavesOutput{0, 1};

/// Runs an op's forward on tensors with its typed attributes (nullptr for an op without them),
/// without the dispatch path: how a traced graph replays a node (src/function). The op's
/// `check_attrs`, where it declares one, checks the attributes against the inputs first (a node's
/// come from a file or a size template, not from the public function).
using ForwardFunction = std::vector<Tensor> (*)(const void* attrs, std::span<const Tensor> inputs);

/// The ForwardFunction of an op struct, from the shape of its `forward`: (Attrs, span) -> vector
/// for list ops, else (Attrs?, const Tensor&...) -> Tensor.
template <class Op>
std::vector<Tensor> forward_entry(const void* attrs, std::span<const Tensor> in);

/// How many outputs an op's forward gives with these attributes, where that is known before it
/// runs: a function file's reader checks each node's output list against it.
using OutputCountFunction = std::size_t (*)(const void* attrs);

/// The OutputCountFunction of an op struct, or nullptr where the count depends on the inputs
/// (Unpack: a dimension's size). A forward returning one Tensor gives 1; a list forward declares
/// `static constexpr std::size_t kOutputs` or `static std::size_t num_outputs(const Attrs&)`.
template <class Op>
constexpr OutputCountFunction output_count_of();

/// How many inputs an op's forward takes, where its shape fixes the count: a forward of tensors
/// (after its attributes, if any) takes one per parameter; nullopt for a list forward (ConcatV2,
/// AddN), which checks its list when it runs. A function file's reader checks each node's input
/// list against it.
template <class Op>
constexpr std::optional<std::size_t> input_count_of();

/// How an op takes bfloat16 inputs (docs/design/bfloat16.md, "How each op takes bfloat16"). An op struct may
/// declare `static constexpr BFloat16Support kBFloat16 = ...;`; without it an elementwise op or reduction
/// (one declaring kElement, kArray or kBlock, block_op.h) computes through float32 and any other
/// op has none.
enum class BFloat16Support : std::uint8_t {
  kNone,            // InvalidArgumentError naming the op and the tensor
  kThroughFloat32,  // bfloat16 inputs widened to float32, the float32 forward, float32 outputs
                    // rounded to bfloat16
  kNative,          // the forward computes bfloat16 itself (Cast, the products, shape ops)
};
template <class Op>
constexpr BFloat16Support bfloat16_support() {
  if constexpr (requires { Op::kBFloat16; })
    return Op::kBFloat16;
  else if constexpr (
      requires { Op::kElement; } || requires { Op::kArray; } || requires { Op::kBlock; })
    return BFloat16Support::kThroughFloat32;
  else
    return BFloat16Support::kNone;
}

// AttrsCodec (attr_codec.h): how a graph compares, hashes, writes and reads an op's typed
// attributes; built once per Attrs type. nullptr for an op without attributes.

class JvpContext;
/// An op's forward-mode rule: output tangents (one per output; undefined means zero) from input
/// tangents. Ops without one get their JVP from their gradient (see forward_accumulator.cpp).
using JvpFunction = std::vector<Tensor> (*)(const JvpContext&);

struct GradientEntry {
  GradientStatus status = GradientStatus::Missing;
  GradientFunction fn;
  /// The gradient calls code the user wrote (register_gradient's function, custom_gradient's
  /// closure, recompute_grad's block), which may read any variable when the pass runs it, also one
  /// that is no input of the record: an observed pass reports no source final before such a
  /// record has run (BackwardObserver::source_final), so that a fused optimizer step never updates
  /// a variable that code is still to read. tapeflow's own gradients read only their record.
  bool runs_user_code = false;
  /// The gradient is dy itself (Identity, a variable's read; `kGradientIsDy` in an op's struct): a
  /// row-sparse dy (IndexedSlices) passes to the input as it is, never made dense. An entry that
  /// register_gradient replaces it with does not have it.
  bool is_dy = false;
};

class OpDef {
 public:
  OpDef(std::string name, Saves saves) : name_(std::move(name)), saves_(saves) {}
  const std::string& name() const { return name_; }
  Saves saves() const { return saves_; }
  std::shared_ptr<const GradientEntry> gradient() const { return gradient_.load(); }
  void set_gradient(std::shared_ptr<const GradientEntry> g) { gradient_.store(std::move(g)); }
  /// True for ops defined by tapeflow (as opposed to names only mentioned by register_gradient).
  bool builtin = false;
  /// The op's own JVP rule, or nullptr to derive the JVP from the gradient.
  JvpFunction jvp = nullptr;
  /// The gradient accepts cotangents with extra leading batch dimensions (see
  /// GradContext::batch_rank), so a Jacobian can push many cotangents through it at once.
  bool batchable = false;
  /// An op of tf::function's graphs (PartitionedCall, If, While, ...), defined on first use by
  /// src/function: not an op family's, not callable through raw_ops, tested in tests/function, so
  /// registered_ops() (the op families' coverage) does not list it.
  bool graph_op = false;
  /// The op's forward without the dispatch path, or nullptr for ops only the core runs
  /// (ReadVariableOp, CustomGradient, RecomputeGrad).
  ForwardFunction forward = nullptr;
  /// Its output count for given attributes, or nullptr where only running it tells
  /// (output_count_of).
  OutputCountFunction output_count = nullptr;
  /// Its input count where the shape of its forward fixes it, else nullopt (input_count_of).
  std::optional<std::size_t> input_count;
  /// The codec of the op's Attrs (nullptr: the op has none, or they cannot be compared or
  /// written, such as CustomGradient's closure).
  const AttrsCodec* attrs_codec = nullptr;
  /// The op changes state beyond its outputs (an If or While whose branches assign variables, a
  /// collective that other ranks take part in; `kStateful` in an op's struct):
  /// the graph passes never remove, merge or fold one of its nodes.
  bool stateful = false;
  /// The op's elementwise kernel over a block of elements, as the fusion pass runs it inside a
  /// fused kernel (kernels/cpu/block_op.h, set by the op's registration from its struct), or
  /// nullptr for an op that is not elementwise (or a reduction a fused kernel can end with).
  const cpu::BlockOp* block = nullptr;
  /// How the op takes bfloat16 inputs: set from its struct with `forward`; the graph ops pass
  /// them to the ops inside, which decide.
  BFloat16Support bfloat16 = BFloat16Support::kNone;
  /// How tf::vectorized_map runs the op once for a batch (batching.h): the struct's `batch`, or
  /// batch_broadcasting for an elementwise op without attributes; nullptr: once per element.
  BatchFunction batch = nullptr;

 private:
  std::string name_;
  Saves saves_;
  std::atomic<std::shared_ptr<const GradientEntry>> gradient_{std::make_shared<GradientEntry>()};
};

/// Checks what a user's gradient function returned (register_gradient, custom_gradient): each
/// gradient the tape will use must be a defined tensor of its input's shape (with the
/// cotangents' batch dimensions) and dtype. The user's mistake is an InvalidArgumentError naming
/// the op, the input (`input_name(i)`) and both shapes and dtypes, raised before the tape's own
/// check (an InternalError, for tapeflow's gradients). The count is the caller's to check first;
/// only the first min(grads, inputs) are looked at.
void check_user_gradients(const GradContext& c, const Grads& grads, std::string_view function,
                          const std::function<std::string(int)>& input_name);

class Registry {
 public:
  /// Defines a built-in op with its gradient (GradientEntry::runs_user_code as given); throws
  /// InternalError on a duplicate name.
  void define(std::string_view name, Saves saves, GradientFunction grad, bool runs_user_code = false);
  /// Defines a built-in op that has no gradient by design (argmax, comparisons, StopGradient).
  void define_non_differentiable(std::string_view name);
  /// Defines a built-in op whose gradient is deliberately not registered (AdjustContrastv2).
  void define_without_gradient(std::string_view name);

  /// The OpDef for `name`, created (status Missing) if no op of that name exists yet.
  OpDef& get(std::string_view name);
  std::vector<std::pair<std::string, GradientStatus>> list() const;

  template <class Op>
  void add() {
    if constexpr (requires { Op::kGradientRunsUserCode; })
      define(Op::kName, Op::kSaves, &Op::backward, Op::kGradientRunsUserCode);
    else
      define(Op::kName, Op::kSaves, &Op::backward);
    if constexpr (requires { Op::kGradientIsDy; }) {
      auto entry = std::make_shared<GradientEntry>(*get(Op::kName).gradient());
      entry->is_dy = Op::kGradientIsDy;
      get(Op::kName).set_gradient(std::move(entry));
    }
    if constexpr (requires { &Op::jvp; }) get(Op::kName).jvp = &Op::jvp;
    if constexpr (requires { Op::kBatchable; }) get(Op::kName).batchable = Op::kBatchable;
    if constexpr (requires { Op::kStateful; }) get(Op::kName).stateful = Op::kStateful;
    set_forward<Op>();
  }
  template <class Op>
  void add_non_differentiable() {
    define_non_differentiable(Op::kName);
    set_forward<Op>();
  }
  template <class Op>
  void set_forward() {
    if constexpr (requires { &Op::forward; }) {
      OpDef& def = get(Op::kName);
      def.forward = &forward_entry<Op>;
      def.output_count = output_count_of<Op>();
      def.input_count = input_count_of<Op>();
      def.bfloat16 = bfloat16_support<Op>();
      // Generated from the Attrs struct; a field type it cannot encode does not compile.
      def.attrs_codec = attrs_codec_of<Op>();
    }
    if constexpr (requires { &Op::batch; }) get(Op::kName).batch = &Op::batch;
  }

 private:
  friend Registry& registry();
  Registry();
  OpDef& insert(std::string_view name, Saves saves);
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<OpDef>> ops_;
};

/// The process-wide registry, with every built-in op family registered on first use.
Registry& registry();

namespace forward_detail {
template <class F>
struct Signature;
template <class R, class First, class... Rest>
struct Signature<R (*)(First, Rest...)> {
  using Result = R;
  using FirstArg = std::remove_cvref_t<First>;
  static constexpr std::size_t kArity = 1 + sizeof...(Rest);
};

/// Throws InvalidArgumentError unless a graph node gives the op as many inputs as its forward
/// takes (a file forged with a valid checksum must not make forward read past its inputs).
void require_arity(std::string_view op, std::size_t given, std::size_t arity);

/// Whether an input is a bfloat16 tensor. Inline: a graph's elementwise node asks it every run.
inline bool any_bfloat16(std::span<const Tensor> in) {
  for (const Tensor& t : in)
    if (t.dtype() == DType::BFloat16) return true;
  return false;
}
/// The inputs with each bfloat16 tensor widened to float32. Throws InvalidArgumentError naming
/// `op` if bfloat16 operands meet float32 or float64 ones (no implicit casting).
std::vector<Tensor> widen_bfloat16(std::string_view op, std::span<const Tensor> in);
/// Rounds each float32 output to bfloat16 (others, bool results of comparisons, stay).
void narrow_to_bfloat16(std::vector<Tensor>& outputs);
/// An elementwise op's bfloat16 result computed block by block: each block of the inputs widened
/// in L1, the op's float32 block kernel (`op.block`), the block rounded into the output, so no
/// float32 copy of a whole operand is made. For an op without attributes whose result has its
/// inputs' shape and is not bool. Empty where that does not apply (inputs not all bfloat16 of one
/// shape, a reduction): the caller widens whole tensors.
std::optional<Tensor> bfloat16_blockwise(const OpDef& op, std::span<const Tensor> in);

/// Whether Op's per-element function returns bool (a comparison) for float operands.
template <class Op>
constexpr bool element_returns_bool() {
  if constexpr (requires { Op::kElement(1.f); })
    return std::is_same_v<decltype(Op::kElement(1.f)), bool>;
  else if constexpr (requires { Op::kElement(1.f, 1.f); })
    return std::is_same_v<decltype(Op::kElement(1.f, 1.f)), bool>;
  else if constexpr (requires { Op::kElement(1.f, 1.f, 1.f); })
    return std::is_same_v<decltype(Op::kElement(1.f, 1.f, 1.f)), bool>;
  else
    return false;
}

/// The typed attributes behind a node's pointer; an empty Attrs type is never stored.
template <class Attrs>
const Attrs& attrs_at(const void* attrs) {
  if constexpr (std::is_empty_v<Attrs>) {
    static constexpr Attrs kNone{};
    return kNone;
  } else {
    return *static_cast<const Attrs*>(attrs);
  }
}
}  // namespace forward_detail

template <class Op>
const OpDef& op_def();

template <class Op>
std::vector<Tensor> forward_entry(const void* attrs, std::span<const Tensor> in) {
  using Sig = forward_detail::Signature<decltype(&Op::forward)>;
  using First = typename Sig::FirstArg;
  if constexpr (bfloat16_support<Op>() == BFloat16Support::kThroughFloat32) {
    if (forward_detail::any_bfloat16(in)) [[unlikely]] {
      // Blockwise only for an op without attributes: one with them (BroadcastTo) may give its
      // output another shape than its inputs'.
      if constexpr (std::is_same_v<First, Tensor> && !forward_detail::element_returns_bool<Op>()) {
        if (std::optional<Tensor> y = forward_detail::bfloat16_blockwise(op_def<Op>(), in))
          return {std::move(*y)};
      }
      std::vector<Tensor> out = forward_entry<Op>(attrs, forward_detail::widen_bfloat16(Op::kName, in));
      forward_detail::narrow_to_bfloat16(out);
      return out;
    }
  }
  // A graph node's attributes come from a file or a size template, not from the op's public
  // function, which is what normalises and checks them for the forward: an op whose forward
  // trusts an axis, a size or a shape in them declares `check_attrs`, taking what the forward
  // takes, and it runs first (after the input count, for fixed-arity ops).
  if constexpr (std::is_same_v<typename Sig::Result, std::vector<Tensor>>) {
    const First& a = forward_detail::attrs_at<First>(attrs);
    if constexpr (requires { &Op::check_attrs; }) Op::check_attrs(a, in);
    return Op::forward(a, in);
  } else if constexpr (!std::is_same_v<First, Tensor>) {
    forward_detail::require_arity(Op::kName, in.size(), *input_count_of<Op>());
    const First& a = forward_detail::attrs_at<First>(attrs);
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (requires { &Op::check_attrs; }) Op::check_attrs(a, in[I]...);
      return std::vector<Tensor>{Op::forward(a, in[I]...)};
    }
    (std::make_index_sequence<*input_count_of<Op>()>{});
  } else {
    forward_detail::require_arity(Op::kName, in.size(), *input_count_of<Op>());
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return std::vector<Tensor>{Op::forward(in[I]...)};
    }
    (std::make_index_sequence<*input_count_of<Op>()>{});
  }
}

template <class Op>
constexpr OutputCountFunction output_count_of() {
  using Sig = forward_detail::Signature<decltype(&Op::forward)>;
  if constexpr (requires { &Op::num_outputs; })
    return [](const void* attrs) {
      return Op::num_outputs(forward_detail::attrs_at<typename Sig::FirstArg>(attrs));
    };
  else if constexpr (requires { Op::kOutputs; })
    return [](const void*) { return Op::kOutputs; };
  else if constexpr (std::is_same_v<typename Sig::Result, Tensor>)
    return [](const void*) { return std::size_t{1}; };
  else
    return nullptr;
}

template <class Op>
constexpr std::optional<std::size_t> input_count_of() {
  using Sig = forward_detail::Signature<decltype(&Op::forward)>;
  if constexpr (std::is_same_v<typename Sig::Result, std::vector<Tensor>>)
    return std::nullopt;
  else if constexpr (std::is_same_v<typename Sig::FirstArg, Tensor>)
    return Sig::kArity;
  else
    return Sig::kArity - 1;  // the attributes come first
}

/// The OpDef of a built-in op struct, looked up once.
template <class Op>
const OpDef& op_def() {
  static const OpDef& def = registry().get(Op::kName);
  return def;
}

}  // namespace tapeflow::autodiff
