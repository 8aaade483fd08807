// Beyond one gradient: GradientTape::jacobian and batch_jacobian, and hessian(). Each runs the
// one backward pass (backward.cpp) once per row, or once per chunk of rows with a stack of
// one-hot cotangents (a vectorised Jacobian), and joins the rows with recorded ops so that an
// enclosing tape can differentiate the result again.

#include <algorithm>
#include <numeric>

#include "autodiff/tape_access.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "tapeflow/logging.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow {

namespace {

Shape concat_shapes(std::span<const std::int64_t> a, std::span<const std::int64_t> b, std::string_view op) {
  std::vector<std::int64_t> dims(a.begin(), a.end());
  dims.insert(dims.end(), b.begin(), b.end());
  return Shape::checked(dims, op);
}

std::vector<std::int64_t> to_vector(std::span<const std::int64_t> dims) { return {dims.begin(), dims.end()}; }

/// The gradients of the rows of a Jacobian, in row order, joined into one [rows, ...] tensor by
/// recorded ops (not copied into a fresh buffer), so that a tape recording around jacobian()
/// can differentiate the result again. `pieces` are stacks [c, ...] of c rows each from
/// vectorised passes, or single rows when `single_rows`.
Tensor join_rows(const std::vector<Tensor>& pieces, bool single_rows) {
  if (single_rows) return stack(pieces, 0);
  return pieces.size() == 1 ? pieces[0] : concat(pieces, 0);
}

/// A Jacobian of `shape` with no elements (the target has none), recorded as a function of the
/// source's gradient `g`, so that it is connected wherever `g` is.
Tensor empty_jacobian(const Tensor& g, const Shape& shape) {
  return reshape(slice(reshape(g, {-1}), {0}, {0}), to_vector(shape.dims()));
}

/// Sets flat element `i` of `seed`, a fresh cotangent of the target's floating dtype, to one.
void set_one(Tensor& seed, std::int64_t i) {
  switch (seed.dtype()) {
    case DType::Float64:
      detail::mutable_data<double>(seed)[i] = 1.0;
      return;
    case DType::BFloat16:  // a storage type, which visit_dtype does not dispatch
      detail::mutable_data<bfloat16_t>(seed)[i] = bfloat16_t(1.0f);
      return;
    default:
      TAPEFLOW_ASSERT(seed.dtype() == DType::Float32, "jacobian: a {} cotangent", dtype_name(seed.dtype()));
      detail::mutable_data<float>(seed)[i] = 1.0f;
  }
}

/// The first kept record whose gradient cannot take a stack of cotangents, or nullptr.
const autodiff::OpDef* first_unbatchable(const autodiff::Records& ops, const autodiff::Pruned& p) {
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (p.keep[k] && !ops[k].op->batchable) return ops[k].op;
  return nullptr;
}

/// How many Jacobian rows to push through at once: the stacked cotangents of the largest kept
/// tensor stay under about 256 MiB.
std::int64_t rows_per_pass(const autodiff::Records& ops, const autodiff::Pruned& p, std::int64_t rows) {
  std::int64_t largest = 1;
  for (std::size_t k = 0; k < ops.size(); ++k)
    if (p.keep[k])
      for (const auto& slot : ops[k].all_slots())
        largest =
            std::max(largest, slot.shape->num_elements() * static_cast<std::int64_t>(dtype_size(slot.dtype)));
  return std::clamp<std::int64_t>((std::int64_t{256} << 20) / largest, 1, std::max<std::int64_t>(rows, 1));
}

}  // namespace

std::vector<Gradient> GradientTape::jacobian_flat(const Tensor& target, std::span<const Source> sources,
                                                  UnconnectedGradients unconnected, bool parallel) {
  const Source y(target);
  autodiff::validate_targets_and_sources({&y, 1}, sources, "GradientTape::jacobian");
  return autodiff::run_pass(state_, "GradientTape::jacobian", [&](detail::TapeState& tape, bool) {
    autodiff::Records& ops = tape.ops;
    // Row r of the Jacobian is the gradient for a cotangent that is one-hot at target element r.
    // The rows are joined by recorded ops into target.shape + source.shape. The records are
    // released only after the last row.
    const std::int64_t rows = target.num_elements();
    std::vector<Shape> shapes;
    for (const Source& s : sources)
      shapes.push_back(concat_shapes(target.shape().dims(), s.shape().dims(), "Jacobian"));
    const autodiff::Pruned p = autodiff::prune(ops, tape.producer, {&y, 1}, sources);
    const autodiff::OpDef* blocker = parallel ? first_unbatchable(ops, p) : nullptr;
    if (parallel && blocker)
      log(LogLevel::Info,
          fmt::format("jacobian: op {} cannot take stacked cotangents; computing the Jacobian one "
                      "row at a time",
                      blocker->name()));
    const bool single_rows = !parallel || blocker;
    // pieces[i]: source i's gradient from each pass. Whether a cotangent reaches a source depends
    // only on the pruned records, so a source gets one from every pass or from none.
    std::vector<std::vector<Tensor>> pieces(sources.size());
    std::size_t passes = 0;
    const auto collect = [&](std::vector<std::optional<Tensor>> grads) {
      ++passes;
      for (std::size_t i = 0; i < sources.size(); ++i)
        if (grads[i]) pieces[i].push_back(std::move(*grads[i]));
    };
    if (!is_floating(target.dtype())) {
      // An integer target carries no gradient: every source is unconnected.
    } else if (rows == 0) {
      // No rows; one pass with the (empty) cotangent finds the connected sources.
      const Tensor seed = zeros(target.shape(), target.dtype());
      collect(autodiff::backward(ops, p, {.ys = {&y, 1}, .seeds = {&seed, 1}, .sources = sources}));
    } else if (!single_rows) {
      // Vectorised: a stack of one-hot cotangents [c, *target.shape] goes through each record
      // once; the gradients come back as [c, *source.shape], which are rows of the Jacobian.
      const std::int64_t chunk = rows_per_pass(ops, p, rows);
      for (std::int64_t start = 0; start < rows; start += chunk) {
        const std::int64_t c = std::min(chunk, rows - start);
        const std::int64_t batch[1] = {c};
        Tensor seed = zeros(autodiff::with_batch(batch, target.shape()), target.dtype());
        for (std::int64_t j = 0; j < c; ++j) set_one(seed, j * rows + start + j);
        collect(autodiff::backward(ops, p,
                                   {.ys = {&y, 1}, .seeds = {&seed, 1}, .sources = sources, .batch = batch}));
      }
    } else {
      for (std::int64_t r = 0; r < rows; ++r) {
        Tensor seed = zeros(target.shape(), target.dtype());
        set_one(seed, r);
        collect(autodiff::backward(ops, p, {.ys = {&y, 1}, .seeds = {&seed, 1}, .sources = sources}));
      }
    }
    std::vector<Gradient> result;
    for (std::size_t i = 0; i < sources.size(); ++i) {
      TAPEFLOW_ASSERT(pieces[i].empty() || pieces[i].size() == passes,
                      "jacobian: a source received a cotangent in {} of {} backward passes", pieces[i].size(),
                      passes);
      if (pieces[i].empty())
        result.push_back(autodiff::unconnected_result(tape, sources[i], shapes[i], unconnected));
      else if (rows == 0)
        result.push_back(empty_jacobian(pieces[i][0], shapes[i]));
      else
        result.push_back(reshape(join_rows(pieces[i], single_rows), to_vector(shapes[i].dims())));
    }
    return result;
  });
}

Gradient GradientTape::batch_jacobian(const Tensor& target, const Source& source,
                                      UnconnectedGradients unconnected) {
  const Source y(target);
  autodiff::validate_targets_and_sources({&y, 1}, {&source, 1}, "GradientTape::batch_jacobian");
  const Shape& ts = target.shape();
  const Shape& ss = source.shape();
  // TensorFlow checks the ranks with Shape.with_rank_at_least(2), then the batch dimensions.
  for (const Shape* s : {&ts, &ss})
    TAPEFLOW_REQUIRE(
        s->rank() >= 2, InvalidArgumentError,
        "[GradientTape::batch_jacobian] Shape {} must have rank at least 2: the {} must be [batch, "
        "...]; got target shape {} and dtype {}, source shape {} and dtype {}",
        s->to_string(), s == &ts ? "target" : "source", ts.to_string(), dtype_name(target.dtype()),
        ss.to_string(), dtype_name(source.dtype()));
  TAPEFLOW_REQUIRE(
      ts[0] == ss[0], InvalidArgumentError,
      "[GradientTape::batch_jacobian] Need first dimension of target shape {} and source shape {} to match.",
      ts.to_string(), ss.to_string());
  const Shape shape = concat_shapes(ts.dims(), ss.dims().subspan(1), "BatchJacobian");
  return autodiff::run_pass(
      state_, "GradientTape::batch_jacobian", [&](detail::TapeState& tape, bool) -> Gradient {
        autodiff::Records& ops = tape.ops;
        // Examples are independent, so a cotangent that is one-hot in column j of every example
        // gives column j for all examples at once: d target[b, j] / d source[b, ...] for every b.
        // Vectorised, a stack of such cotangents (several columns) goes through one backward pass.
        // The columns [cols, batch, ...] are joined by recorded ops, transposed to [batch, cols, ...]
        // and reshaped to target.shape + source.shape[1:] (TensorFlow's assembly).
        const autodiff::Pruned p = autodiff::prune(ops, tape.producer, {&y, 1}, {&source, 1});
        if (!is_floating(target.dtype()))
          return autodiff::unconnected_result(tape, source, shape, unconnected);
        if (ts.num_elements() == 0) {
          // No columns; one pass with the (empty) cotangent says whether the source is connected.
          const Tensor seed = zeros(ts, target.dtype());
          const auto g =
              autodiff::backward(ops, p, {.ys = {&y, 1}, .seeds = {&seed, 1}, .sources = {&source, 1}})[0];
          return g ? Gradient(empty_jacobian(*g, shape))
                   : autodiff::unconnected_result(tape, source, shape, unconnected);
        }
        const std::int64_t batch = ts[0];
        const std::int64_t cols = ts.num_elements() / batch;
        const autodiff::OpDef* blocker = first_unbatchable(ops, p);
        if (blocker)
          log(LogLevel::Info,
              fmt::format("batch_jacobian: op {} cannot take stacked cotangents; computing one column "
                          "at a time",
                          blocker->name()));
        const std::int64_t chunk = blocker ? 1 : rows_per_pass(ops, p, cols);
        std::vector<Tensor> columns;
        for (std::int64_t j0 = 0; j0 < cols; j0 += chunk) {
          const std::int64_t c = std::min(chunk, cols - j0);
          const std::int64_t stack_dims[1] = {c};
          const std::span<const std::int64_t> batch_dims =
              blocker ? std::span<const std::int64_t>() : stack_dims;
          Tensor seed = zeros(autodiff::with_batch(batch_dims, ts), target.dtype());
          for (std::int64_t jj = 0; jj < c; ++jj)
            for (std::int64_t b = 0; b < batch; ++b)
              set_one(seed, jj * ts.num_elements() + b * cols + j0 + jj);
          auto g = autodiff::backward(
              ops, p, {.ys = {&y, 1}, .seeds = {&seed, 1}, .sources = {&source, 1}, .batch = batch_dims})[0];
          if (!g)
            return autodiff::unconnected_result(tape, source, shape,
                                                unconnected);  // the same for every column
          columns.push_back(std::move(*g));
        }
        std::vector<std::int64_t> perm(static_cast<std::size_t>(ss.rank()) + 1);
        std::iota(perm.begin(), perm.end(), std::int64_t{0});
        std::swap(perm[0], perm[1]);
        return reshape(transpose(join_rows(columns, blocker != nullptr), perm), to_vector(shape.dims()));
      });
}

}  // namespace tapeflow

namespace tapeflow {

Tensor hessian(const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[hessian] x is an undefined (default-constructed) Tensor");
  TAPEFLOW_REQUIRE(is_floating(x.dtype()), InvalidArgumentError,
                   "[hessian] x must be float32 or float64, got {}", dtype_name(x.dtype()));
  GradientTape outer;
  outer.watch(x);
  Tensor g;
  {
    GradientTape inner;
    inner.watch(x);
    const Tensor y = f(x);
    TAPEFLOW_REQUIRE(y.defined() && y.rank() == 0, InvalidArgumentError,
                     "[hessian] f must return a scalar, got shape {}",
                     y.defined() ? y.shape().to_string() : "(undefined)");
    g = *inner.gradient(y, x, UnconnectedGradients::Zero);
  }
  return *outer.jacobian(g, x, UnconnectedGradients::Zero);
}

}  // namespace tapeflow
