// Batch normalization, float32, timed three ways in one run on CNN-sized activations and an
// MLP-sized batch, for the training pass (forward and backward) and for inference (forward with
// given statistics):
//   - fused:       tf::nn::fused_batch_norm and raw_ops::fused_batch_norm_grad (inference:
//                  tf::nn::fused_batch_norm_inference) as a user calls them (validation, output
//                  allocation), what layers::BatchNormalization runs;
//   - elementwise: the same through a GradientTape over the elementwise ops and reductions it is
//                  made of (inference: the elementwise formula), what the layer ran before;
//   - onednn:      oneDNN's batch normalization primitives called directly on the same shapes,
//                  built once, with their own float32 statistics: the peer the fused ops were
//                  measured against before they dropped oneDNN (docs/PERFORMANCE.md).
//
//   ./build/bench/bench/bench_batch_norm [--benchmark_filter=28x28]

#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

constexpr double kEpsilon = 1e-3;

struct Case {
  const char* name;
  tf::Shape shape;  // channels last
  std::int64_t channels() const { return shape[shape.rank() - 1]; }
  std::int64_t rows() const { return shape.num_elements() / channels(); }
};

const Case kCases[] = {
    {"128x28x28x32", {128, 28, 28, 32}}, {"128x14x14x64", {128, 14, 14, 64}}, {"256x512", {256, 512}}};

struct Inputs {
  tf::Tensor x, scale, offset, dy;
  explicit Inputs(const Case& c)
      : x(tf::random::uniform(c.shape, -2, 2, tf::float32, 1)),
        scale(tf::random::uniform({c.channels()}, 0.5, 2, tf::float32, 2)),
        offset(tf::random::uniform({c.channels()}, -1, 1, tf::float32, 3)),
        dy(tf::random::uniform(c.shape, -1, 1, tf::float32, 4)) {}
};

void set_bytes(benchmark::State& state, const Case& c) {
  // The activations' size, for a feel of the passes: x, y, dy and dx are each this large.
  state.counters["MB"] = static_cast<double>(c.shape.num_elements()) * 4 / 1e6;
}

void fused(benchmark::State& state, Case c) {
  const Inputs in(c);
  for (auto _ : state) {
    const auto r = tf::nn::fused_batch_norm(in.x, in.scale, in.offset, kEpsilon);
    const auto g = tf::raw_ops::fused_batch_norm_grad(in.dy, in.x, in.scale, r.mean, r.variance, kEpsilon);
    benchmark::DoNotOptimize(g[0].raw_data());
  }
  set_bytes(state, c);
}

void elementwise(benchmark::State& state, Case c) {
  const Inputs in(c);
  tf::Axes rows;
  for (std::int64_t a = 0; a + 1 < c.shape.rank(); ++a) rows.push_back(a);
  for (auto _ : state) {
    tf::GradientTape tape;
    tape.watch(in.x);
    tape.watch(in.scale);
    tape.watch(in.offset);
    const tf::Tensor mean = tf::reduce_mean(in.x, rows, true);
    const tf::Tensor variance = tf::reduce_mean(tf::square(in.x - mean), rows, true);
    const tf::Tensor y = (in.x - mean) * tf::rsqrt(variance + kEpsilon) * in.scale + in.offset;
    const auto g = tape.gradient(y, {in.x, in.scale, in.offset}, {in.dy});
    benchmark::DoNotOptimize(g[0]->raw_data());
  }
  set_bytes(state, c);
}

void fused_inference(benchmark::State& state, Case c) {
  const Inputs in(c);
  const tf::Tensor mean = in.offset, variance = in.scale;  // any statistics will do
  for (auto _ : state) {
    const tf::Tensor y =
        tf::nn::fused_batch_norm_inference(in.x, in.scale, in.offset, mean, variance, kEpsilon);
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes(state, c);
}

void elementwise_inference(benchmark::State& state, Case c) {
  const Inputs in(c);
  const tf::Tensor mean = in.offset, variance = in.scale;
  for (auto _ : state) {
    const tf::Tensor y = (in.x - mean) * tf::rsqrt(variance + kEpsilon) * in.scale + in.offset;
    benchmark::DoNotOptimize(y.raw_data());
  }
  set_bytes(state, c);
}

void onednn(benchmark::State& state, Case c) {
  using dnnl::memory;
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  // (rows, channels) as oneDNN's nhwc with h = w = 1 (its plain nc kernel was 9x slower).
  const memory::desc data({c.rows(), c.channels(), 1, 1}, memory::data_type::f32, memory::format_tag::nhwc);
  const memory::desc channel({c.channels()}, memory::data_type::f32, memory::format_tag::a);
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  const dnnl::batch_normalization_forward::primitive_desc forward(
      {dnnl::prop_kind::forward_training, data, static_cast<float>(kEpsilon), flags}, eng);
  const dnnl::batch_normalization_backward::primitive_desc backward(
      {dnnl::prop_kind::backward, data, data, static_cast<float>(kEpsilon), flags}, eng, forward);
  const dnnl::batch_normalization_forward fwd(forward);
  const dnnl::batch_normalization_backward bwd(backward);
  const Inputs in(c);
  auto wrap = [&](const memory::desc& md, const tf::Tensor& t) {
    return memory(md, eng, const_cast<void*>(t.raw_data()));
  };
  memory x = wrap(data, in.x), dy = wrap(data, in.dy), scale = wrap(channel, in.scale),
         offset = wrap(channel, in.offset);
  memory y(data, eng), dx(data, eng), mean(channel, eng), variance(channel, eng), dscale(channel, eng),
      doffset(channel, eng);
  for (auto _ : state) {
    fwd.execute(stream, {{DNNL_ARG_SRC, x},
                         {DNNL_ARG_DST, y},
                         {DNNL_ARG_SCALE, scale},
                         {DNNL_ARG_SHIFT, offset},
                         {DNNL_ARG_MEAN, mean},
                         {DNNL_ARG_VARIANCE, variance}});
    bwd.execute(stream, {{DNNL_ARG_SRC, x},
                         {DNNL_ARG_DIFF_DST, dy},
                         {DNNL_ARG_SCALE, scale},
                         {DNNL_ARG_SHIFT, offset},
                         {DNNL_ARG_MEAN, mean},
                         {DNNL_ARG_VARIANCE, variance},
                         {DNNL_ARG_DIFF_SRC, dx},
                         {DNNL_ARG_DIFF_SCALE, dscale},
                         {DNNL_ARG_DIFF_SHIFT, doffset}});
    stream.wait();
  }
  set_bytes(state, c);
}

void register_all() {
  using Side = std::pair<const char*, void (*)(benchmark::State&, Case)>;
  for (const Case& c : kCases)
    for (auto [side, fn] :
         {Side{"fused", fused}, Side{"elementwise", elementwise}, Side{"onednn", onednn},
          Side{"inference/fused", fused_inference}, Side{"inference/elementwise", elementwise_inference}})
      benchmark::RegisterBenchmark((std::string(side) + "/" + c.name).c_str(), fn, c)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
