// Optimizer base (gradient checks, clipping, slots, iterations) and the clipping functions.

#include "tapeflow/optim/optimizer.h"

#include <cmath>
#include <mutex>

#include "autodiff/tracer.h"
#include "autodiff/variable_handle.h"
#include "core/allocator.h"
#include "core/check.h"
#include "core/parallel.h"
#include "core/tensor_impl.h"
#include "io/restore_hooks.h"
#include "ops/op_util.h"
#include "tapeflow/logging.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow::optimizers {

namespace {

void require_clip_norm(std::string_view op, double clip_norm) {
  TAPEFLOW_REQUIRE(std::isfinite(clip_norm) && clip_norm >= 0, InvalidArgumentError,
                   "[{}] clip_norm must be finite and >= 0, got {}", op, clip_norm);
}

void require_float(std::string_view op, const Tensor& t, std::size_t index) {
  TAPEFLOW_REQUIRE(t.defined(), InvalidArgumentError, "[{}] tensor {} is undefined (default-constructed)", op,
                   index);
  TAPEFLOW_REQUIRE(is_floating(t.dtype()), InvalidArgumentError,
                   "[{}] tensor {} must be float32, float64 or bfloat16, got shape {} and dtype {}", op,
                   index, t.shape().to_string(), dtype_name(t.dtype()));
}

/// The dtype an update computes in for a variable or gradient of dtype `d`: bfloat16 widens to
/// float32 (its slots are float32 too); float32 and float64 compute in their own dtype.
DType compute_dtype(DType d) { return d == DType::BFloat16 ? DType::Float32 : d; }

/// `grad` in compute_dtype (no op for float32 and float64); a bfloat16 variable's is dense.
Gradient widened(const Gradient& grad) {
  if (grad.indexed_slices() != nullptr && grad.indexed_slices()->dtype() != DType::BFloat16) return grad;
  return grad->dtype() == DType::BFloat16 ? cast(*grad, DType::Float32) : *grad;
}

/// The shape and dtype a gradient has, without making a row-sparse one dense.
std::pair<Shape, DType> shape_and_dtype(const Gradient& g) {
  if (const IndexedSlices* rows = g.indexed_slices()) return {rows->dense_shape(), rows->dtype()};
  return {g->shape(), g->dtype()};
}

/// The variable's name without TensorFlow's ":0" output suffix.
std::string base_name(const Variable& v) {
  std::string n = v.name();
  if (n.size() > 2 && n.ends_with(":0")) n.resize(n.size() - 2);
  return n;
}

/// A moved-from Variable in the list is reported before anything is built or updated.
void require_not_moved_from(const std::vector<Variable>& vars, std::string_view optimizer,
                            std::string_view fn) {
  for (std::size_t i = 0; i < vars.size(); ++i)
    TAPEFLOW_REQUIRE(!vars[i].moved_from(), InvalidArgumentError,
                     "[{}] {}: variable {} of {} is a moved-from Variable (std::move gave its state away)",
                     optimizer, fn, i, vars.size());
}

/// sqrt(l2sum) with a finite gradient at l2sum = 0 (TensorFlow's formulation: no sqrt(0) in the
/// graph, whose gradient would be inf).
Tensor safe_sqrt(const Tensor& l2sum) {
  const Tensor positive = l2sum > 0;
  return where(positive, sqrt(where(positive, l2sum, ones_like(l2sum))), l2sum);
}

/// The sum of the squares of `t`'s elements, in float64: a float32 tensor whose elements exceed
/// about 1.8e19 has squares beyond float32's range, and a norm computed in float32 would be inf
/// where the true norm is finite (an exploding gradient, the very case clipping is for, would be
/// zeroed or turned to NaN instead of clipped).
Tensor sum_of_squares64(const Tensor& t) { return reduce_sum(square(cast(t, DType::Float64))); }

/// 1 where norm <= clip_norm, else norm / clip_norm (float64 scalars): what divides a tensor to
/// bring its norm down to clip_norm; NaN for a NaN norm. A divisor, not the factor
/// clip_norm / norm: t / (norm / clip_norm) rounds as TensorFlow's t * clip_norm / norm does
/// for clip_norm 1 (3 / 5 is 0.6, 3 * (1 / 5) is not), and it never divides by a norm of 0,
/// so zeros stay zeros with clip_norm 0 and the gradient stays finite.
Tensor clip_divisor(const Tensor& norm64, double clip_norm) {
  const Tensor within = norm64 <= clip_norm;
  return where(within, ones_like(norm64), norm64 / clip_norm);
}

/// t / divisor64 computed in float64 and rounded once to t's dtype. The divisor rounded to float32
/// first would be inf where norm / clip_norm exceeds float32's range (every value of a float32
/// tensor of norm 4e38 clipped to 1 would become 0). Float64 holds every float32 quotient exactly
/// enough that the one rounding gives the correctly rounded float32 quotient.
Tensor divide_in_float64(const Tensor& t, const Tensor& divisor64) {
  if (t.dtype() == DType::Float64) return t / divisor64;
  return cast(cast(t, DType::Float64) / divisor64, t.dtype());
}

}  // namespace

Tensor clip_by_norm(const Tensor& t, double clip_norm) {
  require_clip_norm("ClipByNorm", clip_norm);
  require_float("ClipByNorm", t, 0);
  // The norm, the divisor and the division in float64: neither the squares, nor t * clip_norm, nor
  // the divisor can overflow where the result is finite.
  return divide_in_float64(t, clip_divisor(safe_sqrt(sum_of_squares64(t)), clip_norm));
}

namespace {

/// The global norm of the present tensors as a float64 scalar (0 if none is present), and the
/// dtype of the first present one (float32 if none).
std::pair<Tensor, DType> global_norm64(const std::vector<Gradient>& tensors, std::string_view op) {
  std::optional<Tensor> total;
  DType dtype = DType::Float32;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i]) continue;
    require_float(op, *tensors[i], i);
    if (!total) dtype = tensors[i]->dtype();
    const Tensor s = sum_of_squares64(*tensors[i]);
    total = total ? *total + s : s;
  }
  if (!total) return {zeros({}, DType::Float64), dtype};
  return {safe_sqrt(*total), dtype};
}

}  // namespace

Tensor global_norm(const std::vector<Gradient>& tensors) {
  const auto [norm64, dtype] = global_norm64(tensors, "GlobalNorm");
  return cast(norm64, dtype);
}

std::pair<std::vector<Gradient>, Tensor> clip_by_global_norm(const std::vector<Gradient>& tensors,
                                                             double clip_norm) {
  require_clip_norm("ClipByGlobalNorm", clip_norm);
  // (global_norm64 checks that each present tensor is a float one.) The divisor and the divisions are in
  // float64: float32 tensors whose global norm, or norm / clip_norm, exceeds float32's range (the norm
  // returned as inf) are still clipped to finite values. (norm - norm) is NaN for an infinite or NaN norm and
  // poisons every value, on purpose, as in TensorFlow.
  const auto [norm64, dtype] = global_norm64(tensors, "ClipByGlobalNorm");
  const Tensor divisor = clip_divisor(norm64, clip_norm) + (norm64 - norm64);
  std::vector<Gradient> clipped;
  clipped.reserve(tensors.size());
  for (const auto& t : tensors) clipped.push_back(t ? Gradient(divide_in_float64(*t, divisor)) : t);
  return {std::move(clipped), cast(norm64, dtype)};
}

LearningRate::LearningRate(std::shared_ptr<const schedules::LearningRateSchedule> schedule)
    : schedule_(std::move(schedule)) {
  TAPEFLOW_REQUIRE(schedule_ != nullptr, InvalidArgumentError,
                   "[LearningRate] the learning-rate schedule is nullptr");
}

Optimizer::Optimizer(std::string name, LearningRate learning_rate, BaseOptions options,
                     std::vector<SlotSpec> slots)
    : name_(std::move(name)),
      learning_rate_(learning_rate.value(),
                     {.name = "learning_rate", .trainable = false, .keras_style = true}),
      schedule_(learning_rate.schedule()),
      base_(options),
      slot_specs_(std::move(slots)),
      iterations_(std::int64_t{0}, {.name = "iterations", .trainable = false, .keras_style = true}) {
  if (!schedule_) set_learning_rate(learning_rate.value());
  const int set = int(base_.clipnorm.has_value()) + int(base_.clipvalue.has_value()) +
                  int(base_.global_clipnorm.has_value());
  TAPEFLOW_REQUIRE(set <= 1, InvalidArgumentError,
                   "[{}] only one of clipnorm, clipvalue and global_clipnorm can be set", name_);
  for (const auto& [what, value] :
       {std::pair{"clipnorm", base_.clipnorm}, std::pair{"clipvalue", base_.clipvalue},
        std::pair{"global_clipnorm", base_.global_clipnorm}})
    TAPEFLOW_REQUIRE(!value || (std::isfinite(*value) && *value > 0), InvalidArgumentError,
                     "[{}] {} must be positive and finite, got {}", name_, what, *value);
  if (base_.weight_decay)
    require_in_range("weight_decay", *base_.weight_decay, 0.0, HUGE_VAL, /*open_hi=*/false);
}

void Optimizer::exclude_from_weight_decay(const std::vector<Variable>& vars,
                                          const std::vector<std::string>& var_names) {
  require_not_moved_from(vars, name_, "exclude_from_weight_decay");
  const std::lock_guard lock(slots_mutex_);
  TAPEFLOW_REQUIRE(slots_.empty(), FailedPreconditionError,
                   "[{}] exclude_from_weight_decay can only be configured before the optimizer is built "
                   "(before its first update or build())",
                   name_);
  for (const Variable& v : vars) decay_excluded_ids_.push_back(v.handle_id());
  decay_excluded_names_.insert(decay_excluded_names_.end(), var_names.begin(), var_names.end());
}

double Optimizer::learning_rate() const {
  if (schedule_) {
    const NoRecordingScope no_recording;  // a look at the rate, not part of any computation
    return (*schedule_)(iterations_.value()).item<double>();
  }
  return learning_rate_.value().item<double>();
}

void Optimizer::set_learning_rate(double learning_rate) {
  require_no_schedule("set_learning_rate");
  TAPEFLOW_REQUIRE(std::isfinite(learning_rate) && learning_rate > 0, InvalidArgumentError,
                   "[{}] learning_rate must be positive and finite, got {}", name_, learning_rate);
  learning_rate_.assign(constant(learning_rate));
}

const Variable& Optimizer::learning_rate_variable() const {
  require_no_schedule("learning_rate_variable");
  return learning_rate_;
}

void Optimizer::require_no_schedule(std::string_view fn) const {
  TAPEFLOW_REQUIRE(!schedule_, FailedPreconditionError,
                   "[{}] {}: this optimizer was built with a learning-rate schedule ({}), which computes "
                   "the rate from iterations() at each update; it has no learning-rate variable to set",
                   name_, fn, schedule_->name());
}

std::pair<Tensor, Tensor> Optimizer::step_inputs() const {
  // Not recorded on a tape that may be recording around us (minimize computes these before its
  // backward pass).
  const NoRecordingScope no_recording;
  // t = iterations + 1 (exact in float64 below 2^53 steps)
  const Tensor learning_rate = schedule_ ? (*schedule_)(iterations_.value()) : learning_rate_.value();
  return {learning_rate, cast(iterations_.value() + 1, DType::Float64)};
}

void Optimizer::require_in_range(std::string_view what, double value, double lo, double hi,
                                 bool open_hi) const {
  TAPEFLOW_REQUIRE(std::isfinite(value) && value >= lo && (open_hi ? value < hi : value <= hi),
                   InvalidArgumentError, "[{}] {} must be in [{}, {}{}, got {}", name_, what, lo, hi,
                   open_hi ? ")" : "]", value);
}

Optimizer::Slots Optimizer::slots_for(const Variable& var) {
  // Threads sharing the optimizer create slots concurrently: the lookup, the unique name and the
  // insertion are one step under the lock, and the caller gets the slot handles, not a reference
  // into slots_ that another thread's insertion could move.
  const std::lock_guard lock(slots_mutex_);
  if (auto it = slot_index_.find(var.handle_id()); it != slot_index_.end()) return slots_[it->second];
  // A unique prefix: "kernel", then "kernel_1", "kernel_2", ... for later variables of that name.
  const std::string base = base_name(var);
  std::string unique = base;
  for (int k = 1;; ++k) {
    bool taken = false;
    for (const Slots& s : slots_) taken = taken || s.name == unique;
    if (!taken) break;
    unique = fmt::format("{}_{}", base, k);
  }
  Slots s{unique, {}, weight_decay() > 0};
  for (const std::string& excluded : decay_excluded_names_)
    s.decays = s.decays && var.name().find(excluded) == std::string::npos;
  for (TensorId id : decay_excluded_ids_) s.decays = s.decays && id != var.handle_id();
  for (const SlotSpec& slot : slot_specs_)
    s.slots.emplace_back(
        fill(var.shape(), slot.initial_value, compute_dtype(var.dtype())),
        VariableOptions{.name = unique + "/" + slot.name, .trainable = false, .keras_style = true});
  // A bfloat16 variable's float32 working copy (see update()), kept here rather than made per step:
  // a traced step captures the variables it assigns, and must find this one alive at every call.
  if (var.dtype() == DType::BFloat16)
    s.slots.emplace_back(
        zeros(var.shape(), DType::Float32),
        VariableOptions{.name = unique + "/float32", .trainable = false, .keras_style = true});
  slot_index_.emplace(var.handle_id(), slots_.size());
  slots_.push_back(std::move(s));
  detail::restore_new_optimizer_slots(*this, slots_.back().slots);
  return slots_.back();
}

void Optimizer::require_float_variable(const Variable& v) const {
  TAPEFLOW_REQUIRE(
      is_floating(v.dtype()), InvalidArgumentError,
      "[{}] can only optimize float32, float64 or bfloat16 variables; '{}' has shape {} and dtype {}", name_,
      v.name(), v.shape().to_string(), dtype_name(v.dtype()));
}

void Optimizer::update_step_rows(const IndexedSlices& grad, Variable& var, std::span<Variable> slots,
                                 const Tensor& learning_rate, const Tensor& step) {
  update_step(grad.to_dense(), var, slots, learning_rate, step);
}

std::pair<Tensor, Tensor> Optimizer::distinct_rows(const IndexedSlices& grad) {
  constexpr std::string_view op = "distinct_rows";
  const Tensor& indices = grad.indices();
  const Tensor& values = grad.values();
  const std::int64_t n = indices.num_elements(), height = grad.dense_shape()[0];
  const std::int64_t width = n == 0 ? 0 : values.num_elements() / n;
  // Each row's place in first-seen order (-1: not seen): a table over the rows, not a hash, as
  // the ids of a batch are many and the table's rows few enough to be a tensor.
  auto place = detail::scratch_array<std::int64_t>(height, op);
  std::fill_n(place.get(), height, -1);
  std::vector<std::int64_t> rows, at(static_cast<std::size_t>(n));
  std::vector<char> first(static_cast<std::size_t>(n), 0);  // the row's first id: its sum starts there
  const auto first_seen = [&]<class I>() {
    const I* idx = indices.values<I>().data();
    for (std::int64_t p = 0; p < n; ++p) {
      std::int64_t& k = place[static_cast<std::size_t>(idx[p])];
      if (k < 0) {
        k = static_cast<std::int64_t>(rows.size());
        rows.push_back(idx[p]);
        first[static_cast<std::size_t>(p)] = 1;
      }
      at[static_cast<std::size_t>(p)] = k;
    }
  };
  if (indices.dtype() == DType::Int32)
    first_seen.operator()<std::int32_t>();
  else
    first_seen.operator()<std::int64_t>();
  std::vector<std::int64_t> dims = {static_cast<std::int64_t>(rows.size())};
  for (int d = 1; d < grad.dense_shape().rank(); ++d) dims.push_back(grad.dense_shape()[d]);
  Tensor sums = detail::empty(Shape::checked(dims, op), values.dtype(), op);
  // Each row's values added in order from zero (0 + v, not v: -0 becomes +0), the sums GatherGrad
  // and to_dense() make.
  ops::visit_floating(values.dtype(), [&]<class T>() {
    const T* src = values.values<T>().data();
    T* dst = detail::mutable_data<T>(sums);
    cpu::parallel_for(width, cpu::kParallelGrain / std::max<std::int64_t>(n, 1) + 1,
                      [&](std::int64_t c0, std::int64_t c1) {
                        for (std::int64_t p = 0; p < n; ++p) {
                          const T* s = src + p * width;
                          T* d = dst + at[static_cast<std::size_t>(p)] * width;
                          if (first[static_cast<std::size_t>(p)])
                            for (std::int64_t c = c0; c < c1; ++c) d[c] = T(0) + s[c];
                          else
                            for (std::int64_t c = c0; c < c1; ++c) d[c] += s[c];
                        }
                      });
  });
  return {constant(rows), sums};
}

void Optimizer::assign_rows(Variable& var, const Tensor& indices, const Tensor& rows) {
  detail::assign_rows(var, indices, rows);
}

void Optimizer::update(const Gradient& grad, Variable& var, const Tensor& learning_rate, const Tensor& step) {
  Slots state = slots_for(var);
  std::vector<Variable>& slots = state.slots;
  const std::span<Variable> named(slots.data(), slot_specs_.size());
  // Keras 3's decoupled weight decay, before the update: w -= w * (lr * weight_decay), the factor
  // computed in float64 (lr is) and rounded once to the variable's dtype.
  const auto decay = [&](Variable& w) {
    if (state.decays) w.assign_sub(w.value() * cast(learning_rate * weight_decay(), w.dtype()));
  };
  // Rows stay rows where nothing needs the dense gradient: clipping by norm or value changes all
  // of it, a bfloat16 variable is updated through a dense working copy, and a trace keeps only
  // whole-variable assignments.
  const IndexedSlices* rows = grad.indexed_slices();
  if (rows != nullptr && var.dtype() != DType::BFloat16 && !base_.clipnorm && !base_.clipvalue &&
      autodiff::t_tracer == nullptr) {
    decay(var);
    update_step_rows(*rows, var, named, learning_rate, step);
    return;
  }
  const Tensor clipped = clip_one(*grad);
  if (var.dtype() != DType::BFloat16) {
    decay(var);
    update_step(clipped, var, named, learning_rate, step);
    return;
  }
  // The step runs in float32 on a float32 copy of the variable (with float32 slots), and its result
  // is rounded to bfloat16 once: each op of the update rounded to bfloat16 would lose Adam's and
  // RMSprop's second moments (v += (g^2 - v) * 0.001 is below bfloat16's 8-bit precision). The copy
  // is assigned from the variable at every step, so it carries nothing from one step to the next.
  Variable& wide = slots.back();
  wide.assign(cast(var.value(), DType::Float32));
  decay(wide);
  update_step(clipped, wide, named, learning_rate, step);
  var.assign(cast(wide.value(), DType::BFloat16));
}

void Optimizer::build(const std::vector<Variable>& vars) {
  require_not_moved_from(vars, name_, "build");
  for (const Variable& v : vars) {
    require_float_variable(v);
    (void)slots_for(v);
  }
}

void Optimizer::report_missing(const std::vector<Variable>& vars, const std::vector<char>& present) const {
  std::vector<std::string> names, missing;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    names.push_back(fmt::format("'{}'", vars[i].name()));
    if (!present[i]) missing.push_back(names.back());
  }
  if (missing.size() == vars.size())
    throw InvalidArgumentError(
        fmt::format("[{}] No gradients provided for any variable: ([{}],)", name_, fmt::join(names, ", ")));
  if (!missing.empty())
    log(LogLevel::Warning,
        fmt::format("[{}] Gradients do not exist for variables [{}] when minimizing the loss; "
                    "they are not updated",
                    name_, fmt::join(missing, ", ")));
}

Tensor Optimizer::clip_one(const Tensor& grad) const {
  if (base_.clipnorm) return clip_by_norm(grad, *base_.clipnorm);
  if (base_.clipvalue) return clip_by_value(grad, -*base_.clipvalue, *base_.clipvalue);
  return grad;
}

void Optimizer::apply_gradients(const std::vector<Gradient>& grads, const std::vector<Variable>& vars) {
  TAPEFLOW_REQUIRE(
      grads.size() == vars.size(), InvalidArgumentError,
      "[{}] apply_gradients got {} gradients for {} variables; pass one gradient (or std::nullopt) "
      "per variable",
      name_, grads.size(), vars.size());
  // Check everything before the first assignment, so a bad call changes nothing.
  require_not_moved_from(vars, name_, "apply_gradients");
  std::vector<std::size_t> present;
  std::vector<char> has_gradient(vars.size(), 0);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i]) continue;
    const auto [shape, dtype] = shape_and_dtype(grads[i]);
    const Variable& v = vars[i];
    require_float_variable(v);
    TAPEFLOW_REQUIRE(
        shape == v.shape() && dtype == v.dtype(), InvalidArgumentError,
        "[{}] the gradient for variable '{}' has shape {} and dtype {}, but the variable has shape {} "
        "and dtype {}",
        name_, v.name(), shape.to_string(), dtype_name(dtype), v.shape().to_string(), dtype_name(v.dtype()));
    present.push_back(i);
    has_gradient[i] = 1;
  }
  report_missing(vars, has_gradient);

  // Neither the clipping nor the update belongs on a tape that may be recording around us.
  const NoRecordingScope no_recording;
  std::vector<Gradient> g;
  g.reserve(present.size());
  for (std::size_t i : present) g.push_back(widened(grads[i]));
  if (base_.global_clipnorm) g = clip_by_global_norm(g, *base_.global_clipnorm).first;
  const auto [learning_rate, step] = step_inputs();
  for (std::size_t k = 0; k < present.size(); ++k) {
    Variable var = vars[present[k]];
    update(g[k], var, learning_rate, step);
  }
  iterations_.assign_add(constant(std::int64_t{1}));
}

void Optimizer::minimize(const Tensor& loss, const std::vector<Variable>& vars, GradientTape& tape) {
  TAPEFLOW_REQUIRE(loss.defined(), InvalidArgumentError,
                   "[{}] minimize: the loss is an undefined (default-constructed) Tensor", name_);
  if (base_.global_clipnorm) {  // the norm needs every gradient: nothing to fuse
    apply_gradients(tape.gradient(loss, vars), vars);
    return;
  }
  require_not_moved_from(vars, name_, "minimize");
  build(vars);  // checks the dtypes, then creates the slots in list order (names never depend on
                // the order the pass finishes the gradients in)
  // Not a structured binding: clang 14 cannot capture one in the lambda below.
  const auto inputs = step_inputs();
  const Tensor& learning_rate = inputs.first;
  const Tensor& step = inputs.second;
  std::vector<char> has_gradient(vars.size(), 0);
  const std::vector<Source> sources(vars.begin(), vars.end());
  for_each_gradient(tape, loss, sources, [&](std::size_t i, Gradient g) {
    if (!g) return;
    // Not recorded on a tape that may be recording around us, as in apply_gradients.
    const NoRecordingScope no_recording;
    Variable var = vars[i];
    update(widened(g), var, learning_rate, step);
    has_gradient[i] = 1;
  });
  report_missing(vars, has_gradient);
  iterations_.assign_add(constant(std::int64_t{1}));
}

std::vector<std::pair<std::string, Variable>> Optimizer::variables() const {
  std::vector<std::pair<std::string, Variable>> out{{"iterations", iterations_}};
  const std::lock_guard lock(slots_mutex_);
  for (const Slots& s : slots_)
    for (std::size_t j = 0; j < slot_specs_.size(); ++j)  // not a bfloat16 variable's working copy
      out.emplace_back(s.name + "/" + slot_specs_[j].name, s.slots[j]);
  return out;
}

Variable Optimizer::slot(const Variable& var, std::string_view slot) const {
  const std::lock_guard lock(slots_mutex_);
  auto it = slot_index_.find(var.handle_id());
  TAPEFLOW_REQUIRE(it != slot_index_.end(), InvalidArgumentError,
                   "[{}] variable '{}' has no slots yet: it has not been updated or built", name_,
                   var.name());
  std::vector<std::string> names;
  for (std::size_t j = 0; j < slot_specs_.size(); ++j) {
    if (slot_specs_[j].name == slot) return slots_[it->second].slots[j];
    names.push_back(slot_specs_[j].name);
  }
  throw InvalidArgumentError(
      fmt::format("[{}] has no slot '{}'; its slots are [{}]", name_, slot, fmt::join(names, ", ")));
}

}  // namespace tapeflow::optimizers
