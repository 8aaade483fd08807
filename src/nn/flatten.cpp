#include "tapeflow/nn/flatten.h"

#include "core/check.h"
#include "tapeflow/ops/array.h"

namespace tapeflow::layers {

namespace {
constexpr std::string_view kFlatten = "Flatten";
}  // namespace

Tensor Flatten::operator()(const Tensor& x) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[{}] layer '{}' was called with an undefined (default-constructed) Tensor", kFlatten,
                   name());
  TAPEFLOW_REQUIRE(x.rank() >= 1, InvalidArgumentError,
                   "[{}] layer '{}' needs inputs of rank >= 1 (batch, ...), got shape {}", kFlatten, name(),
                   x.shape().to_string());
  std::int64_t rest = 1;
  for (int i = 1; i < x.rank(); ++i) rest *= x.shape()[i];
  // -1 for the batch, as Keras's Flatten does: a traced model flattens batches of any size with
  // one graph (tf::function's unknown dimensions). With no features, -1 would be ambiguous.
  return reshape(x, {rest > 0 ? -1 : x.shape()[0], rest});
}

}  // namespace tapeflow::layers
