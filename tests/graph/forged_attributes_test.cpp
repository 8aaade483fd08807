// A function file's attributes are whatever its writer put there: the checksum proves the bytes
// arrived, not that they came from tapeflow's public functions, which are what normalise and check
// an axis or a size before an op's forward trusts it. A graph node therefore reaches the forward
// through OpDef::forward, which first runs the op's `check_attrs` against the node's inputs
// (autodiff/op_def.h). These tests forge what a file can hold and require a typed error (never
// InternalError, which would blame tapeflow) or a run; the ASan + UBSan suite runs them too, so
// an attribute that still reaches a kernel unchecked is a reported out-of-bounds access there.
//
// - EveryIntegerOfEveryAttributeIsChecked: every row of the op table (tests/ops/op_cases.h), and a
//   row for each op with attributes the table does not reach, is recorded with its gradient
//   (the tape inside, so the gradient ops' nodes are in the graph); then each integer of each
//   node's attributes (every integral field and Shape dim, one at a time) is replaced by hostile
//   values and the graph run as a loaded function runs it (the dispatch path).
// - EveryInputOfAnotherShapeOrDtypeIsChecked: the same graphs run on inputs of other shapes and
//   dtypes than the recorded ones (a file's declared value types can lie, and its nodes may be
//   wired to any value): the forwards check their inputs, not only the public functions.
// - Pad's value and OneHot's on and off values, tensors in the attributes, forged to other dtypes
//   and shapes.
// - APaddingModeOutsideTheEnumIsRefused: a scoped enum's byte can hold any value.
// - Coverage: every registered op whose attributes hold an integer, a Shape, an enum or a tensor is
//   forged by the first test.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "autodiff/op_def.h"
#include "graph/executor.h"
#include "graph/graph_recorder.h"
#include "ops/op_cases.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using tf::graph::ExportedFunction;
using tf::graph::NodeKind;

namespace {

using In = std::vector<tf::Tensor>;

/// A recorded graph and the inputs it was recorded on.
struct Recorded {
  std::string label;
  ExportedFunction f;
  In inputs;
};

/// Rows for the ops with attributes that the op table (differentiable ops) does not call.
std::vector<tf::testing::OpCase> extra_rows() {
  using tf::Shape;
  return {
      {"ArgMax",
       {{Shape{3, 4}}},
       [](const In& x) { return tf::cast(tf::argmax(x[0], 1), tf::DType::Float64); }},
      {"ArgMin",
       {{Shape{3, 4}}},
       [](const In& x) { return tf::cast(tf::argmin(x[0], 0), tf::DType::Float64); }},
      {"OneHot",
       {{Shape{4}}},
       [](const In& x) {
         const tf::Tensor labels = tf::cast(tf::abs(x[0]), tf::DType::Int32);
         return tf::one_hot(labels, 3, 2.0, -1.0, tf::DType::Float64) * tf::reduce_sum(x[0]);
       }},
      {"Bincount",
       {{Shape{4}}},
       [](const In& x) {
         const tf::Tensor values = tf::cast(tf::abs(x[0]), tf::DType::Int32);
         return tf::cast(tf::math::bincount(values, {.minlength = 3, .maxlength = 5}), tf::DType::Float64) *
                tf::reduce_sum(x[0]);
       }},
      {"StatelessRandomUniform",
       {{Shape{2}}},
       [](const In& x) {
         return tf::random::stateless_uniform(tf::Shape{2, 3},
                                              tf::constant(std::vector<std::int64_t>{7, 11}, tf::Shape{2}),
                                              tf::DType::Float64) *
                tf::reduce_sum(x[0]);
       }},
  };
}

/// Every row recorded once (its first shapes), with the gradient of its output's sum.
const std::vector<Recorded>& recordings() {
  static const std::vector<Recorded> all = [] {
    std::vector<tf::testing::OpCase> rows = tf::testing::op_cases();
    for (tf::testing::OpCase& r : extra_rows()) rows.push_back(std::move(r));
    std::vector<Recorded> out;
    std::mt19937_64 rng(23);
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const tf::testing::OpCase& c = rows[i];
      In xs;
      std::uniform_real_distribution<double> u(c.lo, c.hi);
      for (const tf::Shape& s : c.shapes[0]) {
        std::vector<double> v(static_cast<std::size_t>(s.num_elements()));
        for (double& e : v) e = u(rng);
        xs.push_back(tf::constant(v, s));
      }
      Recorded r;
      r.label = c.op + " (row " + std::to_string(i) + ")";
      r.inputs = xs;
      r.f = tf::testing::GraphRecorder::record(c.op, xs, [&c](const In& in) {
        tf::GradientTape tape;
        for (const tf::Tensor& x : in) tape.watch(x);
        const tf::Tensor y = c.call(in);
        In results = {y};
        const std::vector<tf::Source> sources(in.begin(), in.end());
        for (const tf::Gradient& g :
             tape.gradient_flat(tf::reduce_sum(y), sources, {}, tf::UnconnectedGradients::Zero))
          results.push_back(*g);
        return results;
      });
      r.f.graph.file = "forged.tfn";  // as read_function_file marks it: errors blame the file
      out.push_back(std::move(r));
    }
    return out;
  }();
  return all;
}

/// Runs `f` as a loaded function runs it; an error must be typed and must not blame tapeflow.
/// Returns the message of the error it threw ("" if it ran).
std::string run_forged(const ExportedFunction& f, const In& inputs, const std::string& what) {
  try {
    tf::graph::Executor(f.graph, "forged").run(inputs, tf::graph::RunMode::kDispatch);
    return "";
  } catch (const tf::InternalError& e) {
    ADD_FAILURE() << what << ": InternalError (blames tapeflow for a forged attribute): " << e.what();
  } catch (const tf::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": an untyped " << typeid(e).name() << ": " << e.what();
  }
  return "untyped";
}

/// How many integers map_ints visits in `attrs`.
int integer_count(const tf::autodiff::AttrsCodec& codec, const void* attrs) {
  int n = 0;
  codec.map_ints(attrs, [&n](std::int64_t v) {
    ++n;
    return v;
  });
  return n;
}

/// Values a forger would try in place of `v`: off by one either way, negative, zero, past any
/// rank, and past any allocation.
std::vector<std::int64_t> hostile(std::int64_t v) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  std::vector<std::int64_t> out = {-1,   -2,  0, 1, 9, std::int64_t{1} << 40, -(std::int64_t{1} << 40),
                                   kMax, kMin};
  if (v < kMax) out.push_back(v + 1);
  if (v > kMin) out.push_back(v - 1);
  return out;
}

/// The names of the ops whose attributes hold an integer, a Shape, an enum or a tensor: what a
/// forged file can make point outside a buffer. (Layouts, attr_codec.h: "i32", "ei8", "shape",
/// "tensor"; bools, floats, dtypes and strings cannot.)
std::set<std::string> ops_with_forgeable_attrs() {
  std::set<std::string> out;
  for (const auto& [name, status] : tf::registered_ops()) {
    const tf::autodiff::AttrsCodec* codec = tf::autodiff::registry().get(name).attrs_codec;
    if (codec == nullptr) continue;
    const std::string& l = codec->layout;
    if (l.find('i') != std::string::npos || l.find("shape") != std::string::npos ||
        l.find("tensor") != std::string::npos)
      out.insert(name);
  }
  return out;
}

TEST(ForgedAttributes, EveryIntegerOfEveryAttributeIsChecked) {
  for (const Recorded& r : recordings()) {
    std::set<const tf::autodiff::OpDef*> forged;  // the first node of each op in the graph
    for (std::size_t n = 0; n < r.f.graph.nodes.size(); ++n) {
      const tf::graph::Node& node = r.f.graph.nodes[n];
      // Control flow's attributes are branch graphs, no integers (map_ints is null).
      if (node.kind != NodeKind::kOp || node.op->attrs_codec == nullptr ||
          node.op->attrs_codec->map_ints == nullptr || !forged.insert(node.op).second)
        continue;
      const tf::autodiff::AttrsCodec& codec = *node.op->attrs_codec;
      const int count = integer_count(codec, node.attrs.get());
      for (int k = 0; k < count; ++k) {
        const std::int64_t original = [&] {
          std::int64_t v = 0;
          int seen = 0;
          codec.map_ints(node.attrs.get(), [&](std::int64_t x) {
            if (seen++ == k) v = x;
            return x;
          });
          return v;
        }();
        for (std::int64_t h : hostile(original)) {
          ExportedFunction f = r.f;
          try {
            int seen = 0;
            f.graph.nodes[n].attrs =
                codec.map_ints(node.attrs.get(), [&](std::int64_t x) { return seen++ == k ? h : x; });
          } catch (const tf::Error&) {
            continue;  // does not fit the field, or is no Shape: a file cannot hold it either
          }
          run_forged(f, r.inputs,
                     r.label + ", node " + std::to_string(n) + " (" + node.op->name() + "), integer " +
                         std::to_string(k) + " " + std::to_string(original) + " -> " + std::to_string(h));
        }
      }
    }
  }
}

/// Shapes a forged graph could feed in place of `s`: each dimension one larger or zero, one
/// more or one fewer dimension, a scalar.
std::vector<tf::Shape> other_shapes(const tf::Shape& s) {
  std::vector<tf::Shape> out = {tf::Shape{}};
  const auto d = s.dims();
  for (std::size_t i = 0; i < d.size(); ++i) {
    std::vector<std::int64_t> grown(d.begin(), d.end()), emptied(d.begin(), d.end());
    grown[i] += 1;
    emptied[i] = 0;
    out.emplace_back(grown);
    out.emplace_back(emptied);
  }
  std::vector<std::int64_t> more(d.begin(), d.end()), fewer(d.begin(), d.end());
  more.insert(more.begin(), 2);
  out.emplace_back(more);
  if (!fewer.empty()) {
    fewer.pop_back();
    out.emplace_back(fewer);
  }
  return out;
}

TEST(ForgedGraphs, EveryInputOfAnotherShapeOrDtypeIsChecked) {
  for (const Recorded& r : recordings()) {
    for (std::size_t i = 0; i < r.inputs.size(); ++i) {
      for (const tf::Shape& s : other_shapes(r.inputs[i].shape())) {
        In inputs = r.inputs;
        inputs[i] = tf::ones(s, tf::DType::Float64);
        run_forged(r.f, inputs, r.label + ", input " + std::to_string(i) + " of shape " + s.to_string());
      }
      for (tf::DType d : {tf::DType::Float32, tf::DType::Int32, tf::DType::Bool}) {
        In inputs = r.inputs;
        inputs[i] = tf::cast(r.inputs[i], d);
        run_forged(r.f, inputs,
                   r.label + ", input " + std::to_string(i) + " as " + std::string(tf::dtype_name(d)));
      }
    }
  }
}

/// `node`'s attributes replaced by what `write` puts in their encoding, read back by its codec as
/// a function file's reader does.
void forge(tf::graph::Node& node, const std::function<void(tf::autodiff::AttrWriter&)>& write) {
  std::string bytes;
  tf::autodiff::AttrWriter w(bytes);
  write(w);
  tf::autodiff::AttrReader reader({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()},
                                  "forged");
  node.attrs = node.op->attrs_codec->read(reader);
  ASSERT_EQ(reader.remaining(), 0u);
}

/// Tensors a file can hold where an op expects a scalar of its input's dtype (float64 here).
const std::vector<tf::Tensor>& not_a_float64_scalar() {
  static const std::vector<tf::Tensor> all = {tf::constant(1.f), tf::ones({2}, tf::DType::Float64),
                                              tf::zeros({0}, tf::DType::Float64), tf::Tensor{}};
  return all;
}

TEST(ForgedAttributes, PadsValueMustBeAScalarOfTheInputsDtype) {
  const In inputs = {tf::ones({2, 2}, tf::DType::Float64)};
  ExportedFunction f = tf::testing::GraphRecorder::record("pad", inputs, [](const In& in) {
    return In{tf::pad(in[0], {{1, 1}, {0, 2}}, 3.0)};
  });
  ASSERT_EQ(f.graph.nodes.at(0).op->name(), "Pad");
  ASSERT_EQ(f.graph.nodes[0].op->attrs_codec->layout, "{[(i64,i64)],tensor}");
  for (const tf::Tensor& value : not_a_float64_scalar()) {
    forge(f.graph.nodes[0], [&](tf::autodiff::AttrWriter& w) {
      w.u64(2);
      for (std::int64_t amount : {1, 1, 0, 2}) w.i64(amount);
      w.tensor(value);
    });
    EXPECT_THAT(run_forged(f, inputs, "Pad"),
                testing::HasSubstr("[Pad] the graph node's attributes do not fit"));
  }
}

TEST(ForgedAttributes, OneHotsValuesMustBeScalarsOfOneDtype) {
  const In inputs = {tf::constant(std::vector<std::int32_t>{0, 2}, tf::Shape{2})};
  ExportedFunction f = tf::testing::GraphRecorder::record("one_hot", inputs, [](const In& in) {
    return In{tf::one_hot(in[0], 3, 1.0, 0.0, tf::DType::Float64)};
  });
  ASSERT_EQ(f.graph.nodes.at(0).op->name(), "OneHot");
  ASSERT_EQ(f.graph.nodes[0].op->attrs_codec->layout, "{i64,tensor,tensor}");
  const tf::Tensor one = tf::constant(1.0);
  for (const tf::Tensor& bad : not_a_float64_scalar()) {
    for (const bool bad_on : {true, false}) {
      forge(f.graph.nodes[0], [&](tf::autodiff::AttrWriter& w) {
        w.i64(3);
        w.tensor(bad_on ? bad : one);
        w.tensor(bad_on ? one : bad);
      });
      EXPECT_THAT(run_forged(f, inputs, "OneHot"),
                  testing::HasSubstr("[OneHot] the graph node's attributes do not fit"));
    }
  }
}

TEST(ForgedAttributes, APaddingModeOutsideTheEnumIsRefused) {
  const In inputs = {tf::ones({1, 4, 4, 2}), tf::ones({3, 3, 2, 2})};
  ExportedFunction f = tf::testing::GraphRecorder::record("conv", inputs, [](const In& in) {
    return In{tf::nn::conv2d(in[0], in[1], {1, 1}, "SAME")};
  });
  tf::graph::Node& node = f.graph.nodes.at(0);
  ASSERT_EQ(node.op->name(), "Conv2D");
  std::string bytes;
  tf::autodiff::AttrWriter w(bytes);
  node.op->attrs_codec->write(node.attrs.get(), w);
  // Layout {[i64;2],{ei8,[i64;4]},shape,[i64;2]}: the strides take 16 bytes, then the mode.
  ASSERT_EQ(node.op->attrs_codec->layout, "{[i64;2],{ei8,[i64;4]},shape,[i64;2]}");
  bytes[16] = 3;
  forge(node, [&](tf::autodiff::AttrWriter& out) { out.bytes(bytes.data(), bytes.size()); });
  EXPECT_THAT(run_forged(f, inputs, "Conv2D with padding mode 3"),
              testing::HasSubstr("[Conv2D] padding mode 3 is none of VALID, SAME and EXPLICIT"));
}

TEST(ForgedAttributes, EveryOpWithForgeableAttributesIsForged) {
  std::set<std::string> seen;
  for (const Recorded& r : recordings())
    for (const tf::graph::Node& n : r.f.graph.nodes)
      if (n.kind == NodeKind::kOp) seen.insert(n.op->name());
  for (const std::string& op : ops_with_forgeable_attrs())
    EXPECT_TRUE(seen.contains(op)) << op
                                   << " holds attributes a file can forge, but no recorded graph runs it: "
                                   << "add a row to extra_rows()";
}

}  // namespace
