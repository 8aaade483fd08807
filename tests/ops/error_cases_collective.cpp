// Error rows for the collectives (tapeflow/distributed.h), in a job of one rank.

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
void add_collective_error_cases(std::vector<ErrorCase>& rows) {
  using C = ErrorClass;
  using distributed::ReduceOp;
  auto reduce = [](ReduceOp op) { return [op](const Ins& x) { return one(distributed::allreduce(x[0], op)); }; };
  rows.push_back({.op = "Allreduce", .cls = C::DType, .what = "average of int32", .inputs = {i32({2})},
                  .attrs = {{"reduce_op", std::string("average")}}, .call = reduce(ReduceOp::Average), .needles = {"int32", "(2,)", "Sum"}});
  rows.push_back({.op = "Allreduce", .cls = C::DType, .what = "sum of bool", .inputs = {bools({2})},
                  .attrs = {{"reduce_op", std::string("sum")}}, .call = reduce(ReduceOp::Sum), .needles = {"bool", "(2,)"}});
  rows.push_back({.op = "Allreduce", .cls = C::Size, .what = "unknown reduce_op", .inputs = {f32({2})},
                  .attrs = {{"reduce_op", std::string("mean")}}, .call = nullptr, .needles = {"'mean'", "average"}});
  rows.push_back({.op = "Allreduce", .cls = C::Size, .what = "ReduceOp out of range", .inputs = {f32({2})},
                  .call = reduce(static_cast<ReduceOp>(7)), .needles = {"ReduceOp 7"}, .raw = false});
  rows.push_back({.op = "Allreduce", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                  .call = reduce(ReduceOp::Sum), .needles = {"undefined"}});

  auto gather = [](const Ins& x) { return one(distributed::allgather(x[0])); };
  rows.push_back({.op = "Allgather", .cls = C::Rank, .what = "scalar input", .inputs = {f32({})}, .call = gather,
                  .needles = {"rank >= 1", "float32", "()"}});
  rows.push_back({.op = "Allgather", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}}, .call = gather,
                  .needles = {"undefined"}});

  auto bcast = [](int root) { return [root](const Ins& x) { return one(distributed::broadcast(x[0], root)); }; };
  rows.push_back({.op = "Broadcast", .cls = C::Index, .what = "root rank 1 of 1", .inputs = {f32({2})},
                  .attrs = {{"root_rank", std::int64_t{1}}}, .call = bcast(1), .needles = {"root rank 1", "(2,)"}});
  rows.push_back({.op = "Broadcast", .cls = C::Index, .what = "negative root rank", .inputs = {f32({2})},
                  .attrs = {{"root_rank", std::int64_t{-1}}}, .call = bcast(-1), .needles = {"root rank -1"}});
  rows.push_back({.op = "Broadcast", .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                  .call = bcast(0), .needles = {"undefined"}});

  auto a2a = [](Ints splits) { return [splits](const Ins& x) { return one(distributed::alltoall(x[0], splits)); }; };
  rows.push_back({.op = "Alltoall", .cls = C::Shape, .what = "splits send more rows than x has", .inputs = {f32({3, 2})},
                  .attrs = {{"splits", Ints{4}}}, .call = a2a({4}), .needles = {"send 4 rows", "(3, 2)"}});
  rows.push_back({.op = "Alltoall", .cls = C::Size, .what = "splits for two ranks in a job of one", .inputs = {f32({4})},
                  .attrs = {{"splits", Ints{2, 2}}}, .call = a2a({2, 2}), .needles = {"[2, 2]", "1 ranks"}});
  rows.push_back({.op = "Alltoall", .cls = C::Size, .what = "negative split", .inputs = {f32({4})},
                  .attrs = {{"splits", Ints{-1}}}, .call = a2a({-1}), .needles = {"[-1]", "negative"}});
  rows.push_back({.op = "Alltoall", .cls = C::Rank, .what = "scalar input", .inputs = {f32({})}, .call = a2a({}),
                  .needles = {"rank >= 1", "()"}});
}
// clang-format on

}  // namespace tapeflow::testing::errors
