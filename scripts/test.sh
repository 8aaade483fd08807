#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite:
#   0. formatting: every C++ file matches .clang-format (scripts/check_format.sh);
#   1. release build (gcc) and ctest (unit tests, example golden tests, a short gradient fuzz),
#      (with the Python module's golden programs and pytest), then the packaging check: install,
#      and three consumer projects (scripts/check_packaging.sh), the Python module installed by
#      CMake and by pip (scripts/check_python_packaging.sh),
#      and the documentation site (scripts/docs.sh: Doxygen, failing on any undocumented public
#      API; then scripts/check_docs_site.py: every page loads in headless Chromium, no broken link);
#   2. clang ASan + UBSan (float-cast-overflow included) + libFuzzer coverage build (preset fuzz):
#      the whole unit-test binary, the examples under LeakSanitizer, and every fuzz harness
#      replaying its committed corpus plus a fixed number of seeded mutations (scripts/fuzz.sh:
#      deterministic, a regression test; open-ended fuzzing is scripts/fuzz_explore.sh);
#   3. clang ThreadSanitizer build (preset tsan) of the library and the thread tests.
# Any sanitizer report fails the run (halt_on_error, non-zero exit codes). docs/RELIABILITY.md
# has the figures. FUZZ_RUNS (default 1000) sets the mutations per fuzz harness.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
jobs="$(nproc)"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout: a fresh clone elsewhere reuses the cache of an earlier one.
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi

step() { echo "=== test.sh: $* ($(date -u +%H:%M:%S))"; }

step "formatting: every C++ file matches .clang-format"
scripts/check_format.sh
step "release build and ctest"
cmake --preset release -DTAPEFLOW_BUILD_TESTS=ON "${launcher[@]}" >/dev/null
cmake --build --preset release -j"$jobs"
ctest --test-dir build/release --output-on-failure -j"$jobs"
step "packaging: install, find_package, pkg-config and add_subdirectory consumers"
scripts/check_packaging.sh build/release
step "Python packaging: cmake --install and pip install --no-build-isolation, then import"
scripts/check_python_packaging.sh build/release
step "API reference: doxygen, failing on undocumented public API"
scripts/docs.sh
step "documentation site: every page in headless Chromium, links, code blocks, a screenshot"
scripts/check_docs_site.py build/docs/html

# Sanitizer settings: stop at the first report and exit non-zero.
export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:allocator_may_return_null=1:exitcode=86
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87
export LSAN_OPTIONS="exitcode=88:suppressions=$PWD/scripts/lsan.supp"  # third-party caches only
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:exitcode=89

step "ASan + UBSan build (clang, preset fuzz)"
cmake --preset fuzz "${launcher[@]}" >/dev/null
cmake --build --preset fuzz -j"$jobs"
step "ASan + UBSan: the whole unit-test suite"
build/fuzz/tests/tapeflow_tests --gtest_brief=1
step "LeakSanitizer (and ASan + UBSan): the examples and their golden output"
ctest --test-dir build/fuzz --output-on-failure -j"$jobs" -R '^(examples|seeds)\.'
step "libFuzzer: every harness on its committed corpus, then ${FUZZ_RUNS:-1000} seeded mutations"
scripts/fuzz.sh --no-build

step "ThreadSanitizer build (clang, preset tsan): the library and the thread tests"
cmake --preset tsan "${launcher[@]}" >/dev/null
cmake --build --preset tsan -j"$jobs"
# OpenBLAS is not instrumented: keep its own threads out of the picture.
OPENBLAS_NUM_THREADS=1 build/tsan/tests/tapeflow_thread_tests --gtest_filter='Threads*:*Threads.*:Variable.ReadsFromManyThreads*' --gtest_brief=1
step "done"
