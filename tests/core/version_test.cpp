// tapeflow's version (version.h): the linked library reports the headers' version, which is the
// CMake project's version (CMakeLists.txt reads it from version.h).
#include <gtest/gtest.h>

#include <string>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

TEST(Version, LibraryReportsTheHeadersVersion) {
  const std::string expected = std::to_string(TAPEFLOW_VERSION_MAJOR) + "." +
                               std::to_string(TAPEFLOW_VERSION_MINOR) + "." +
                               std::to_string(TAPEFLOW_VERSION_PATCH);
  EXPECT_EQ(tf::version(), expected);
  EXPECT_EQ(TAPEFLOW_VERSION,
            TAPEFLOW_VERSION_MAJOR * 10000 + TAPEFLOW_VERSION_MINOR * 100 + TAPEFLOW_VERSION_PATCH);
}
