#pragma once
// A fresh directory for one test, removed with its contents when the test ends:
//
//   tf::testing::TempDir dir;
//   tf::save_checkpoint(dir / "m.ckpt", vars);

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <string_view>

namespace tapeflow::testing {

/// An empty directory under the system's temporary directory, named for the running test and
/// the process (so parallel runs never share it); removed, with everything in it, on destruction.
class TempDir {
 public:
  TempDir() {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = std::filesystem::temp_directory_path() / ("tapeflow_" + std::string(test->test_suite_name()) +
                                                      "_" + test->name() + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a leftover directory is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  /// The directory.
  const std::filesystem::path& path() const { return path_; }
  /// The path of `name` inside the directory, as a string.
  std::string operator/(std::string_view name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace tapeflow::testing
