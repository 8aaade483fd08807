#include "kernels/cpu/matmul_onednn.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "kernels/cpu/onednn.h"

namespace tapeflow::cpu {
namespace {

using dnnl::memory;

struct MatmulPrimitive {
  dnnl::primitive primitive;
  memory::desc a, b, c;
  std::size_t scratchpad_bytes = 0;
};

/// (rows, cols) row-major, or its transpose stored as (cols, rows).
memory::desc matrix(std::int64_t rows, std::int64_t cols, bool transposed) {
  const memory::dims strides = transposed ? memory::dims{1, rows} : memory::dims{cols, 1};
  return {{rows, cols}, memory::data_type::bf16, strides};
}

MatmulPrimitive build(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k) {
  MatmulPrimitive p;
  p.a = matrix(m, k, ta);
  p.b = matrix(k, n, tb);
  p.c = matrix(m, n, false);
  const dnnl::matmul::primitive_desc pd({p.a, p.b, p.c}, onednn::attributes(), onednn::engine());
  p.scratchpad_bytes = pd.scratchpad_desc().get_size();
  p.primitive = dnnl::matmul(pd);
  return p;
}

std::string describe(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k) {
  return fmt::format("bfloat16 ({}, {}) @ ({}, {}){}{}", m, k, k, n, ta ? ", a transposed" : "",
                     tb ? ", b transposed" : "");
}

}  // namespace

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, const bfloat16_t* a,
          const bfloat16_t* b, bfloat16_t* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // an empty sum; oneDNN leaves a zero-volume product's output untouched
    std::fill_n(c, m * n, bfloat16_t(0.0f));
    return;
  }
  using Key = std::array<std::int64_t, 5>;
  static onednn::PrimitiveCache<Key, MatmulPrimitive> cache(256);
  auto what = [&] { return describe(trans_a, trans_b, m, n, k); };
  const auto p = cache.get(Key{trans_a, trans_b, m, n, k}, [&] {
    return onednn::checked("matmul", what, [&] { return build(trans_a, trans_b, m, n, k); });
  });
  onednn::execute("matmul", what, p->primitive,
                  {{DNNL_ARG_SRC, onednn::wrap(p->a, a)},
                   {DNNL_ARG_WEIGHTS, onednn::wrap(p->b, b)},
                   {DNNL_ARG_DST, onednn::wrap(p->c, c)}},
                  p->scratchpad_bytes);
}

}  // namespace tapeflow::cpu
