// Matrix products: MatMul (rank 2) and BatchMatMulV2 (batch dimensions broadcast like NumPy).
// Both run GEMM through OpenBLAS (src/kernels/cpu/gemm.h) with the transposes passed as flags.
// Gradients follow TensorFlow's math_grad.py (_MatMulGrad, _BatchMatMulV2Grad) and are written
// with matmul itself, so they are differentiable again.

#include "tapeflow/ops/linalg.h"

#include <array>

#include "core/bfloat16.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/matmul_onednn.h"
#include "kernels/cpu/onednn.h"
#include "ops/families.h"
#include "ops/op_util.h"
#include "tapeflow/ops/array.h"

namespace tapeflow {
namespace ops {
namespace {
struct MatMulAttrs {
  bool transpose_a = false;
  bool transpose_b = false;
};

std::string flags(const MatMulAttrs& at) {
  return fmt::format("transpose_a={}, transpose_b={}", at.transpose_a, at.transpose_b);
}

/// "(2, 3)" for the dimensions dims[begin, end).
std::string dims_string(std::span<const std::int64_t> dims) {
  return Shape::checked(dims, "MatMul").to_string();
}

/// The validated geometry of op(a) @ op(b): matrix sizes and the broadcast batch.
struct Product {
  std::int64_t m = 0, n = 0, k = 0;
  Shape out;
};

/// Validates a (batched) product and computes its output shape. `op` is "MatMul" or
/// "BatchMatMulV2"; every message names it, both operands and the transpose flags.
Product product_shape(std::string_view op, const MatMulAttrs& at, const Tensor& a, const Tensor& b) {
  TAPEFLOW_REQUIRE(a.dtype() == b.dtype(), InvalidArgumentError,
                   "[{}] a and b must have the same dtype (no implicit casting): a is a {}, b is a {}", op,
                   describe(a), describe(b));
  TAPEFLOW_REQUIRE(a.dtype() != DType::Bool, InvalidArgumentError,
                   "[{}] bool operands are not supported (a is a {}); cast them to a number type first", op,
                   describe(a));
  for (const auto& [t, name] : {std::pair{&a, "a"}, std::pair{&b, "b"}})
    TAPEFLOW_REQUIRE(
        t->rank() >= 2, InvalidArgumentError,
        "[{}] {} must have rank >= 2 (a matrix or a batch of matrices), got a {}; for vectors use "
        "tensordot or einsum, or reshape to a (1, n) or (n, 1) matrix",
        op, name, describe(*t));
  const Shape& sa = a.shape();
  const Shape& sb = b.shape();
  const int ra = sa.rank(), rb = sb.rank();
  Product p;
  p.m = at.transpose_a ? sa[ra - 1] : sa[ra - 2];
  p.k = at.transpose_a ? sa[ra - 2] : sa[ra - 1];
  const std::int64_t kb = at.transpose_b ? sb[rb - 1] : sb[rb - 2];
  p.n = at.transpose_b ? sb[rb - 2] : sb[rb - 1];
  TAPEFLOW_REQUIRE(
      p.k == kb, InvalidArgumentError,
      "[{}] inner dimensions must agree: a has shape {}, b has shape {} ({}): the contracted size "
      "of a is {} but that of b is {}",
      op, sa.to_string(), sb.to_string(), flags(at), p.k, kb);

  // Batch dimensions: aligned from the right, equal or 1 (NumPy broadcasting).
  const int rout = std::max(ra, rb);
  std::vector<std::int64_t> out(static_cast<std::size_t>(rout));
  for (int i = 0; i < rout - 2; ++i) {
    const int ia = i - (rout - ra), ib = i - (rout - rb);
    const std::int64_t da = ia >= 0 ? sa[ia] : 1, db = ib >= 0 ? sb[ib] : 1;
    TAPEFLOW_REQUIRE(
        da == db || da == 1 || db == 1, InvalidArgumentError,
        "[{}] batch dimensions must broadcast: a has shape {} (batch {}), b has shape {} (batch {}); "
        "each pair of batch dimensions, aligned from the right, must be equal or 1",
        op, sa.to_string(), dims_string(sa.dims().first(static_cast<std::size_t>(ra - 2))), sb.to_string(),
        dims_string(sb.dims().first(static_cast<std::size_t>(rb - 2))));
    out[static_cast<std::size_t>(i)] = da == 1 ? db : da;
  }
  out[static_cast<std::size_t>(rout - 2)] = p.m;
  out[static_cast<std::size_t>(rout - 1)] = p.n;
  for (const std::int64_t d : {p.m, p.n, p.k})
    TAPEFLOW_REQUIRE(d <= cpu::kMaxGemmDim, InvalidArgumentError,
                     "[{}] matrix dimension {} exceeds the BLAS limit {}: a has shape {}, b has shape {}", op,
                     d, cpu::kMaxGemmDim, sa.to_string(), sb.to_string());
  p.out = Shape::checked(out, op);
  return p;
}

/// Runs op(a) @ op(b) for every batch element; a batch dimension of size 1 (or missing) in an
/// operand is reused across the output's batch (stride 0).
Tensor batched_product(std::string_view op, const MatMulAttrs& at, const Tensor& a, const Tensor& b) {
  const Product p = product_shape(op, at, a, b);
  if (a.dtype() == DType::BFloat16 && !cpu::onednn::multiplies_bfloat16()) {
    // oneDNN's bfloat16 matmul is not the faster one here, or there is none: the float32
    // product of the same values, rounded once.
    return detail::float32_to_bfloat16(
        batched_product(op, at, detail::bfloat16_to_float32(a, op), detail::bfloat16_to_float32(b, op)), op);
  }
  Tensor out = detail::empty(p.out, a.dtype(), op);
  const int rout = p.out.rank(), nbatch = rout - 2;
  std::int64_t batches = 1;
  for (int i = 0; i < nbatch; ++i) batches *= p.out[i];
  const std::int64_t a_mat = p.m * p.k, b_mat = p.k * p.n, c_mat = p.m * p.n;
  if (batches == 0 || c_mat == 0) return out;

  // Matrix strides of each operand along the output's batch dimensions (0 where broadcast).
  std::array<std::int64_t, kMaxRank> a_stride{}, b_stride{};
  for (const auto& [t, stride] : {std::pair{&a, &a_stride}, std::pair{&b, &b_stride}}) {
    const Shape& s = t->shape();
    std::int64_t acc = 1;
    for (int i = nbatch - 1; i >= 0; --i) {
      const int j = i - (rout - s.rank());
      const std::int64_t d = j >= 0 ? s[j] : 1;
      (*stride)[static_cast<std::size_t>(i)] = d == 1 ? 0 : acc;
      acc *= d;
    }
  }
  bool b_shared = true;  // b is one matrix reused by every batch element
  bool a_dense = true;   // a's batch is exactly the output's (no broadcasting)
  std::int64_t expect = 1;
  for (int i = nbatch - 1; i >= 0; --i) {
    const auto iu = static_cast<std::size_t>(i);
    b_shared = b_shared && b_stride[iu] == 0;
    a_dense = a_dense && (p.out[i] == 1 || a_stride[iu] == expect);
    expect *= p.out[i];
  }

  auto run = [&]<class T>() {
    if constexpr (!std::is_same_v<T, bool>) {
      const T* pa = a.values<T>().data();
      const T* pb = b.values<T>().data();
      T* pc = detail::mutable_data<T>(out);
      // (batch, m, k) @ (k, n): the batch stacks into one tall (batch * m, k) matrix, one GEMM.
      if (b_shared && a_dense && !at.transpose_a && batches * p.m <= cpu::kMaxGemmDim) {
        cpu::gemm(false, at.transpose_b, batches * p.m, p.n, p.k, pa, pb, pc);
        return;
      }
      // One matrix times a batch of column vectors, (m, k) @ (batch, k, 1): the vectors stack as
      // the rows of a (batch, k) matrix and out rows = rows @ op(a)^T, one GEMM instead of
      // `batch` matrix-vector products (vectorised Jacobians through a dense layer hit this).
      bool a_shared = true, b_dense = true;
      expect = 1;
      for (int i = nbatch - 1; i >= 0; --i) {
        const auto iu = static_cast<std::size_t>(i);
        a_shared = a_shared && a_stride[iu] == 0;
        b_dense = b_dense && (p.out[i] == 1 || b_stride[iu] == expect);
        expect *= p.out[i];
      }
      if (a_shared && b_dense && p.n == 1 && batches <= cpu::kMaxGemmDim) {
        cpu::gemm(false, !at.transpose_a, batches, p.m, p.k, pb, pa, pc);
        return;
      }
      std::array<std::int64_t, kMaxRank> idx{};
      std::int64_t oa = 0, ob = 0;
      for (std::int64_t bi = 0; bi < batches; ++bi) {
        cpu::gemm(at.transpose_a, at.transpose_b, p.m, p.n, p.k, pa + oa * a_mat, pb + ob * b_mat,
                  pc + bi * c_mat);
        // Advance the batch multi-index, updating both operand offsets incrementally.
        for (int d = nbatch - 1; d >= 0; --d) {
          const auto du = static_cast<std::size_t>(d);
          if (++idx[du] < p.out[d]) {
            oa += a_stride[du];
            ob += b_stride[du];
            break;
          }
          oa -= a_stride[du] * (p.out[d] - 1);
          ob -= b_stride[du] * (p.out[d] - 1);
          idx[du] = 0;
        }
      }
    }
  };
  if (a.dtype() == DType::BFloat16)
    run.operator()<bfloat16_t>();  // oneDNN's bfloat16 matmul (kernels/cpu/matmul_onednn.h)
  else
    visit_dtype(a.dtype(), run);
  return out;
}

/// TensorFlow's _MatMulGrad, for all four transpose combinations (c = op(a) @ op(b)):
///   (F, F): da = dc @ b^T      db = a^T @ dc
///   (F, T): da = dc @ b        db = dc^T @ a
///   (T, F): da = b @ dc^T      db = a @ dc
///   (T, T): da = b^T @ dc^T    db = dc^T @ a^T
/// In the batched case the results are summed over the batch dimensions each operand was
/// broadcast along (sum_to_shape).
/// JVP of a product: dc = op(da) @ op(b) + op(a) @ op(db).
Tangents product_jvp(const JvpContext& c) {
  const auto& at = c.attrs<MatMulAttrs>();
  return {jvp_sum(
      c, [&](const Tensor& da) { return matmul(da, c.input(1), at.transpose_a, at.transpose_b); },
      [&](const Tensor& db) { return matmul(c.input(0), db, at.transpose_a, at.transpose_b); })};
}

Grads product_grads(const GradContext& c) {
  const auto& at = c.attrs<MatMulAttrs>();
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  const Tensor& dc = c.dy();
  const bool ta = at.transpose_a, tb = at.transpose_b;
  Grads g(2);
  if (c.needs_input_grad(0)) {
    Tensor da = !ta ? (!tb ? matmul(dc, b, false, true) : matmul(dc, b))
                    : (!tb ? matmul(b, dc, false, true) : matmul(b, dc, true, true));
    g[0] = sum_to_shape(da, c.input_shape(0));
  }
  if (c.needs_input_grad(1)) {
    Tensor db = !tb ? (!ta ? matmul(a, dc, true, false) : matmul(a, dc))
                    : (!ta ? matmul(dc, a, true, false) : matmul(dc, a, true, true));
    g[1] = sum_to_shape(db, c.input_shape(1));
  }
  return g;
}

}  // namespace

/// What MatMul and BatchMatMulV2 share (they differ in name, in the rank they accept first and in
/// TensorFlow's names for the transpose attributes): the product, its gradients and its JVP.
template <class Op>
struct ProductOp {
  static constexpr Saves kSaves = kSavesInputs;
  static constexpr auto kBFloat16 = autodiff::BFloat16Support::kNative;
  // Stacked cotangents are batch dimensions matmul broadcasts over; sum_to_shape keeps them.
  static constexpr bool kBatchable = true;  // da reads b, db reads a
  using Attrs = MatMulAttrs;
  static Tensor forward(const Attrs& at, const Tensor& a, const Tensor& b) {
    return batched_product(Op::kName, at, a, b);
  }
  static Grads backward(const GradContext& c) { return product_grads(c); }
  static Tangents jvp(const JvpContext& c) { return product_jvp(c); }
  // Batched: the batch is one more broadcast batch dimension; x @ W with only x batched is one
  // product of every element's rows.
  static std::vector<Tensor> batch(const BatchContext& c) {
    const Attrs& at = c.attrs<Attrs>();
    const Tensor& a = c.input(0);
    if (c.batched(0) && !c.batched(1) && c.input(1).rank() == 2 && !at.transpose_a && a.num_elements() > 0) {
      const auto d = a.shape().dims();
      const Tensor y = matmul(reshape(a, {-1, d.back()}), c.input(1), false, at.transpose_b);
      std::vector<std::int64_t> out(d.begin(), d.end() - 1);
      out.push_back(y.shape()[1]);
      return {reshape(y, out)};
    }
    const int rank = c.max_element_rank();
    return {matmul(c.aligned(0, rank), c.aligned(1, rank), at.transpose_a, at.transpose_b)};
  }
};

// c = op(a) @ op(b) for matrices;  da = dc @ op(b)^T (in op(a)'s layout), db = op(a)^T @ dc
struct MatMul : ProductOp<MatMul> {
  static constexpr std::string_view kName = "MatMul";
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"transpose_a", "transpose_b"});
    return {tapeflow::matmul(a.in(0), a.in(1), a.b("transpose_a", false), a.b("transpose_b", false))};
  }
};

// c[..., :, :] = op(a[..., :, :]) @ op(b[..., :, :]) with broadcast batch dimensions;
// da, db as for MatMul, each summed over the batch dimensions its operand was broadcast along
struct BatchMatMulV2 : ProductOp<BatchMatMulV2> {
  static constexpr std::string_view kName = "BatchMatMulV2";
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(2, {"adj_x", "adj_y"});
    return {tapeflow::matmul(a.in(0), a.in(1), a.b("adj_x", false), a.b("adj_y", false))};
  }
};
}  // namespace ops
Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b) {
  const ops::MatMulAttrs at{transpose_a, transpose_b};
  ops::require_defined(a, ops::MatMul::kName, "a");
  ops::require_defined(b, ops::MatMul::kName, "b");
  // A rank below 2 goes to MatMul, whose shape rule rejects it with a clear message.
  if (a.rank() >= 3 || b.rank() >= 3) return autodiff::apply_with<ops::BatchMatMulV2>(at, a, b);
  return autodiff::apply_with<ops::MatMul>(at, a, b);
}
namespace ops {

void register_linalg_ops(Registrar& r) {
  r.add<MatMul>();
  r.add<BatchMatMulV2>();
}

}  // namespace ops

}  // namespace tapeflow
