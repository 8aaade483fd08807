// Gradient-check rows for the linalg family (see op_cases.h).

#include "ops/op_cases.h"

namespace tapeflow::testing {

namespace {
using In = std::vector<Tensor>;

/// Stored shapes of a and b for the logical product (batch_a..., m, k) @ (batch_b..., k, n),
/// with a stored as (k, m) when transposed and b as (n, k).
std::vector<Shape> product_shapes(std::vector<std::int64_t> batch_a, std::vector<std::int64_t> batch_b,
                                  std::int64_t m, std::int64_t k, std::int64_t n, bool ta, bool tb) {
  batch_a.push_back(ta ? k : m);
  batch_a.push_back(ta ? m : k);
  batch_b.push_back(tb ? n : k);
  batch_b.push_back(tb ? k : n);
  return {Shape(batch_a), Shape(batch_b)};
}
}  // namespace

void add_linalg_cases(std::vector<OpCase>& c) {
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      // Matrices, a column times a row, and an empty inner dimension (the gradient is zeros of
      // the operands' shapes).
      c.push_back({"MatMul",
                   {product_shapes({}, {}, 2, 3, 4, ta, tb), product_shapes({}, {}, 1, 3, 1, ta, tb),
                    product_shapes({}, {}, 3, 1, 2, ta, tb), product_shapes({}, {}, 2, 0, 3, ta, tb),
                    product_shapes({}, {}, 0, 2, 3, ta, tb)},
                   [ta, tb](const In& x) { return matmul(x[0], x[1], ta, tb); }});
      // A batch against one matrix, equal batches, broadcast batches (size-1 and missing
      // dimensions on either side), and an empty batch.
      c.push_back(
          {"BatchMatMulV2",
           {product_shapes({2}, {}, 2, 3, 4, ta, tb), product_shapes({}, {2}, 2, 3, 2, ta, tb),
            product_shapes({2}, {2}, 2, 2, 3, ta, tb), product_shapes({2, 1}, {3}, 2, 3, 4, ta, tb),
            product_shapes({1, 2}, {3, 1}, 1, 2, 2, ta, tb), product_shapes({0}, {}, 2, 3, 4, ta, tb)},
           [ta, tb](const In& x) { return matmul(x[0], x[1], ta, tb); }});
    }
  }
  // einsum and tensordot are composites (transpose, reshape, reduce_sum, matmul); these rows
  // check their gradients end to end, filed under the product op they lower to.
  c.push_back({"BatchMatMulV2", {{{2, 2, 3}, {2, 3, 2}}, {{1, 2, 3}, {1, 3, 0}}}, [](const In& x) {
                 return einsum("bij,bjk->kbi", x[0], x[1]);
               }});
  c.push_back({"BatchMatMulV2", {{{2, 1, 2, 3}, {3, 3, 2}}}, [](const In& x) {
                 return einsum("...ij,...jk->...ik", x[0], x[1]);
               }});
  c.push_back({"MatMul", {{{2, 3, 2}, {2, 3, 2}}}, [](const In& x) {
                 return tensordot(x[0], x[1], {1, -1}, {1, 0});
               }});
  c.push_back({"MatMul", {{{3, 2}, {3, 4}}, {{0, 2}, {0, 3}}}, [](const In& x) {
                 return einsum("ji,jk->ik", x[0], x[1]);
               }});
}

}  // namespace tapeflow::testing
