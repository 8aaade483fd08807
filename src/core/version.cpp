// tapeflow::version(): the version the library was built with (include/tapeflow/version.h).
#include "tapeflow/version.h"

#define TAPEFLOW_STR2(x) #x
#define TAPEFLOW_STR(x) TAPEFLOW_STR2(x)

namespace tapeflow {

std::string_view version() {
  return TAPEFLOW_STR(TAPEFLOW_VERSION_MAJOR) "." TAPEFLOW_STR(TAPEFLOW_VERSION_MINOR) "." TAPEFLOW_STR(
      TAPEFLOW_VERSION_PATCH);
}

}  // namespace tapeflow
