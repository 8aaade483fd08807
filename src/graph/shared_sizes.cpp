#include "graph/shared_sizes.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include "autodiff/attr_codec.h"
#include "graph/optimize.h"
#include "tapeflow/no_recording.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::graph {

std::string why_not_shareable(const Graph& g) {
  for (const Node& n : g.nodes) {
    if (n.kind != NodeKind::kOp) continue;
    if (n.op->graph_op)
      return fmt::format("it holds {}, whose graphs are built for the traced shapes", n.name());
    if (n.op->stateful) return fmt::format("its op {} changes state", n.name());
  }
  return "";
}

namespace {

using Term = SizeTemplate::Term;
using Sizes = std::span<const std::int64_t>;
constexpr std::size_t kMaxDims = 64;  // bits of Term::dims

std::string attrs_text(const Node& n) {
  if (n.attrs == nullptr) return "none";
  return n.op->attrs_codec != nullptr ? n.op->attrs_codec->to_string(n.attrs.get()) : "(not comparable)";
}

bool same_variable(const CapturedVariable& a, const CapturedVariable& b) {
  return !a.state.owner_before(b.state) && !b.state.owner_before(a.state);
}

/// The term that gives `xa` at sizes_a and `xb` at sizes_b: m * (one unknown size), the same m for
/// every dim it names; nullopt where dims with different multiples both do. Where no dim does,
/// m * (the product of two sizes), if exactly one pair of dim groups (dims of equal sizes at both
/// traces) does. `matches(na, nb)` is the multiple that gives the two numbers for sizes na and nb.
template <class Matches>
std::optional<Term> fit(Sizes sizes_a, Sizes sizes_b, Matches&& matches) {
  const std::size_t dims = std::min(sizes_a.size(), kMaxDims);
  std::optional<Term> found;
  for (std::size_t k = 0; k < dims; ++k) {
    const std::optional<std::int64_t> m = matches(sizes_a[k], sizes_b[k]);
    if (!m) continue;
    if (found && found->multiple != *m) return std::nullopt;  // two readings: not a proportion
    if (!found) found = Term{0, *m};
    found->dims |= std::uint64_t{1} << k;
  }
  if (found) return found;
  std::vector<std::uint64_t> groups;
  std::vector<std::size_t> first;  // a dim of each group
  for (std::size_t k = 0; k < dims; ++k) {
    std::size_t g = 0;
    while (g < groups.size() && (sizes_a[first[g]] != sizes_a[k] || sizes_b[first[g]] != sizes_b[k])) ++g;
    if (g == groups.size()) {
      groups.push_back(0);
      first.push_back(k);
    }
    groups[g] |= std::uint64_t{1} << k;
  }
  std::optional<Term> product;
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (std::size_t j = i; j < groups.size(); ++j) {
      std::int64_t na = 0, nb = 0;
      if (__builtin_mul_overflow(sizes_a[first[i]], sizes_a[first[j]], &na) ||
          __builtin_mul_overflow(sizes_b[first[i]], sizes_b[first[j]], &nb))
        continue;
      const std::optional<std::int64_t> m = matches(na, nb);
      if (!m) continue;
      if (product) return std::nullopt;  // two pairs give it: which one is a guess
      product = Term{groups[i], *m, groups[j]};
    }
  return product;
}

/// m >= 1 with xa = m * na and xb = m * nb, for sizes that differ.
std::optional<Term> fit_multiple(std::int64_t xa, std::int64_t xb, Sizes sizes_a, Sizes sizes_b) {
  return fit(sizes_a, sizes_b, [&](std::int64_t na, std::int64_t nb) -> std::optional<std::int64_t> {
    if (na == nb || na <= 0 || xa % na != 0) return std::nullopt;
    const std::int64_t m = xa / na;
    if (m < 1 || m > std::numeric_limits<std::int64_t>::max() / nb || m * nb != xb) return std::nullopt;
    return m;
  });
}

/// The size of the unknown dims in `dims` (a Term's bits) at `sizes`, or nullopt where they differ.
std::optional<std::int64_t> size_of(std::uint64_t dims, Sizes sizes) {
  std::optional<std::int64_t> size;
  for (std::size_t k = 0; k < std::min(sizes.size(), kMaxDims); ++k) {
    if (!(dims >> k & 1)) continue;
    if (size && *size != sizes[k]) return std::nullopt;
    size = sizes[k];
  }
  return size;
}

/// The size a term gives at `sizes`, or nullopt where the dims it ties have different sizes;
/// InvalidArgumentError where it does not fit 64 bits.
std::optional<std::int64_t> evaluate(const Term& t, Sizes sizes) {
  const std::optional<std::int64_t> size = size_of(t.dims, sizes), by = t.by == 0 ? 1 : size_of(t.by, sizes);
  if (!size || !by) return std::nullopt;
  std::int64_t value = 0;
  if (__builtin_mul_overflow(t.multiple, *size, &value) || __builtin_mul_overflow(value, *by, &value))
    throw InvalidArgumentError(fmt::format("a size the graph holds, {} x {}{}, does not fit 64 bits",
                                           t.multiple, *size, t.by == 0 ? "" : fmt::format(" x {}", *by)));
  return value;
}

/// The integers of a node's attributes in map_ints order.
std::vector<std::int64_t> attr_ints(const Node& n) {
  std::vector<std::int64_t> ints;
  n.op->attrs_codec->map_ints(n.attrs.get(), [&](std::int64_t v) {
    ints.push_back(v);
    return v;
  });
  return ints;
}

/// Where a's and b's attributes differ only in integers proportional to the sizes: appends the
/// terms to `t` and returns "", or says what differs.
std::string unify_attrs(std::size_t node, const Node& a, const Node& b, Sizes sizes_a, Sizes sizes_b,
                        SizeTemplate& t) {
  const autodiff::AttrsCodec* codec = a.op->attrs_codec;
  const std::string differ = fmt::format("node {} ({}) has the attributes {} against {}", node, a.name(),
                                         attrs_text(a), attrs_text(b));
  if (codec == nullptr || codec->map_ints == nullptr || a.attrs == nullptr || b.attrs == nullptr)
    return differ;
  const std::vector<std::int64_t> ia = attr_ints(a), ib = attr_ints(b);
  if (ia.size() != ib.size()) return differ;
  std::size_t next = 0;
  const std::shared_ptr<const void> a_with_b_ints =
      codec->map_ints(a.attrs.get(), [&](std::int64_t) { return ib[next++]; });
  if (!codec->equal(a_with_b_ints.get(), b.attrs.get())) return differ;  // not only integers differ
  for (std::size_t i = 0; i < ia.size(); ++i) {
    if (ia[i] == ib[i]) continue;
    const std::optional<Term> term = fit_multiple(ia[i], ib[i], sizes_a, sizes_b);
    if (!term)
      return differ +
             fmt::format(" ({} against {} is no multiple of one unknown size or of two)", ia[i], ib[i]);
    t.attrs.push_back({node, i, *term});
  }
  return "";
}

/// Element i of a float32, float64, int32 or int64 tensor as a double; nullopt for other dtypes.
std::optional<double> element(const Tensor& x, std::int64_t i) {
  const auto at = [&]<class T>() { return static_cast<double>(x.values<T>()[static_cast<std::size_t>(i)]); };
  switch (x.dtype()) {
    case DType::Float32:
      return at.operator()<float>();
    case DType::Float64:
      return at.operator()<double>();
    case DType::Int32:
      return at.operator()<std::int32_t>();
    case DType::Int64:
      return at.operator()<std::int64_t>();
    default:
      return std::nullopt;
  }
}

/// Whether every element of `x` has the bytes of its first (and it has one).
bool is_splat(const Tensor& x) {
  const std::size_t size = dtype_size(x.dtype());
  const auto* bytes = static_cast<const unsigned char*>(x.raw_data());
  if (x.num_elements() == 0) return false;
  for (std::size_t i = size; i < x.nbytes(); i += size)
    if (std::memcmp(bytes, bytes + i, size) != 0) return false;
  return true;
}

/// A tensor of x's shape and dtype holding `value` (a double rounded as tf::fill rounds it).
Tensor scalar_like(const Tensor& x, double value) { return fill(x.shape(), value, x.dtype()); }

/// A one-element constant whose value is a multiple of a size or its reciprocal.
std::optional<SizeTemplate::Constant> fit_scalar(std::size_t index, const Tensor& a, const Tensor& b,
                                                 Sizes sizes_a, Sizes sizes_b) {
  const std::optional<double> va = element(a, 0), vb = element(b, 0);
  if (!va || !vb) return std::nullopt;
  const auto bitwise = [](const Tensor& x, const Tensor& y) {
    return std::memcmp(x.raw_data(), y.raw_data(), x.nbytes()) == 0;
  };
  if (std::trunc(*va) == *va && std::trunc(*vb) == *vb && std::abs(*va) < 0x1p53 && std::abs(*vb) < 0x1p53)
    if (std::optional<Term> t =
            fit_multiple(static_cast<std::int64_t>(*va), static_cast<std::int64_t>(*vb), sizes_a, sizes_b))
      return SizeTemplate::Constant{index, SizeTemplate::Constant::Kind::kMultiple, {}, *t};
  if (is_floating(a.dtype()) && *va > 0 && *vb > 0) {
    const std::optional<Term> t =
        fit(sizes_a, sizes_b, [&](std::int64_t na, std::int64_t nb) -> std::optional<std::int64_t> {
          if (na == nb || na <= 0) return std::nullopt;
          const double m = std::round(1.0 / (*va * static_cast<double>(na)));
          if (!(m >= 1 && m < 0x1p53)) return std::nullopt;
          const auto reciprocal = [&](const Tensor& like, std::int64_t n) {
            return scalar_like(like, 1.0 / (m * static_cast<double>(n)));
          };
          if (!bitwise(reciprocal(a, na), a) || !bitwise(reciprocal(b, nb), b)) return std::nullopt;
          return static_cast<std::int64_t>(m);
        });
    if (t) return SizeTemplate::Constant{index, SizeTemplate::Constant::Kind::kReciprocal, {}, *t};
  }
  return std::nullopt;
}

/// Where constants a and b (same dtype and rank, not bitwise equal) differ only in sizes.
std::optional<SizeTemplate::Constant> fit_constant(std::size_t index, const Tensor& a, const Tensor& b,
                                                   Sizes sizes_a, Sizes sizes_b) {
  if (a.num_elements() == 1 && b.num_elements() == 1 && a.shape() == b.shape())
    return fit_scalar(index, a, b, sizes_a, sizes_b);
  // fill() must give the element back: a dtype element() reads, a value a double holds exactly.
  if (!is_splat(a) || !is_splat(b) || std::memcmp(a.raw_data(), b.raw_data(), dtype_size(a.dtype())) != 0)
    return std::nullopt;
  const std::optional<double> e = element(a, 0);
  if (!e || std::memcmp(fill({}, *e, a.dtype()).raw_data(), a.raw_data(), dtype_size(a.dtype())) != 0)
    return std::nullopt;
  SizeTemplate::Constant c{index, SizeTemplate::Constant::Kind::kSplat, {}, {}};
  for (int d = 0; d < a.rank(); ++d) {
    if (a.shape()[d] == b.shape()[d]) {
      c.dims.emplace_back();
      continue;
    }
    const std::optional<Term> t = fit_multiple(a.shape()[d], b.shape()[d], sizes_a, sizes_b);
    if (!t) return std::nullopt;
    c.dims.push_back(t);
  }
  return c;
}

}  // namespace

std::optional<std::vector<std::int64_t>> size_points(std::span<const SizeTemplate> templates, Sizes sizes) {
  std::vector<std::int64_t> points(sizes.begin(), sizes.end());
  const auto add = [&](const Term& t) {
    const std::optional<std::int64_t> size = size_of(t.dims, sizes),
                                      by = t.by == 0 ? 1 : size_of(t.by, sizes);
    if (!size || !by) return false;
    std::int64_t product = 0;
    // Saturated: a product past 64 bits is outside any range, and instantiate then says it does not fit.
    if (t.by != 0)
      points.push_back(__builtin_mul_overflow(*size, *by, &product) ? std::numeric_limits<std::int64_t>::max()
                                                                    : product);
    return true;
  };
  for (const SizeTemplate& t : templates) {
    for (const SizeTemplate::AttrInt& a : t.attrs)
      if (!add(a.term)) return std::nullopt;
    for (const SizeTemplate::Constant& c : t.constants) {
      if (c.kind != SizeTemplate::Constant::Kind::kSplat && !add(c.value)) return std::nullopt;
      for (const std::optional<Term>& d : c.dims)
        if (d && !add(*d)) return std::nullopt;
    }
  }
  return points;
}

std::string unify(const Graph& a, Sizes sizes_a, const Graph& b, Sizes sizes_b, SizeTemplate& t) {
  t = {};
  if (a.nodes.size() != b.nodes.size() || a.values.size() != b.values.size())
    return fmt::format("{} nodes and {} values against {} and {}", a.nodes.size(), a.values.size(),
                       b.nodes.size(), b.values.size());
  if (a.inputs != b.inputs || a.outputs != b.outputs) return "their inputs or outputs are other values";
  for (std::size_t v = 0; v < a.values.size(); ++v)
    if (a.values[v].dtype != b.values[v].dtype || a.values[v].shape.rank() != b.values[v].shape.rank())
      return fmt::format("value v{} is {} {} against {} {}", v, dtype_name(a.values[v].dtype),
                         a.values[v].shape.to_string(), dtype_name(b.values[v].dtype),
                         b.values[v].shape.to_string());
  for (std::size_t k = 0; k < a.nodes.size(); ++k) {
    const Node &x = a.nodes[k], &y = b.nodes[k];
    if (x.kind != y.kind || x.op != y.op || x.variable != y.variable || x.inputs != y.inputs ||
        x.outputs != y.outputs)
      return fmt::format("node {} is {} against {}", k, x.name(), y.name());
    if (x.kind == NodeKind::kOp && !attrs_equal(x, y))
      if (std::string diff = unify_attrs(k, x, y, sizes_a, sizes_b, t); !diff.empty()) return diff;
  }
  if (a.constants.size() != b.constants.size())
    return fmt::format("{} constants against {}", a.constants.size(), b.constants.size());
  for (std::size_t i = 0; i < a.constants.size(); ++i) {
    const auto& [va, ta] = a.constants[i];
    const auto& [vb, tb] = b.constants[i];
    if (va == vb && autodiff::codec_detail::FieldCodec<Tensor>::equal(ta, tb)) continue;
    std::optional<SizeTemplate::Constant> c;
    if (va == vb && ta.dtype() == tb.dtype() && ta.rank() == tb.rank())
      c = fit_constant(i, ta, tb, sizes_a, sizes_b);
    if (!c)
      return fmt::format("the constant v{} ({} {}) against v{} ({} {})", va, dtype_name(ta.dtype()),
                         ta.shape().to_string(), vb, dtype_name(tb.dtype()), tb.shape().to_string());
    t.constants.push_back(std::move(*c));
  }
  if (a.variables.size() != b.variables.size())
    return fmt::format("{} variables against {}", a.variables.size(), b.variables.size());
  for (std::size_t k = 0; k < a.variables.size(); ++k)
    if (!same_variable(a.variables[k], b.variables[k]))
      return fmt::format("variable {} is '{}' against '{}'", k, a.variables[k].name, b.variables[k].name);
  return "";
}

std::string template_problem(const Graph& g, const SizeTemplate& t, std::size_t unknown_dims) {
  const auto term_problem = [&](const Term& term) -> std::string {
    if (term.dims == 0) return "names no unknown dimension";
    if (unknown_dims < kMaxDims && (term.dims | term.by) >> unknown_dims != 0)
      return fmt::format("names unknown dimensions 0x{:x} x 0x{:x} of {}", term.dims, term.by, unknown_dims);
    if (term.multiple < 1) return fmt::format("has the multiple {}", term.multiple);
    return "";
  };
  for (std::size_t i = 0; i < t.attrs.size(); ++i) {
    const SizeTemplate::AttrInt& a = t.attrs[i];
    const std::string what = fmt::format("size term {} (node {})", i, a.node);
    if (a.node >= g.nodes.size()) return fmt::format("{}: the graph has {} nodes", what, g.nodes.size());
    const Node& n = g.nodes[a.node];
    if (n.kind != NodeKind::kOp || n.op->attrs_codec == nullptr || n.op->attrs_codec->map_ints == nullptr ||
        n.attrs == nullptr)
      return fmt::format("{}: {} has no integer attributes", what, n.name());
    if (const std::size_t ints = attr_ints(n).size(); a.ordinal >= ints)
      return fmt::format("{}: integer {} of {}'s attributes, which have {}", what, a.ordinal, n.name(), ints);
    if (std::string p = term_problem(a.term); !p.empty()) return what + " " + p;
  }
  for (std::size_t i = 0; i < t.constants.size(); ++i) {
    const SizeTemplate::Constant& c = t.constants[i];
    const std::string what = fmt::format("constant size term {} (constant {})", i, c.index);
    if (c.index >= g.constants.size())
      return fmt::format("{}: the graph has {} constants", what, g.constants.size());
    const Value& v = g.values[static_cast<std::size_t>(g.constants[c.index].first)];
    const bool readable = v.dtype == DType::Float32 || v.dtype == DType::Float64 || v.dtype == DType::Int32 ||
                          v.dtype == DType::Int64;
    if (!readable || (c.kind == SizeTemplate::Constant::Kind::kReciprocal && !is_floating(v.dtype)))
      return fmt::format("{}: a constant of {} cannot hold a size", what, dtype_name(v.dtype));
    if (c.kind == SizeTemplate::Constant::Kind::kSplat) {
      if (c.dims.size() != static_cast<std::size_t>(v.shape.rank()) || v.shape.num_elements() == 0)
        return fmt::format("{}: {} dims for a constant of shape {}", what, c.dims.size(),
                           v.shape.to_string());
      for (const std::optional<Term>& d : c.dims)
        if (d)
          if (std::string p = term_problem(*d); !p.empty()) return what + " " + p;
    } else {
      if (v.shape.num_elements() != 1)
        return fmt::format("{}: a constant of shape {} is no number", what, v.shape.to_string());
      if (std::string p = term_problem(c.value); !p.empty()) return what + " " + p;
    }
  }
  return "";
}

std::optional<Graph> instantiate(const Graph& g, const SizeTemplate& t, Sizes sizes) {
  Graph out = g;
  // Each node's integers at the new sizes, by ordinal.
  std::map<std::size_t, std::map<std::size_t, std::int64_t>> ints;
  for (const SizeTemplate::AttrInt& a : t.attrs) {
    const std::optional<std::int64_t> v = evaluate(a.term, sizes);
    if (!v) return std::nullopt;
    ints[a.node][a.ordinal] = *v;
  }
  for (const auto& entry : ints) {
    const std::map<std::size_t, std::int64_t>& values = entry.second;  // a lambda cannot capture a binding
    Node& n = out.nodes[entry.first];
    std::size_t ordinal = 0;
    n.attrs = n.op->attrs_codec->map_ints(n.attrs.get(), [&](std::int64_t v) {
      const auto it = values.find(ordinal++);
      return it == values.end() ? v : it->second;
    });
  }
  const NoRecordingScope not_recorded;  // the new constants are values, not ops of any tape
  for (const SizeTemplate::Constant& c : t.constants) {
    auto& [value, tensor] = out.constants[c.index];
    if (c.kind == SizeTemplate::Constant::Kind::kSplat) {
      std::vector<std::int64_t> dims(tensor.shape().dims().begin(), tensor.shape().dims().end());
      for (std::size_t d = 0; d < dims.size(); ++d) {
        if (!c.dims[d]) continue;
        const std::optional<std::int64_t> v = evaluate(*c.dims[d], sizes);
        if (!v) return std::nullopt;
        dims[d] = *v;
      }
      tensor = fill(Shape(dims), *element(tensor, 0), tensor.dtype());
    } else {
      const std::optional<std::int64_t> v = evaluate(c.value, sizes);
      if (!v) return std::nullopt;
      const double n = static_cast<double>(*v);
      tensor = scalar_like(tensor, c.kind == SizeTemplate::Constant::Kind::kMultiple ? n : 1.0 / n);
    }
    out.values[value].shape = tensor.shape();
  }
  return out;
}

Graph resized(Graph g, const std::vector<Shape>& shapes, std::span<const Tensor> inputs) {
  for (const Node& n : g.nodes)
    for (ValueId v : n.outputs) g.values[v].shape = shapes[v];
  for (std::size_t i = 0; i < inputs.size(); ++i) g.values[g.inputs[i]].shape = inputs[i].shape();
  return g;
}

}  // namespace tapeflow::graph
