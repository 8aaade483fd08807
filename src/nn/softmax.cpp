#include "tapeflow/nn/softmax.h"

#include "core/check.h"
#include "tapeflow/ops/nn.h"

namespace tapeflow::layers {

Tensor Softmax::call(const Tensor& x, bool /*training*/) {
  TAPEFLOW_REQUIRE(x.defined(), InvalidArgumentError,
                   "[Softmax] layer '{}' was called with an undefined (default-constructed) Tensor", name());
  TAPEFLOW_REQUIRE(is_floating(x.dtype()) && x.rank() >= 1 && axis_ >= -x.rank() && axis_ < x.rank(),
                   InvalidArgumentError,
                   "[Softmax] layer '{}' needs floating inputs with an axis {}, got shape {} and dtype {}",
                   name(), axis_, x.shape().to_string(), dtype_name(x.dtype()));
  return nn::softmax(x, axis_);
}

}  // namespace tapeflow::layers
