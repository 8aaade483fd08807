#pragma once
/// \file control_flow.h
/// Data-dependent control flow: tf::cond and tf::while_loop (TensorFlow's tf.cond and
/// tf.while_loop). Eagerly they are C++ control flow on a tensor's value; inside tf::function
/// they become one op of the graph that decides at each call: "StatelessIf" and "StatelessWhile",
/// or "If" and "While" when a branch assigns a variable.
///
///   using Vars = std::vector<tf::Tensor>;
///   auto f = tf::function([](const tf::Tensor& x) {
///     // an `if (x.item<float>() > 0)` here would be decided once, when f is traced
///     tf::Tensor y = tf::cond(tf::reduce_sum(x) > 0.0, [&] { return x * 2.0; }, [&] { return -x; });
///     // halve y until no element exceeds 1 in magnitude: the trip count depends on the argument
///     auto big = [](const Vars& v) { return tf::reduce_max(tf::abs(v[0])) > 1.0; };
///     auto halve = [](const Vars& v) { return Vars{v[0] / 2.0}; };
///     return tf::while_loop(big, halve, {y})[0];
///   });
///
/// **Eagerly** (no trace running), cond evaluates `pred` and runs only the branch it picks;
/// while_loop runs `cond` and `body` in a C++ loop. Their ops are recorded on the tapes like any
/// other, so gradients, higher derivatives and forward mode need nothing special.
///
/// **Inside tf::function** both branches (the loop's cond and body) are traced into graphs of
/// their own, once, on the trace's values: each must be computable there, even a branch the trace
/// does not take (an index out of range in it still throws). The tensors a branch uses from
/// outside become inputs of the op (TensorFlow's captures), so each call uses that call's values.
/// Variables a branch only reads are read just before the op, as inputs (so gradients reach
/// them); variables a branch assigns are read and written inside the op, at each call. Tracing a
/// branch undoes its assignments: they happen once per call, when the op runs.
///
/// **Gradients.** A cond's gradient is itself a cond: the chosen branch is recomputed under a tape
/// and differentiated, so second and higher derivatives work too. A while_loop's gradient
/// re-runs the loop under a tape and differentiates it (TensorFlow keeps each iteration's values
/// on stacks instead; recomputing costs one more forward pass and holds the loop's values during
/// the backward pass only); higher derivatives work the same way. A cond or while_loop whose
/// branches assign variables has no gradient: recomputing it would repeat the assignments
/// (UnimplementedError naming the op, at gradient time).
///
/// A function holding a cond or while_loop exports (tf::save_function) with its graphs inside the
/// op's attributes; one whose branches assign variables (the ops If and While) cannot be
/// exported: UnimplementedError naming the op.

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "tapeflow/tensor.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow {

/// A branch of tf::cond: no arguments (it captures what it needs), its results out.
using BranchFn = std::function<std::vector<Tensor>()>;

/// Runs `true_fn` if the bool scalar `pred` is true, else `false_fn`, and returns its results.
/// Inside tf::function the choice is made at each call (see the file comment).
///
///   std::vector<tf::Tensor> r = tf::cond(x < y, [&] { return std::vector<tf::Tensor>{x, y}; },
///                                        [&] { return std::vector<tf::Tensor>{y, x}; });
///
/// Throws InvalidArgumentError naming "cond" if `pred` is undefined, not bool or not a scalar
/// (with its shape and dtype), if a branch is empty or returns an undefined tensor, or, when
/// both branches are traced, if they return different numbers of tensors or tensors of
/// different shapes or dtypes (naming the output and both shapes and dtypes).
std::vector<Tensor> cond(const Tensor& pred, const BranchFn& true_fn, const BranchFn& false_fn);

/// tf::cond for branches of one tensor each:
///
///   tf::Tensor y = tf::cond(tf::reduce_sum(x) > 0.0, [&] { return tf::sqrt(x); }, [&] { return x * 0.0; });
Tensor cond(const Tensor& pred, const std::function<Tensor()>& true_fn,
            const std::function<Tensor()>& false_fn);

/// Options of tf::while_loop.
struct WhileOptions {
  /// Stops the loop after this many iterations even if `cond` is still true (TensorFlow's
  /// semantics: no error, the loop variables of that iteration are the result). Unset: no bound.
  std::optional<std::int64_t> maximum_iterations;
};

/// The loop condition of tf::while_loop: the loop variables in, a bool scalar out.
using LoopCondFn = std::function<Tensor(const std::vector<Tensor>&)>;
/// The loop body of tf::while_loop: the loop variables in, their next values out.
using LoopBodyFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

/// `while (cond(vars)) vars = body(vars);` starting from `loop_vars`; returns the final vars.
/// Inside tf::function the trip count is decided at each call (see the file comment).
///
///   // the first power of two at or above n, for a scalar int32 tensor n
///   using Vars = std::vector<tf::Tensor>;
///   tf::Tensor p = tf::while_loop([&](const Vars& v) { return v[0] < n; },
///                                 [](const Vars& v) { return Vars{v[0] * 2}; }, {tf::constant(1)})[0];
///
/// Each loop variable must keep its shape and dtype from one iteration to the next.
/// Throws InvalidArgumentError naming "while_loop" if `loop_vars` is empty or holds an undefined
/// tensor, if `cond` or `body` is empty, if `cond` returns anything but a bool scalar (its shape
/// and dtype), if `body` returns a different number of tensors, or a loop variable of another
/// shape or dtype (naming the variable and both shapes and dtypes), or if maximum_iterations is
/// negative.
std::vector<Tensor> while_loop(const LoopCondFn& cond, const LoopBodyFn& body, std::vector<Tensor> loop_vars,
                               WhileOptions options = {});

}  // namespace tapeflow
#pragma GCC visibility pop
