// tf::debug::gradient_report: the check people do by hand before they trust a training run.
// One gradient() pass for all variables, then explain() for each variable whose gradient is
// missing or zero (one more backward pass each, only for those).

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "autodiff/tape_access.h"
#include "core/check.h"
#include "debug/common.h"
#include "tapeflow/debug.h"
#include "tapeflow/module.h"

namespace tapeflow {

namespace {

using debug::l2_norm;

bool all_finite(const Tensor& t) {
  return debug::with_floating_values(
      t,
      [](auto values) {
        return std::ranges::all_of(values, [](auto v) { return std::isfinite(debug::widen(v)); });
      },
      true);
}

}  // namespace

bool GradientReport::ok() const {
  return std::ranges::all_of(
      rows, [](const GradientReportRow& r) { return r.norm && !r.vanishing && !r.exploding; });
}

std::string GradientReport::to_string() const {
  std::vector<std::array<std::string, 4>> cells;
  cells.push_back({"variable", "shape", "gradient norm", "status"});
  for (const GradientReportRow& r : rows) {
    std::string status = "ok";
    if (!r.norm) {
      status = r.why ? r.why->to_string() : "None";
    } else {
      std::vector<std::string> flags;
      if (r.exploding) flags.emplace_back(std::isfinite(*r.norm) ? "EXPLODING" : "EXPLODING (not finite)");
      if (r.vanishing) flags.emplace_back("VANISHING");
      if (!flags.empty()) status = fmt::format("{}", fmt::join(flags, ", "));
      if (r.why && r.why->cause == GradientCause::ZeroGradient) status += ": " + r.why->to_string();
    }
    cells.push_back({r.name, r.shape.to_string(), r.norm ? fmt::format("{:.4e}", *r.norm) : "None", status});
  }
  std::array<std::size_t, 3> width{};
  for (const auto& row : cells)
    for (std::size_t c = 0; c < 3; ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : cells)
    out += fmt::format("{:<{}}  {:<{}}  {:>{}}  {}\n", row[0], width[0], row[1], width[1], row[2], width[2],
                       row[3]);
  return out;
}

GradientReport debug::gradient_report(GradientTape& tape, const Tensor& target, const Module& module,
                                      const GradientReportOptions& options) {
  return gradient_report(tape, target, module.trainable_variables(), options);
}

GradientReport debug::gradient_report(GradientTape& tape, const Tensor& target,
                                      const std::vector<Variable>& variables,
                                      const GradientReportOptions& options) {
  // The pass and explain run gradient functions, which may destroy the GradientTape: hold the
  // state, and use the GradientTape only while it is alive.
  const std::shared_ptr<detail::TapeState> keep = detail::TapeAccess::state(tape);
  detail::TapeState& t = *keep;
  const auto explain_unless_destroyed = [&](const Variable& v) {
    TAPEFLOW_REQUIRE(t.in_stack.load(std::memory_order_relaxed), FailedPreconditionError,
                     "[debug::gradient_report] a gradient function destroyed this GradientTape while "
                     "gradient_report ran");
    return explain(tape, target, v);
  };
  TAPEFLOW_REQUIRE(target.defined(), InvalidArgumentError,
                   "[debug::gradient_report] the target is an undefined (default-constructed) Tensor");
  // A non-persistent tape is consumed as by gradient(), but only after explain() has read it: the
  // pass keeps the records, and the tape is consumed at the end.
  const std::vector<Source> sources(variables.begin(), variables.end());
  const std::vector<Gradient> grads = autodiff::gradient_pass(keep, "debug::gradient_report", target, sources,
                                                              {}, UnconnectedGradients::None, nullptr,
                                                              /*keep_records=*/true);
  GradientReport report;
  struct ConsumeAtExit {
    detail::TapeState& t;
    ~ConsumeAtExit() {
      if (!t.options.persistent) autodiff::consume(t);
    }
  } consume{t};
  for (std::size_t i = 0; i < variables.size(); ++i) {
    const Variable& v = variables[i];
    GradientReportRow row;
    row.name = v.name();
    row.shape = v.shape();
    row.variable_norm = is_floating(v.dtype()) ? l2_norm(v.value()) : 0.0;
    if (grads[i]) {
      const double norm = l2_norm(*grads[i]);
      row.norm = norm;
      row.exploding = !all_finite(*grads[i]) || !(norm <= options.exploding);
      row.vanishing = !row.exploding && norm <= std::max(options.relative_vanishing * row.variable_norm,
                                                         options.absolute_vanishing);
      if (norm == 0.0) row.why = explain_unless_destroyed(v);
    } else {
      row.why = explain_unless_destroyed(v);
    }
    report.rows.push_back(std::move(row));
  }
  return report;
}

}  // namespace tapeflow
