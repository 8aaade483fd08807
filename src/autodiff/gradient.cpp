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

Gradient Gradient::missing(std::string_view source, std::string_view reason) {
  Gradient g;
  g.why_missing_ = std::make_shared<const std::string>(fmt::format("no gradient for {}: {}", source, reason));
  return g;
}

std::string Gradient::why_missing() const {
  if (has_value()) return {};
  return why_missing_ ? *why_missing_ : "no gradient (std::nullopt)";
}

void Gradient::throw_missing() const {
  throw FailedPreconditionError(
      fmt::format("[Gradient] {}; test the Gradient (if (g) ...) before reading it, "
                  "or ask for UnconnectedGradients::Zero",
                  why_missing()));
}

std::string to_string(const Gradient& g) { return g ? to_string(*g) : "None"; }
std::ostream& operator<<(std::ostream& os, const Gradient& g) { return os << to_string(g); }

}  // namespace tapeflow
