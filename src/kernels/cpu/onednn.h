#pragma once
// oneDNN (Debian's libdnnl 2.6, the library LibTorch convolves with): what every primitive
// tapeflow runs through it shares.
//   - One CPU engine; one stream per thread (a stream is not thread-safe, a primitive is).
//   - Every call is checked: oneDNN reports failures as dnnl::error, which `checked` turns into
//     tapeflow's typed errors naming the primitive and the shapes, never an abort.
//   - oneDNN threads with OpenMP (Debian builds it so). OpenMP's thread count is a per-thread
//     setting, so building and running a primitive set it to tapeflow::num_threads() on the
//     calling thread first: one knob, tf::set_num_threads, governs tapeflow's pool, OpenBLAS and
//     oneDNN. A primitive keeps the thread count it was built with (its work split is fixed
//     then), so PrimitiveCache keys by it. oneDNN's threads get the caller's floating-point mode
//     (core/float_mode.h) as tapeflow's pool workers do.
//   - Scratchpads are user-managed: each execution takes its scratchpad from tapeflow's buffer
//     cache (core/allocator.h), so it counts toward the allocation limit and is recycled.
//   - PrimitiveCache keeps built primitives per shape key: building a primitive descriptor walks
//     oneDNN's implementation list (tens of microseconds); a training step repeats its shapes.

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace tapeflow::cpu::onednn {

const dnnl::engine& engine();

/// Throws the typed error for oneDNN's failure `e` in `primitive` on `what` (the shapes):
/// ResourceExhaustedError for out-of-memory, UnimplementedError where oneDNN has no
/// implementation, InternalError otherwise (tapeflow validates arguments before calling).
[[noreturn]] void throw_error(std::string_view primitive, const std::string& what, const dnnl::error& e);

/// f(), with a dnnl::error turned into a typed error (see throw_error); `what()` describes the
/// shapes and is evaluated only on failure.
template <class F, class What>
auto checked(std::string_view primitive, What what, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw_error(primitive, what(), e);
  }
}

/// The primitive attributes tapeflow builds with: a user-managed scratchpad.
dnnl::primitive_attr attributes();

/// Runs `p` on this thread's stream with `args` (plus a scratchpad of `scratchpad_bytes` from
/// tapeflow's allocator) using tapeflow::num_threads() OpenMP threads, and waits for it.
void execute(std::string_view primitive, const std::function<std::string()>& what, const dnnl::primitive& p,
             std::unordered_map<int, dnnl::memory> args, std::size_t scratchpad_bytes);

/// Whether oneDNN computes bfloat16 convolutions and products on this CPU (it needs AVX-512;
/// AVX-512 BF16 makes them native): probed once by building one of each. Without it the bfloat16
/// ops compute in float32 and round, correctly and slower.
bool computes_bfloat16();

/// How bfloat16 convolutions and matrix products run: in oneDNN's bfloat16 kernels, or through
/// float32 (the operands widened, the float32 kernel, the result rounded once: the same exact
/// products and float32 accumulation, in another order).
enum class BFloat16Kernels { kAuto, kNative, kThroughFloat32 };

/// Whether bfloat16 convolutions run in oneDNN's bfloat16 kernels: where the CPU's bfloat16 dot
/// products outrun its float32 multiply-adds (AMX; AMD's AVX-512 BF16), given computes_bfloat16().
/// With Intel's AVX-512 BF16 alone, oneDNN 2.6's bfloat16 convolution kernels take 1.4-2.1x the
/// time of its float32 ones on the CNN's shapes, widening and rounding included, so they go through
/// float32 there; on a Zen 5 they take 0.4-0.56x float32's time on conv2 (docs/PERFORMANCE.md,
/// "bfloat16 and mixed precision").
bool convolves_bfloat16();

/// Whether bfloat16 matrix products run in oneDNN's bfloat16 matmul: on the CPUs of
/// convolves_bfloat16(), or where OpenBLAS runs kernels weaker than the CPU's
/// (cpu::openblas_kernels_fit_cpu: its float32 products are then the slower ones), given
/// computes_bfloat16(). With Intel's AVX-512 BF16 alone and OpenBLAS's AVX-512 kernels, oneDNN
/// 2.6's bfloat16 matmul took 1.2-1.4x the time of widening, OpenBLAS's sgemm and rounding on the
/// models' shapes (docs/PERFORMANCE.md).
bool multiplies_bfloat16();

/// For tests: while it lives, convolves_bfloat16() and multiplies_bfloat16() follow `choice`
/// (kNative still needs computes_bfloat16()); then kAuto again. Create it only while no
/// convolution or product runs.
class BFloat16KernelsScope {
 public:
  explicit BFloat16KernelsScope(BFloat16Kernels choice);
  ~BFloat16KernelsScope();
  BFloat16KernelsScope(const BFloat16KernelsScope&) = delete;
  BFloat16KernelsScope& operator=(const BFloat16KernelsScope&) = delete;
};

/// A memory object over tapeflow's buffer `data` (not owned).
dnnl::memory wrap(const dnnl::memory::desc& md, const void* data);

/// Sets OpenMP's thread count on the calling thread to tapeflow::num_threads(), and returns it.
int use_tapeflow_thread_count();

/// Built primitives by key and thread count, least recently used evicted past `capacity`. Thread-safe; values
/// are shared so that an evicted one stays valid for a caller still running it.
template <class Key, class Value>
class PrimitiveCache {
 public:
  explicit PrimitiveCache(std::size_t capacity) : capacity_(capacity) {}

  /// The value for `key`, built by `make()` on a miss (outside the lock: two threads may build
  /// the same key, and the first to finish is kept).
  template <class Make>
  std::shared_ptr<const Value> get(const Key& shape_key, Make make) {
    const std::pair<Key, int> key(shape_key, use_tapeflow_thread_count());
    {
      std::lock_guard lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
    }
    auto value = std::make_shared<const Value>(make());
    std::lock_guard lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) return it->second->second;
    order_.emplace_front(key, value);
    index_.emplace(key, order_.begin());
    if (order_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return value;
  }

 private:
  using Entry = std::pair<std::pair<Key, int>, std::shared_ptr<const Value>>;
  std::size_t capacity_;
  std::mutex mutex_;
  std::list<Entry> order_;
  absl::flat_hash_map<std::pair<Key, int>, typename std::list<Entry>::iterator> index_;
};

}  // namespace tapeflow::cpu::onednn
