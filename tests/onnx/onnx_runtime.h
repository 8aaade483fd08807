#pragma once
// Running exported ONNX files in the tests: onnx.checker through Debian's python3-onnx
// (check_model.py) and ONNX Runtime through Debian's node with the onnxruntime-node package that
// scripts/setup.sh installs beside run_model.js. Inputs and outputs travel as raw little-endian
// files in a directory per model.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::testing {

/// What a command printed (stdout and stderr) and its exit status.
struct CommandResult {
  int status = -1;
  std::string output;
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;) r.output.append(buffer, n);
  r.status = ::pclose(pipe);
  return r;
}

/// `s` as one shell word.
inline std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline const std::filesystem::path& onnx_test_dir() {
  static const std::filesystem::path dir = TAPEFLOW_ONNX_TEST_DIR;
  return dir;
}

/// Why the ONNX tools cannot run here, or "" when they can (scripts/setup.sh installs them all).
inline std::string onnx_tools_missing() {
  if (std::string(TAPEFLOW_NODE).empty()) return "node was not found when CMake configured the build";
  if (!std::filesystem::exists(onnx_test_dir() / "node_modules" / "onnxruntime-node"))
    return "onnxruntime-node is not installed in tests/onnx/node_modules (scripts/setup.sh installs it)";
  if (run_command(fmt::format("{} -c 'import onnx'", TAPEFLOW_PYTHON)).status != 0)
    return "python3 cannot import onnx (Debian's python3-onnx)";
  return "";
}

/// check_model.py's report on `models` (for each: "model PATH", the opset, the inputs with their
/// shapes, the op types); a test failure with the checker's message where it refuses a file.
inline std::string checked_model_report(const std::vector<std::filesystem::path>& models) {
  std::string command =
      fmt::format("{} {}", TAPEFLOW_PYTHON, shell_quoted((onnx_test_dir() / "check_model.py").string()));
  for (const auto& model : models) command += fmt::format(" {}", shell_quoted(model.string()));
  const CommandResult r = run_command(command);
  EXPECT_EQ(r.status, 0) << "onnx.checker refused a file:\n" << r.output;
  return r.output;
}

/// Writes `inputs` (ONNX input names and tensors) into `dir` for run_model.js; the model must be
/// `dir`/model.onnx.
inline void write_onnx_inputs(const std::filesystem::path& dir,
                              const std::vector<std::pair<std::string, Tensor>>& inputs) {
  std::string listing = "[";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].second;
    const std::string file = fmt::format("input_{}.bin", i);
    std::ofstream(dir / file, std::ios::binary)
        .write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
    listing +=
        fmt::format(R"({}{{"name": "{}", "dtype": "{}", "dims": [{}], "file": "{}"}})", i == 0 ? "" : ", ",
                    inputs[i].first, dtype_name(t.dtype()), fmt::join(t.shape().dims(), ", "), file);
  }
  std::ofstream(dir / "inputs.json") << listing << "]";
}

/// The outputs run_model.js wrote into `dir`, in the model's order.
inline std::vector<Tensor> read_onnx_outputs(const std::filesystem::path& dir) {
  std::vector<Tensor> outputs;
  std::ifstream listing(dir / "outputs.txt");
  std::string name, dtype, dims_text, file;
  while (listing >> name >> dtype >> dims_text >> file) {
    std::vector<std::int64_t> dims;
    std::istringstream dims_in(dims_text == "-" ? "" : dims_text);
    for (std::string d; std::getline(dims_in, d, ',');) dims.push_back(std::stoll(d));
    const DType d = dtype == "float32"   ? DType::Float32
                    : dtype == "float64" ? DType::Float64
                    : dtype == "int32"   ? DType::Int32
                    : dtype == "int64"   ? DType::Int64
                                         : DType::Bool;
    std::ifstream in(dir / file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    outputs.push_back(
        tensor_from_bytes(Shape(dims), d, std::as_bytes(std::span(bytes.data(), bytes.size()))));
  }
  return outputs;
}

/// Runs run_model.js on every directory of `dirs` (their inputs written first); returns what it
/// printed, and fails the test where it failed.
inline std::string run_in_onnxruntime(const std::vector<std::filesystem::path>& dirs, int repeat = 0) {
  std::string command =
      fmt::format("{} {}", TAPEFLOW_NODE, shell_quoted((onnx_test_dir() / "run_model.js").string()));
  if (repeat > 0) command += fmt::format(" --repeat {}", repeat);
  for (const auto& dir : dirs) command += fmt::format(" {}", shell_quoted(dir.string()));
  const CommandResult r = run_command(command);
  EXPECT_EQ(r.status, 0) << r.output;
  return r.output;
}

/// `onnx` (from ONNX Runtime) equals `expected` (tapeflow's) in shape and, as float64, within
/// `rtol` relative (and 1e-6 absolute, for values near zero).
inline void expect_onnx_close(const Tensor& onnx, const Tensor& expected, double rtol,
                              const std::string& what) {
  ASSERT_EQ(onnx.shape(), expected.shape()) << what;
  const std::vector<double> a = cast(onnx, DType::Float64).to_vector<double>();
  const std::vector<double> b = cast(expected, DType::Float64).to_vector<double>();
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_LE(std::abs(a[i] - b[i]), rtol * std::abs(b[i]) + 1e-6)
        << what << ": element " << i << " is " << a[i] << " in ONNX Runtime, " << b[i] << " in tapeflow";
}

}  // namespace tapeflow::testing
