// Gradient: a gradient result that explains its absence (include/tapeflow/gradient.h).

#include "tapeflow/gradient.h"

#include <ostream>

#include "core/check.h"

namespace tapeflow {

Gradient::Gradient(Tensor value) : value_(std::move(value)) {
  TAPEFLOW_REQUIRE(value_.defined(), InvalidArgumentError,
                   "[Gradient] cannot hold an undefined (default-constructed) Tensor; a missing gradient is "
                   "std::nullopt");
}

Gradient Gradient::missing(std::string source, std::string reason) {
  Gradient g;
  g.source_ = std::move(source);
  g.reason_ = std::move(reason);
  return g;
}

std::string Gradient::why_missing() const {
  if (has_value()) return {};
  if (source_.empty()) return "no gradient (std::nullopt)";
  return fmt::format("no gradient for {}: {}", source_, reason_);
}

void Gradient::throw_missing() const {
  throw FailedPreconditionError(fmt::format("[Gradient] {}; test the Gradient (if (g) ...) before reading it, "
                                            "or ask for UnconnectedGradients::Zero",
                                            why_missing()));
}

std::string to_string(const Gradient& g) { return g ? to_string(*g) : "None"; }
std::ostream& operator<<(std::ostream& os, const Gradient& g) { return os << to_string(g); }

}  // namespace tapeflow
