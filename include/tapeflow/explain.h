#pragma once
/// \file explain.h
/// Why is my gradient None (or zero)? The answers of tf::debug::explain and tf::debug::gradient_report
/// (debug.h).
///
///   tf::Variable w(2.0f, {.name = "w", .trainable = false});
///   tf::GradientTape tape;
///   tf::Tensor y = w * w;
///   std::cout << tf::debug::explain(tape, y, w).to_string() << "\n";
///   // no gradient: variable w:0 is not trainable, so the tape does not watch it; ...
///
/// explain() mirrors gradient() exactly: it says None where gradient() returns a missing
/// Gradient, names the op where gradient() would raise LookupError, and for a connected source
/// shows the path (target <- op <- ... <- source) and whether the gradient is exactly zero
/// everywhere.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/dtype.h"
#include "tapeflow/shape.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// What tf::debug::explain found. The first two have a gradient; every other one is a reason
/// why gradient() returns a missing Gradient (or, for NoGradientRegistered, raises LookupError).
enum class GradientCause {
  Connected,                    ///< a gradient flows; `path` shows one path
  ZeroGradient,                 ///< a gradient flows but is exactly zero everywhere; `op` made it zero
  TensorNotWatched,             ///< the source is a plain tensor the tape does not watch
  VariableNotTrainable,         ///< the source is a variable with trainable = false
  AccessedVariablesNotWatched,  ///< the tape has watch_accessed_variables = false and no watch(v)
  SourceNotUsed,                ///< watched, but no recorded op on the way to the target used it
  StopGradient,                 ///< the path goes through stop_gradient (`op`)
  NonDifferentiableOp,          ///< the path goes through an op declared no_gradient (`op`)
  IntegerDtype,                 ///< the path goes through an integer/bool tensor made by `producer`
  StatefulUpdate,               ///< the path goes through a variable assignment (`op`, `variable`)
  TargetBeforeTape,             ///< the target was computed before the tape was created
  RecordingPaused,              ///< the target was computed while the tape's recording was paused
  TargetOnAnotherTape,          ///< the target was recorded by another tape, not this one
  TargetOnAnotherThread,        ///< the target was computed on another thread
  SourceCreatedAfterTarget,     ///< the source did not exist when the target was computed
  NoGradientRegistered,         ///< gradient() raises LookupError: `op` has no registered gradient
};

/// The cause's name as written above ("StopGradient").
std::string_view to_string(GradientCause cause);

/// tf::debug::explain's answer for one (target, source) pair.
struct GradientDiagnosis {
  /// What explain() found; the fields below say more for some causes.
  GradientCause cause = GradientCause::SourceNotUsed;
  /// The source as the message names it: a variable's name ("w:0") or "source".
  std::string source;
  /// Whether the source is a Variable (else a tensor).
  bool source_is_variable = false;
  /// The op where the path breaks (StopGradient, NonDifferentiableOp, StatefulUpdate,
  /// NoGradientRegistered), where the gradient became zero (ZeroGradient), or the op that first
  /// used the integer tensor (IntegerDtype; empty if the integer tensor is the target itself).
  std::string op;
  /// IntegerDtype: the op that produced the integer/bool tensor (e.g. "Cast", "ArgMax"), or
  /// empty when the source itself has an integer dtype.
  std::string producer;
  /// IntegerDtype: that tensor's dtype.
  std::optional<DType> dtype;
  /// StatefulUpdate: the variable that was assigned.
  std::string variable;
  /// Connected and ZeroGradient: the ops of one path from the target back to the source, target
  /// side first (`target <- path[0] <- path[1] <- ... <- source`). Empty when target is source.
  std::vector<std::string> path;
  /// SourceNotUsed: whether the target itself was made by an op this tape recorded (false: it was
  /// computed from values the tape does not track, such as constants or a round trip through
  /// host memory).
  bool target_recorded = true;

  /// Whether gradient() returns a tensor (Connected or ZeroGradient).
  bool has_gradient() const {
    return cause == GradientCause::Connected || cause == GradientCause::ZeroGradient;
  }
  /// One readable line: what happened and how to fix it.
  std::string to_string() const;
};

/// Thresholds of gradient_report's flags.
struct GradientReportOptions {
  /// Vanishing: norm <= max(relative_vanishing * ||variable||, absolute_vanishing).
  double relative_vanishing = 1e-7;
  /// The absolute floor of the vanishing test above.
  double absolute_vanishing = 1e-12;
  /// Exploding: norm > exploding, or a NaN/Inf in the gradient.
  double exploding = 1e3;
};

/// One variable's line of a GradientReport.
struct GradientReportRow {
  /// The variable's name ("w:0").
  std::string name;
  /// The variable's shape.
  Shape shape;
  /// L2 norm of the gradient (std::nullopt: no gradient; see `why`).
  std::optional<double> norm;
  /// L2 norm of the variable's value: the scale of the relative vanishing test.
  double variable_norm = 0;
  /// The gradient's norm is at or below the vanishing threshold (GradientReportOptions).
  bool vanishing = false;
  /// The gradient's norm is above GradientReportOptions::exploding, or it holds a NaN or Inf.
  bool exploding = false;
  /// Why there is no gradient, or where a zero gradient became zero.
  std::optional<GradientDiagnosis> why;
};

/// tf::debug::gradient_report's answer: one row per variable, in the order given.
struct GradientReport {
  /// One row per variable, in the order given.
  std::vector<GradientReportRow> rows;
  /// True when every variable has a gradient that is neither vanishing nor exploding.
  bool ok() const;
  /// An aligned table: variable, shape, gradient norm, status.
  std::string to_string() const;
};

}  // namespace tapeflow
#pragma GCC visibility pop
