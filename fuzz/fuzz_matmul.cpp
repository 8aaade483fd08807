// Fuzzes matmul (MatMul / BatchMatMulV2 with broadcast batch dims and transpose flags),
// tensordot and einsum (equations assembled from the input, valid or not).

#include "fuzz_input.h"

namespace tf = tapeflow;

namespace {

/// Dims for b given a's dims: usually a compatible matrix product, sometimes anything.
std::vector<std::int64_t> partner(tf::fuzz::FuzzInput& in, const std::vector<std::int64_t>& a, bool ta,
                                  bool tb) {
  if (in.u8() < 40 || a.size() < 2) return in.dims();
  const std::int64_t k = ta ? a[a.size() - 2] : a.back();
  const std::int64_t n = in.range(0, 5);
  std::vector<std::int64_t> b;
  const std::size_t batch = static_cast<std::size_t>(in.range(0, static_cast<std::int64_t>(a.size()) - 2));
  for (std::size_t i = a.size() - 2 - batch; i < a.size() - 2; ++i) b.push_back(in.u8() < 40 ? 1 : a[i]);
  if (tb) {
    b.push_back(n);
    b.push_back(k);
  } else {
    b.push_back(k);
    b.push_back(n);
  }
  return b;
}

std::string equation(tf::fuzz::FuzzInput& in, bool two) {
  static constexpr const char* kCommon[] = {"ij,jk->ik", "bij,bjk->bik", "ij->ji",  "ii->i",
                                            "ij->",      "i,i->",        "i,j->ij", "...ij,...jk->...ik",
                                            "ij,jk",     "ab,bc->ca",    "iij->j"};
  if (in.u8() < 128) return in.pick(kCommon);
  static constexpr char kChars[] = {'i', 'j', 'k', 'b', ',', '-', '>', '.', 'i', 'j', 'A', ' ', '1'};
  std::string s;
  const auto n = in.range(0, 14);
  for (std::int64_t i = 0; i < n; ++i) s.push_back(in.pick(kChars));
  if (two && s.find(',') == std::string::npos && in.boolean()) s += ",ij";
  return s;
}

}  // namespace

TAPEFLOW_FUZZ_TARGET(in) {
  const int op = in.u8() % 5;
  const bool ta = in.boolean(), tb = in.boolean();
  const tf::DType da = in.u8() < 220 ? in.float_dtype() : in.dtype();
  const tf::DType db = in.u8() < 240 ? da : in.dtype();
  const std::vector<std::int64_t> sa = in.dims();
  const std::vector<std::int64_t> sb = partner(in, sa, ta, tb);
  const tf::Tensor a = in.tensor(sa, da);
  const tf::Tensor b = in.tensor(sb, db);
  const std::int64_t naxes = in.u8() < 220 ? in.range(0, 2) : in.extreme();
  const std::vector<std::int64_t> axes_a = in.axes(a.rank()), axes_b = in.axes(b.rank());
  const std::string eq = equation(in, op == 3);
  tf::fuzz::run_op(in, {a, b}, [&](const std::vector<tf::Tensor>& v) -> tf::Tensor {
    switch (op) {
      case 0:
        return tf::matmul(v[0], v[1], ta, tb);
      case 1:
        return tf::tensordot(v[0], v[1], naxes);
      case 2:
        return tf::tensordot(v[0], v[1], axes_a, axes_b);
      case 3:
        return tf::einsum(eq, v[0], v[1]);
      default:
        return tf::einsum(eq, v[0]);
    }
  });
}
