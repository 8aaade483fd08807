// Replication and padding: tile (Tile) and constant pad (Pad). Each is the other's gradient's
// building block in spirit: Pad's gradient slices the interior back out; Tile's sums the copies.

#include "kernels/cpu/strided_copy.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {
struct TileAttrs {
  std::vector<std::int64_t> multiples;
};

/// The shape of tile(x, multiples), or the error naming Tile. Derived when the op runs, so a
/// traced tile serves inputs of any size (tf::function's unknown dimensions).
Shape tile_shape(const Tensor& x, const std::vector<std::int64_t>& multiples) {
  constexpr std::string_view op = "Tile";
  const Shape& s = x.shape();
  TAPEFLOW_REQUIRE(multiples.size() == static_cast<std::size_t>(s.rank()), InvalidArgumentError,
                   "[{}] multiples {} must have one entry per dimension of x (shape {}, rank {})", op,
                   multiples, s.to_string(), s.rank());
  std::vector<std::int64_t> out(multiples.size());
  for (int i = 0; i < s.rank(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    TAPEFLOW_REQUIRE(multiples[u] >= 0, InvalidArgumentError,
                     "[{}] multiples[{}] = {} is negative (multiples {})", op, i, multiples[u], multiples);
    TAPEFLOW_REQUIRE(
        !__builtin_mul_overflow(s[i], multiples[u], &out[u]), ResourceExhaustedError,
        "[{}] dimension {} of x (size {}) times multiples[{}] = {} overflows int64 (x has shape {})", op, i,
        s[i], i, multiples[u], s.to_string());
  }
  return Shape::checked(out, op);
}

/// dy of shape (m0 * d0, m1 * d1, ...) summed over its copies down to (d0, d1, ...).
Tensor sum_tiles(const Tensor& dy, const std::vector<std::int64_t>& multiples, const Shape& in) {
  // View dy as [m0, d0, m1, d1, ...] (leaving out the m_i that are 1) and sum the m axes.
  std::vector<std::int64_t> split;
  Axes axes;
  for (int i = 0; i < in.rank(); ++i) {
    const std::int64_t m = multiples[static_cast<std::size_t>(i)];
    if (m != 1) {
      axes.push_back(static_cast<std::int64_t>(split.size()));
      split.push_back(m);
    }
    split.push_back(in[i]);
  }
  if (axes.empty()) return dy;
  if (split.size() <= static_cast<std::size_t>(kMaxRank)) return reduce_sum(reshape(dy, split), axes);
  // NOTE: that view would exceed kMaxRank; sum one tiled dimension at a time as [P, m, d, S].
  Tensor g = dy;
  std::vector<std::int64_t> cur(g.shape().dims().begin(), g.shape().dims().end());
  for (int i = 0; i < in.rank(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    if (multiples[u] == 1) continue;
    std::int64_t before = 1, after = 1;
    for (std::size_t j = 0; j < u; ++j) before *= cur[j];
    for (std::size_t j = u + 1; j < cur.size(); ++j) after *= cur[j];
    g = reduce_sum(reshape(g, {before, multiples[u], in[i], after}), {1});
    cur[u] = in[i];
    g = reshape(g, cur);
  }
  return g;
}

}  // namespace

// y = tile(x, multiples);  dx = sum of the copies: reduce_sum(reshape(dy, [m0, d0, m1, d1, ...]), m axes)
struct Tile {
  static constexpr std::string_view kName = "Tile";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kThroughFloat32;  // exact: it moves values
  using Attrs = TileAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const Shape out = tile_shape(x, a.multiples);
    Tensor y = detail::empty(out, x.dtype(), kName);
    if (y.num_elements() == 0) return y;  // the multiples of an empty tile may be anything up to 2^63 - 1
    // Output position along dimension i is k * d_i + j: copy k (stride 0 in x) and element j.
    const auto in_strides = cpu::row_major_strides(x.shape()), out_strides = cpu::row_major_strides(out);
    cpu::CopyPlan p;
    for (int i = 0; i < x.rank(); ++i) {
      const auto u = static_cast<std::size_t>(i);
      p.push(a.multiples[u], 0, x.shape()[i] * out_strides[u]);
      p.push(x.shape()[i], in_strides[u], out_strides[u]);
    }
    visit_dtype(x.dtype(),
                [&]<class T>() { cpu::strided_copy(p, x.values<T>().data(), detail::mutable_data<T>(y)); });
    return y;
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    return {tile(c.input(0), autodiff::batch_dims(1, c.attrs<Attrs>().multiples))};
  }
  static Grads backward(const GradContext& c) {
    return {sum_tiles(c.dy(), c.attrs<Attrs>().multiples, c.input_shape(0))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"multiples"});
    return {tapeflow::tile(a.in(0), a.ints("multiples"))};
  }
};
}  // namespace ops
Tensor tile(const Tensor& x, const std::vector<std::int64_t>& multiples) {
  ops::require_defined(x, ops::Tile::kName);
  return autodiff::apply_with<ops::Tile>({multiples}, x);
}
namespace ops {

namespace {
/// The (before, after) pairs of Pad's flat 'paddings' attribute.
std::vector<std::pair<std::int64_t, std::int64_t>> pairs(std::string_view op, const raw_ops::Ints& flat) {
  TAPEFLOW_REQUIRE(flat.size() % 2 == 0, InvalidArgumentError,
                   "[{}] attribute 'paddings' must hold (before, after) pairs, got {} values {}", op,
                   flat.size(), flat);
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (std::size_t k = 0; k < flat.size(); k += 2) out.emplace_back(flat[k], flat[k + 1]);
  return out;
}

struct PadAttrs {
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
  Tensor value;  // a scalar of x's dtype
};

/// The shape of pad(x, paddings), or the error naming Pad. Derived when the op runs, so a traced
/// pad serves inputs of any size (tf::function's unknown dimensions).
Shape pad_shape(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings) {
  constexpr std::string_view op = "Pad";
  const Shape& s = x.shape();
  TAPEFLOW_REQUIRE(
      paddings.size() == static_cast<std::size_t>(s.rank()), InvalidArgumentError,
      "[{}] paddings has {} pairs but x has rank {} (shape {}): give one {{before, after}} pair per "
      "dimension",
      op, paddings.size(), s.rank(), s.to_string());
  std::vector<std::int64_t> out(paddings.size());
  for (int i = 0; i < s.rank(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    const auto [before, after] = paddings[u];
    TAPEFLOW_REQUIRE(before >= 0 && after >= 0, InvalidArgumentError,
                     "[{}] paddings must be non-negative: dimension {} has {{{}, {}}} (x has shape {})", op,
                     i, before, after, s.to_string());
    TAPEFLOW_REQUIRE(before <= kMaxElements - s[i] && after <= kMaxElements - s[i] - before,
                     ResourceExhaustedError,
                     "[{}] padding dimension {} of size {} by {{{}, {}}} exceeds 2^62 elements", op, i, s[i],
                     before, after);
    out[u] = s[i] + before + after;
  }
  return Shape::checked(out, op);
}

}  // namespace

// y = pad(x, paddings, c);  dx = slice(dy, before, shape(x))
struct Pad {
  static constexpr std::string_view kName = "Pad";
  static constexpr Saves kSaves = kSavesNothing;
  // It moves values and writes the constant: bfloat16 as it is (the constant is a bfloat16 scalar,
  // which widening x alone would leave of another dtype). The gradients of Slice and StridedSlice
  // pad.
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  using Attrs = PadAttrs;
  static void check_attrs(const Attrs& a, const Tensor& x) {
    require_attrs(a.value.defined() && a.value.dtype() == x.dtype() && a.value.rank() == 0, kName,
                  "the constant value must be a scalar of x's dtype: x is a {}, the value is a {}",
                  describe(x), a.value.defined() ? describe(a.value) : "undefined tensor");
  }
  static Tensor forward(const Attrs& a, const Tensor& x) {
    const Shape out = pad_shape(x, a.paddings);
    Tensor y = detail::empty(out, x.dtype(), kName);
    std::vector<std::int64_t> before;
    for (const auto& [b, e] : a.paddings) before.push_back(b);
    const cpu::CopyPlan p = cpu::box_plan(x.shape(), {}, out, before, x.shape());
    const auto fill_and_copy = [&]<class T>() {
      T* dst = detail::mutable_data<T>(y);
      std::fill(dst, dst + y.num_elements(), a.value.values<T>()[0]);
      cpu::strided_copy(p, x.values<T>().data(), dst);
    };
    if (x.dtype() == DType::BFloat16)
      fill_and_copy.template operator()<bfloat16_t>();
    else
      visit_dtype(x.dtype(), fill_and_copy);
    return y;
  }
  static std::vector<Tensor> batch(const BatchContext& c) {
    Attrs a = c.attrs<Attrs>();
    a.paddings.insert(a.paddings.begin(), {0, 0});
    return {apply_with<Pad>(a, c.input(0))};
  }
  static Grads backward(const GradContext& c) {
    const Shape& in = c.input_shape(0);
    std::vector<std::int64_t> begin;
    for (const auto& [before, after] : c.attrs<Attrs>().paddings) begin.push_back(before);
    const auto d = in.dims();
    return {slice(c.dy(), begin, {d.begin(), d.end()})};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"paddings", "constant_values"});
    return {tapeflow::pad(a.in(0), pairs("Pad", a.ints("paddings")), a.f("constant_values", 0.0))};
  }
};
}  // namespace ops
Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings,
           double constant_value) {
  constexpr std::string_view op = ops::Pad::kName;
  ops::require_defined(x, op);
  return autodiff::apply_with<ops::Pad>({paddings, Scalar(constant_value).as(x.dtype(), op)}, x);
}
namespace ops {

void register_tile_pad_ops(Registrar& r) {
  r.add<Tile>();
  r.add<Pad>();
}

}  // namespace ops

}  // namespace tapeflow
