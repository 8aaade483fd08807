// Error rows for creation: the op StatelessRandomUniform, and the creation functions that are
// not ops (constants, fill, range, linspace, eye, random::normal/uniform), as public API rows.

#include "ops/error_cases.h"

namespace tapeflow::testing::errors {
// Rows stay one per line, as a table (clang-format would break them one field per line).
// clang-format off
namespace {
using C = ErrorClass;
constexpr std::int64_t k2p31 = std::int64_t{1} << 31;
}  // namespace

void add_creation_error_cases(std::vector<ErrorCase>& rows) {
  // StatelessRandomUniform: an int64 seed of shape (2,) and a float dtype.
  {
    auto su = [](Shape shape, DType dtype) {
      return [=](const Ins& x) { return one(random::stateless_uniform(shape, x[0], dtype)); };
    };
    const std::string op = "StatelessRandomUniform";
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 seed", .inputs = {i32({2})},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Float32}}, .call = su({3}, DType::Float32),
                    .needles = {"seed", "int64", "int32 tensor of shape (2,)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "float64 seed", .inputs = {f64({2})},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Float32}}, .call = su({3}, DType::Float32),
                    .needles = {"seed", "float64 tensor of shape (2,)"}});
    rows.push_back({.op = op, .cls = C::Shape, .what = "seed of shape (3,)", .inputs = {i64({3})},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Float32}}, .call = su({3}, DType::Float32),
                    .needles = {"seed", "shape (2,)", "int64 tensor of shape (3,)"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "scalar seed", .inputs = {i64({})},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Float32}}, .call = su({3}, DType::Float32),
                    .needles = {"seed", "int64 tensor of shape ()"}});
    rows.push_back({.op = op, .cls = C::Rank, .what = "seed of shape (1, 2)", .inputs = {i64({1, 2})},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Float32}}, .call = su({3}, DType::Float32),
                    .needles = {"seed", "int64 tensor of shape (1, 2)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "int32 output dtype", .inputs = {i64({2})},
                    .attrs = {{"shape", Ints{2, 3}}, {"dtype", DType::Int32}}, .call = su({2, 3}, DType::Int32),
                    .needles = {"dtype must be float32, float64 or bfloat16", "int32", "(2, 3)"}});
    rows.push_back({.op = op, .cls = C::DType, .what = "bool output dtype", .inputs = {i64({2})},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Bool}}, .call = su({3}, DType::Bool),
                    .needles = {"dtype", "bool"}});
    rows.push_back({.op = op, .cls = C::Overflow, .what = "shape (2^31, 2^31) of float32: 2^64 bytes",
                    .inputs = {i64({2})}, .attrs = {{"shape", Ints{k2p31, k2p31}}, {"dtype", DType::Float32}},
                    .call = su({k2p31, k2p31}, DType::Float32),
                    .needles = {"float32", "(2147483648, 2147483648)", "allocation limit"},
                    .throws = Throws::ResourceExhausted});
    rows.push_back({.op = op, .cls = C::Overflow, .what = "shape (2^40,) of float64 over the allocation limit",
                    .inputs = {i64({2})}, .attrs = {{"shape", Ints{std::int64_t{1} << 40}}, {"dtype", DType::Float64}},
                    .call = su({std::int64_t{1} << 40}, DType::Float64),
                    .needles = {"8796093022208 bytes", "allocation limit"}, .throws = Throws::ResourceExhausted});
    rows.push_back({.op = op, .cls = C::Size, .what = "negative dim (raw_ops only: a Shape cannot hold it)",
                    .inputs = {i64({2})}, .attrs = {{"shape", Ints{2, -1}}, {"dtype", DType::Float32}},
                    .call = nullptr, .needles = {"-1"}});
    rows.push_back({.op = op, .cls = C::Undefined, .what = "undefined seed", .inputs = {Tensor{}},
                    .attrs = {{"shape", Ints{3}}, {"dtype", DType::Float32}}, .call = su({3}, DType::Float32),
                    .needles = {"undefined"}});
  }

  // The creation functions that are not registered ops (they take no tensor): public API rows.
  // Class M: a NaN or Inf that would become a size or an integer element.
  {
    auto row = [&](std::string op, ErrorClass cls, std::string what, std::function<void()> body,
                   std::vector<std::string> needles, Throws t = Throws::InvalidArgument) {
      rows.push_back({.op = std::move(op), .cls = cls, .what = std::move(what),
                      .call = [body](const Ins&) {
                        body();
                        return Outs{};
                      },
                      .needles = std::move(needles), .throws = t, .raw = false});
    };
    const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
    row("Range", C::NonFinite, "NaN limit", [=] { range(0.0, nan, 1.0); }, {"limit=nan"});
    row("Range", C::NonFinite, "infinite delta", [=] { range(0.0, 10.0, inf); }, {"delta=inf"});
    row("Range", C::Size, "delta 0", [] { range(0.0, 10.0, 0.0); }, {"delta must not be 0"});
    row("Range", C::Overflow, "1e300 elements", [] { range(0.0, 1e300, 1.0, DType::Float64); }, {"1e+300"},
        Throws::ResourceExhausted);
    row("Fill", C::NonFinite, "NaN into int64", [=] { fill({2}, nan, DType::Int64); }, {"nan", "int64"});
    row("Fill", C::Size, "1e20 into int32", [] { fill({2}, 1e20, DType::Int32); }, {"1e+20", "int32"});
    row("LinSpace", C::Size, "num -1", [] { linspace(0.0, 1.0, -1); }, {"num", "-1"});
    row("Eye", C::Size, "rows -1", [] { eye(-1); }, {"negative", "-1"});
    row("RandomStandardNormal", C::NonFinite, "NaN stddev", [=] { random::normal({2}, 0.0, nan); }, {"stddev=nan"});
    row("RandomUniform", C::Size, "minval == maxval", [] { random::uniform({2}, 1.0, 1.0); },
        {"minval=1", "maxval=1"});
  }
}

// clang-format on
}  // namespace tapeflow::testing::errors
