// Rows for the collectives (tapeflow/distributed.h). The unit tests are one process, a job of one
// rank, where each collective is the identity and its gradient rule must say so; the rules with
// several ranks are checked against numbers worked out by hand under mpirun
// (tests/distributed/standalone/mpi_test.cpp).

#include "ops/op_cases.h"

namespace tapeflow::testing {

void add_collective_cases(std::vector<OpCase>& c) {
  using In = std::vector<Tensor>;
  using distributed::ReduceOp;
  const std::vector<std::vector<Shape>> shapes = {{{}}, {{3}}, {{2, 3}}, {{0, 2}}};
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Min, ReduceOp::Max})
    c.push_back({"Allreduce", shapes, [op](const In& x) { return distributed::allreduce(x[0], op); }});
  const std::vector<std::vector<Shape>> rows = {{{3}}, {{2, 3}}, {{0, 2}}};
  c.push_back({"Allgather", rows, [](const In& x) { return distributed::allgather(x[0]); }});
  c.push_back({"Broadcast", shapes, [](const In& x) { return distributed::broadcast(x[0], 0); }});
  c.push_back({"Alltoall", rows, [](const In& x) { return distributed::alltoall(x[0]); }});
  c.push_back(
      {"Alltoall", {{{4, 2}}}, [](const In& x) { return distributed::alltoall(x[0], {4}, "named"); }});
}

}  // namespace tapeflow::testing
