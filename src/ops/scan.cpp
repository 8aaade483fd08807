// Scans along an axis: cumsum (Cumsum), cumprod (Cumprod), cumulative_logsumexp
// (CumulativeLogsumexp) and the first-order linear recurrence (LinearRecurrence) that cumprod's
// gradient and its own are written with.
//
// Every scan walks the axis once per line. A tensor is (outer, n, inner) around the axis; the
// kernels take blocks of up to kBlock neighbouring lines (contiguous in memory along `inner`) and
// step along the axis with one running value per line, so the loads are contiguous whatever the
// axis, and the blocks are split over tapeflow's threads.

#include "tapeflow/ops/scan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ops/families.h"
#include "ops/index_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow {
namespace ops {
namespace {

constexpr std::int64_t kBlock = 64;

/// Calls step(first, count, i, offset) for each block of `count` <= kBlock neighbouring lines and
/// each position i along the axis, in scan order (backwards when `reverse`), with `offset` the
/// flat index of the block's element at i; `first` is true at the scan's first position. A block's
/// positions run on one thread, in order.
template <class Step>
void scan_blocks(const AxisLines& L, bool reverse, Step&& step) {
  const std::int64_t blocks_per_outer = (L.inner + kBlock - 1) / kBlock;
  const std::int64_t cost = std::max<std::int64_t>(1, L.n * std::min(L.inner, kBlock));
  cpu::parallel_for(L.outer * blocks_per_outer, std::max<std::int64_t>(1, cpu::kParallelGrain / cost),
                    [&](std::int64_t b0, std::int64_t b1) {
                      for (std::int64_t b = b0; b < b1; ++b) {
                        const std::int64_t o = b / blocks_per_outer, k0 = (b % blocks_per_outer) * kBlock;
                        const std::int64_t count = std::min(kBlock, L.inner - k0);
                        for (std::int64_t s = 0; s < L.n; ++s) {
                          const std::int64_t i = reverse ? L.n - 1 - s : s;
                          step(s == 0, count, i, (o * L.n + i) * L.inner + k0);
                        }
                      }
                    });
}

/// y = the scan of x along the axis with `combine`, starting from `identity`: y[i] holds the
/// combination of x up to i (or before i when `exclusive`), from the end when `reverse`.
template <class T, class Combine>
void scan(const AxisLines& L, const T* x, T* y, bool exclusive, bool reverse, T identity, Combine combine) {
  thread_local std::array<T, kBlock> acc;  // one running value per line of the block
  scan_blocks(L, reverse, [&](bool first, std::int64_t count, std::int64_t, std::int64_t off) {
    if (first) std::fill_n(acc.begin(), count, identity);
    for (std::int64_t k = 0; k < count; ++k) {
      const T next = combine(acc[k], x[off + k]);
      y[off + k] = exclusive ? acc[k] : next;
      acc[k] = next;
    }
  });
}

/// log(exp(a) + exp(b)) without overflow; -inf is the identity, and two infinities of one sign
/// give themselves (never inf - inf).
template <class T>
T log_add_exp(T a, T b) {
  if (a == b) return std::isinf(a) ? a : a + T(std::log(2.0));
  const T m = std::max(a, b);
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

struct ScanAttrs {
  int axis = 0;
  bool exclusive = false;
  bool reverse = false;
};

/// A scan's batching rule: the same scan along the element's axis, one axis further on.
template <class Op>
std::vector<Tensor> batch_scan(const BatchContext& c) {
  ScanAttrs a = c.attrs<ScanAttrs>();
  ++a.axis;
  return {apply_with<Op>(a, c.input(0))};
}

/// The axis of a scan's public function, normalised; throws naming `op` and `arg` for a scalar.
int scan_axis(std::string_view op, const Tensor& x, std::int64_t axis, std::string_view arg = "x") {
  require_defined(x, op, arg);
  TAPEFLOW_REQUIRE(x.rank() >= 1, InvalidArgumentError,
                   "[{}] {} must have rank >= 1 to scan along an axis, got a {}", op, arg, describe(x));
  return normalize_axis(axis, x.rank(), op);
}

/// The scan op `Op` on a numeric x (float32, float64, int32, int64): combine(acc, v) from identity.
template <class Combine>
Tensor numeric_scan(std::string_view op, const ScanAttrs& at, const Tensor& x, double identity,
                    Combine combine) {
  require_numeric(x, op);
  Tensor y = detail::empty(x.shape(), x.dtype(), op);
  if (y.num_elements() == 0) return y;
  visit_dtype(x.dtype(), [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>)
      scan<T>(AxisLines(x.shape(), at.axis), x.values<T>().data(), detail::mutable_data<T>(y), at.exclusive,
              at.reverse, static_cast<T>(identity), combine);
  });
  return y;
}

/// t moved one position along `axis` in scan order, a zero entering at the scan's start: out[i] =
/// t[i - 1] (or t[i + 1] when `reverse`). Written with strided_slice and pad, whose bounds are
/// counted from the ends, so a traced graph holds no size.
Tensor lag(const Tensor& t, int axis, bool reverse) {
  std::vector<SliceSpec> specs(static_cast<std::size_t>(axis) + 1, SliceSpec::all());
  specs.back() = reverse ? SliceSpec::range(1, std::nullopt) : SliceSpec::range(std::nullopt, -1);
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings(static_cast<std::size_t>(t.rank()), {0, 0});
  paddings[static_cast<std::size_t>(axis)] =
      reverse ? std::pair<std::int64_t, std::int64_t>{0, 1} : std::pair<std::int64_t, std::int64_t>{1, 0};
  return pad(strided_slice(t, specs), paddings);
}

}  // namespace

// y[i] = x[0] + ... + x[i] along the axis;  dx = cumsum(dy) the other way
struct Cumsum {
  static constexpr std::string_view kName = "Cumsum";
  static constexpr Saves kSaves = kSavesNothing;
  using Attrs = ScanAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_scan<Cumsum>(c); }
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attr_in(kName, "axis", a.axis, 0, x.rank(), x);
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    return numeric_scan(kName, a, x, 0.0,
                        []<class T>(T acc, T v) { return wrapping(acc, v, std::plus<>{}); });
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    return {math::cumsum(c.dy(), a.axis, a.exclusive, !a.reverse)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis", "exclusive", "reverse"});
    return {math::cumsum(a.in(0), a.i("axis", 0), a.b("exclusive", false), a.b("reverse", false))};
  }
};

// y[i] = x[0] * ... * x[i] along the axis.
// dx[i] = sum_{j >= i} dy[j] prod_{k <= j, k != i} x[k] = E[i] S[i], with E the exclusive cumprod
// (the factors before i) and S[i] = dy[i] + x[i+1] S[i+1] (the factors after i, to each j): a
// linear recurrence run backwards, exact where x has zeros. Exclusive: S[i] = dy[i+1] + x[i+1]
// S[i+1]. Reversed, every index above mirrors: S[i] = dy[i] + x[i-1] S[i-1], a forward recurrence
// whose coefficient linking i-1 to i is x[i-1].
struct Cumprod {
  static constexpr std::string_view kName = "Cumprod";
  static constexpr Saves kSaves{0b1u, 0};  // x
  using Attrs = ScanAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_scan<Cumprod>(c); }
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attr_in(kName, "axis", a.axis, 0, x.rank(), x);
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    return numeric_scan(kName, a, x, 1.0,
                        []<class T>(T acc, T v) { return wrapping(acc, v, std::multiplies<>{}); });
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor& x = c.input(0);
    const Tensor before = math::cumprod(x, a.axis, /*exclusive=*/true, a.reverse);
    // The dy entering at each position: dy[i], or for an exclusive scan dy[i+1] (the product at
    // i+1 is the first to hold x[i]).
    const Tensor entering = a.exclusive ? lag(c.dy(), a.axis, !a.reverse) : c.dy();
    const Tensor coefficient = a.reverse ? lag(x, a.axis, false) : x;
    return {before * math::linear_recurrence(coefficient, entering, a.axis, !a.reverse)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis", "exclusive", "reverse"});
    return {math::cumprod(a.in(0), a.i("axis", 0), a.b("exclusive", false), a.b("reverse", false))};
  }
};

// y[i] = log(exp(x[0]) + ... + exp(x[i])) along the axis.
// dx[j] = sum_{i >= j} dy[i] exp(x[j] - y[i]) = exp(x[j] - y[j]) g[j], with g[j] = dy[j] +
// r[j+1] g[j+1] and r[k] = exp(y[k-1] - y[k]) in (0, 1] (y never decreases): a linear recurrence
// run backwards whose factors cannot overflow, as TensorFlow's log-domain formula cannot either;
// unlike that formula it is linear in dy, so forward mode (the gradient of the gradient with
// respect to dy) is right. An exclusive scan is the inclusive one moved one place along the axis.
struct CumulativeLogsumexp {
  static constexpr std::string_view kName = "CumulativeLogsumexp";
  static constexpr Saves kSaves{0b1u, 1};  // x and y
  using Attrs = ScanAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) { return batch_scan<CumulativeLogsumexp>(c); }
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attr_in(kName, "axis", a.axis, 0, x.rank(), x);
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    require_floating(x, kName);
    Tensor y = detail::empty(x.shape(), x.dtype(), kName);
    if (y.num_elements() == 0) return y;
    visit_floating(x.dtype(), [&]<class T>() {
      scan<T>(AxisLines(x.shape(), a.axis), x.values<T>().data(), detail::mutable_data<T>(y), a.exclusive,
              a.reverse, -std::numeric_limits<T>::infinity(), [](T acc, T v) { return log_add_exp(acc, v); });
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const auto& a = c.attrs<Attrs>();
    const Tensor& x = c.input(0);
    const Tensor y = a.exclusive ? math::cumulative_logsumexp(x, a.axis, false, a.reverse) : c.output();
    const Tensor dy = a.exclusive ? lag(c.dy(), a.axis, !a.reverse) : c.dy();
    // r in scan order; minimum() keeps the factor at the scan's first position (never read by the
    // recurrence) finite.
    const Tensor r = exp(minimum(lag(y, a.axis, a.reverse) - y, 0.0));
    // The recurrence's coefficient linking positions k-1 and k along the axis.
    const Tensor link = a.reverse ? lag(r, a.axis, false) : r;
    return {exp(x - y) * math::linear_recurrence(link, dy, a.axis, !a.reverse)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"axis", "exclusive", "reverse"});
    return {
        math::cumulative_logsumexp(a.in(0), a.i("axis", 0), a.b("exclusive", false), a.b("reverse", false))};
  }
};

struct RecurrenceAttrs {
  int axis = 0;
  bool reverse = false;
};

// h[t] = a[t] h[t-1] + b[t] (reverse: h[t] = a[t+1] h[t+1] + b[t]), h = 0 before the start.
// With g the reverse recurrence on dh (the gradient of every h[t]): db = g, and
// da[t] = g[t] h[t-1] (reverse: g[t-1] h[t]), da[0] = 0.
struct LinearRecurrence {
  static constexpr std::string_view kName = "LinearRecurrence";
  static constexpr Saves kSaves{0b1u, 1};  // a and h
  using Attrs = RecurrenceAttrs;
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    const std::vector<Tensor> in = c.all_stacked();
    return {apply_with<LinearRecurrence>(Attrs{a.axis + 1, a.reverse}, in[0], in[1])};
  }
  static void check_attrs(const Attrs& at, const Tensor& a, const Tensor&) {
    require_attr_in(kName, "axis", at.axis, 0, a.rank(), a, "a");
  }
  static Tensor forward(const Attrs& at, const Tensor& a, const Tensor& b) {
    require_floating(a, kName, "a");
    TAPEFLOW_REQUIRE(a.dtype() == b.dtype() && a.shape() == b.shape(), InvalidArgumentError,
                     "[{}] a and b must have one shape and dtype: a is a {}, b is a {}", kName, describe(a),
                     describe(b));
    Tensor h = detail::empty(b.shape(), b.dtype(), kName);
    if (h.num_elements() == 0) return h;
    visit_floating(a.dtype(), [&]<class T>() {
      const T *pa = a.values<T>().data(), *pb = b.values<T>().data();
      T* ph = detail::mutable_data<T>(h);
      const AxisLines L(a.shape(), at.axis);
      // The coefficient linking position i to the previous one in scan order: a[i] forwards,
      // a[i + 1] backwards (one line further along the axis).
      const std::int64_t link = at.reverse ? L.inner : 0;
      scan_blocks(L, at.reverse, [&](bool first, std::int64_t count, std::int64_t, std::int64_t off) {
        for (std::int64_t k = 0; k < count; ++k) {
          const std::int64_t e = off + k;
          const std::int64_t prev = at.reverse ? e + L.inner : e - L.inner;
          ph[e] = first ? pb[e] : pa[e + link] * ph[prev] + pb[e];
        }
      });
    });
    return h;
  }
  static Grads backward(const GradContext& c) {
    const auto& at = c.attrs<Attrs>();
    const Tensor &a = c.input(0), &h = c.output();
    const Tensor g = math::linear_recurrence(a, c.dy(), at.axis, !at.reverse);
    Grads grads(2);
    if (c.needs_input_grad(0))
      grads[0] = at.reverse ? lag(g, at.axis, false) * h : g * lag(h, at.axis, false);
    grads[1] = g;
    return grads;
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"axis", "reverse"});
    return {math::linear_recurrence(a.in(0), a.in(1), a.i("axis", 0), a.b("reverse", false))};
  }
};

void register_scan_ops(Registrar& r) {
  r.add<Cumsum>();
  r.add<Cumprod>();
  r.add<CumulativeLogsumexp>();
  r.add<LinearRecurrence>();
}

}  // namespace ops

namespace math {

Tensor cumsum(const Tensor& x, std::int64_t axis, bool exclusive, bool reverse) {
  return autodiff::apply_with<ops::Cumsum>({ops::scan_axis(ops::Cumsum::kName, x, axis), exclusive, reverse},
                                           x);
}

Tensor cumprod(const Tensor& x, std::int64_t axis, bool exclusive, bool reverse) {
  return autodiff::apply_with<ops::Cumprod>(
      {ops::scan_axis(ops::Cumprod::kName, x, axis), exclusive, reverse}, x);
}

Tensor cumulative_logsumexp(const Tensor& x, std::int64_t axis, bool exclusive, bool reverse) {
  constexpr std::string_view op = ops::CumulativeLogsumexp::kName;
  return autodiff::apply_with<ops::CumulativeLogsumexp>({ops::scan_axis(op, x, axis), exclusive, reverse}, x);
}

Tensor linear_recurrence(const Tensor& a, const Tensor& b, std::int64_t axis, bool reverse) {
  constexpr std::string_view op = ops::LinearRecurrence::kName;
  ops::require_defined(b, op, "b");
  return autodiff::apply_with<ops::LinearRecurrence>({ops::scan_axis(op, a, axis, "a"), reverse}, a, b);
}

}  // namespace math
}  // namespace tapeflow
