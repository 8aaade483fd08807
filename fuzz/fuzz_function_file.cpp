// Fuzzes the function-file reader (docs/FUNCTION_FORMAT.md, src/graph/serialize.h). The first
// byte is the mode, the rest is the file. Mode bit 0 rewrites the header/meta checksum after the
// mutation, so mutated fields reach the meta parser and the structure checks instead of all
// stopping at the checksum. Reading must return or throw a tapeflow::Error (DataLossError,
// LookupError, InvalidArgumentError, ResourceExhaustedError); a file that reads is written again
// and read back, and must give the same file (a file of an older format version is written in the
// current one, which must then give itself back).
//
// TAPEFLOW_FUZZ_WRITE_SEED=<directory> makes the harness write seed inputs (functions recorded with
// tests/graph/graph_recorder.h, in both modes) to <directory> and exit (how
// fuzz/corpus/fuzz_function_file/ got its first seeds).

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz_input.h"
#include "graph/graph_recorder.h"
#include "graph/serialize.h"
#include "io/file_util.h"

namespace tf = tapeflow;

namespace {

std::string temp_path(const char* what) {
  return "/tmp/tapeflow_fuzz_function_file_" + std::to_string(::getpid()) + what;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const std::string& path, const char* data, std::size_t n) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(data, static_cast<std::streamsize>(n));
}

// The format version the header declares (the file has at least 32 bytes).
std::uint32_t format_version(const std::string& file) {
  std::uint32_t version = 0;
  for (int i = 0; i < 4; ++i)
    version |= static_cast<std::uint32_t>(static_cast<unsigned char>(file[8 + i])) << (8 * i);
  return version;
}

// The meta size the header declares (the file has at least 32 bytes).
std::uint64_t meta_size(const std::string& file) {
  std::uint64_t meta = 0;
  for (int i = 0; i < 8; ++i)
    meta |= static_cast<std::uint64_t>(static_cast<unsigned char>(file[24 + i])) << (8 * i);
  return meta;
}

// Recomputes the checksum that follows the meta section, when the header's meta size fits.
void fix_checksum(std::string& file) {
  if (file.size() < 36) return;
  const std::uint64_t meta = meta_size(file);
  if (meta > file.size() - 36) return;
  const std::size_t at = 32 + static_cast<std::size_t>(meta);
  const std::uint32_t crc = tf::detail::crc32_of(file.data(), at);
  for (int i = 0; i < 4; ++i)
    file[at + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xFF);
}

void write_seeds(const std::string& dir) {
  const tf::Tensor x = tf::constant(std::vector<float>{1, -2, 3, 4, 0.5f, 6}, tf::Shape{2, 3});
  const tf::Tensor idx = tf::constant(std::vector<std::int32_t>{1, 0}, tf::Shape{2});
  tf::Variable v(tf::constant(std::vector<float>{0.5f, 1, 2}, tf::Shape{3}), {.name = "v"});
  tf::Variable flag(tf::constant(true), {.name = "flag", .trainable = false});
  std::vector<tf::graph::ExportedFunction> fs;
  fs.push_back(tf::testing::GraphRecorder::record("dense", {x}, [&](const std::vector<tf::Tensor>& in) {
    const tf::Tensor w = tf::constant(std::vector<float>{1, 0, -1, 2, 1, 0}, tf::Shape{3, 2});
    tf::Tensor h = tf::matmul(in[0], w, false, false);
    return std::vector<tf::Tensor>{tf::reduce_sum(tf::nn::leaky_relu(h, 0.1), {1}, true)};
  }));
  fs.push_back(tf::testing::GraphRecorder::record("mixed", {x, idx}, [&](const std::vector<tf::Tensor>& in) {
    tf::Tensor h = in[0] * v;
    tf::Tensor p = tf::pad(h, {{1, 0}, {0, 1}}, 0.25);
    std::vector<tf::Tensor> parts = tf::split(tf::transpose(p, {1, 0}), 2, 0);
    tf::Tensor hot = tf::one_hot(in[1], 3, 2.0, -1.0);
    tf::Tensor c = tf::cast(tf::gather(hot, in[1], 0), tf::DType::Int32);
    v.assign_add(tf::reduce_mean(h, {0}));
    (void)flag.read_value();
    return std::vector<tf::Tensor>{parts[0], parts[1], c};
  }));
  fs.push_back(tf::testing::GraphRecorder::record(
      "conv", {tf::reshape(x, {1, 2, 3, 1})}, [&](const std::vector<tf::Tensor>& in) {
        const tf::Tensor f = tf::ones(tf::Shape{2, 2, 1, 2});
        tf::Tensor y = tf::nn::conv2d(in[0], f, {1, 2}, "SAME");
        return std::vector<tf::Tensor>{tf::nn::max_pool2d(y, {1, 2}, {1, 1}, "VALID")};
      }));
  // A graph that holds sizes of its unknown dimension (a mean's gradient): a file with a size
  // template, written by save_function after the traces that find it.
  auto mean_grad = tf::function(
      [&](const tf::Tensor& in) {
        tf::GradientTape tape;
        tape.watch(in);
        return *tape.gradient(tf::reduce_mean(tf::square(in * v)), in);
      },
      {.name = "sizes", .input_signature = std::vector<tf::TensorSpec>{{{-1, 3}}}});
  for (std::int64_t n : {2, 4, 3}) mean_grad(tf::ones({n, 3}));
  const std::string sized = temp_path(".sized");
  tf::save_function(mean_grad, {{{-1, 3}}}, sized);
  fs.push_back(tf::graph::read_function_file(sized));
  std::remove(sized.c_str());
  for (std::size_t i = 0; i < fs.size(); ++i) {
    const std::string path = temp_path(".seed");
    tf::graph::write_function_file(path, fs[i]);
    const std::string file = read_all(path);
    std::remove(path.c_str());
    for (char mode : {'\0', '\1'}) {
      const std::string seed = std::string(1, mode) + file;
      write_all((std::filesystem::path(dir) / ("seed_" + fs[i].name + "_" + std::to_string(mode))).string(),
                seed.data(), seed.size());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tf::fuzz::init();
  if (const char* dir = std::getenv("TAPEFLOW_FUZZ_WRITE_SEED")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
  if (mode & 1) fix_checksum(file);
  const std::string path = temp_path(".tff");
  const std::string again = temp_path(".again.tff");
  write_all(path, file.data(), file.size());
  tf::fuzz::expect_success_or_error([&] {
    const tf::graph::ExportedFunction f = tf::graph::read_function_file(path);
    for (const auto& [id, t] : f.graph.constants) tf::fuzz::touch(t);
    for (const tf::Tensor& t : f.variable_values) tf::fuzz::touch(t);
    // What was read can be written, and writing it gives the file that was read (an encoding is
    // canonical), but for the writer's tapeflow version in the header and so the checksum.
    tf::graph::write_function_file(again, f);
    std::string written = read_all(again);
    if (format_version(file) != format_version(written)) {  // an older version: now the current one's
      file = written;
      tf::graph::write_function_file(again, tf::graph::read_function_file(again));
      written = read_all(again);
    }
    if (written.size() != file.size()) __builtin_trap();
    for (std::string* s : {&written, &file}) {
      const auto crc_at = static_cast<std::ptrdiff_t>(32 + meta_size(*s));  // a file that read has it
      std::fill(s->begin() + 16, s->begin() + 24, '\0');
      std::fill(s->begin() + crc_at, s->begin() + crc_at + 4, '\0');
    }
    if (written != file) __builtin_trap();
  });
  std::remove(path.c_str());
  std::remove(again.c_str());
  return 0;
}
