// Fuzzes the shape and indexing ops: reshape, transpose, expand_dims, squeeze, broadcast_to,
// concat, stack, unstack, split, slice, strided_slice, gather, gather_nd, scatter_nd, tile, pad
// and one_hot, with attributes that are valid about half the time (negative, out-of-range and
// extreme sizes, axes, indices, steps, multiples and paddings).

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

tf::Tensor first_of(const std::vector<tf::Tensor>& parts) {
  return parts.empty() ? tf::constant(0.0) : parts[0];
}

std::vector<std::int64_t> list(tf::fuzz::FuzzInput& in, std::size_t usual, bool dims_like) {
  std::vector<std::int64_t> v(in.u8() < 224 ? usual : static_cast<std::size_t>(in.range(0, 7)));
  for (auto& e : v) e = dims_like ? in.dim() : in.attr();
  return v;
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 18;
  const tf::Tensor x = in.any_tensor();
  const int r = x.rank();
  const auto ur = static_cast<std::size_t>(r);
  std::vector<tf::Tensor> inputs{x};
  // Second operands and attributes, decoded before the op runs.
  std::vector<std::int64_t> a1, a2;
  std::vector<tf::SliceSpec> specs;
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
  tf::Tensor idx;
  const std::int64_t axis = in.axis(r);
  const std::int64_t num = in.attr();
  const double value = in.value();
  switch (op) {
    case 0: {  // reshape: the same element count rearranged, or any dims, maybe one -1
      a1 = list(in, ur, true);
      if (in.boolean() && !a1.empty())
        a1[static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(a1.size()) - 1))] = -1;
      break;
    }
    case 1:  // transpose: a permutation, maybe broken
      for (int i = 0; i < r; ++i) a1.push_back(r - 1 - i);
      if (in.boolean() && !a1.empty()) a1[static_cast<std::size_t>(in.range(0, r - 1))] = in.axis(r);
      if (in.u8() < 16) a1.push_back(0);
      break;
    case 3:
    case 4:  // squeeze axes / broadcast_to target
      a1 = op == 3 ? in.axes(r) : list(in, ur + static_cast<std::size_t>(in.range(0, 2)), true);
      break;
    case 5:
    case 6: {  // concat / stack: 1-3 more tensors, similar or not
      const int extra = static_cast<int>(in.range(0, 3));
      for (int i = 0; i < extra; ++i) {
        std::vector<std::int64_t> d(x.shape().dims().begin(), x.shape().dims().end());
        if (in.boolean() && !d.empty()) d[static_cast<std::size_t>(in.range(0, r - 1))] = in.dim();
        inputs.push_back(in.tensor(d, in.u8() < 240 ? x.dtype() : in.dtype()));
      }
      break;
    }
    case 9:  // split with sizes
      a1 = list(in, static_cast<std::size_t>(in.range(0, 4)), true);
      if (in.boolean() && !a1.empty()) a1[0] = -1;
      break;
    case 10:  // slice
      a1 = list(in, ur, false);
      a2 = list(in, ur, true);
      if (in.boolean() && !a2.empty()) a2.back() = -1;
      break;
    case 11: {  // strided_slice
      const std::size_t n = in.u8() < 230 ? ur : static_cast<std::size_t>(in.range(0, 9));
      for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t k = in.u8();
        if (k < 40)
          specs.push_back(tf::SliceSpec::at(in.axis(4)));
        else if (k < 60)
          specs.push_back(tf::SliceSpec::all());
        else {
          std::optional<std::int64_t> start, stop;
          if (in.boolean()) start = in.axis(6);
          if (in.boolean()) stop = in.axis(6);
          std::int64_t step = in.range(-3, 3);
          if (in.u8() > 245) step = in.extreme();
          specs.push_back(tf::SliceSpec::range(start, stop, step));
        }
      }
      break;
    }
    case 12:
    case 13: {  // gather / gather_nd
      const std::int64_t bound =
          r == 0 ? 1 : x.shape()[op == 12 ? std::max(0, std::min(r - 1, static_cast<int>(axis))) : 0];
      std::vector<std::int64_t> d = in.dims(true);
      if (op == 13 && in.u8() < 200) {
        if (d.empty()) d.push_back(1);
        d.back() = in.range(0, r + 1);
      }
      idx = in.indices(d, bound);
      break;
    }
    case 14: {  // scatter_nd: indices (.., K), updates, shape
      a1 = list(in, static_cast<std::size_t>(in.range(0, 4)), true);
      std::vector<std::int64_t> d = in.dims(true);
      if (d.empty()) d.push_back(1);
      d.back() =
          in.u8() < 220 ? std::min<std::int64_t>(static_cast<std::int64_t>(a1.size()), 4) : in.range(0, 9);
      idx = in.indices(d, a1.empty() ? 1 : std::max<std::int64_t>(a1[0], 1));
      if (in.u8() < 200) {  // updates of the matching shape indices.shape[:-1] + shape[K:]
        std::vector<std::int64_t> ud(d.begin(), d.end() - 1);
        const auto k = static_cast<std::size_t>(std::max<std::int64_t>(d.back(), 0));
        for (std::size_t i = k; i < a1.size(); ++i) ud.push_back(a1[i]);
        inputs[0] = in.tensor(ud, x.dtype());
      }
      break;
    }
    case 15:  // tile
      a1 = list(in, ur, false);
      break;
    case 16:  // pad
      for (std::size_t i = 0, n = in.u8() < 230 ? ur : static_cast<std::size_t>(in.range(0, 9)); i < n; ++i)
        paddings.emplace_back(in.attr(), in.attr());
      break;
    default:
      break;
  }
  tf::fuzz::run_op(in, inputs, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    const tf::Tensor& t = v[0];
    switch (op) {
      case 0:
        return tf::reshape(t, a1);
      case 1:
        return tf::transpose(t, a1);
      case 2:
        return tf::expand_dims(t, axis);
      case 3:
        return tf::squeeze(t, a1);
      case 4:
        return tf::broadcast_to(t, tf::Shape(std::span<const std::int64_t>(a1)));
      case 5:
        return tf::concat(v, axis);
      case 6:
        return tf::stack(v, axis);
      case 7:
        return first_of(tf::unstack(t, axis));
      case 8:
        return first_of(tf::split(t, num, axis));
      case 9:
        return first_of(tf::split(t, a1, axis));
      case 10:
        return tf::slice(t, a1, a2);
      case 11:
        return tf::strided_slice(t, specs);
      case 12:
        return tf::gather(t, idx, axis);
      case 13:
        return tf::gather_nd(t, idx);
      case 14: {
        const tf::Shape target{std::span<const std::int64_t>(a1)};
        return tf::scatter_nd(idx, t, target);
      }
      case 15:
        return tf::tile(t, a1);
      case 16:
        return tf::pad(t, paddings, value);
      default:
        return tf::one_hot(t, num, value, 0.0, in.dtype());
    }
  });
}
