#pragma once
// The fused elementwise evaluator: runs a straight-line program of BlockOps (block_op.h) over a
// domain of elements, block by block, so a chain of elementwise ops reads its inputs and writes
// its outputs once instead of moving every intermediate through memory.
//
//   for each chunk of kFusedChunk blocks (threads take whole chunks), for each block of
//   kFusedBlock elements in it:
//     load the inputs that need it (broadcast, bool -> T) into their slots
//     run every step: slot[dst] = op(slot[src...])       (intermediates stay in L1)
//     outputs: written in place (the step's slot is the output's memory) or copied out
//     reductions: the block's elements added, in double, into the chunk's partial sums
//   reductions: the chunks' partial sums added in chunk order (chunks are a fixed number of
//   elements, so a sum is the same with any thread count)
//
// Why interpretation and not generated code: docs/design/fusion.md ("Why interpretation and not generated
// code"). Each step is one indirect call per block of up to 1024 elements, so the dispatch costs nothing
// against the arithmetic; over a one-element domain (a chain of scalar ops) it is one call per op.
//
// Slots: the evaluator sees numbered slots, each an array of one block. A slot holds an input (its
// memory, or a gathered copy), a scratch block, or an output's memory. A step whose operand is
// *uniform* (one element broadcast over the domain) reads it with stride 0; a step whose operands
// are all uniform computes one element (n = 1) and its result is uniform too.

#include <cstdint>
#include <span>
#include <vector>

#include "kernels/cpu/block_op.h"
#include "tapeflow/shape.h"

namespace tapeflow::cpu {

/// Elements per block: a block of each live slot stays in L1 (4 KiB per float slot).
inline constexpr std::int64_t kFusedBlock = 1024;
/// Blocks per chunk: the unit of threading and of a reduction's partial sums.
inline constexpr std::int64_t kFusedChunk = 64;
/// The most partial sums (chunks times outputs) a fused reduction may keep; a reduction that
/// would need more is left to the Sum op.
inline constexpr std::int64_t kMaxFusedPartials = std::int64_t{1} << 20;

struct FusedProgram {
  /// How an input is read into its slot.
  enum class Load : std::uint8_t {
    kDirect,   // the domain's shape and the kernel's dtype: the slot points into the input
    kUniform,  // one element of the kernel's dtype: the slot points at it, stride 0
    kGather,   // any other broadcast shape, or a bool input: copied (and converted) per block
  };
  struct Input {
    int slot = 0;
    Load load = Load::kDirect;
    bool is_bool = false;  // a bool tensor, held as T(0) / T(1)
    Shape shape;
  };
  struct Step {
    const BlockOp* op = nullptr;
    int dst = 0;
    int src[3] = {0, 0, 0};
    std::int64_t stride[3] = {1, 1, 1};  // 0: a uniform operand
    bool uniform = false;                // all operands uniform: one element is computed
  };
  /// A value of the domain's shape written to the caller's memory.
  struct Output {
    int slot = 0;
    bool is_bool = false;
    bool uniform = false;
    bool in_place = false;  // the slot *is* the output's memory: the step wrote it there
  };
  /// The sum (or mean) of a slot over a contiguous run of the domain's axes: seen as
  /// (outer, reduced, inner), element i goes to output (i / (reduced * inner)) * inner + i % inner.
  /// A sum of everything has reduced = the domain's size and inner = 1.
  struct Reduction {
    int slot = 0;
    bool uniform = false;
    bool mean = false;
    std::int64_t reduced = 1, inner = 1;
    std::int64_t outputs = 1;  // outer * inner
  };

  Shape shape;  // the domain
  int num_slots = 0;
  std::vector<Input> inputs;
  std::vector<Step> steps;
  std::vector<Output> outputs;
  std::vector<Reduction> reductions;
  /// Slots whose memory is scratch of the evaluator's (the others are inputs' or outputs').
  std::vector<int> scratch_slots;
};

/// Runs `p` over T (float or double). `inputs[k]` is input k's data (T, or bool); `outputs[k]`
/// receives output k (T, or bool), of the domain's shape; `reductions[k]` receives reduction k's
/// `outputs` values.
template <class T>
void run_fused(const FusedProgram& p, std::span<const void* const> inputs, std::span<void* const> outputs,
               std::span<T* const> reductions);

}  // namespace tapeflow::cpu
