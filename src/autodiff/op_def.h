#pragma once
// OpDef: the runtime description of one op type, and the registry that owns all of them.
// An op's C++ struct (kName, kSaves, backward) lives in its family file under src/ops/; the
// registry turns it into an OpDef once, and the tape stores a pointer to that OpDef.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/registry.h"

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

class JvpContext;
/// An op's forward-mode rule: output tangents (one per output; undefined means zero) from input
/// tangents. Ops without one get their JVP from their gradient (see forward_accumulator.cpp).
using JvpFunction = std::vector<Tensor> (*)(const JvpContext&);

struct GradientEntry {
  GradientStatus status = GradientStatus::Missing;
  GradientFunction fn;
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
  /// Defines a built-in op with its gradient; throws InternalError on a duplicate name.
  void define(std::string_view name, Saves saves, GradientFunction grad);
  /// Defines a built-in op that has no gradient by design (argmax, comparisons, StopGradient).
  void define_non_differentiable(std::string_view name);
  /// Defines a built-in op whose gradient is deliberately not registered (AdjustContrastv2).
  void define_without_gradient(std::string_view name);

  /// The OpDef for `name`, created (status Missing) if no op of that name exists yet.
  OpDef& get(std::string_view name);
  std::vector<std::pair<std::string, GradientStatus>> list() const;

  template <class Op>
  void add() {
    define(Op::kName, Op::kSaves, &Op::backward);
    if constexpr (requires { &Op::jvp; }) get(Op::kName).jvp = &Op::jvp;
    if constexpr (requires { Op::kBatchable; }) get(Op::kName).batchable = Op::kBatchable;
  }
  template <class Op>
  void add_non_differentiable() {
    define_non_differentiable(Op::kName);
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

/// The OpDef of a built-in op struct, looked up once.
template <class Op>
const OpDef& op_def() {
  static const OpDef& def = registry().get(Op::kName);
  return def;
}

}  // namespace tapeflow::autodiff
