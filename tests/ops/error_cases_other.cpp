// Error rows for reductions, linear algebra, image, gradient control, and the API rows: misuse of
// variables, custom gradients and the tape.

#include <thread>

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {
using C = ErrorClass;
using ReduceFn = Tensor (*)(const Tensor&, const Axes&, bool);

void reduction(std::vector<ErrorCase>& rows, const std::string& op, ReduceFn f, bool floats_only) {
  auto call = [f](Ints axes) { return [f, axes](const Ins& x) { return one(f(x[0], axes, false)); }; };
  rows.push_back({.op = op, .cls = C::Index, .what = "axis 2 for rank 2", .inputs = {f32({2, 3})},
                  .attrs = {{"axis", Ints{2}}}, .call = call({2}), .needles = {"axis 2"}});
  rows.push_back({.op = op, .cls = C::Index, .what = "axis -3 for rank 2", .inputs = {f32({2, 3})},
                  .attrs = {{"axis", Ints{-3}}}, .call = call({-3}), .needles = {"axis -3"}});
  rows.push_back({.op = op, .cls = C::Index, .what = "axis repeated", .inputs = {f32({2, 3})},
                  .attrs = {{"axis", Ints{1, -1}}}, .call = call({1, -1}), .needles = {"axes", "[1, -1]"}});
  rows.push_back({.op = op, .cls = C::DType, .what = "bool input", .inputs = {bools({2})}, .call = call({}),
                  .needles = {"'x'", "bool"}});
  if (floats_only)
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 input", .inputs = {i32({2})}, .call = call({}),
                    .needles = {"'x'", "int32"}});
  rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}}, .call = call({}),
                  .needles = {"undefined"}});
}

void arg_reduction(std::vector<ErrorCase>& rows, const std::string& op, Tensor (*f)(const Tensor&, std::int64_t)) {
  auto call = [f](std::int64_t a) { return [f, a](const Ins& x) { return one(f(x[0], a)); }; };
  rows.push_back({.op = op, .cls = C::Index, .what = "axis 2 for rank 2", .inputs = {f32({2, 3})},
                  .attrs = {{"dimension", std::int64_t{2}}}, .call = call(2), .needles = {"axis 2"}});
  rows.push_back({.op = op, .cls = C::Empty, .what = "over an empty axis", .inputs = {f32({0, 3})},
                  .attrs = {{"dimension", std::int64_t{0}}}, .call = call(0), .needles = {"(0, 3)"}});
  rows.push_back({.op = op, .cls = C::DType, .what = "bool input", .inputs = {bools({2})}, .call = call(0),
                  .needles = {"'x'", "bool"}});
  rows.push_back({.op = op, .cls = C::Rank, .what = "scalar input", .inputs = {f32({})}, .call = call(0),
                  .needles = {"axis 0", "rank 0"}});
}

}  // namespace

void add_other_error_cases(std::vector<ErrorCase>& rows) {
  reduction(rows, "Sum", reduce_sum, false);
  reduction(rows, "Mean", reduce_mean, false);
  reduction(rows, "Max", reduce_max, false);
  reduction(rows, "Min", reduce_min, false);
  reduction(rows, "Prod", reduce_prod, false);
  reduction(rows, "ReduceLogSumExp", reduce_logsumexp, true);
  rows.push_back({.op = "Mean", .cls = C::Empty, .what = "integer mean over an empty axis (0 / 0)",
                  .inputs = {i32({0, 2})}, .attrs = {{"axis", Ints{0}}},
                  .call = [](const Ins& x) { return one(reduce_mean(x[0], {0})); }, .needles = {"empty", "(0, 2)"}});
  arg_reduction(rows, "ArgMax", argmax);
  arg_reduction(rows, "ArgMin", argmin);
  {
    auto sgd = [](const Ins& x) { return one(raw_ops::apply_gradient_descent(x[0], x[1], x[2])); };
    rows.push_back({.op = "ApplyGradientDescent", .cls = C::Shape, .what = "grad of another shape than var",
                    .inputs = {f32({3}), f32({}), f32({2})}, .call = sgd, .needles = {"'grad'", "(3,)", "(2,)"}});
    rows.push_back({.op = "ApplyGradientDescent", .cls = C::Rank, .what = "lr not a scalar",
                    .inputs = {f32({3}), f32({3}), f32({3})}, .call = sgd, .needles = {"'lr'", "scalar"}});
    rows.push_back({.op = "ApplyGradientDescent", .cls = C::DType, .what = "float64 lr for a float32 var",
                    .inputs = {f32({3}), f64({}), f32({3})}, .call = sgd, .needles = {"'lr'", "float64", "float32"}});
    rows.push_back({.op = "ApplyGradientDescent", .cls = C::DType, .what = "int32 var",
                    .inputs = {i32({3}), i32({}), i32({3})}, .call = sgd, .needles = {"int32"}});
  }
  {
    auto momentum = [](const Ins& x) {
      const auto r = raw_ops::apply_keras_momentum(x[0], x[1], x[2], x[3], 0.9, false);
      return Outs(r.begin(), r.end());
    };
    rows.push_back({.op = "ApplyKerasMomentum", .cls = C::Shape, .what = "accum of another shape than var",
                    .inputs = {f32({3}), f32({2}), f32({}), f32({3})}, .call = momentum,
                    .needles = {"'accum'", "(3,)", "(2,)"}});
    rows.push_back({.op = "ApplyKerasMomentum", .cls = C::Rank, .what = "lr not a scalar",
                    .inputs = {f32({3}), f32({3}), f32({3}), f32({3})}, .call = momentum, .needles = {"'lr'", "scalar"}});
    rows.push_back({.op = "ApplyKerasMomentum", .cls = C::DType, .what = "float64 grad for a float32 var",
                    .inputs = {f32({3}), f32({3}), f32({}), f64({3})}, .call = momentum,
                    .needles = {"'grad'", "float64", "float32"}});
    rows.push_back({.op = "ApplyKerasMomentum", .cls = C::DType, .what = "int32 var",
                    .inputs = {i32({3}), i32({3}), i32({}), i32({3})}, .call = momentum, .needles = {"int32"}});
  }
  {
    auto adam = [](const Ins& x) {
      const auto r = raw_ops::apply_adam(x[0], x[1], x[2], x[3], x[4], 0.9, 0.999, 1e-7);
      return Outs(r.begin(), r.end());
    };
    rows.push_back({.op = "ApplyAdam", .cls = C::Shape, .what = "m of another shape than var",
                    .inputs = {f32({3}), f32({2}), f32({3}), f32({}), f32({3})}, .call = adam,
                    .needles = {"'m'", "(3,)", "(2,)"}});
    rows.push_back({.op = "ApplyAdam", .cls = C::Rank, .what = "lr_t not a scalar",
                    .inputs = {f32({3}), f32({3}), f32({3}), f32({1}), f32({3})}, .call = adam,
                    .needles = {"'lr_t'", "scalar"}});
    rows.push_back({.op = "ApplyAdam", .cls = C::DType, .what = "float64 grad for a float32 var",
                    .inputs = {f32({3}), f32({3}), f32({3}), f32({}), f64({3})}, .call = adam,
                    .needles = {"'grad'", "float64", "float32"}});
    rows.push_back({.op = "ApplyAdam", .cls = C::DType, .what = "int32 var",
                    .inputs = {i32({3}), i32({3}), i32({3}), i32({}), i32({3})}, .call = adam, .needles = {"int32"}});
  }

  {
    auto mm = [](bool ta, bool tb) { return [=](const Ins& x) { return one(matmul(x[0], x[1], ta, tb)); }; };
    rows.push_back({.op = "MatMul", .cls = C::Shape, .what = "inner dims 3 and 4", .inputs = {f32({2, 3}), f32({4, 5})},
                    .call = mm(false, false), .needles = {"(2, 3)", "(4, 5)"}});
    rows.push_back({.op = "MatMul", .cls = C::Shape, .what = "inner dims after transpose_a",
                    .inputs = {f32({2, 3}), f32({3, 5})}, .attrs = {{"transpose_a", true}}, .call = mm(true, false),
                    .needles = {"transpose_a", "(2, 3)", "(3, 5)"}});
    rows.push_back({.op = "MatMul", .cls = C::Rank, .what = "rank-1 operand", .inputs = {f32({3}), f32({3, 2})},
                    .call = mm(false, false), .needles = {"(3,)"}});
    rows.push_back({.op = "MatMul", .cls = C::DType, .what = "float32 with float64", .inputs = {f32({2, 2}), f64({2, 2})},
                    .call = mm(false, false), .needles = {"float32", "float64"}});
    rows.push_back({.op = "MatMul", .cls = C::DType, .what = "bool operands", .inputs = {bools({2, 2}), bools({2, 2})},
                    .call = mm(false, false), .needles = {"bool"}});
    rows.push_back({.op = "MatMul", .cls = C::Undefined, .what = "undefined b", .inputs = {f32({2, 2}), Tensor{}},
                    .call = mm(false, false), .needles = {"'b'", "undefined"}});
    rows.push_back({.op = "BatchMatMulV2", .cls = C::Shape, .what = "batch dims 2 and 3",
                    .inputs = {f32({2, 2, 3}), f32({3, 3, 2})}, .call = mm(false, false),
                    .needles = {"(2, 2, 3)", "(3, 3, 2)"}});
    rows.push_back({.op = "BatchMatMulV2", .cls = C::Shape, .what = "inner dims 3 and 4",
                    .inputs = {f32({2, 2, 3}), f32({2, 4, 2})}, .call = mm(false, false),
                    .needles = {"(2, 2, 3)", "(2, 4, 2)"}});
    rows.push_back({.op = "BatchMatMulV2", .cls = C::DType, .what = "float32 with float64",
                    .inputs = {f32({1, 2, 2}), f64({1, 2, 2})}, .call = mm(false, false), .needles = {"float32", "float64"}});
    rows.push_back({.op = "BatchMatMulV2", .cls = C::Empty, .what = "empty batch against batch 3",
                    .inputs = {f32({0, 2, 2}), f32({3, 2, 2})}, .call = mm(false, false),
                    .needles = {"(0, 2, 2)", "(3, 2, 2)"}});
  }
  {
    auto ac = [](const Ins& x) { return one(image::adjust_contrast(x[0], x[1])); };
    rows.push_back({.op = "AdjustContrastv2", .cls = C::Rank, .what = "non-scalar contrast_factor (TFSA-2022-086 class)",
                    .inputs = {f32({2, 2, 3}), f32({2})}, .call = ac, .needles = {"contrast_factor", "(2,)"}});
    rows.push_back({.op = "AdjustContrastv2", .cls = C::Rank, .what = "rank-2 images", .inputs = {f32({2, 3}), f32({})},
                    .call = ac, .needles = {"images", "(2, 3)"}});
    rows.push_back({.op = "AdjustContrastv2", .cls = C::DType, .what = "int32 images", .inputs = {i32({2, 2, 3}), f32({})},
                    .call = ac, .needles = {"images", "int32"}});
    rows.push_back({.op = "AdjustContrastv2", .cls = C::Undefined, .what = "undefined contrast_factor",
                    .inputs = {f32({2, 2, 3}), Tensor{}}, .call = ac, .needles = {"undefined"}});
  }
  for (const std::string op : {"Identity", "StopGradient", "NoGradient"}) {
    Tensor (*f)(const Tensor&) = op == "Identity" ? identity : op == "StopGradient" ? stop_gradient : raw_ops::no_gradient;
    rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined input", .inputs = {Tensor{}},
                    .call = [f](const Ins& x) { return one(f(x[0])); }, .needles = {"input 0", "undefined"}});
  }

  // Ops without a raw entry point: they take a C++ function or a Variable, or (GatherGrad,
  // StridedSliceGrad) exist only inside a gradient, whose shapes the tape supplies and checks.
  for (const std::string op : {"CustomGradient", "RecomputeGrad", "ReadVariableOp", "GatherGrad", "StridedSliceGrad"})
    rows.push_back({.op = op, .cls = C::Api, .what = "raw_ops::call of an op with no raw entry point",
                    .inputs = {f32({2})}, .call = nullptr, .needles = {op == "GatherGrad" || op == "StridedSliceGrad" ? "only inside the gradient" : "takes"},
                    .throws = Throws::Unimplemented});

  // ---- API rows: not op calls, so they run only through the public API (raw = false). Their
  // tensors are made inside the call, so the harness's tape does not watch them.
  {
    auto assign = [](Tensor value) {
      return [value](const Ins&) {
        Variable v(constant(std::vector<float>{1.f, 2.f}), {.name = "w"});
        v.assign(value);
        return Outs{};
      };
    };
    rows.push_back({.op = "ReadVariableOp", .cls = C::Shape, .what = "assign a (3,) value to a (2,) variable",
                    .call = assign(f32({3})), .needles = {"variable w", "(2,)", "(3,)"}, .raw = false,
                    .named = "AssignVariableOp"});
    rows.push_back({.op = "ReadVariableOp", .cls = C::DType, .what = "assign a float64 value to a float32 variable",
                    .call = assign(f64({2})), .needles = {"variable w", "float32", "float64"}, .raw = false,
                    .named = "AssignVariableOp"});
    rows.push_back({.op = "ReadVariableOp", .cls = C::Undefined, .what = "assign an undefined value",
                    .call = assign(Tensor{}), .needles = {"variable w", "undefined"}, .raw = false,
                    .named = "AssignVariableOp"});
  }
  {
    rows.push_back({.op = "CustomGradient", .cls = C::Api, .what = "function returns no outputs",
                    .call = [](const Ins&) {
                      return custom_gradient({f32({2})}, [](const std::vector<Tensor>&) { return CustomGradientResult{}; });
                    },
                    .needles = {"no outputs"}, .raw = false});
    rows.push_back({.op = "CustomGradient", .cls = C::Api, .what = "function returns no gradient function",
                    .call = [](const Ins&) {
                      return custom_gradient({f32({2})}, [](const std::vector<Tensor>& x) {
                        return CustomGradientResult{{x[0] * 2.0}, nullptr};
                      });
                    },
                    .needles = {"no gradient function"}, .raw = false});
    rows.push_back({.op = "CustomGradient", .cls = C::Api, .what = "gradient function returns 2 gradients for 1 input",
                    .call = [](const Ins&) {
                      const Tensor x = f32({2});
                      GradientTape tape;
                      tape.watch(x);
                      auto y = custom_gradient({x}, [](const std::vector<Tensor>& in) {
                        return CustomGradientResult{{in[0] * 2.0}, [](const std::vector<Tensor>& dy, const std::vector<Variable>&) {
                                                      return Grads{dy[0], dy[0]};
                                                    }};
                      });
                      tape.gradient(y[0], {x});
                      return Outs{};
                    },
                    .needles = {"expected to return 1 gradients", "returned 2"}, .raw = false});
    rows.push_back({.op = "RecomputeGrad", .cls = C::Api, .what = "empty block",
                    .call = [](const Ins&) {
                      recompute_grad(nullptr);
                      return Outs{};
                    },
                    .needles = {"block is empty"}, .raw = false});
    rows.push_back({.op = "RecomputeGrad", .cls = C::Undefined, .what = "undefined input",
                    .call = [](const Ins&) { return recompute_grad([](const std::vector<Tensor>& x) { return x; })({Tensor{}}); },
                    .needles = {"undefined"}, .raw = false});
    rows.push_back({.op = "RecomputeGrad", .cls = C::Api, .what = "block returns fewer outputs when recomputed",
                    .call = [](const Ins&) {
                      const Tensor x = f32({2});
                      auto calls = std::make_shared<int>(0);
                      Block b = recompute_grad([calls](const std::vector<Tensor>& in) {
                        return ++*calls == 1 ? std::vector<Tensor>{in[0] * 2.0, in[0] * 3.0} : std::vector<Tensor>{in[0]};
                      });
                      GradientTape tape;
                      tape.watch(x);
                      auto y = b({x});
                      tape.gradient(y[0] + y[1], {x});
                      return Outs{};
                    },
                    .needles = {"returned 1 outputs", "first run 2"}, .raw = false});
  }
  {
    const std::string op = "GradientTape";
    auto row = [&](ErrorClass cls, std::string what, std::function<void()> body, std::vector<std::string> needles,
                   Throws t = Throws::InvalidArgument, std::string named = "") {
      rows.push_back({.op = op, .cls = cls, .what = std::move(what),
                      .call = [body](const Ins&) {
                        body();
                        return Outs{};
                      },
                      .needles = std::move(needles), .throws = t, .raw = false, .named = std::move(named)});
    };
    row(C::Api, "second gradient() on a non-persistent tape", [] {
      const Tensor x = f32({2});
      GradientTape tape;
      tape.watch(x);
      const Tensor y = reduce_sum(x * x);
      tape.gradient(y, {x});
      tape.gradient(y, {x});
    }, {"A non-persistent GradientTape can only be used to compute one set of gradients"}, Throws::FailedPrecondition,
        "-");  // TensorFlow's message verbatim (tests/autodiff/tape_test.cpp pins it): no [prefix]
    row(C::Api, "watch() after the tape was consumed", [] {
      const Tensor x = f32({2});
      GradientTape tape;
      tape.watch(x);
      tape.gradient(reduce_sum(x), {x});
      tape.watch(x);
    }, {"create a new tape"}, Throws::FailedPrecondition, "GradientTape::watch");
    row(C::Undefined, "watch() an undefined tensor", [] {
      GradientTape tape;
      tape.watch(Tensor{});
    }, {"undefined"}, Throws::InvalidArgument, "GradientTape::watch");
    row(C::Shape, "output_gradients of the wrong shape", [] {
      const Tensor x = f32({2});
      GradientTape tape;
      tape.watch(x);
      const Tensor y = x * x;
      tape.gradient(y, {x}, {f32({3})});
    }, {"(3,)", "(2,)"}, Throws::InvalidArgument, "GradientTape::gradient");
    row(C::Api, "tape used from another thread", [] {
      GradientTape tape;
      std::exception_ptr err;
      std::thread([&] {
        try {
          tape.watch(f32({1}));
        } catch (...) {
          err = std::current_exception();
        }
      }).join();
      if (err) std::rethrow_exception(err);
    }, {"must be used from that thread"}, Throws::FailedPrecondition, "GradientTape::watch");
    row(C::Undefined, "gradient() of an undefined target", [] {
      const Tensor x = f32({2});
      GradientTape tape;
      tape.watch(x);
      tape.gradient(Tensor{}, {x});
    }, {"undefined"}, Throws::InvalidArgument, "GradientTape::gradient");
  }
}

// clang-format on
}  // namespace tapeflow::testing::errors
