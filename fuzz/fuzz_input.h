#pragma once
// Decodes a libFuzzer input into tapeflow arguments: ranks, dims, dtypes, values, axes and
// attributes. Every draw reads a few bytes from the front of the input; when the input is used
// up, draws return zeros (so a short input is still a valid program). The distributions are
// chosen so that about half the calls are valid and half hit an error path:
//   - ranks 0-6, sometimes up to 9 (above kMaxRank);
//   - dims 0-16, sometimes negative (-1, -7), or extreme (2^31, 2^40, 2^62, INT64_MAX/MIN);
//   - values: ordinary numbers, NaN, +-Inf, -0, denormals, the largest/smallest finite values;
//   - attributes (axes, sizes, strides, windows): small, negative, or extreme.
// The harness invariant: tapeflow returns or throws a tapeflow::Error. Any other exception
// escapes LLVMFuzzerTestOneInput and libFuzzer reports it (-handle_abrt: std::terminate); a
// crash, sanitizer report or leak is reported by the sanitizers.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tapeflow::fuzz {

/// Byte budget per input: a fuzz run sets the allocation limit so that huge shapes throw
/// ResourceExhaustedError instead of allocating (see init()).
inline constexpr std::int64_t kAllocationLimit = std::int64_t{8} << 20;
/// Tensors built from input bytes hold at most this many elements (larger ones use fill()).
inline constexpr std::int64_t kMaxDecodedElements = 4096;

/// Process setup shared by all harnesses: a small allocation limit, one thread (so runs are
/// reproducible and a 2-core machine is not oversubscribed), logging off.
void init();

class FuzzInput {
 public:
  FuzzInput(const std::uint8_t* data, std::size_t size) : p_(data), n_(size) {}

  bool empty() const { return n_ == 0; }
  std::size_t remaining() const { return n_; }

  std::uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() {
    return static_cast<std::uint32_t>(u16()) | (static_cast<std::uint32_t>(u16()) << 16);
  }
  std::uint64_t u64() {
    return static_cast<std::uint64_t>(u32()) | (static_cast<std::uint64_t>(u32()) << 32);
  }
  bool boolean() { return (u8() & 1) != 0; }
  /// Uniform-ish in [lo, hi] (inclusive).
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    const std::uint64_t r = span <= 256 ? u8() : u32();
    return lo + static_cast<std::int64_t>(r % span);
  }
  template <class T, std::size_t N>
  const T& pick(const T (&options)[N]) {
    return options[static_cast<std::size_t>(range(0, static_cast<std::int64_t>(N) - 1))];
  }
  /// The rest of the input as bytes.
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(p_), n_);
    p_ += n_;
    n_ = 0;
    return s;
  }

  /// An extreme integer: negative, 2^31, 2^40, 2^62, INT64_MAX/MIN, ...
  std::int64_t extreme() {
    static constexpr std::int64_t kExtremes[] = {-1,
                                                 -2,
                                                 -7,
                                                 -16,
                                                 std::int64_t{1} << 31,
                                                 (std::int64_t{1} << 31) - 1,
                                                 std::int64_t{1} << 32,
                                                 std::int64_t{1} << 40,
                                                 std::int64_t{1} << 62,
                                                 (std::int64_t{1} << 62) + 1,
                                                 std::numeric_limits<std::int64_t>::max(),
                                                 std::numeric_limits<std::int64_t>::min(),
                                                 std::numeric_limits<std::int64_t>::min() + 1,
                                                 -(std::int64_t{1} << 40)};
    return pick(kExtremes);
  }
  /// A dimension: 0-16 mostly, sometimes negative or extreme.
  std::int64_t dim() {
    const std::uint8_t k = u8();
    if (k < 232) return k % 17 < 5 ? k % 5 : k % 17;  // small dims are the common case
    return extreme();
  }
  /// A rank: 0-6 mostly, sometimes 7-9 (the maximum is 8).
  int rank() {
    const std::uint8_t k = u8();
    if (k < 240) return k % 5 == 0 ? 0 : (k % 7);
    return 7 + k % 3;
  }
  /// Dims of a tensor argument: rank() dims, each dim(); `valid_only` keeps them in 0-4 and the
  /// element count within kMaxDecodedElements.
  std::vector<std::int64_t> dims(bool valid_only = false) {
    std::vector<std::int64_t> d(static_cast<std::size_t>(valid_only ? range(0, 4) : rank()));
    for (auto& e : d) e = valid_only ? range(0, 4) : dim();
    return d;
  }
  /// An axis for a tensor of rank r: usually in [-r, r), sometimes out of range or extreme.
  std::int64_t axis(int r) {
    const std::uint8_t k = u8();
    if (k < 200) return r == 0 ? 0 : static_cast<std::int64_t>(k % (2 * r)) - r;
    if (k < 240) return static_cast<std::int64_t>(k % 5) + r - 2;  // around the edges
    return extreme();
  }
  /// A list of axes (possibly empty, repeated or out of range).
  std::vector<std::int64_t> axes(int r) {
    std::vector<std::int64_t> a(static_cast<std::size_t>(range(0, 3)));
    for (auto& e : a) e = axis(r);
    return a;
  }
  /// A size-like attribute (stride, window, multiple, padding): small, zero, negative or extreme.
  std::int64_t attr() {
    const std::uint8_t k = u8();
    if (k < 220) return k % 5;
    if (k < 235) return -static_cast<std::int64_t>(k % 3) - 1;
    return extreme();
  }
  std::vector<std::int64_t> attrs(std::size_t usual) {
    const std::uint8_t k = u8();
    std::size_t n = usual;
    if (k >= 224) n = static_cast<std::size_t>(k % 6);  // a wrong length
    std::vector<std::int64_t> a(n);
    for (auto& e : a) e = attr();
    return a;
  }
  /// A float value: ordinary, or one of the special values.
  double value() {
    const std::uint8_t k = u8();
    if (k < 192) return (static_cast<double>(static_cast<std::int8_t>(u8())) / 16.0);
    static constexpr double kSpecial[] = {std::numeric_limits<double>::quiet_NaN(),
                                          std::numeric_limits<double>::infinity(),
                                          -std::numeric_limits<double>::infinity(),
                                          -0.0,
                                          0.0,
                                          std::numeric_limits<double>::denorm_min(),
                                          -std::numeric_limits<double>::denorm_min(),
                                          1e-310,
                                          std::numeric_limits<float>::denorm_min(),
                                          std::numeric_limits<double>::max(),
                                          std::numeric_limits<double>::lowest(),
                                          std::numeric_limits<float>::max(),
                                          3e38 * 10,
                                          1e300,
                                          -1e300,
                                          2147483648.0,
                                          -2147483649.0,
                                          9.3e18,
                                          -9.3e18,
                                          1.0,
                                          -1.0,
                                          0.5};
    return pick(kSpecial);
  }
  // bfloat16 comes from bits the original picks left unused, so a committed input that drew
  // float32 or float64 before draws the same dtype now unless those bits say bfloat16 (one
  // floating pick in four).
  DType dtype() {
    static constexpr DType kAll[] = {DType::Float32, DType::Float64, DType::Float32, DType::Float64,
                                     DType::Int32,   DType::Int64,   DType::Bool};
    const std::uint8_t k = u8();
    const DType d = kAll[k % 7];
    return is_floating(d) && (k / 7) % 4 == 3 ? DType::BFloat16 : d;
  }
  DType float_dtype() {
    const std::uint8_t k = u8();
    if ((k >> 1) % 4 == 3) return DType::BFloat16;
    return (k & 1) != 0 ? DType::Float32 : DType::Float64;
  }

  /// A tensor of `dtype` and the given dims. Throws a tapeflow error for invalid dims (that is
  /// part of what is fuzzed). Up to kMaxDecodedElements elements get values from the input;
  /// larger tensors are fill()ed with one value (the allocation limit refuses huge ones).
  Tensor tensor(const std::vector<std::int64_t>& d, DType dtype);
  Tensor tensor(DType dtype) { return tensor(dims(), dtype); }
  /// Mostly a float tensor, sometimes any dtype.
  Tensor any_tensor() { return tensor(u8() < 200 ? float_dtype() : dtype()); }
  /// Integer indices in [-2, bound + 1] (some out of range), int32 or int64.
  Tensor indices(const std::vector<std::int64_t>& d, std::int64_t bound);

  const char* padding() {
    static constexpr const char* kPaddings[] = {"VALID", "SAME", "VALID", "SAME", "valid", "", "FULL"};
    return pick(kPaddings);
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
};

/// Runs `body`; a tapeflow::Error is the expected way to refuse an input and is swallowed. Any
/// other exception propagates out of LLVMFuzzerTestOneInput, which libFuzzer reports as a crash
/// (uncaught exception -> std::terminate -> abort).
template <class F>
void expect_success_or_error(F&& body) {
  try {
    body();
  } catch (const Error&) {
  }
}

/// Reads every element (so ASan sees out-of-bounds or uninitialised reads of the result) and
/// returns a checksum the optimiser cannot drop.
double touch(const Tensor& t);

}  // namespace tapeflow::fuzz

/// Defines a harness's two libFuzzer entry points around the block that follows it (like
/// libprotobuf-mutator's DEFINE_PROTO_FUZZER): LLVMFuzzerInitialize runs init(), and
/// LLVMFuzzerTestOneInput decodes the input into the FuzzInput named `in` and runs the block
/// under expect_success_or_error. A harness then holds only what it fuzzes:
///
///   TAPEFLOW_FUZZ_TARGET(in) {
///     const tapeflow::Tensor x = in.any_tensor();
///     tapeflow::fuzz::touch(tapeflow::exp(x));
///   }
#define TAPEFLOW_FUZZ_TARGET(in)                                                      \
  static void tapeflow_fuzz_target(::tapeflow::fuzz::FuzzInput& in);                  \
  extern "C" int LLVMFuzzerInitialize(int*, char***) {                                \
    ::tapeflow::fuzz::init();                                                         \
    return 0;                                                                         \
  }                                                                                   \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    ::tapeflow::fuzz::FuzzInput input(data, size);                                    \
    ::tapeflow::fuzz::expect_success_or_error([&] { tapeflow_fuzz_target(input); });  \
    return 0;                                                                         \
  }                                                                                   \
  static void tapeflow_fuzz_target(::tapeflow::fuzz::FuzzInput& in)

namespace tapeflow::fuzz {

/// Calls f(xs); when the input says so, under a tape watching the float inputs, then takes the
/// gradient of the result with a ones or decoded upstream gradient (so the gradient functions,
/// where TensorFlow had 44 advisories, are fuzzed too), and sometimes a second-order gradient
/// through a nested tape.
template <class F>
void run_op(FuzzInput& in, const std::vector<Tensor>& xs, F&& f) {
  const std::uint8_t mode = in.u8() % 4;
  if (mode == 0 || mode == 1) {
    touch(f(xs));
    return;
  }
  std::vector<Source> sources;
  for (const Tensor& x : xs)
    if (is_floating(x.dtype())) sources.emplace_back(x);
  GradientTape outer;
  std::vector<Gradient> grads;
  {
    GradientTape tape;
    for (const Source& s : sources) tape.watch(s);
    for (const Source& s : sources) outer.watch(s);
    const Tensor y = f(xs);
    touch(y);
    std::vector<Tensor> upstream;
    if (in.boolean() && y.num_elements() <= kMaxDecodedElements)
      upstream.push_back(
          in.tensor(std::vector<std::int64_t>(y.shape().dims().begin(), y.shape().dims().end()), y.dtype()));
    grads = tape.gradient_flat(y, sources, upstream,
                               in.boolean() ? UnconnectedGradients::Zero : UnconnectedGradients::None);
  }
  for (const auto& g : grads)
    if (g) touch(*g);
  if (mode == 3) {  // second order: the gradient of the sum of the first gradients
    std::vector<Tensor> targets;
    for (const auto& g : grads)
      if (g) targets.push_back(*g);
    if (!targets.empty()) {
      for (const auto& g2 : outer.gradient_flat(Targets(targets), sources, {}, UnconnectedGradients::None))
        if (g2) touch(*g2);
    }
  }
}

}  // namespace tapeflow::fuzz
