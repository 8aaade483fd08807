// Comparisons, logic, selection and casting. Comparisons and logic give bool tensors and are
// registered non-differentiable (as in TensorFlow); SelectV2 (where) and float->float Cast carry
// gradients.

#include <cmath>
#include <limits>

#include "autodiff/masked_lanes.h"
#include "core/bfloat16.h"
#include "kernels/cpu/elementwise.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {
/// Validates dtypes and shapes, then writes f(x, y) as bool over the broadcast shape. `allow_bool`:
/// whether bool operands are accepted (Equal and NotEqual; ordering comparisons need numbers).
template <class F>
Tensor compare(std::string_view op, const Tensor& x, const Tensor& y, bool allow_bool, F f) {
  require_same_dtype(x, y, op);
  if (!allow_bool) require_numeric(x, op);
  const Shape out_shape = broadcast_shapes(x.shape(), y.shape(), op);
  Tensor out = detail::empty(out_shape, DType::Bool, op);
  visit_dtype(x.dtype(), [&]<class T>() {
    cpu::zip(x.values<T>().data(), x.shape(), y.values<T>().data(), y.shape(),
             detail::mutable_data<bool>(out), out_shape, [&](T a, T b) -> bool { return f(a, b); });
  });
  return out;
}

}  // namespace

#define TAPEFLOW_COMPARISON(Name, expr, allow_bool)                       \
  struct Name {                                                           \
    static constexpr std::string_view kName = #Name;                      \
    static constexpr auto kElement = [](auto a, auto b) { return expr; }; \
    static Tensor forward(const Tensor& x, const Tensor& y) {             \
      return compare(kName, x, y, allow_bool, kElement);                  \
    }                                                                     \
  };
// z = (x == y) etc., elementwise with broadcasting; no gradient (bool result).
TAPEFLOW_COMPARISON(Equal, a == b, true)
TAPEFLOW_COMPARISON(NotEqual, a != b, true)
TAPEFLOW_COMPARISON(Less, a < b, false)
TAPEFLOW_COMPARISON(LessEqual, a <= b, false)
TAPEFLOW_COMPARISON(Greater, a > b, false)
TAPEFLOW_COMPARISON(GreaterEqual, a >= b, false)
#undef TAPEFLOW_COMPARISON
}  // namespace ops
Tensor equal(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Equal>(x, y); }
Tensor not_equal(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::NotEqual>(x, y); }
Tensor less(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Less>(x, y); }
Tensor less_equal(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::LessEqual>(x, y); }
Tensor greater(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::Greater>(x, y); }
Tensor greater_equal(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::GreaterEqual>(x, y); }
namespace ops {

namespace {
void require_bool(const Tensor& x, std::string_view op, std::string_view arg) {
  TAPEFLOW_REQUIRE(x.dtype() == DType::Bool, InvalidArgumentError,
                   "[{}] '{}' must be a bool tensor, got a {}", op, arg, describe(x));
}

/// Logical ops take bool tensors only (TensorFlow does not treat numbers as truth values here).
template <class F>
Tensor logical(std::string_view op, const Tensor& x, const Tensor& y, F f) {
  require_bool(x, op, "x");
  require_bool(y, op, "y");
  const Shape out_shape = broadcast_shapes(x.shape(), y.shape(), op);
  Tensor out = detail::empty(out_shape, DType::Bool, op);
  cpu::zip(x.values<bool>().data(), x.shape(), y.values<bool>().data(), y.shape(),
           detail::mutable_data<bool>(out), out_shape, f);
  return out;
}

}  // namespace

// z = x && y (bool); no gradient
struct LogicalAnd {
  static constexpr std::string_view kName = "LogicalAnd";
  static constexpr auto kElement = [](auto a, auto b) { return a && b; };
  static Tensor forward(const Tensor& x, const Tensor& y) { return logical(kName, x, y, kElement); }
};
}  // namespace ops
Tensor logical_and(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::LogicalAnd>(x, y); }
namespace ops {

// z = x || y (bool); no gradient
struct LogicalOr {
  static constexpr std::string_view kName = "LogicalOr";
  static constexpr auto kElement = [](auto a, auto b) { return a || b; };
  static Tensor forward(const Tensor& x, const Tensor& y) { return logical(kName, x, y, kElement); }
};
}  // namespace ops
Tensor logical_or(const Tensor& x, const Tensor& y) { return autodiff::apply<ops::LogicalOr>(x, y); }
namespace ops {

// z = !x (bool); no gradient
struct LogicalNot {
  static constexpr std::string_view kName = "LogicalNot";
  static constexpr auto kElement = [](auto a) { return !a; };
  static Tensor forward(const Tensor& x) {
    require_bool(x, kName, "x");
    Tensor out = detail::empty(x.shape(), DType::Bool, kName);
    cpu::map(x.values<bool>().data(), detail::mutable_data<bool>(out), x.num_elements(), kElement);
    return out;
  }
};
}  // namespace ops
Tensor logical_not(const Tensor& x) { return autodiff::apply<ops::LogicalNot>(x); }
namespace ops {

// z = cond ? x : y (cond, x, y broadcast together);
// dx = dz where cond, else exactly 0;  dy_ = dz where !cond, else exactly 0;  no gradient for cond.
// NOTE: the zeros come from where(), never from dz * mask: 0 * NaN would let a NaN or Inf
// cotangent of the branch not taken leak into the other input.
struct SelectV2 {
  static constexpr std::string_view kName = "SelectV2";
  static constexpr Saves kSaves{0b1, 0};  // cond only
  static constexpr auto kElement = [](auto c, auto a, auto b) { return c ? a : b; };
  static Tensor forward(const Tensor& cond, const Tensor& x, const Tensor& y) {
    require_bool(cond, kName, "condition");
    TAPEFLOW_REQUIRE(
        x.dtype() == y.dtype(), InvalidArgumentError,
        "[SelectV2] x and y must have the same dtype (no implicit casting): x is a {}, y is a {}",
        describe(x), describe(y));
    const Shape xy = broadcast_shapes(x.shape(), y.shape(), kName);
    const Shape out_shape = broadcast_shapes(cond.shape(), xy, kName);
    Tensor out = detail::empty(out_shape, x.dtype(), kName);
    visit_dtype(x.dtype(), [&]<class T>() {
      cpu::zip3(cond.values<bool>().data(), cond.shape(), x.values<T>().data(), x.shape(),
                y.values<T>().data(), y.shape(), detail::mutable_data<T>(out), out_shape, kElement);
    });
    return out;
  }
  static Grads backward(const GradContext& c) {
    const Tensor& cond = c.input(0);
    const Tensor zero = zeros({}, c.dy().dtype());
    // Each branch's untaken lanes (and the lanes already masked in dz) are masked from here on:
    // the gradients behind them keep them zero (src/autodiff/masked_lanes.h).
    const Tensor* dz_masked = autodiff::masked_lanes(c.dy());
    const auto branch = [&](bool taken_where_cond) {
      const Tensor g = taken_where_cond ? where(cond, c.dy(), zero) : where(cond, zero, c.dy());
      const Tensor untaken = broadcast_to(taken_where_cond ? logical_not(cond) : cond, g.shape());
      autodiff::mark_masked_lanes(g, dz_masked ? logical_or(untaken, *dz_masked) : untaken);
      return g;
    };
    Grads g(3);
    if (c.needs_input_grad(1)) g[1] = sum_to_shape(branch(true), c.input_shape(1));
    if (c.needs_input_grad(2)) g[2] = sum_to_shape(branch(false), c.input_shape(2));
    return g;
  }
};
}  // namespace ops
Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y) {
  return autodiff::apply<ops::SelectV2>(cond, x, y);
}
namespace ops {

namespace {
/// Throws InvalidArgumentError naming the first element of float `x` that has no value in the
/// integer type To (NaN, Inf, or outside To's range after truncation toward zero): converting
/// it would be undefined behaviour.
/// A rejected Cast value, exactly: a whole number with all its digits (2147483648.f, not the
/// shortest round-trip "2.1474836e+09"), anything else (NaN, Inf, a fraction) in its shortest
/// form, which also identifies it exactly.
template <class From>
std::string exact_value(From v) {
  if (std::isfinite(v) && std::trunc(v) == v) return fmt::format("{:.0f}", static_cast<double>(v));
  return fmt::format("{}", v);
}

template <class From, class To>
void require_convertible(const Tensor& x) {
  // To holds [-2^(bits-1), 2^(bits-1)); both bounds are powers of two, exact in double. A NaN
  // fails both comparisons.
  constexpr double kHi = -static_cast<double>(std::numeric_limits<To>::min());
  const auto v = x.values<From>();
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double t = std::trunc(static_cast<double>(v[i]));
    TAPEFLOW_REQUIRE(
        t >= -kHi && t < kHi, InvalidArgumentError,
        "[Cast] cannot convert {} to {}: element {} of the {} is NaN, infinite or outside {}'s range",
        exact_value(v[i]), dtype_name(dtype_of<To>()), i, describe(x), dtype_name(dtype_of<To>()));
  }
}

}  // namespace

// z = cast(x, dtype);  dx = cast(dz, dtype of x) when both dtypes are float; otherwise no
// gradient (integers and bools carry none)
// bfloat16 goes through float32 both ways: widening is exact, and anything else reaches
// bfloat16 by float32 rounded to nearest even (from float64 and large integers that rounds
// twice, as TensorFlow's Eigen cast does).
struct Cast {
  static constexpr std::string_view kName = "Cast";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  struct Attrs {
    DType dtype;
  };
  static Tensor forward(const Attrs& a, const Tensor& x) {
    if (a.dtype == x.dtype()) return detail::share_with_shape(x, x.shape());
    if (x.dtype() == DType::BFloat16) return forward(a, detail::bfloat16_to_float32(x, kName));
    if (a.dtype == DType::BFloat16)
      return detail::float32_to_bfloat16(x.dtype() == DType::Float32 ? x : forward({DType::Float32}, x),
                                         kName);
    Tensor out = detail::empty(x.shape(), a.dtype, kName);
    visit_dtype(x.dtype(), [&]<class From>() {
      visit_dtype(a.dtype, [&]<class To>() {
        if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> && !std::is_same_v<To, bool>)
          require_convertible<From, To>(x);
        cpu::map(x.values<From>().data(), detail::mutable_data<To>(out), x.num_elements(), [](From v) -> To {
          if constexpr (std::is_same_v<To, bool>)
            return v != From(0);  // nonzero (and NaN) is true
          else
            return static_cast<To>(v);  // int64 -> int32 wraps (C++20: modulo 2^32), as in TensorFlow
        });
      });
    });
    return out;
  }
  static std::vector<Tensor> batch(const BatchContext& c) { return autodiff::batch_broadcasting(c); }
  static Grads backward(const GradContext& c) {
    if (!is_floating(c.input_dtype(0)) || !is_floating(c.dy().dtype())) return {std::nullopt};
    return {pass_masked_lanes(c.dy(), cast(c.dy(), c.input_dtype(0)))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"DstT"});
    return {tapeflow::cast(a.in(0), a.dtype("DstT"))};
  }
};
}  // namespace ops
Tensor cast(const Tensor& x, DType dtype) { return autodiff::apply_with<ops::Cast>({dtype}, x); }
namespace ops {

void register_compare_ops(Registrar& r) {
  r.add_non_differentiable<Equal>(equal);
  r.add_non_differentiable<NotEqual>(not_equal);
  r.add_non_differentiable<Less>(less);
  r.add_non_differentiable<LessEqual>(less_equal);
  r.add_non_differentiable<Greater>(greater);
  r.add_non_differentiable<GreaterEqual>(greater_equal);
  r.add_non_differentiable<LogicalAnd>(logical_and);
  r.add_non_differentiable<LogicalOr>(logical_or);
  r.add_non_differentiable<LogicalNot>(logical_not);
  r.add<SelectV2>(where);
  r.add<Cast>();
}

}  // namespace ops

// TensorFlow builds logical_xor from and/or/not; on bools it is exactly not_equal: one pass.
Tensor logical_xor(const Tensor& x, const Tensor& y) {
  ops::require_defined(x, "LogicalXor", "x");
  ops::require_defined(y, "LogicalXor", "y");
  ops::require_bool(x, "LogicalXor", "x");
  ops::require_bool(y, "LogicalXor", "y");
  return not_equal(x, y);
}
Tensor operator==(const Tensor& x, const Tensor& y) { return equal(x, y); }
Tensor operator!=(const Tensor& x, const Tensor& y) { return not_equal(x, y); }
Tensor operator<(const Tensor& x, const Tensor& y) { return less(x, y); }
Tensor operator<=(const Tensor& x, const Tensor& y) { return less_equal(x, y); }
Tensor operator>(const Tensor& x, const Tensor& y) { return greater(x, y); }
Tensor operator>=(const Tensor& x, const Tensor& y) { return greater_equal(x, y); }
Tensor operator==(const Tensor& x, Scalar y) { return equal(x, y.as(x.dtype(), "Equal")); }
Tensor operator!=(const Tensor& x, Scalar y) { return not_equal(x, y.as(x.dtype(), "NotEqual")); }
Tensor operator<(const Tensor& x, Scalar y) { return less(x, y.as(x.dtype(), "Less")); }
Tensor operator<=(const Tensor& x, Scalar y) { return less_equal(x, y.as(x.dtype(), "LessEqual")); }
Tensor operator>(const Tensor& x, Scalar y) { return greater(x, y.as(x.dtype(), "Greater")); }
Tensor operator>=(const Tensor& x, Scalar y) { return greater_equal(x, y.as(x.dtype(), "GreaterEqual")); }
Tensor operator&&(const Tensor& x, const Tensor& y) { return logical_and(x, y); }
Tensor operator||(const Tensor& x, const Tensor& y) { return logical_or(x, y); }
Tensor operator!(const Tensor& x) { return logical_not(x); }
bool to_bool(const Tensor& t) {
  ops::require_defined(t, "to_bool", "t");
  TAPEFLOW_REQUIRE(
      t.num_elements() == 1, InvalidArgumentError,
      "[to_bool] the truth value of a tensor with {} elements is ambiguous: got a {}; reduce it to "
      "one element first",
      t.num_elements(), ops::describe(t));
  return visit_dtype(t.dtype(), [&]<class T>() { return t.values<T>()[0] != T(0); });
}

}  // namespace tapeflow
