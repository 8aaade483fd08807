// Shared input decoding for the fuzz harnesses (fuzz_input.h).

#include "fuzz_input.h"

#include <algorithm>
#include <climits>

#include "graph/check.h"

namespace tapeflow::fuzz {

void init() {
  graph::set_checking_after_passes(true);  // a pass that breaks a fuzzed graph is named at once
  set_allocation_limit(kAllocationLimit);
  set_buffer_cache_limit(0);  // freed buffers go back to the system: LeakSanitizer sees them all
  set_min_log_level(LogLevel::Error);
}

Tensor FuzzInput::tensor(const std::vector<std::int64_t>& d, DType dtype) {
  const Shape shape{std::span<const std::int64_t>(d)};  // throws for a negative dim or overflow
  const std::int64_t n = shape.num_elements();
  if (n > kMaxDecodedElements) return fill(shape, value(), dtype);
  // A run of one value, or per-element values while the input lasts (then zeros).
  const bool uniform = (u8() & 3) == 0;
  const double first = value();
  std::vector<double> v(static_cast<std::size_t>(n));
  for (auto& e : v) e = uniform ? first : value();
  switch (dtype) {
    case DType::Float64:
      return constant(v, shape);
    case DType::Float32:
    case DType::BFloat16: {
      std::vector<float> f(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) f[i] = static_cast<float>(v[i]);  // overflow -> inf, defined
      const Tensor t = constant(f, shape);
      return dtype == DType::Float32 ? t : cast(t, DType::BFloat16);
    }
    case DType::Int32:
    case DType::Int64:
    case DType::Bool: {
      std::vector<std::int64_t> k(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) {
        const double x = v[i];
        // Float -> int without UB: NaN and out-of-range values become extreme integers.
        k[i] = std::isnan(x)  ? 0
               : x >= 9.2e18  ? std::numeric_limits<std::int64_t>::max()
               : x <= -9.2e18 ? std::numeric_limits<std::int64_t>::min()
                              : static_cast<std::int64_t>(x);
      }
      if (dtype == DType::Int64) return constant(k, shape);
      std::vector<std::int32_t> k32(k.size());
      for (std::size_t i = 0; i < k.size(); ++i)
        k32[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(k[i], INT32_MIN, INT32_MAX));
      const Tensor t = constant(k32, shape);
      return dtype == DType::Int32 ? t : cast(t, DType::Bool);
    }
  }
  return Tensor();
}

Tensor FuzzInput::indices(const std::vector<std::int64_t>& d, std::int64_t bound) {
  const Shape shape{std::span<const std::int64_t>(d)};
  const std::int64_t n = shape.num_elements();
  if (n > kMaxDecodedElements) return fill(shape, 0.0, DType::Int32);
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (auto& e : v) {
    const std::uint8_t k = u8();
    if (k < 230)
      e = bound <= 0 ? 0 : static_cast<std::int64_t>(k) % bound;
    else if (k < 245)
      e = static_cast<std::int64_t>(k % 4) - 2 + (k & 1 ? bound : 0);
    else
      e = extreme();
  }
  if (boolean()) return constant(v, shape);
  std::vector<std::int32_t> v32(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    v32[i] = static_cast<std::int32_t>(std::clamp<std::int64_t>(v[i], INT32_MIN, INT32_MAX));
  return constant(v32, shape);
}

double touch(const Tensor& t) {
  double s = 0;
  if (!t.defined()) return s;
  switch (t.dtype()) {
    case DType::Float32:
      for (float v : t.values<float>()) s += v == v ? 1.0 : 0.0;
      break;
    case DType::Float64:
      for (double v : t.values<double>()) s += v == v ? 1.0 : 0.0;
      break;
    case DType::BFloat16: {
      const Tensor wide = cast(t, DType::Float32);  // a named tensor: the span must not outlive it
      for (float v : wide.values<float>()) s += v == v ? 1.0 : 0.0;
      break;
    }
    case DType::Int32:
      for (std::int32_t v : t.values<std::int32_t>()) s += static_cast<double>(v & 1);
      break;
    case DType::Int64:
      for (std::int64_t v : t.values<std::int64_t>()) s += static_cast<double>(v & 1);
      break;
    case DType::Bool: {
      const auto* b = static_cast<const std::uint8_t*>(t.raw_data());
      for (std::int64_t i = 0; i < t.num_elements(); ++i) s += b[i];
      break;
    }
  }
  return s;
}

}  // namespace tapeflow::fuzz
