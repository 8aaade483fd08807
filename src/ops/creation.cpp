// Creating tensors. Nothing here is recorded on a tape: constants have no history. The one op
// here, StatelessRandomUniform, goes through the dispatch path (its seed is a tensor, so a traced
// program draws from the seed it is given at call time); it has no float input, so no tape ever
// records it either.

#include "tapeflow/ops/creation.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "core/bfloat16.h"
#include "core/check.h"
#include "core/tensor_impl.h"
#include "ops/families.h"
#include "ops/op_util.h"

namespace tapeflow {
namespace {

template <Element T>
Tensor from_values(const T* data, const Shape& shape, std::string_view op) {
  Tensor t = detail::empty(shape, dtype_of<T>(), op);
  T* out = detail::mutable_data<T>(t);
  for (std::int64_t i = 0; i < shape.num_elements(); ++i) out[i] = data[i];
  return t;
}

/// `value` converted to T; throws if T cannot represent it (NaN or a fraction into an integer
/// type, out of range): converting such a double is undefined behaviour in C++.
template <Element T>
T convert_exactly(double value, std::string_view op) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0.0;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(value);
  } else {
    TAPEFLOW_REQUIRE(std::isfinite(value) && std::trunc(value) == value &&
                         value >= static_cast<double>(std::numeric_limits<T>::min()) &&
                         value <= static_cast<double>(std::numeric_limits<T>::max()),
                     InvalidArgumentError, "[{}] cannot convert {} to {}", op, value,
                     dtype_name(dtype_of<T>()));
    return static_cast<T>(value);
  }
}

}  // namespace

template <Element T>
Tensor constant(T value) {
  return from_values(&value, Shape(), "Const");
}

template <Element T>
Tensor constant(std::initializer_list<T> values) {
  return from_values(values.begin(), Shape{static_cast<std::int64_t>(values.size())}, "Const");
}

template <Element T>
Tensor constant(std::initializer_list<std::initializer_list<T>> rows) {
  const auto cols = rows.size() == 0 ? std::size_t{0} : rows.begin()->size();
  std::size_t r = 0;
  for (const auto& row : rows) {
    TAPEFLOW_REQUIRE(row.size() == cols, InvalidArgumentError,
                     "[Const] ragged nested list: row 0 has {} elements but row {} has {}", cols, r,
                     row.size());
    ++r;
  }
  Tensor t = detail::empty(Shape{static_cast<std::int64_t>(rows.size()), static_cast<std::int64_t>(cols)},
                           dtype_of<T>(), "Const");
  T* out = detail::mutable_data<T>(t);
  for (const auto& row : rows) out = std::copy(row.begin(), row.end(), out);
  return t;
}

template <Element T>
Tensor constant(std::initializer_list<std::initializer_list<std::initializer_list<T>>> values) {
  const std::size_t d0 = values.size();
  const std::size_t d1 = d0 ? values.begin()->size() : 0;
  const std::size_t d2 = d1 ? values.begin()->begin()->size() : 0;
  std::size_t i = 0;
  for (const auto& plane : values) {
    TAPEFLOW_REQUIRE(plane.size() == d1, InvalidArgumentError,
                     "[Const] ragged nested list: element 0 has {} rows but element {} has {}", d1, i,
                     plane.size());
    for (const auto& row : plane)
      TAPEFLOW_REQUIRE(row.size() == d2, InvalidArgumentError,
                       "[Const] ragged nested list: rows must all have {} elements, one has {}", d2,
                       row.size());
    ++i;
  }
  Tensor t = detail::empty(
      Shape{static_cast<std::int64_t>(d0), static_cast<std::int64_t>(d1), static_cast<std::int64_t>(d2)},
      dtype_of<T>(), "Const");
  T* out = detail::mutable_data<T>(t);
  for (const auto& plane : values)
    for (const auto& row : plane) out = std::copy(row.begin(), row.end(), out);
  return t;
}

template <Element T>
Tensor constant(const std::vector<T>& values, const Shape& shape) {
  TAPEFLOW_REQUIRE(static_cast<std::int64_t>(values.size()) == shape.num_elements(), InvalidArgumentError,
                   "[Const] {} values cannot fill shape {} ({} elements)", values.size(), shape.to_string(),
                   shape.num_elements());
  if constexpr (std::is_same_v<T, bool>) {
    // std::vector<bool> is packed: copy element by element.
    Tensor t = detail::empty(shape, DType::Bool, "Const");
    bool* out = detail::mutable_data<bool>(t);
    for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
    return t;
  } else {
    return from_values(values.data(), shape, "Const");
  }
}

#define TAPEFLOW_INSTANTIATE_CONSTANT(T)                                                               \
  template Tensor constant<T>(T);                                                                      \
  template Tensor constant<T>(std::initializer_list<T>);                                               \
  template Tensor constant<T>(std::initializer_list<std::initializer_list<T>>);                        \
  template Tensor constant<T>(std::initializer_list<std::initializer_list<std::initializer_list<T>>>); \
  template Tensor constant<T>(const std::vector<T>&, const Shape&);
TAPEFLOW_INSTANTIATE_CONSTANT(float)
TAPEFLOW_INSTANTIATE_CONSTANT(double)
TAPEFLOW_INSTANTIATE_CONSTANT(std::int32_t)
TAPEFLOW_INSTANTIATE_CONSTANT(std::int64_t)
TAPEFLOW_INSTANTIATE_CONSTANT(bool)
TAPEFLOW_INSTANTIATE_CONSTANT(bfloat16_t)
#undef TAPEFLOW_INSTANTIATE_CONSTANT

Tensor constant(double value, DType dtype) { return fill(Shape(), value, dtype); }

Tensor fill(const Shape& shape, double value, DType dtype) {
  if (dtype == DType::BFloat16)
    return detail::float32_to_bfloat16(fill(shape, value, DType::Float32), "Fill");
  Tensor t = detail::empty(shape, dtype, "Fill");
  visit_dtype(dtype, [&]<class T>() {
    const T v = convert_exactly<T>(value, "Fill");
    T* out = detail::mutable_data<T>(t);
    std::fill(out, out + shape.num_elements(), v);
  });
  return t;
}

Tensor zeros(const Shape& shape, DType dtype) { return fill(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return fill(shape, 1.0, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }

Tensor range(double start, double limit, double delta, DType dtype) {
  TAPEFLOW_REQUIRE(std::isfinite(start) && std::isfinite(limit) && std::isfinite(delta), InvalidArgumentError,
                   "[Range] start, limit and delta must be finite, got start={}, limit={}, delta={}", start,
                   limit, delta);
  TAPEFLOW_REQUIRE(delta != 0, InvalidArgumentError, "[Range] delta must not be 0");
  TAPEFLOW_REQUIRE(dtype != DType::Bool, InvalidArgumentError, "[Range] dtype bool is not supported");
  TAPEFLOW_REQUIRE((delta > 0 && start <= limit) || (delta < 0 && start >= limit), InvalidArgumentError,
                   "[Range] start={} cannot reach limit={} with delta={}", start, limit, delta);
  // The size is computed in double and checked before any conversion to an integer.
  const double count = std::ceil(std::abs((limit - start) / delta));
  TAPEFLOW_REQUIRE(count <= static_cast<double>(kMaxElements), ResourceExhaustedError,
                   "[Range] start={}, limit={}, delta={} would produce {} elements", start, limit, delta,
                   count);
  const auto n = static_cast<std::int64_t>(count);
  Tensor t = detail::empty(Shape{n}, dtype, "Range");
  visit_dtype(dtype, [&]<class T>() {
    T* out = detail::mutable_data<T>(t);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T s = convert_exactly<T>(start, "Range"), d = convert_exactly<T>(delta, "Range");
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(s + static_cast<T>(i) * d);
    } else {
      for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(start + static_cast<double>(i) * delta);
    }
  });
  return t;
}

Tensor range(std::int64_t limit, DType dtype) { return range(0.0, static_cast<double>(limit), 1.0, dtype); }

Tensor linspace(double start, double stop, std::int64_t num, DType dtype) {
  TAPEFLOW_REQUIRE(dtype == DType::Float32 || dtype == DType::Float64, InvalidArgumentError,
                   "[LinSpace] dtype must be float32 or float64, got {}", dtype_name(dtype));
  TAPEFLOW_REQUIRE(num >= 0, InvalidArgumentError, "[LinSpace] num must be >= 0, got {}", num);
  Tensor t = detail::empty(Shape::checked(std::array{num}, "LinSpace"), dtype, "LinSpace");
  ops::visit_floating(dtype, [&]<class T>() {
    T* out = detail::mutable_data<T>(t);
    const double step = num > 1 ? (stop - start) / static_cast<double>(num - 1) : 0.0;
    for (std::int64_t i = 0; i < num; ++i) out[i] = static_cast<T>(start + step * static_cast<double>(i));
    if (num > 1) out[num - 1] = static_cast<T>(stop);  // exact endpoint, as tf.linspace
  });
  return t;
}

Tensor eye(std::int64_t rows, std::optional<std::int64_t> cols, DType dtype) {
  const std::int64_t c = cols.value_or(rows);
  const std::array dims{rows, c};
  if (dtype == DType::BFloat16) return detail::float32_to_bfloat16(eye(rows, cols, DType::Float32), "Eye");
  Tensor t = zeros(Shape::checked(dims, "Eye"), dtype);
  visit_dtype(dtype, [&]<class T>() {
    T* out = detail::mutable_data<T>(t);
    for (std::int64_t i = 0; i < std::min(rows, c); ++i) out[i * c + i] = T(1);
  });
  return t;
}

namespace random {
namespace {

/// SplitMix64: a tiny, well-mixed generator whose output is fixed by the seed on every platform
/// (the std:: distributions are implementation-defined, so they are not used).
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

/// Fills a float tensor with gen(); values are kept below `exclusive_max` after rounding to T
/// (a double just below maxval can round up to it in float32).
template <class Gen>
Tensor generate(const Shape& shape, DType dtype, std::string_view op, Gen gen,
                double exclusive_max = std::numeric_limits<double>::infinity()) {
  TAPEFLOW_REQUIRE(is_floating(dtype), InvalidArgumentError,
                   "[{}] dtype must be float32, float64 or bfloat16, got {}", op, dtype_name(dtype));
  if (dtype == DType::BFloat16) {
    // float32 values rounded. One that rounded up to the excluded maximum steps to the bfloat16
    // below it, which is at most the float32 value (rounding moves by less than one step).
    Tensor t = detail::float32_to_bfloat16(generate(shape, DType::Float32, op, gen, exclusive_max), op);
    for (bfloat16_t& v : std::span(detail::mutable_data<bfloat16_t>(t), t.values<bfloat16_t>().size())) {
      if (static_cast<float>(v) < exclusive_max) continue;
      const bool positive = (v.bits & 0x8000u) == 0;
      v = bfloat16_t::from_bits(v.bits == 0 ? std::uint16_t{0x8001u}
                                            : static_cast<std::uint16_t>(positive ? v.bits - 1 : v.bits + 1));
    }
    return t;
  }
  Tensor t = detail::empty(shape, dtype, op);
  ops::visit_floating(dtype, [&]<class T>() {
    T* out = detail::mutable_data<T>(t);
    const auto limit = static_cast<T>(exclusive_max);
    const T below = std::nextafter(limit, -std::numeric_limits<T>::infinity());
    for (std::int64_t i = 0; i < shape.num_elements(); ++i) {
      const auto v = static_cast<T>(gen());
      out[i] = v < limit ? v : below;
    }
  });
  return t;
}

}  // namespace

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype, std::uint64_t seed) {
  TAPEFLOW_REQUIRE(
      std::isfinite(mean) && std::isfinite(stddev) && stddev >= 0, InvalidArgumentError,
      "[RandomStandardNormal] mean must be finite and stddev finite and >= 0, got mean={}, stddev={}", mean,
      stddev);
  SplitMix64 rng{seed};
  // Box-Muller; 1 - u keeps the logarithm's argument in (0, 1].
  return generate(shape, dtype, "RandomStandardNormal", [&] {
    const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
    return mean + stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
  });
}

namespace {

/// Uniform values in [minval, maxval) from SplitMix64 seeded with `seed`; `op` names errors.
Tensor uniform_values(std::string_view op, const Shape& shape, double minval, double maxval, DType dtype,
                      std::uint64_t seed) {
  SplitMix64 rng{seed};
  return generate(
      shape, dtype, op, [&] { return minval + (maxval - minval) * rng.uniform(); }, maxval);
}

}  // namespace

Tensor uniform(const Shape& shape, double minval, double maxval, DType dtype, std::uint64_t seed) {
  TAPEFLOW_REQUIRE(std::isfinite(minval) && std::isfinite(maxval) && minval < maxval, InvalidArgumentError,
                   "[RandomUniform] need finite minval < maxval, got minval={}, maxval={}", minval, maxval);
  return uniform_values("RandomUniform", shape, minval, maxval, dtype, seed);
}

}  // namespace random

namespace ops {
namespace {

/// The SplitMix64 seed a stateless op draws from for seed = (key, counter): splitmix64's
/// finaliser of key + (counter + 1) * golden gamma, so consecutive counters give unrelated
/// streams. (Dropout's masks have always been drawn from it: the `counter`-th mask of a layer
/// seeded with `key`.)
std::uint64_t stateless_seed(std::uint64_t key, std::uint64_t counter) {
  std::uint64_t z = key + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct StatelessRandomUniformAttrs {
  Shape shape;
  DType dtype;
};

}  // namespace

// y = U[0, 1) values drawn from seed = (key, counter): random::uniform(shape, 0, 1, dtype,
// stateless_seed(key, counter)). Not differentiable (its only input is an int64 seed).
struct StatelessRandomUniform {
  static constexpr std::string_view kName = "StatelessRandomUniform";  // TensorFlow's ...V2
  using Attrs = StatelessRandomUniformAttrs;
  static Tensor forward(const Attrs& a, const Tensor& seed) {
    TAPEFLOW_REQUIRE(seed.dtype() == DType::Int64 && seed.shape() == Shape{2}, InvalidArgumentError,
                     "[{}] seed must be an int64 tensor of shape (2,) (key, counter), got a {}", kName,
                     describe(seed));
    TAPEFLOW_REQUIRE(is_floating(a.dtype), InvalidArgumentError,
                     "[{}] dtype must be float32, float64 or bfloat16, got {} (output shape {})", kName,
                     dtype_name(a.dtype), a.shape.to_string());
    const auto s = seed.values<std::int64_t>();
    return random::uniform_values(
        kName, a.shape, 0.0, 1.0, a.dtype,
        stateless_seed(static_cast<std::uint64_t>(s[0]), static_cast<std::uint64_t>(s[1])));
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"shape", "dtype"});
    return {random::stateless_uniform(a.shape("shape"), a.in(0), a.dtype("dtype", DType::Float32))};
  }
};
}  // namespace ops
Tensor random::stateless_uniform(const Shape& shape, const Tensor& seed, DType dtype) {
  return autodiff::apply_with<ops::StatelessRandomUniform>({shape, dtype}, seed);
}
namespace ops {

void register_creation_ops(Registrar& r) { r.add_non_differentiable<StatelessRandomUniform>(); }

}  // namespace ops
}  // namespace tapeflow
