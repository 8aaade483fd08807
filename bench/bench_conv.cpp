// The Fashion-MNIST CNN's two convolutions at its training batch (128), float32, SAME padding,
// stride 1, each pass timed two ways in the same run:
//   conv1: (128, 28, 28, 1) * (3, 3, 1, 32)      conv2: (128, 14, 14, 32) * (3, 3, 32, 64)
//   - tapeflow: the op as a user calls it (tf::nn::conv2d, raw_ops::conv2d_backprop_input and
//     conv2d_backprop_filter), with validation, output allocation and the filters' reorder;
//   - onednn:   oneDNN called directly on the same shapes and layouts (NHWC images), its primitive
//     built once and its filters already in the layout it chose: the library's ceiling.
// The ratio tapeflow / onednn is what tapeflow adds around oneDNN (the target: <= 1.1x).
// "GFLOP" is the pass's multiply-adds (2 * n * oh * ow * 9 * in_ch * out_ch) per second of wall
// time.
//
//   ./build/bench/bench/bench_conv [--benchmark_filter=conv2]

#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;

namespace {

enum class Pass { kForward, kBackpropInput, kBackpropFilter };

struct ConvShape {
  std::int64_t n, h, w, c, oc;
  tf::Shape input() const { return {n, h, w, c}; }
  tf::Shape filters() const { return {3, 3, c, oc}; }
  tf::Shape output() const { return {n, h, w, oc}; }
};
const ConvShape kConv1{128, 28, 28, 1, 32};
const ConvShape kConv2{128, 14, 14, 32, 64};

tf::Tensor values(const tf::Shape& s, int salt) {
  std::vector<float> v(static_cast<std::size_t>(s.num_elements()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(static_cast<int>((i * 7 + salt) % 17) - 8) / 8.f;
  return tf::constant(v, s);
}

void set_flops(benchmark::State& state, const ConvShape& s) {
  state.counters["GFLOP"] =
      benchmark::Counter(1e-9 * 2.0 * static_cast<double>(s.n * s.h * s.w * 9 * s.c * s.oc),
                         benchmark::Counter::kIsIterationInvariantRate);
}

void tapeflow_pass(benchmark::State& state, ConvShape s, Pass pass) {
  const tf::Tensor x = values(s.input(), 1), f = values(s.filters(), 2), dy = values(s.output(), 3);
  for (auto _ : state) {
    tf::Tensor r = pass == Pass::kForward ? tf::nn::conv2d(x, f, {1, 1}, "SAME")
                   : pass == Pass::kBackpropInput
                       ? tf::raw_ops::conv2d_backprop_input(s.input(), f, dy, {1, 1}, "SAME")
                       : tf::raw_ops::conv2d_backprop_filter(x, s.filters(), dy, {1, 1}, "SAME");
    benchmark::DoNotOptimize(r.raw_data());
  }
  set_flops(state, s);
}

void onednn_pass(benchmark::State& state, ConvShape s, Pass pass) {
  using dnnl::memory;
  using Tag = memory::format_tag;
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(eng);
  const memory::desc images({s.n, s.c, s.h, s.w}, memory::data_type::f32, Tag::nhwc);
  const memory::desc outputs({s.n, s.oc, s.h, s.w}, memory::data_type::f32, Tag::nhwc);
  const memory::desc any_filters({s.oc, s.c, 3, 3}, memory::data_type::f32, Tag::any);
  const memory::dims strides{1, 1}, dilations{0, 0}, pad{1, 1};
  const dnnl::convolution_forward::primitive_desc forward(
      {dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, images, any_filters, outputs,
       strides, dilations, pad, pad},
      eng);
  memory x(images, eng), y(outputs, eng), filters;
  dnnl::primitive p;
  std::unordered_map<int, memory> args;
  if (pass == Pass::kForward) {
    filters = memory(forward.weights_desc(), eng);
    p = dnnl::convolution_forward(forward);
    args = {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, filters}, {DNNL_ARG_DST, y}};
  } else if (pass == Pass::kBackpropInput) {
    const dnnl::convolution_backward_data::primitive_desc pd(
        {dnnl::algorithm::convolution_direct, images, any_filters, outputs, strides, dilations, pad, pad},
        eng, forward);
    filters = memory(pd.weights_desc(), eng);
    p = dnnl::convolution_backward_data(pd);
    args = {{DNNL_ARG_DIFF_DST, y}, {DNNL_ARG_WEIGHTS, filters}, {DNNL_ARG_DIFF_SRC, x}};
  } else {
    const dnnl::convolution_backward_weights::primitive_desc pd(
        {dnnl::algorithm::convolution_direct, images, any_filters, outputs, strides, dilations, pad, pad},
        eng, forward);
    filters = memory(pd.diff_weights_desc(), eng);
    p = dnnl::convolution_backward_weights(pd);
    args = {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, y}, {DNNL_ARG_DIFF_WEIGHTS, filters}};
  }
  // The same values as the tapeflow side (their layout does not matter to the timing).
  for (auto [m, t] : {std::pair{x, values(s.input(), 1)}, std::pair{y, values(s.output(), 3)}})
    std::copy_n(t.values<float>().data(), t.num_elements(), static_cast<float*>(m.get_data_handle()));
  std::fill_n(static_cast<float*>(filters.get_data_handle()), filters.get_desc().get_size() / sizeof(float),
              0.25f);
  for (auto _ : state) {
    p.execute(stream, args);
    stream.wait();
  }
  set_flops(state, s);
}

void register_all() {
  struct Named {
    const char* name;
    ConvShape shape;
  };
  for (const Named& s :
       {Named{"conv1_128x28x28x1_3x3x32", kConv1}, Named{"conv2_128x14x14x32_3x3x64", kConv2}})
    for (auto [pass_name, pass] :
         {std::pair{"forward", Pass::kForward}, std::pair{"backprop_input", Pass::kBackpropInput},
          std::pair{"backprop_filter", Pass::kBackpropFilter}}) {
      const std::string suffix = std::string(pass_name) + "/" + s.name;
      benchmark::RegisterBenchmark(("tapeflow/" + suffix).c_str(), tapeflow_pass, s.shape, pass)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("onednn/" + suffix).c_str(), onednn_pass, s.shape, pass)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
