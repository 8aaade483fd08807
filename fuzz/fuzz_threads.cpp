// The concurrency fuzzer: each input is a program of two to four threads acting at once on shared
// variables, optimizers, a tf::function and recording pauses (thread_program.h). Besides the
// sanitizers' reports, a program fails when what every interleaving must give does not hold.
// tests/threads/thread_programs_test.cpp runs such programs from fixed seeds under ThreadSanitizer.

#include <cstdio>
#include <cstdlib>

#include "thread_program.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tapeflow::fuzz::init();
  tapeflow::fuzz::FuzzInput in(data, size);
  const std::string failures = tapeflow::fuzz::run_thread_program(in);
  if (!failures.empty()) {
    std::fprintf(stderr, "fuzz_threads: the program broke what must hold:\n%s", failures.c_str());
    std::abort();
  }
  return 0;
}
