// export_onnx in a build without libonnx and libprotobuf (CMake's TAPEFLOW_ONNX off): the API
// exists, so programs and the Python module build alike, and says why it cannot write.

#include <fmt/format.h>

#include "function/function_state.h"
#include "tapeflow/onnx.h"

namespace tapeflow {

bool onnx_export_available() { return false; }

void export_onnx(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                 const std::filesystem::path& path) {
  detail::export_onnx_trace(fn, signature, path, std::nullopt);
}

void detail::export_onnx_trace(const FunctionCore& fn, const std::vector<TensorSpec>&,
                               const std::filesystem::path& path, const std::optional<std::string>&,
                               const std::vector<Variable>&) {
  throw UnimplementedError(fmt::format(
      "[export_onnx] cannot write {} to '{}': this tapeflow was built without ONNX support (configure "
      "it with Debian's libonnx-dev and libprotobuf-dev installed, or -DTAPEFLOW_ONNX=ON)",
      fn.state()->label, path.string()));
}

}  // namespace tapeflow
