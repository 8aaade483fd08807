#include "kernels/cpu/fused_eval.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <optional>

#include "absl/container/inlined_vector.h"
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

/// Adds the block x[0..m) (x[0] m times where uniform), domain elements start.., into the partial
/// sums `acc` as `r` maps elements to outputs.
template <class T>
void accumulate(const FusedProgram::Reduction& r, const T* x, std::int64_t start, std::int64_t m,
                double* acc) {
  const auto run_sum = [&](std::int64_t from, std::int64_t len) {
    return r.uniform ? static_cast<double>(x[0]) * static_cast<double>(len) : block_sum(x + from, len);
  };
  if (r.outputs == 1) {
    acc[0] += run_sum(0, m);
    return;
  }
  const std::int64_t span = r.reduced * r.inner;
  for (std::int64_t i = start, end = start + m; i < end;) {
    const std::int64_t o = (i / span) * r.inner + i % r.inner;
    if (r.inner == 1) {  // sums of rows: a run of elements goes to one output
      const std::int64_t len = std::min(span - i % span, end - i);
      acc[o] += run_sum(i - start, len);
      i += len;
    } else {  // sums of columns: a run of elements goes to consecutive outputs
      const std::int64_t len = std::min(r.inner - i % r.inner, end - i);
      double* a = acc + o;
      if (r.uniform)
        for (std::int64_t k = 0; k < len; ++k) a[k] += static_cast<double>(x[0]);
      else
        for (std::int64_t k = 0; k < len; ++k) a[k] += static_cast<double>(x[i - start + k]);
      i += len;
    }
  }
}

}  // namespace

template <class T>
void run_fused(const FusedProgram& p, std::span<const void* const> inputs, std::span<void* const> outputs,
               std::span<T* const> reductions) {
  const std::int64_t n = p.shape.num_elements();
  const std::int64_t block = std::max<std::int64_t>(1, std::min(kFusedBlock, n));
  const std::int64_t chunk = block * kFusedChunk;
  const std::int64_t num_chunks = n == 0 ? 0 : (n + chunk - 1) / chunk;
  // Only gathered inputs walk a broadcast; inline, so a one-element domain (a loop's scalar
  // body) allocates nothing here.
  absl::InlinedVector<std::optional<BroadcastWalk<1>>, 4> walks(p.inputs.size());
  for (std::size_t k = 0; k < p.inputs.size(); ++k)
    if (p.inputs[k].load == FusedProgram::Load::kGather)
      walks[k].emplace(p.shape, std::array<const Shape*, 1>{&p.inputs[k].shape});
  // Each chunk's partial sums of each reduction: num_chunks * outputs doubles.
  std::vector<std::vector<double>> partials;
  for (const auto& r : p.reductions)
    partials.emplace_back(static_cast<std::size_t>(num_chunks * r.outputs), 0.0);

  const auto run_block = [&](T** slot, std::int64_t chunk_index, std::int64_t start) {
    const std::int64_t m = std::min(block, n - start);
    for (std::size_t k = 0; k < p.inputs.size(); ++k) {
      const auto& in = p.inputs[k];
      if (in.load == FusedProgram::Load::kDirect)
        slot[in.slot] = const_cast<T*>(static_cast<const T*>(inputs[k])) + start;
      else if (in.load == FusedProgram::Load::kGather && in.is_bool)
        gather(static_cast<const bool*>(inputs[k]), *walks[k], start, m, slot[in.slot]);
      else if (in.load == FusedProgram::Load::kGather)
        gather(static_cast<const T*>(inputs[k]), *walks[k], start, m, slot[in.slot]);
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
      accumulate(red, slot[red.slot], start, m, partials[r].data() + chunk_index * red.outputs);
    }
  };

  const std::int64_t grain = std::max<std::int64_t>(1, kParallelGrain / chunk);
  parallel_for(num_chunks, grain, [&](std::int64_t c0, std::int64_t c1) {
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
    for (std::int64_t c = c0; c < c1; ++c)
      for (std::int64_t start = c * chunk; start < std::min(n, (c + 1) * chunk); start += block)
        run_block(slot, c, start);
  });

  for (std::size_t r = 0; r < p.reductions.size(); ++r) {
    const auto& red = p.reductions[r];
    for (std::int64_t o = 0; o < red.outputs; ++o) {
      double total = 0;
      for (std::int64_t c = 0; c < num_chunks; ++c)
        total += partials[r][static_cast<std::size_t>(c * red.outputs + o)];
      // A mean over no elements is 0 / 0 = NaN, as the Mean op gives.
      reductions[r][o] = static_cast<T>(red.mean ? total / static_cast<double>(red.reduced) : total);
    }
  }
}

template void run_fused<float>(const FusedProgram&, std::span<const void* const>, std::span<void* const>,
                               std::span<float* const>);
template void run_fused<double>(const FusedProgram&, std::span<const void* const>, std::span<void* const>,
                                std::span<double* const>);

}  // namespace tapeflow::cpu
