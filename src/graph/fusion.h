#pragma once
// Elementwise fusion: the pass that turns chains of elementwise ops (and a sum or mean at their
// end) into kFused nodes, each one pass over memory in blocks that stay in L1
// (kernels/cpu/fused_eval.h), and the executor's entry for running such a node.
//
// Which nodes fuse: op nodes whose OpDef has a BlockOp (an op struct's kElement / kArray,
// kernels/cpu/block_op.h), computing in one floating dtype T (float32 or float64; bool values
// ride along as T(0)/T(1)), with the output of the group's shape: the *domain*. Operands from
// outside the group may have any shape that broadcasts to the domain (a bias, a scalar), and are
// loaded broadcast. A float32 Sum or Mean of a member value over a contiguous run of its axes (all
// of them, the leading ones as for a bias gradient, the trailing ones, or a run in between) joins
// as a *reduction*: its result is an output of the kernel, which no member may read. A float64 one
// stays its op, reading the stored member: the kernel would add in another order than eager's
// reduction, and float64 has no wider accumulator to hide that in, as float32's double does.
//
// How groups form (one scan in execution order, linear time): a fusable node joins an open group
// of its shape and dtype that produces one of its operands, else opens a new group. A group is
// *closed* (placed in the node order at that point) when a node outside it reads one of its
// values (that value is then stored) and when a member would read one of its reductions.
// Because a group is placed when it closes, every value it reads was computed before, and every
// node outside that reads its values comes after: no cycle is possible. Stateful nodes (variable
// reads and assignments) keep their order among themselves, and computation may move past them:
// a variable read is a snapshot, since an assignment stores a new tensor.
//
// What a group stores: the member values read outside it (by later nodes, or as graph outputs)
// and its reductions; the other intermediates live only in the evaluator's registers. A group of
// one op stays a plain node (the op's own kernel is as fast).

#include <span>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kernels/cpu/fused_eval.h"

namespace tapeflow::graph {

struct FusedKernel {
  cpu::FusedProgram program;
  DType dtype = DType::Float32;  // T: the dtype the kernel computes in
  std::vector<std::string> ops;  // the fused ops' names, in order (listings)
  std::vector<Value> inputs;     // what the node's inputs must be (checked at run time)
  std::vector<Value> outputs;    // the node's outputs: stored values, then reductions
};

/// Replaces the fusable chains of `g` by kFused nodes (see the top of this file). Values the
/// fused nodes keep in registers stay in g.values as unused slots.
void fuse_elementwise(Graph& g);

/// Runs a kFused node on its inputs. Throws InternalError if an input is not of the dtype and
/// shape the kernel was built for (a graph read from a forged file).
std::vector<Tensor> run_fused(const FusedKernel& k, std::span<const Tensor> inputs);

}  // namespace tapeflow::graph
