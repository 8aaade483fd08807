// Fuzzes the checkpoint loader (docs/CHECKPOINT_FORMAT.md): the input is written to a file and
// read with list_checkpoint and restore_checkpoint into a fixed set of variables. A corrupt file
// must give DataLossError or InvalidArgumentError and leave every variable unchanged.
//
// TAPEFLOW_FUZZ_WRITE_SEED=<file> makes the harness save a valid checkpoint of its variables to
// <file> and exit (how fuzz/corpus/fuzz_checkpoint/ got its first seed).

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

std::string temp_path() { return "/tmp/tapeflow_fuzz_checkpoint_" + std::to_string(::getpid()) + ".ckpt"; }

tf::NamedVariables make_vars() {
  return {{"a", tf::Variable(tf::constant(std::vector<float>{1, 2, 3, 4, 5, 6}, tf::Shape{2, 3}))},
          {"b", tf::Variable(tf::constant(7.0))},
          {"model/c", tf::Variable(tf::constant(std::vector<std::int32_t>{1, 2, 3, 4}, tf::Shape{4}))},
          {"flag", tf::Variable(tf::cast(tf::constant(std::vector<std::int32_t>{1, 0}, tf::Shape{2}),
                                         tf::DType::Bool))}};
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tf::fuzz::init();
  if (const char* seed = std::getenv("TAPEFLOW_FUZZ_WRITE_SEED")) {
    tf::save_checkpoint(seed, make_vars());
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  // The first byte picks the options and which variables to restore; the rest is the file.
  const std::uint8_t mode = data[0];
  const std::string path = temp_path();
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
  }
  tf::NamedVariables vars = make_vars();
  if (mode & 2) vars.pop_back();
  std::vector<tf::Tensor> before;
  for (auto& [name, v] : vars) before.push_back(v.read_value());
  tf::fuzz::expect_success_or_error([&] {
    for (const auto& e : tf::list_checkpoint(path)) (void)e.shape.num_elements();
  });
  bool restored = false;
  tf::fuzz::expect_success_or_error([&] {
    tf::restore_checkpoint(path, vars, {.allow_unused_entries = (mode & 1) != 0});
    restored = true;
  });
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const tf::Tensor now = vars[i].second.read_value();
    tf::fuzz::touch(now);
    // All-or-nothing: a failed restore leaves every variable's value (the same tensor) in place.
    const bool same = now.shape() == before[i].shape() && now.dtype() == before[i].dtype() &&
                      std::memcmp(now.raw_data(), before[i].raw_data(), now.nbytes()) == 0;
    if (!restored && !same) __builtin_trap();
  }
  std::remove(path.c_str());
  return 0;
}
