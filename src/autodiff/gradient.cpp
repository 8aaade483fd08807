// Gradient: a gradient result that explains its absence (include/tapeflow/gradient.h).

#include "tapeflow/gradient.h"

#include <mutex>
#include <ostream>

#include "core/check.h"

namespace tapeflow {

Gradient::Gradient(Tensor value) : value_(std::move(value)) {
  TAPEFLOW_REQUIRE(value_.defined(), InvalidArgumentError,
                   "[Gradient] cannot hold an undefined (default-constructed) Tensor; a missing gradient is "
                   "std::nullopt");
}

struct Gradient::Rows {
  explicit Rows(IndexedSlices s) : slices(std::move(s)) {}
  IndexedSlices slices;
  std::once_flag once;
  Tensor dense;
};

Gradient::Gradient(IndexedSlices slices) : rows_(std::make_shared<Rows>(std::move(slices))) {}

const IndexedSlices* Gradient::indexed_slices() const noexcept {
  if (rows_ == nullptr) return nullptr;
  // A tensor put in place of the dense form through value()'s reference replaces the rows.
  if (value_.defined() && value_.impl() != rows_->dense.impl()) return nullptr;
  return &rows_->slices;
}

const Tensor& Gradient::dense_rows() const {
  // Once for all copies of this Gradient, and safe when threads read one concurrently.
  std::call_once(rows_->once, [&] { rows_->dense = rows_->slices.to_dense(); });
  return rows_->dense;
}

void Gradient::make_dense() {
  if (rows_ == nullptr) throw_missing();
  value_ = dense_rows();
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

std::string to_string(const Gradient& g) {
  if (const IndexedSlices* rows = g.indexed_slices()) return to_string(*rows);
  return g ? to_string(*g) : "None";
}
std::ostream& operator<<(std::ostream& os, const Gradient& g) { return os << to_string(g); }

}  // namespace tapeflow
