#include "kernels/cpu/onednn.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <cstdint>

#include "core/allocator.h"
#include "core/float_mode.h"
#include "core/openblas.h"
#include "core/parallel.h"
#include "tapeflow/errors.h"

// OpenMP's thread-count setting (libgomp, the runtime Debian's oneDNN is built with), declared
// here rather than through omp.h: clang's builds do not see GCC's omp.h.
extern "C" int omp_get_max_threads(void);
extern "C" void omp_set_num_threads(int);
extern "C" int omp_get_thread_num(void);
// libgomp's entry for a parallel region (what `#pragma omp parallel` compiles to; tapeflow is
// built without -fopenmp): runs fn(data) on num_threads threads, the caller being thread 0.
extern "C" void GOMP_parallel(void (*fn)(void*), void* data, unsigned num_threads, unsigned flags);

namespace tapeflow::cpu::onednn {

const dnnl::engine& engine() {
  static const dnnl::engine e = checked(
      "engine", [] { return std::string("the CPU"); },
      [] { return dnnl::engine(dnnl::engine::kind::cpu, 0); });
  return e;
}

void throw_error(std::string_view primitive, const std::string& what, const dnnl::error& e) {
  const std::string message =
      fmt::format("[oneDNN {}] {} ({}): {}", primitive, e.what(), static_cast<int>(e.status), what);
  switch (e.status) {
    case dnnl_out_of_memory:
      throw ResourceExhaustedError(message);
    case dnnl_unimplemented:
      throw UnimplementedError(message);
    default:
      throw InternalError(message);
  }
}

dnnl::primitive_attr attributes() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

bool computes_bfloat16() {
  static const bool yes = [] {
    using dnnl::memory;
    constexpr auto bf16 = memory::data_type::bf16;
    try {
      const memory::desc a({2, 2}, bf16, memory::format_tag::ab);
      const dnnl::matmul::primitive_desc product({a, a, a}, engine());
      const memory::desc images({1, 16, 4, 4}, bf16, memory::format_tag::nhwc);
      const memory::desc filters({16, 16, 3, 3}, bf16, memory::format_tag::any);
      const dnnl::convolution_forward::primitive_desc conv({dnnl::prop_kind::forward_training,
                                                            dnnl::algorithm::convolution_direct,
                                                            images,
                                                            filters,
                                                            images,
                                                            {1, 1},
                                                            {1, 1},
                                                            {1, 1}},
                                                           engine());
      return true;
    } catch (const dnnl::error&) {
      return false;  // dnnl_unimplemented: no bfloat16 kernel on this CPU
    }
  }();
  return yes;
}

namespace {
std::atomic<BFloat16Kernels> bfloat16_kernels{BFloat16Kernels::kAuto};

bool has_isa(dnnl::cpu_isa wanted) {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  return (isa & static_cast<unsigned>(wanted)) == static_cast<unsigned>(wanted);
}

/// Whether this CPU's bfloat16 dot products outrun its float32 multiply-adds, so that oneDNN's
/// bfloat16 kernels beat its float32 ones: with AMX; and on AMD's CPUs with AVX-512 BF16 (Zen 4
/// and later), whose VDPBF16PS issues as often as a float32 FMA and does two products per lane.
/// Intel's AVX-512 BF16 without AMX does not (docs/PERFORMANCE.md, "bfloat16 and mixed
/// precision": the convolutions take 1.4-2.1x float32's time there; the CNN's mixed step 0.55x
/// on a Zen 5).
bool bfloat16_dots_outrun_float32() {
  static const bool yes = [] {
    if (has_isa(dnnl::cpu_isa::avx512_core_amx)) return true;
#if defined(__x86_64__)
    __builtin_cpu_init();
    return __builtin_cpu_is("amd") && has_isa(dnnl::cpu_isa::avx512_core_bf16);
#else
    return false;
#endif
  }();
  return yes;
}

/// Whether oneDNN's bfloat16 kernels run: `automatic` unless a BFloat16KernelsScope says.
bool bfloat16_kernels_run(bool automatic) {
  switch (bfloat16_kernels.load(std::memory_order_relaxed)) {
    case BFloat16Kernels::kNative:
      return computes_bfloat16();
    case BFloat16Kernels::kThroughFloat32:
      return false;
    case BFloat16Kernels::kAuto:
      break;
  }
  return automatic && computes_bfloat16();
}
}  // namespace

bool convolves_bfloat16() { return bfloat16_kernels_run(bfloat16_dots_outrun_float32()); }

bool multiplies_bfloat16() {
  return bfloat16_kernels_run(bfloat16_dots_outrun_float32() || !openblas_kernels_fit_cpu());
}

BFloat16KernelsScope::BFloat16KernelsScope(BFloat16Kernels choice) {
  bfloat16_kernels.store(choice, std::memory_order_relaxed);
}

BFloat16KernelsScope::~BFloat16KernelsScope() {
  bfloat16_kernels.store(BFloat16Kernels::kAuto, std::memory_order_relaxed);
}

dnnl::memory wrap(const dnnl::memory::desc& md, const void* data) {
  return checked(
      "memory", [&] { return fmt::format("a buffer of dims ({})", fmt::join(md.dims(), ", ")); },
      [&] { return dnnl::memory(md, engine(), const_cast<void*>(data)); });
}

int use_tapeflow_thread_count() {
  const int threads = cpu::num_threads();
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  return threads;
}

namespace {

/// Gives oneDNN's OpenMP threads the calling thread's floating-point mode (core/float_mode.h), as
/// tapeflow's pool gives its workers. OpenMP keeps a team of threads per calling thread between
/// parallel regions, so one region sets it whenever the mode or the team's size changed.
void share_float_mode_with_openmp(int threads) {
  thread_local FloatMode given_mode = 0;
  thread_local int given_threads = 1;  // a team of one is the caller itself
  const FloatMode mode = current_float_mode();
  if (threads <= 1 || (mode == given_mode && threads == given_threads)) return;
  // The mode travels in the pointer itself: nothing in memory for the threads to read.
  GOMP_parallel(
      [](void* m) {
        if (omp_get_thread_num() != 0)
          set_float_mode(static_cast<FloatMode>(reinterpret_cast<std::uintptr_t>(m)));
      },
      reinterpret_cast<void*>(static_cast<std::uintptr_t>(mode)), static_cast<unsigned>(threads), 0);
  given_mode = mode;
  given_threads = threads;
}

}  // namespace

void execute(std::string_view primitive, const std::function<std::string()>& what, const dnnl::primitive& p,
             std::unordered_map<int, dnnl::memory> args, std::size_t scratchpad_bytes) {
  std::shared_ptr<void> scratchpad;
  if (scratchpad_bytes > 0) {
    scratchpad = detail::allocate_buffer(static_cast<std::int64_t>(scratchpad_bytes), primitive);
    const dnnl::memory::desc md({static_cast<dnnl::memory::dim>(scratchpad_bytes)},
                                dnnl::memory::data_type::u8, dnnl::memory::format_tag::a);
    args.emplace(DNNL_ARG_SCRATCHPAD, wrap(md, scratchpad.get()));
  }
  share_float_mode_with_openmp(use_tapeflow_thread_count());
  checked(primitive, what, [&] {
    thread_local dnnl::stream stream(engine());
    p.execute(stream, args);
    stream.wait();
  });
}

}  // namespace tapeflow::cpu::onednn
