// einsum and tensordot: composites lowered to reduce_sum, transpose, reshape and one matmul (or
// a broadcast multiply when nothing is contracted). Being composites of differentiable public
// ops, they need no gradient code and differentiate to any order.
//
// Lowering of a two-operand contraction. Every dimension carries a label; a label is
//   batch (B)      in both operands and in the output,
//   contracted (K) in both operands, not in the output,
//   free (Fa, Fb)  in one operand and in the output,
//   summed         in one operand only and not in the output (reduced first, with reduce_sum).
// Then a is arranged as (B..., prod Fa, prod K) and b as (B..., prod K, prod Fb), one matmul
// gives (B..., prod Fa, prod Fb), a reshape splits Fa and Fb again, and a final transpose puts
// the labels in the output's order. An operand already in a usable order is not transposed: its
// layout is handed to matmul as a transpose flag instead, so "ij,jk->ik" is exactly one MatMul.

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <string>

#include "ops/op_util.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/linalg.h"
#include "tapeflow/ops/reduce.h"

namespace tapeflow {
namespace ops {
namespace {

using Labels = std::vector<int>;

/// Labels of the dimensions "..." stands for: kEllipsisLabel + j for the j-th of the broadcast
/// ellipsis dimensions (counted from the left of the widest one). Letters are 0..51.
constexpr int kEllipsisLabel = 100;

bool contains(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

std::int64_t index_of(const Labels& ls, int l) {
  return static_cast<std::int64_t>(std::find(ls.begin(), ls.end(), l) - ls.begin());
}

/// Sums `x` over the axes whose label is not in `keep`, dropping those labels.
Tensor sum_out(const Tensor& x, Labels& labels, const Labels& keep) {
  Axes axes;
  Labels kept;
  for (std::size_t i = 0; i < labels.size(); ++i) {
    if (contains(keep, labels[i]))
      kept.push_back(labels[i]);
    else
      axes.push_back(static_cast<std::int64_t>(i));
  }
  if (axes.empty()) return x;
  labels = kept;
  return reduce_sum(x, axes);
}

/// `x` (dimensions labelled `from`) with its dimensions reordered as `to`; no op if equal.
Tensor permute(const Tensor& x, const Labels& from, const Labels& to) {
  if (from == to) return x;
  std::vector<std::int64_t> perm;
  for (int l : to) perm.push_back(index_of(from, l));
  return transpose(x, perm);
}

Tensor reshape_if_needed(const Tensor& x, const std::vector<std::int64_t>& dims) {
  const auto d = x.shape().dims();
  if (std::equal(d.begin(), d.end(), dims.begin(), dims.end())) return x;
  return reshape(x, dims);
}

std::int64_t product(const Tensor& x, const Labels& labels, const Labels& of) {
  std::int64_t p = 1;
  for (int l : of) p *= x.shape()[static_cast<int>(index_of(labels, l))];
  return p;
}

Labels concat_labels(std::initializer_list<const Labels*> parts) {
  Labels out;
  for (const Labels* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

/// One operand, labelled `la`, to the output labels `out` (each label of `out` is in `la`, no
/// label repeats in either): sum the others, then transpose.
Tensor reduce_to(const Tensor& a, Labels la, const Labels& out) {
  Tensor x = sum_out(a, la, out);
  return permute(x, la, out);
}

/// The two-operand contraction described at the top of the file. Labels do not repeat within
/// an operand; sizes of a shared label are equal, or 1 on one side (then it broadcasts).
Tensor contract(const Tensor& a, Labels la, const Tensor& b, Labels lb, const Labels& out) {
  // Labels each operand keeps: those in the output, and those shared with the other operand
  // with equal sizes (contracted). A shared label of sizes 1 and n that the output lacks is
  // summed in each operand separately: sum_j a_0 b_j = a_0 * sum_j b_j.
  auto keep_for = [&](const Tensor& x, const Labels& lx, const Tensor& y, const Labels& ly) {
    Labels keep = out;
    for (std::size_t i = 0; i < lx.size(); ++i) {
      const int l = lx[i];
      if (contains(out, l) || !contains(ly, l)) continue;
      if (x.shape()[static_cast<int>(i)] == y.shape()[static_cast<int>(index_of(ly, l))]) keep.push_back(l);
    }
    return keep;
  };
  const Labels keep_a = keep_for(a, la, b, lb), keep_b = keep_for(b, lb, a, la);
  Tensor x = sum_out(a, la, keep_a);
  Tensor y = sum_out(b, lb, keep_b);

  // The size of every remaining label (a batch label of sizes 1 and n has size n).
  std::map<int, std::int64_t> size;
  for (std::size_t i = 0; i < lb.size(); ++i) size[lb[i]] = y.shape()[static_cast<int>(i)];
  for (std::size_t i = 0; i < la.size(); ++i) {
    const std::int64_t d = x.shape()[static_cast<int>(i)];
    if (!size.contains(la[i]) || size[la[i]] == 1) size[la[i]] = d;
  }

  Labels batch, contracted, free_a, free_b;
  for (int l : out)
    if (contains(la, l) && contains(lb, l)) batch.push_back(l);
  for (int l : la) {
    if (contains(batch, l)) continue;
    (contains(lb, l) ? contracted : free_a).push_back(l);
  }
  for (int l : lb)
    if (!contains(batch, l) && !contains(contracted, l)) free_b.push_back(l);

  const std::int64_t m = product(x, la, free_a), n = product(y, lb, free_b), k = product(x, la, contracted);
  // Batch dimensions of equal sizes collapse into one; sizes that broadcast (1 against n) stay
  // separate so that matmul or multiply broadcasts them.
  bool batch_equal = true;
  std::vector<std::int64_t> batch_a, batch_b;
  for (int l : batch) {
    batch_a.push_back(x.shape()[static_cast<int>(index_of(la, l))]);
    batch_b.push_back(y.shape()[static_cast<int>(index_of(lb, l))]);
    batch_equal = batch_equal && batch_a.back() == batch_b.back();
  }
  if (batch_equal && batch.size() > 1) {
    std::int64_t p = 1;
    for (std::int64_t d : batch_a) p *= d;
    batch_a = batch_b = {p};
  }
  auto with = [](std::vector<std::int64_t> dims, std::initializer_list<std::int64_t> tail) {
    dims.insert(dims.end(), tail);
    return dims;
  };

  Tensor c;
  if (contracted.empty()) {
    // Nothing to contract: a broadcast multiply (B..., m, 1) * (B..., 1, n) beats GEMMs with k = 1.
    x = permute(x, la, concat_labels({&batch, &free_a}));
    y = permute(y, lb, concat_labels({&batch, &free_b}));
    c = reshape_if_needed(x, with(batch_a, {m, 1})) * reshape_if_needed(y, with(batch_b, {1, n}));
  } else {
    // a as (B, Fa, K), or as (B, K, Fa) handed to matmul with transpose_a; b likewise.
    bool ta = false, tb = false;
    if (!free_a.empty() && la == concat_labels({&batch, &contracted, &free_a}))
      ta = true;
    else
      x = permute(x, la, concat_labels({&batch, &free_a, &contracted}));
    if (!free_b.empty() && lb == concat_labels({&batch, &free_b, &contracted}))
      tb = true;
    else
      y = permute(y, lb, concat_labels({&batch, &contracted, &free_b}));
    x = reshape_if_needed(x, ta ? with(batch_a, {k, m}) : with(batch_a, {m, k}));
    y = reshape_if_needed(y, tb ? with(batch_b, {n, k}) : with(batch_b, {k, n}));
    c = matmul(x, y, ta, tb);
  }

  // Split Fa and Fb again and put the labels in the output's order.
  const Labels result = concat_labels({&batch, &free_a, &free_b});
  std::vector<std::int64_t> dims;
  for (int l : result) dims.push_back(size[l]);
  return permute(reshape_if_needed(c, dims), result, out);
}

// ---- einsum equations ------------------------------------------------------------------------

/// One term of an equation: its letter labels, and where "..." stands (if it does).
struct Term {
  std::string text;
  Labels letters;
  int ellipsis_at = -1;  // index into `letters` before which "..." stands
};

int letter_label(char ch) { return ch >= 'a' ? ch - 'a' : 26 + (ch - 'A'); }

char label_char(int l) { return static_cast<char>(l < 26 ? 'a' + l : 'A' + (l - 26)); }

Term parse_term(std::string_view text, std::string_view equation) {
  Term t{std::string(text), {}, -1};
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z')) {
      t.letters.push_back(letter_label(ch));
    } else if (ch == '.') {
      TAPEFLOW_REQUIRE(
          text.substr(i, 3) == "..." && t.ellipsis_at < 0, InvalidArgumentError,
          "[Einsum] malformed ellipsis in the term '{}' of the equation '{}': use '...' at most once "
          "per term",
          text, equation);
      t.ellipsis_at = static_cast<int>(t.letters.size());
      i += 2;
    } else {
      TAPEFLOW_REQUIRE(
          false, InvalidArgumentError,
          "[Einsum] invalid character '{}' in the equation '{}': labels are letters a-z and A-Z, "
          "terms are separated by ',' and the output follows '->'",
          ch, equation);
    }
  }
  return t;
}

/// The labels of an operand of rank `rank` for term `t`, with "..." expanded to the last
/// ellipsis labels of a broadcast ellipsis of `ellipsis_rank` dimensions.
Labels expand(const Term& t, int rank, int ellipsis_rank) {
  if (t.ellipsis_at < 0) return t.letters;
  const int own = rank - static_cast<int>(t.letters.size());
  Labels out(t.letters.begin(), t.letters.begin() + t.ellipsis_at);
  for (int j = 0; j < own; ++j) out.push_back(kEllipsisLabel + (ellipsis_rank - own) + j);
  out.insert(out.end(), t.letters.begin() + t.ellipsis_at, t.letters.end());
  return out;
}

/// Parses and validates `equation` against `operands`, then lowers it.
Tensor einsum_impl(std::string_view equation, std::span<const Tensor> operands) {
  constexpr std::string_view op = "Einsum";
  for (const Tensor& x : operands) {
    require_defined(x, op, "operand");
    TAPEFLOW_REQUIRE(x.dtype() != DType::Bool, InvalidArgumentError,
                     "[Einsum] bool operands are not supported (got a {}); cast them to a number type first",
                     describe(x));
  }
  if (operands.size() == 2)
    TAPEFLOW_REQUIRE(
        operands[0].dtype() == operands[1].dtype(), InvalidArgumentError,
        "[Einsum] both operands must have the same dtype (no implicit casting): operand 0 is a {}, "
        "operand 1 is a {}",
        describe(operands[0]), describe(operands[1]));

  std::string eq;
  for (char ch : equation)
    if (ch != ' ' && ch != '\t') eq.push_back(ch);
  const std::size_t arrow = eq.find("->");
  TAPEFLOW_REQUIRE(arrow == std::string::npos || eq.find("->", arrow + 2) == std::string::npos,
                   InvalidArgumentError, "[Einsum] the equation '{}' has more than one '->'", equation);
  const std::string lhs = eq.substr(0, arrow);
  std::vector<Term> terms;
  for (std::size_t begin = 0;;) {
    const std::size_t comma = lhs.find(',', begin);
    terms.push_back(parse_term(std::string_view(lhs).substr(begin, comma - begin), equation));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  TAPEFLOW_REQUIRE(terms.size() == operands.size(), InvalidArgumentError,
                   "[Einsum] the equation '{}' has {} input term(s) but {} operand(s) were given", equation,
                   terms.size(), operands.size());

  // Ranks, repeated labels, and the width of the broadcast "...".
  int ellipsis_rank = 0;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    const Term& t = terms[i];
    const Tensor& x = operands[i];
    const int n = static_cast<int>(t.letters.size());
    TAPEFLOW_REQUIRE(t.ellipsis_at >= 0 ? x.rank() >= n : x.rank() == n, InvalidArgumentError,
                     "[Einsum] the term '{}' of operand {} has {} label(s){} but the operand is a {}", t.text,
                     i, n, t.ellipsis_at >= 0 ? " and '...'" : "", describe(x));
    for (int j = 0; j < n; ++j)
      for (int q = j + 1; q < n; ++q)
        TAPEFLOW_REQUIRE(
            t.letters[static_cast<std::size_t>(j)] != t.letters[static_cast<std::size_t>(q)],
            UnimplementedError,
            "[Einsum] the label '{}' appears twice in the term '{}' of operand {}: diagonals and "
            "traces (repeated labels within one operand) are not supported",
            label_char(t.letters[static_cast<std::size_t>(j)]), t.text, i);
    if (t.ellipsis_at >= 0) ellipsis_rank = std::max(ellipsis_rank, x.rank() - n);
  }
  std::vector<Labels> labels;
  for (std::size_t i = 0; i < terms.size(); ++i)
    labels.push_back(expand(terms[i], operands[i].rank(), ellipsis_rank));

  // Sizes: a letter has one size everywhere; "..." dimensions broadcast (equal or 1).
  std::map<int, std::pair<std::int64_t, std::size_t>> seen;  // label -> (size, first operand)
  for (std::size_t i = 0; i < labels.size(); ++i) {
    for (std::size_t d = 0; d < labels[i].size(); ++d) {
      const int l = labels[i][d];
      const std::int64_t size = operands[i].shape()[static_cast<int>(d)];
      const auto it = seen.find(l);
      if (it == seen.end()) {
        seen[l] = {size, i};
        continue;
      }
      const auto [first_size, first] = it->second;
      if (l >= kEllipsisLabel) {
        TAPEFLOW_REQUIRE(
            size == first_size || size == 1 || first_size == 1, InvalidArgumentError,
            "[Einsum] the dimensions '...' stands for do not broadcast: operand {} is a {}, operand {} "
            "is a {}",
            first, describe(operands[first]), i, describe(operands[i]));
        if (first_size == 1) it->second.first = size;
      } else {
        TAPEFLOW_REQUIRE(
            size == first_size, InvalidArgumentError,
            "[Einsum] the label '{}' has size {} in operand {} ({}) but size {} in operand {} ({})",
            label_char(l), first_size, first, describe(operands[first]), size, i, describe(operands[i]));
      }
    }
  }

  // The output: explicit after '->', or NumPy's implicit one ("..." then the letters that occur
  // exactly once, in alphabetical order).
  Labels out;
  if (arrow != std::string::npos) {
    const Term t = parse_term(std::string_view(eq).substr(arrow + 2), equation);
    for (std::size_t j = 0; j < t.letters.size(); ++j) {
      const int l = t.letters[j];
      TAPEFLOW_REQUIRE(seen.contains(l), InvalidArgumentError,
                       "[Einsum] the output label '{}' of the equation '{}' appears in no input term",
                       label_char(l), equation);
      TAPEFLOW_REQUIRE(std::count(t.letters.begin(), t.letters.end(), l) == 1, InvalidArgumentError,
                       "[Einsum] the output label '{}' appears more than once in the equation '{}'",
                       label_char(l), equation);
    }
    out = expand(t, static_cast<int>(t.letters.size()) + (t.ellipsis_at >= 0 ? ellipsis_rank : 0),
                 ellipsis_rank);
  } else {
    for (int j = 0; j < ellipsis_rank; ++j) out.push_back(kEllipsisLabel + j);
    std::map<char, int> count;
    for (const Term& t : terms)
      for (int l : t.letters) ++count[label_char(l)];
    for (const auto& [ch, c] : count)
      if (c == 1) out.push_back(letter_label(ch));
  }

  if (operands.size() == 1) return reduce_to(operands[0], labels[0], out);
  return contract(operands[0], labels[0], operands[1], labels[1], out);
}

/// Normalised, distinct axes of `x` for tensordot.
std::vector<int> tensordot_axes(const Tensor& x, const std::vector<std::int64_t>& axes,
                                std::string_view name) {
  std::vector<int> out;
  for (std::int64_t ax : axes) {
    TAPEFLOW_REQUIRE(ax >= -x.rank() && ax < x.rank(), InvalidArgumentError,
                     "[Tensordot] axis {} of {}_axes {} is out of range for {} (a {})", ax, name, axes, name,
                     describe(x));
    const int n = static_cast<int>(ax < 0 ? ax + x.rank() : ax);
    TAPEFLOW_REQUIRE(std::find(out.begin(), out.end(), n) == out.end(), InvalidArgumentError,
                     "[Tensordot] axis {} is repeated in {}_axes {} (a {})", ax, name, axes, describe(x));
    out.push_back(n);
  }
  return out;
}

}  // namespace
}  // namespace ops

Tensor einsum(std::string_view equation, const Tensor& a) {
  return ops::einsum_impl(equation, std::span<const Tensor>(&a, 1));
}

Tensor einsum(std::string_view equation, const Tensor& a, const Tensor& b) {
  const std::array<Tensor, 2> operands{a, b};
  return ops::einsum_impl(equation, operands);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const Axes& a_axes, const Axes& b_axes) {
  ops::require_defined(a, "Tensordot", "a");
  ops::require_defined(b, "Tensordot", "b");
  TAPEFLOW_REQUIRE(a.dtype() == b.dtype(), InvalidArgumentError,
                   "[Tensordot] a and b must have the same dtype (no implicit casting): a is a {}, b is a {}",
                   ops::describe(a), ops::describe(b));
  TAPEFLOW_REQUIRE(
      a.dtype() != DType::Bool, InvalidArgumentError,
      "[Tensordot] bool operands are not supported (a is a {}); cast them to a number type first",
      ops::describe(a));
  TAPEFLOW_REQUIRE(a_axes.size() == b_axes.size(), InvalidArgumentError,
                   "[Tensordot] a_axes {} and b_axes {} must have the same length", a_axes, b_axes);
  const std::vector<int> ia = ops::tensordot_axes(a, a_axes, "a"), ib = ops::tensordot_axes(b, b_axes, "b");
  // Label a's dimensions 0..ra-1; b's contracted dimensions take their partner's label, its free
  // ones ra, ra+1, ...
  ops::Labels la, lb(static_cast<std::size_t>(b.rank()), -1), out;
  for (int i = 0; i < a.rank(); ++i) la.push_back(i);
  for (std::size_t j = 0; j < ia.size(); ++j) {
    const std::int64_t da = a.shape()[ia[j]], db = b.shape()[ib[j]];
    TAPEFLOW_REQUIRE(
        da == db, InvalidArgumentError,
        "[Tensordot] contracted dimensions must agree: axis {} of a has size {} but axis {} of b has "
        "size {} (a has shape {}, b has shape {})",
        a_axes[j], da, b_axes[j], db, a.shape().to_string(), b.shape().to_string());
    lb[static_cast<std::size_t>(ib[j])] = ia[j];
  }
  for (int i = 0; i < a.rank(); ++i)
    if (std::find(ia.begin(), ia.end(), i) == ia.end()) out.push_back(i);
  for (int j = 0, next = a.rank(); j < b.rank(); ++j)
    if (lb[static_cast<std::size_t>(j)] < 0) {
      lb[static_cast<std::size_t>(j)] = next;
      out.push_back(next++);
    }
  return ops::contract(a, la, b, lb, out);
}

Tensor tensordot(const Tensor& a, const Tensor& b, std::int64_t axes) {
  ops::require_defined(a, "Tensordot", "a");
  ops::require_defined(b, "Tensordot", "b");
  TAPEFLOW_REQUIRE(
      axes >= 0 && axes <= a.rank() && axes <= b.rank(), InvalidArgumentError,
      "[Tensordot] axes = {} must be between 0 and the rank of both operands: a is a {}, b is a {}", axes,
      ops::describe(a), ops::describe(b));
  Axes a_axes, b_axes;
  for (std::int64_t i = 0; i < axes; ++i) {
    a_axes.push_back(a.rank() - axes + i);
    b_axes.push_back(i);
  }
  return tensordot(a, b, a_axes, b_axes);
}

}  // namespace tapeflow
