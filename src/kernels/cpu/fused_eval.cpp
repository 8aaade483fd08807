#include "kernels/cpu/fused_eval.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "core/parallel.h"
#include "kernels/cpu/elementwise.h"

namespace tapeflow::cpu {
namespace {

/// Per-thread scratch that grows to the largest program run on the thread and is then reused:
/// no allocation per call in steady state.
template <class T>
T* thread_scratch(std::size_t elements) {
  struct Buffer {
    std::unique_ptr<T[], void (*)(T*)> data{nullptr,
                                            [](T* p) { ::operator delete[](p, std::align_val_t{64}); }};
    std::size_t size = 0;
  };
  thread_local Buffer buffer;
  if (buffer.size < elements) {
    buffer.data.reset(static_cast<T*>(::operator new[](elements * sizeof(T), std::align_val_t{64})));
    buffer.size = elements;
  }
  return buffer.data.get();
}

/// dst[k] = src[index of domain element start + k] for k < m, with src broadcast to the domain as
/// `walk` says; bool sources become T(0) / T(1).
template <class T, class Src>
void gather(const Src* src, const BroadcastWalk<1>& walk, std::int64_t start, std::int64_t m, T* dst) {
  const std::int64_t inner = walk.inner(), step = walk.inner_stride(0);
  for (std::int64_t i = start, end = start + m; i < end;) {
    const std::int64_t row = i / inner, col = i % inner, len = std::min(inner - col, end - i);
    const Src* s = src + walk.row_offset(0, row) + col * step;
    T* d = dst + (i - start);
    if (step == 1)
      for (std::int64_t k = 0; k < len; ++k) d[k] = static_cast<T>(s[k]);
    else
      std::fill(d, d + len, static_cast<T>(s[0]));
    i += len;
  }
}

/// The sum of x[0..m) in double, with 8 independent accumulators (vectorised, no reassociation
/// by the compiler), combined pairwise.
template <class T>
double block_sum(const T* x, std::int64_t m) {
  double lane[8] = {};
  std::int64_t i = 0;
  for (; i + 8 <= m; i += 8)
    for (int k = 0; k < 8; ++k) lane[k] += static_cast<double>(x[i + k]);
  for (; i < m; ++i) lane[i % 8] += static_cast<double>(x[i]);
  return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

}  // namespace

template <class T>
void run_fused(const FusedProgram& p, std::span<const void* const> inputs, std::span<void* const> outputs,
               std::span<T> reductions) {
  const std::int64_t n = p.shape.num_elements();
  const std::int64_t block = std::max<std::int64_t>(1, std::min(kFusedBlock, n));
  const std::int64_t num_blocks = n == 0 ? 0 : (n + block - 1) / block;
  std::vector<BroadcastWalk<1>> walks;
  walks.reserve(p.inputs.size());
  for (const auto& in : p.inputs) walks.emplace_back(p.shape, std::array<const Shape*, 1>{&in.shape});
  std::vector<double> partials(p.reductions.size() * static_cast<std::size_t>(num_blocks));

  parallel_for(
      num_blocks, std::max<std::int64_t>(1, kParallelGrain / block), [&](std::int64_t b0, std::int64_t b1) {
        // This thread's scratch blocks and slot table.
        T* scratch = thread_scratch<T>(p.scratch_slots.size() * static_cast<std::size_t>(block));
        T** slot = thread_scratch<T*>(static_cast<std::size_t>(p.num_slots));
        for (std::size_t k = 0; k < p.scratch_slots.size(); ++k)
          slot[p.scratch_slots[k]] = scratch + k * static_cast<std::size_t>(block);
        for (std::size_t k = 0; k < p.inputs.size(); ++k) {
          const auto& in = p.inputs[k];
          if (in.load != FusedProgram::Load::kUniform) continue;
          if (in.is_bool)
            slot[in.slot][0] = static_cast<T>(*static_cast<const bool*>(inputs[k]));
          else
            slot[in.slot] = const_cast<T*>(static_cast<const T*>(inputs[k]));
        }
        for (std::int64_t b = b0; b < b1; ++b) {
          const std::int64_t start = b * block, m = std::min(block, n - start);
          for (std::size_t k = 0; k < p.inputs.size(); ++k) {
            const auto& in = p.inputs[k];
            if (in.load == FusedProgram::Load::kDirect)
              slot[in.slot] = const_cast<T*>(static_cast<const T*>(inputs[k])) + start;
            else if (in.load == FusedProgram::Load::kGather && in.is_bool)
              gather(static_cast<const bool*>(inputs[k]), walks[k], start, m, slot[in.slot]);
            else if (in.load == FusedProgram::Load::kGather)
              gather(static_cast<const T*>(inputs[k]), walks[k], start, m, slot[in.slot]);
          }
          for (std::size_t k = 0; k < p.outputs.size(); ++k)
            if (p.outputs[k].in_place) slot[p.outputs[k].slot] = static_cast<T*>(outputs[k]) + start;
          for (const FusedProgram::Step& s : p.steps) {
            const T* src[3] = {slot[s.src[0]], slot[s.src[1]], slot[s.src[2]]};
            s.op->kernel<T>()(src, s.stride, slot[s.dst], s.uniform ? 1 : m);
          }
          for (std::size_t k = 0; k < p.outputs.size(); ++k) {
            const auto& o = p.outputs[k];
            if (o.in_place) continue;
            const T* v = slot[o.slot];
            if (o.is_bool) {
              bool* out = static_cast<bool*>(outputs[k]) + start;
              for (std::int64_t i = 0; i < m; ++i) out[i] = v[o.uniform ? 0 : i] != T(0);
            } else if (o.uniform) {
              std::fill_n(static_cast<T*>(outputs[k]) + start, m, v[0]);
            } else {
              std::memcpy(static_cast<T*>(outputs[k]) + start, v, static_cast<std::size_t>(m) * sizeof(T));
            }
          }
          for (std::size_t r = 0; r < p.reductions.size(); ++r) {
            const auto& red = p.reductions[r];
            const T* v = slot[red.slot];
            partials[r * static_cast<std::size_t>(num_blocks) + static_cast<std::size_t>(b)] =
                red.uniform ? static_cast<double>(v[0]) * static_cast<double>(m) : block_sum(v, m);
          }
        }
      });

  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    double total = 0;
    for (std::int64_t b = 0; b < num_blocks; ++b)
      total += partials[r * static_cast<std::size_t>(num_blocks) + static_cast<std::size_t>(b)];
    // A mean over no elements is 0 / 0 = NaN, as the Mean op gives.
    reductions[r] = static_cast<T>(p.reductions[r].mean ? total / static_cast<double>(n) : total);
  }
}

template void run_fused<float>(const FusedProgram&, std::span<const void* const>, std::span<void* const>,
                               std::span<float>);
template void run_fused<double>(const FusedProgram&, std::span<const void* const>, std::span<void* const>,
                                std::span<double>);

}  // namespace tapeflow::cpu
