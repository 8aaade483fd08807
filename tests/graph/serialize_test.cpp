// Function files (src/graph/serialize.h, docs/FUNCTION_FORMAT.md): a recorded graph round-trips
// and runs to the same bytes; every truncation and flipped byte, another file's magic, another
// version and each forged field (with a valid checksum) is a typed error naming the file; writes
// are atomic and refuse graphs they cannot write.

#include "graph/serialize.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <set>

#include "autodiff/attr_codec.h"
#include "function/concrete.h"
#include "graph/check.h"
#include "graph/executor.h"
#include "graph/graph_recorder.h"
#include "graph/passes.h"
#include "io/checkpoint_testing.h"
#include "support/close.h"
#include "support/errors.h"
#include "support/files.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace fs = std::filesystem;
namespace graph = tapeflow::graph;
using ::testing::HasSubstr;
using tf::testing::error_of;
using tf::testing::read_bytes;
using tf::testing::write_bytes;

namespace {

using tf::testing::bitwise_equal;

class FunctionFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tapeflow_function_file_test_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    tf::detail::set_checkpoint_write_fault(-1);
    fs::remove_all(dir_);
  }
  fs::path path(const std::string& name) const { return dir_ / name; }
  fs::path dir_;
};

// A function using ops of every attribute field type: bools (MatMul), a reduction's axes, flags,
// count and shapes (Sum), paddings with a scalar tensor (Pad), a pair of strides (Conv2D), a dtype
// (Cast), a permutation (Transpose), a double (LeakyRelu), a list op (ConcatV2), several outputs
// (Split), a tensor of on/off values (OneHot), an integer input, a captured constant, and a
// variable it reads and adds to.
struct Recorded {
  tf::Variable scale{tf::constant(std::vector<float>{0.5f, -1.f, 2.f}, tf::Shape{3}), {.name = "scale"}};
  tf::Variable steps{tf::constant(std::int32_t{0}), {.name = "steps", .trainable = false}};
  std::vector<tf::Tensor> inputs{tf::constant(std::vector<float>{1, 2, 3, 4, 5, 6}, tf::Shape{2, 3}),
                                 tf::constant(std::vector<std::int32_t>{2, 0}, tf::Shape{2})};
  graph::ExportedFunction f;

  static std::vector<tf::Tensor> body(const std::vector<tf::Tensor>& in, tf::Variable& scale,
                                      tf::Variable& steps) {
    const tf::Tensor w = tf::constant(std::vector<float>{1, 0, -1, 2, 1, 0}, tf::Shape{3, 2});
    tf::Tensor h = tf::matmul(in[0], w, false, false);  // (2, 2)
    h = tf::matmul(h, w, false, true);                  // (2, 3)
    h = h * scale;                                      // variable read
    tf::Tensor s = tf::reduce_sum(h, {1}, true);        // (2, 1)
    tf::Tensor p = tf::pad(h, {{1, 0}, {0, 2}}, 0.25);  // (3, 5)
    tf::Tensor img = tf::reshape(p, {1, 3, 5, 1});
    tf::Tensor filt = tf::constant(std::vector<float>{1, -1, 0.5f, 2}, tf::Shape{2, 2, 1, 1});
    tf::Tensor conv = tf::nn::conv2d(img, filt, {1, 2}, "SAME");  // (1, 3, 3, 1)
    tf::Tensor act = tf::nn::leaky_relu(tf::transpose(tf::reshape(conv, {3, 3}), {1, 0}), 0.1);
    tf::Tensor joined = tf::concat({act, tf::transpose(h, {1, 0})}, 1);  // (3, 5)
    std::vector<tf::Tensor> parts = tf::split(joined, std::vector<std::int64_t>{2, 3}, 1);
    tf::Tensor hot = tf::one_hot(in[1], 3, 2.0, -1.0);  // (2, 3) float32
    tf::Tensor ints = tf::cast(hot, tf::DType::Int32);
    steps.assign_add(tf::constant(std::int32_t{1}));
    return {s, parts[0], parts[1], ints, hot * h};
  }

  Recorded() {
    f = tf::testing::GraphRecorder::record(
        "everything", inputs, [&](const std::vector<tf::Tensor>& in) { return body(in, scale, steps); });
  }
};

void expect_same_graph(const graph::ExportedFunction& a, const graph::ExportedFunction& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.output_structure, b.output_structure);
  ASSERT_EQ(a.inputs.size(), b.inputs.size());
  for (std::size_t i = 0; i < a.inputs.size(); ++i) {
    EXPECT_EQ(a.inputs[i].dims, b.inputs[i].dims);
    EXPECT_EQ(a.inputs[i].dtype, b.inputs[i].dtype);
    EXPECT_EQ(a.inputs[i].name, b.inputs[i].name);
  }
  const graph::Graph& ga = a.graph;
  const graph::Graph& gb = b.graph;
  ASSERT_EQ(ga.values.size(), gb.values.size());
  for (std::size_t i = 0; i < ga.values.size(); ++i) {
    EXPECT_EQ(ga.values[i].shape, gb.values[i].shape) << i;
    EXPECT_EQ(ga.values[i].dtype, gb.values[i].dtype) << i;
  }
  EXPECT_EQ(ga.inputs, gb.inputs);
  EXPECT_EQ(ga.outputs, gb.outputs);
  ASSERT_EQ(ga.constants.size(), gb.constants.size());
  for (std::size_t i = 0; i < ga.constants.size(); ++i) {
    EXPECT_EQ(ga.constants[i].first, gb.constants[i].first);
    EXPECT_TRUE(bitwise_equal(ga.constants[i].second, gb.constants[i].second)) << i;
  }
  ASSERT_EQ(ga.variables.size(), gb.variables.size());
  ASSERT_EQ(b.variable_values.size(), gb.variables.size());
  for (std::size_t i = 0; i < ga.variables.size(); ++i) {
    EXPECT_EQ(ga.variables[i].name, gb.variables[i].name);
    EXPECT_EQ(ga.variables[i].shape, gb.variables[i].shape);
    EXPECT_EQ(ga.variables[i].dtype, gb.variables[i].dtype);
    EXPECT_EQ(ga.variables[i].trainable, gb.variables[i].trainable);
    EXPECT_TRUE(gb.variables[i].state.expired());
    EXPECT_TRUE(bitwise_equal(a.variable_values[i], b.variable_values[i])) << i;
  }
  ASSERT_EQ(ga.nodes.size(), gb.nodes.size());
  for (std::size_t i = 0; i < ga.nodes.size(); ++i) {
    const graph::Node& na = ga.nodes[i];
    const graph::Node& nb = gb.nodes[i];
    EXPECT_EQ(na.kind, nb.kind) << i;
    EXPECT_EQ(na.op, nb.op) << i;  // the same OpDef, found again by name
    EXPECT_EQ(na.inputs, nb.inputs) << i;
    EXPECT_EQ(na.outputs, nb.outputs) << i;
    EXPECT_EQ(na.variable, nb.variable) << i;
    ASSERT_EQ(na.attrs == nullptr, nb.attrs == nullptr) << i;
    if (na.attrs != nullptr) {
      EXPECT_TRUE(na.op->attrs_codec->equal(na.attrs.get(), nb.attrs.get())) << i;
    }
  }
}

TEST_F(FunctionFile, RoundTripRunsToTheSameBytes) {
  Recorded r;
  // Every kind of node the format holds is in the graph.
  std::set<graph::NodeKind> kinds;
  std::set<std::string> ops;
  for (const graph::Node& n : r.f.graph.nodes) {
    kinds.insert(n.kind);
    if (n.op != nullptr) ops.insert(n.op->name());
  }
  EXPECT_TRUE(kinds.contains(graph::NodeKind::kReadVariable));
  EXPECT_TRUE(kinds.contains(graph::NodeKind::kAssignAdd));
  for (const char* op : {"MatMul", "Sum", "Pad", "Conv2D", "Cast", "Transpose", "LeakyRelu", "ConcatV2",
                         "SplitV", "OneHot", "Reshape", "Mul"})
    EXPECT_TRUE(ops.contains(op)) << op;
  EXPECT_FALSE(r.f.graph.constants.empty());

  graph::write_function_file(path("f.tff"), r.f);
  const graph::ExportedFunction back = graph::read_function_file(path("f.tff"));
  expect_same_graph(r.f, back);

  std::vector<tf::Tensor> vars_a, vars_b;
  const std::vector<tf::Tensor> out_a = tf::testing::run(r.f, r.inputs, &vars_a);
  const std::vector<tf::Tensor> out_b = tf::testing::run(back, r.inputs, &vars_b);
  ASSERT_EQ(out_a.size(), 5u);
  ASSERT_EQ(out_b.size(), out_a.size());
  for (std::size_t i = 0; i < out_a.size(); ++i) EXPECT_TRUE(bitwise_equal(out_a[i], out_b[i])) << i;
  for (std::size_t i = 0; i < vars_a.size(); ++i) EXPECT_TRUE(bitwise_equal(vars_a[i], vars_b[i])) << i;
  // And the graph computes what the eager program does, from the same variable values.
  tf::Variable scale(r.f.variable_values[0]), steps(r.f.variable_values[1]);
  const std::vector<tf::Tensor> eager = Recorded::body(r.inputs, scale, steps);
  for (std::size_t i = 0; i < eager.size(); ++i) EXPECT_TRUE(bitwise_equal(eager[i], out_b[i])) << i;
  EXPECT_TRUE(bitwise_equal(steps.value(), vars_b[1]));

  // Writing what was read gives the same file.
  graph::write_function_file(path("g.tff"), back);
  EXPECT_EQ(read_bytes(path("f.tff")), read_bytes(path("g.tff")));
}

TEST_F(FunctionFile, ANodeThatGivesAListOpTooFewInputsIsATypedErrorWhenRun) {
  // A forged file's node may hold any input list: ops whose forward takes a list check its length
  // (they read past it before), as fixed-arity ops do.
  const std::vector<tf::Tensor> inputs = {tf::ones({2, 2}), tf::ones({2, 2})};
  graph::ExportedFunction f =
      tf::testing::GraphRecorder::record("joined", inputs, [](const std::vector<tf::Tensor>& in) {
        return std::vector<tf::Tensor>{tf::concat({in[0], in[1]}, 0)};
      });
  ASSERT_EQ(f.graph.nodes.size(), 1u);
  f.graph.nodes[0].inputs.clear();
  try {
    tf::testing::run(f, inputs);
    FAIL() << "ran ConcatV2 on no inputs";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("[ConcatV2] takes at least 1 input, a graph node gave it 0"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(FunctionFile, EmptyGraphAndEmptyTensorsRoundTrip) {
  graph::ExportedFunction f;
  f.name = "";
  f.graph.constants.emplace_back(f.graph.add_value(tf::Shape{0, 3}, tf::DType::Float64),
                                 tf::zeros(tf::Shape{0, 3}, tf::DType::Float64));
  f.graph.outputs = {0, 0};
  f.graph.variables.push_back({{}, "flags", tf::Shape{2}, tf::DType::Bool, false});
  f.variable_values.push_back(tf::constant(std::vector<bool>{true, false}, tf::Shape{2}));
  graph::write_function_file(path("e.tff"), f);
  const graph::ExportedFunction back = graph::read_function_file(path("e.tff"));
  expect_same_graph(f, back);
}

TEST_F(FunctionFile, EveryTruncationIsDataLossNamingThePath) {
  Recorded r;
  graph::write_function_file(path("f.tff"), r.f);
  const std::vector<unsigned char> bytes = read_bytes(path("f.tff"));
  ASSERT_GT(bytes.size(), 200u);
  const fs::path cut = path("cut.tff");
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    write_bytes(cut, {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n)});
    const std::string msg = error_of<tf::DataLossError>([&] { graph::read_function_file(cut); });
    EXPECT_THAT(msg, HasSubstr("[read_function_file] function file '" + cut.string() + "'")) << n;
  }
  // Trailing bytes too.
  std::vector<unsigned char> longer = bytes;
  longer.push_back(0);
  write_bytes(cut, longer);
  EXPECT_THAT(error_of<tf::DataLossError>([&] { graph::read_function_file(cut); }),
              HasSubstr("trailing bytes"));
}

TEST_F(FunctionFile, EveryFlippedByteIsDataLoss) {
  Recorded r;
  graph::write_function_file(path("f.tff"), r.f);
  const std::vector<unsigned char> bytes = read_bytes(path("f.tff"));
  const fs::path bad = path("bad.tff");
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    std::vector<unsigned char> flipped = bytes;
    flipped[i] ^= static_cast<unsigned char>(1u << (i % 8));
    write_bytes(bad, flipped);
    EXPECT_THAT(error_of<tf::DataLossError>([&] { graph::read_function_file(bad); }), HasSubstr(bad.string()))
        << "byte " << i;
  }
}

TEST_F(FunctionFile, ACheckpointOrAnotherFileIsNamedForWhatItIs) {
  tf::save_checkpoint(path("model.ckpt").string(), {{"w", tf::Variable(tf::constant(1.f))}});
  EXPECT_THAT(error_of<tf::DataLossError>([&] { graph::read_function_file(path("model.ckpt")); }),
              HasSubstr("this is a tapeflow checkpoint, not a function file"));
  write_bytes(path("text"), std::vector<unsigned char>(100, 'a'));
  EXPECT_THAT(error_of<tf::DataLossError>([&] { graph::read_function_file(path("text")); }),
              HasSubstr("bad magic: this is not a tapeflow function file"));
  write_bytes(path("short"), {'n', 'o', 't', ' ', 'o', 'u', 'r', 's', '!'});
  EXPECT_THAT(error_of<tf::DataLossError>([&] { graph::read_function_file(path("short")); }),
              HasSubstr("bad magic"));
  EXPECT_THAT(error_of<tf::InvalidArgumentError>([&] { graph::read_function_file(path("missing")); }),
              HasSubstr("cannot open function file"));
  EXPECT_THAT(error_of<tf::InvalidArgumentError>([&] { graph::read_function_file(dir_); }),
              HasSubstr("is a directory, not a regular file"));
}

// --- Forged files: built field by field from docs/FUNCTION_FORMAT.md, with valid checksums -------

// MatMul(v0, v1) -> v2 on two float32 (2, 2) inputs; each field can be replaced.
struct Forged {
  std::uint32_t version = 1;
  std::uint32_t value_count = 3;
  std::uint32_t output = 2;
  std::vector<std::uint32_t> node_inputs = {0, 1};
  std::uint8_t node_kind = 0;
  std::uint32_t op_index = 0;
  std::string op_name = "MatMul";
  std::string layout = "{b,b}";
  std::string attrs = std::string("\x00\x01", 2);  // transpose_b
  std::vector<std::uint32_t> node_outputs = {2};
  std::vector<std::int64_t> value_dims = {2, 2};              // of every value
  std::string extra_meta;                                     // appended to the meta section
  std::vector<std::pair<std::string, std::string>> more_ops;  // op table entries after the first

  std::vector<unsigned char> bytes() const {
    std::string meta;
    tf::autodiff::AttrWriter w(meta);
    w.string("forged");
    w.u32(2);
    for (const char* name : {"a", "b"}) {
      w.dtype(tf::DType::Float32);
      w.u8(2);
      w.i64(-1);
      w.i64(2);
      w.string(name);
    }
    w.string("[0]");
    w.u32(value_count);
    for (std::uint32_t i = 0; i < std::min<std::uint32_t>(value_count, 4); ++i) {
      w.dtype(tf::DType::Float32);
      w.u8(static_cast<std::uint8_t>(value_dims.size()));
      for (std::int64_t d : value_dims) w.i64(d);
    }
    w.u32(2), w.u32(0), w.u32(1);  // graph inputs
    w.u32(1), w.u32(output);       // graph outputs
    w.u32(0);                      // constants
    w.u32(0);                      // variables
    w.u32(static_cast<std::uint32_t>(1 + more_ops.size())), w.string(op_name), w.string(layout);
    for (const auto& [name, ops_layout] : more_ops) w.string(name), w.string(ops_layout);
    w.u32(1);  // nodes
    w.u8(node_kind);
    w.u32(op_index);
    if (!layout.empty()) {
      w.u32(static_cast<std::uint32_t>(attrs.size()));
      w.bytes(attrs.data(), attrs.size());
    }
    w.u32(static_cast<std::uint32_t>(node_inputs.size()));
    for (std::uint32_t v : node_inputs) w.u32(v);
    w.u32(static_cast<std::uint32_t>(node_outputs.size()));
    for (std::uint32_t v : node_outputs) w.u32(v);
    meta += extra_meta;

    std::string file = "TFLWFUNC";
    tf::autodiff::AttrWriter h(file);
    h.u32(version);
    h.u32(0);
    h.le(std::uint16_t{0}), h.le(std::uint16_t{1}), h.le(std::uint16_t{0}), h.le(std::uint16_t{0});
    h.u64(meta.size());
    file += meta;
    h.u32(static_cast<std::uint32_t>(crc32_z(0, reinterpret_cast<const Bytef*>(file.data()), file.size())));
    return {file.begin(), file.end()};
  }
};

TEST_F(FunctionFile, AFileBuiltFromTheSpecReadsAndRuns) {
  write_bytes(path("f.tff"), Forged{}.bytes());
  const graph::ExportedFunction f = graph::read_function_file(path("f.tff"));
  EXPECT_EQ(f.name, "forged");
  EXPECT_EQ(f.inputs[0].dims, (std::vector<std::int64_t>{-1, 2}));
  EXPECT_EQ(f.output_structure, "[0]");
  const tf::Tensor a = tf::constant({{1.f, 2.f}, {3.f, 4.f}});
  const tf::Tensor b = tf::constant({{0.f, 1.f}, {1.f, 0.f}});
  const std::vector<tf::Tensor> out = tf::testing::run(f, {a, b});
  EXPECT_TRUE(bitwise_equal(out[0], tf::matmul(a, b, false, true)));
}

/// A version 2 file's size template (docs/FUNCTION_FORMAT.md): `attr_terms` of (node, ordinal,
/// dims, multiple), then `constant_terms` raw bytes; with `by`, a version 3 file's, each attribute
/// term with that second factor.
std::string size_template(const std::vector<std::array<std::int64_t, 4>>& attr_terms,
                          std::uint32_t constant_terms = 0, const std::string& constants = "",
                          std::optional<std::uint64_t> by = std::nullopt) {
  std::string out;
  tf::autodiff::AttrWriter w(out);
  w.u32(static_cast<std::uint32_t>(attr_terms.size()));
  for (const auto& [node, ordinal, dims, multiple] : attr_terms) {
    w.u32(static_cast<std::uint32_t>(node)), w.u32(static_cast<std::uint32_t>(ordinal));
    w.u64(static_cast<std::uint64_t>(dims)), w.i64(multiple);
    if (by) w.u64(*by);
  }
  w.u32(constant_terms);
  return out + constants;
}

TEST_F(FunctionFile, AVersionTwoFileWithAnEmptySizeTemplateReadsAndRuns) {
  Forged forged;
  forged.version = 2;
  forged.extra_meta = size_template({});
  write_bytes(path("v2.tff"), forged.bytes());
  const graph::ExportedFunction f = graph::read_function_file(path("v2.tff"));
  EXPECT_TRUE(f.size_template.empty());
  const tf::Tensor a = tf::constant({{1.f, 2.f}, {3.f, 4.f}});
  EXPECT_TRUE(bitwise_equal(tf::testing::run(f, {a, a})[0], tf::matmul(a, a, false, true)));
}

TEST_F(FunctionFile, ForgedSizeTemplatesAreTypedErrorsNamingTheTerm) {
  const fs::path p = path("template.tff");
  auto message = [&](const std::string& tmpl, std::uint32_t version = 2) {
    Forged forged;
    forged.version = version;
    forged.extra_meta = tmpl;
    write_bytes(p, forged.bytes());
    return error_of<tf::DataLossError>([&] { graph::read_function_file(p); });
  };
  // The forged graph: one MatMul (two bool attributes, no integers), no constants, two unknown dims.
  EXPECT_THAT(message(size_template({{1, 0, 1, 1}})),
              HasSubstr("size term 0 (node 1): the graph has 1 nodes"));
  EXPECT_THAT(message(size_template({{0, 0, 1, 1}})),
              HasSubstr("integer 0 of MatMul's attributes, which have 0"));
  EXPECT_THAT(message(size_template({}, 1, std::string("\x00\x00\x00\x00\x01", 5) + std::string(16, '\0'))),
              HasSubstr("constant size term 0 (constant 0): the graph has 0 constants"));
  EXPECT_THAT(message(size_template({}, 1, std::string("\x00\x00\x00\x00\x07\x00", 6))),
              HasSubstr("constant size term 0 has unknown kind 7"));
  EXPECT_THAT(message(size_template({}) + "x"), HasSubstr("1 unparsed bytes at the end of the meta section"));
  // Version 3: each term also has its second factor (read, so the term's own error comes next).
  EXPECT_THAT(message(size_template({{1, 0, 1, 1}}, 0, "", 2), 3),
              HasSubstr("size term 0 (node 1): the graph has 1 nodes"));
  // Read as version 2, the factor's first bytes are taken for the constant term count.
  EXPECT_THAT(message(size_template({{1, 0, 1, 1}}, 0, "", 2), 2),
              HasSubstr("constant size terms claims 2 items"));
  EXPECT_THAT(message(size_template({}).substr(0, 6)), HasSubstr("constant size term count"));
}

TEST_F(FunctionFile, ForgedFieldsAreTypedErrorsNamingTheProblem) {
  const fs::path p = path("forged.tff");
  auto message = [&]<class E = tf::DataLossError>(const Forged& forged) {
    write_bytes(p, forged.bytes());
    return error_of<E>([&] { graph::read_function_file(p); });
  };
  Forged f;
  f.version = 4;
  EXPECT_THAT(message(f), HasSubstr("unsupported format version 4 (written by tapeflow 0.1.0"));
  EXPECT_THAT(message(f), HasSubstr("reads versions 1 to 3"));
  f = {};
  f.op_name = "NoSuchOp";
  const std::string unknown = message.operator()<tf::LookupError>(f);
  EXPECT_THAT(unknown, HasSubstr("uses op 'NoSuchOp', which this tapeflow"));
  EXPECT_THAT(unknown, HasSubstr(p.string()));
  f = {};
  f.op_name = "ReadVariableOp";
  f.layout = "";
  f.attrs = "";
  EXPECT_THAT(message.operator()<tf::LookupError>(f), HasSubstr("which a graph cannot run"));
  f = {};
  f.layout = "{b,b,b}";
  EXPECT_THAT(message(f),
              HasSubstr("whose op 'MatMul' has the attributes {b,b,b}; in this tapeflow (0.1.0) they "
                        "are {b,b}"));
  f = {};
  f.attrs = std::string("\x00\x02", 2);
  EXPECT_THAT(message(f), HasSubstr("node 0 (MatMul)'s attributes (2 bytes at offset"));
  EXPECT_THAT(message(f), HasSubstr("is byte 2 (only 0 and 1 are valid)"));
  f.attrs = std::string("\x00", 1);
  EXPECT_THAT(message(f), HasSubstr("a bool needs 1 bytes at offset 1, but only 0 are left"));
  f.attrs = std::string("\x00\x00\x00", 3);
  EXPECT_THAT(message(f), HasSubstr("1 bytes are left after the last field"));
  f = {};
  f.output = 7;
  EXPECT_THAT(message(f), HasSubstr("graph output 0 names value 7, but there are 3 values"));
  f.output = 0x80000000u;
  EXPECT_THAT(message(f), HasSubstr("more than a value id can be"));
  f = {};
  f.node_inputs = {0, 2};
  EXPECT_THAT(message(f), HasSubstr("input 1 of node 0 (MatMul) uses value 2 before anything defines it"));
  f = {};
  f.value_count = 0xFFFFFFFFu;
  EXPECT_THAT(message(f), HasSubstr("values claims 4294967295 items"));
  f = {};
  // A zero dim hid the overflow of the others, which Shape then refused with
  // ResourceExhaustedError not naming the file.
  f.value_dims = {0, (std::int64_t{1} << 62) + 1};
  EXPECT_THAT(message(f),
              HasSubstr("has more than 4611686018427387904 elements, not counting zero dimensions"));
  EXPECT_THAT(message(f), HasSubstr(p.string()));
  f = {};
  f.node_kind = 5;
  EXPECT_THAT(message(f), HasSubstr("node 0 has unknown kind 5"));
  f = {};
  f.op_index = 3;
  EXPECT_THAT(message(f), HasSubstr("node 0 names op 3, but the op table has 1"));
  f = {};
  f.more_ops = {{"Neg", ""}};
  EXPECT_THAT(message(f), HasSubstr("op 1 of the table ('Neg') is used by no node"));
  f.more_ops = {{"MatMul", "{b,b}"}};
  EXPECT_THAT(message(f), HasSubstr("op 'MatMul' appears twice in the op table"));
  f = {};
  f.op_index = 1;
  f.more_ops = {{"MatMul", "{b,b}"}};
  EXPECT_THAT(message(f), HasSubstr("op 'MatMul' appears twice"));
  f.more_ops = {{"BatchMatMulV2", "{b,b}"}};
  EXPECT_THAT(message(f),
              HasSubstr("node 0 uses op 1 of the table before op 0 (the table lists ops in order of "
                        "first use)"));
  f = {};
  f.extra_meta = "x";
  EXPECT_THAT(message(f), HasSubstr("1 unparsed bytes at the end of the meta section"));
}

// A node listing another number of outputs than its op gives used to load and fail when called
// with InternalError ("a bug in tapeflow"). Where the node tells the count (an elementwise op, a
// cond's branches) it is DataLossError when read.
TEST_F(FunctionFile, ANodeListingAnotherOutputCountThanItsOpGivesIsDataLossWhenRead) {
  const fs::path p = path("forged.tff");
  auto message = [&](const Forged& forged) {
    write_bytes(p, forged.bytes());
    return error_of<tf::DataLossError>([&] { tf::load_function(p); });
  };
  Forged f;
  f.op_name = "AddV2";
  f.layout = f.attrs = "";
  f.value_count = 4;
  f.node_outputs = {2, 3};
  EXPECT_THAT(message(f), HasSubstr("function file '" + p.string()));
  EXPECT_THAT(message(f), HasSubstr("node 0 (AddV2) lists 2 outputs, but AddV2 gives 1"));
  f.node_outputs = {};
  EXPECT_THAT(message(f), HasSubstr("node 0 (AddV2) lists 0 outputs, but AddV2 gives 1"));
  // An op without a block kernel whose forward returns one tensor: MatMul (two bool attributes).
  f = {};
  f.value_count = 4;
  f.node_outputs = {2, 3};
  EXPECT_THAT(message(f), HasSubstr("node 0 (MatMul) lists 2 outputs, but MatMul gives 1"));
  // A list op with a declared count: FusedBatchNormInference gives y only.
  f.op_name = "FusedBatchNormInference";
  f.layout = "{f64,i64}";
  f.attrs = std::string(16, '\0');
  EXPECT_THAT(message(f), HasSubstr("node 0 (FusedBatchNormInference) lists 2 outputs, but "
                                    "FusedBatchNormInference gives 1"));
  // Split's count is its sizes': sizes {1, 1} listing one output.
  f.op_name = "Split";
  f.layout = "{i32,[i64]}";
  f.attrs.clear();
  tf::autodiff::AttrWriter split(f.attrs);
  split.le(std::uint32_t{0}), split.u64(2), split.i64(1), split.i64(1);
  f.value_count = 3;
  f.node_inputs = {0};
  f.node_outputs = {2};
  EXPECT_THAT(message(f), HasSubstr("node 0 (Split) lists 1 outputs, but Split gives 2"));

  // StatelessIf(a, b) whose branches return their one capture, listing two results.
  std::string branch;
  tf::autodiff::AttrWriter w(branch);
  w.u32(1), w.dtype(tf::DType::Float32), w.shape(tf::Shape{2, 2});
  w.u32(1), w.u32(0), w.u32(1), w.u32(0);  // inputs and outputs: v0
  w.u32(0), w.u32(0);                      // no constants, no nodes
  f = {};
  f.op_name = "StatelessIf";
  f.layout = "{graph,graph}";
  f.attrs = branch + branch;
  f.value_count = 4;
  f.node_outputs = {2, 3};
  ASSERT_NE(graph::control_flow_op("StatelessIf"), nullptr);  // defined before the file names it
  EXPECT_THAT(message(f), HasSubstr("node 0 (StatelessIf) lists 2 outputs, but StatelessIf gives 1"));
}

// A node giving a fixed-arity op another number of inputs than its forward takes used to load and
// fail only when called (InvalidArgumentError not naming the file). The forward's shape fixes the
// count, so it is the file's DataLossError when read.
TEST_F(FunctionFile, ANodeListingAnotherInputCountThanItsOpTakesIsDataLossWhenRead) {
  const fs::path p = path("forged.tff");
  auto message = [&](const Forged& forged) {
    write_bytes(p, forged.bytes());
    return error_of<tf::DataLossError>([&] { tf::load_function(p); });
  };
  Forged f;  // MatMul (with attributes) of the graph inputs 0 and 1
  f.node_inputs = {0};
  EXPECT_THAT(message(f), HasSubstr("function file '" + p.string()));
  EXPECT_THAT(message(f), HasSubstr("node 0 (MatMul) lists 1 inputs, but MatMul takes 2"));
  f.node_inputs = {0, 1, 1};
  EXPECT_THAT(message(f), HasSubstr("node 0 (MatMul) lists 3 inputs, but MatMul takes 2"));
  // Elementwise ops without attributes: AddV2 given one input, Relu two.
  f.layout = f.attrs = "";
  f.op_name = "AddV2";
  f.node_inputs = {1};
  EXPECT_THAT(message(f), HasSubstr("node 0 (AddV2) lists 1 inputs, but AddV2 takes 2"));
  f.op_name = "Relu";
  f.node_inputs = {0, 1};
  EXPECT_THAT(message(f), HasSubstr("node 0 (Relu) lists 2 inputs, but Relu takes 1"));
  // A list op's count is its list's: ConcatV2 of three inputs loads (its forward checks the list).
  f.op_name = "ConcatV2";
  f.layout = "{i32}";
  f.attrs = std::string(4, '\0');  // axis 0
  f.node_inputs = {0, 1, 1};
  write_bytes(p, f.bytes());
  EXPECT_NO_THROW(tf::load_function(p));
}

// Unpack's count is the size of a dim the signature leaves unknown, so the executor checks it: the
// file's DataLossError when the node runs, not InternalError.
TEST_F(FunctionFile, AnUnpackListingAnotherCountThanItGivesIsDataLossWhenRun) {
  const fs::path p = path("forged.tff");
  Forged f;
  f.op_name = "Unpack";
  f.layout = "{i32}";
  f.attrs = std::string(4, '\0');  // axis 0
  f.node_inputs = {0};
  write_bytes(p, f.bytes());
  const tf::LoadedFunction loaded = tf::load_function(p);
  const std::string message = error_of<tf::DataLossError>([&] {
    loaded({tf::ones({2, 2}), tf::ones({2, 2})});
  });
  EXPECT_THAT(message, HasSubstr("function file '" + p.string() + "' is corrupt"));
  EXPECT_THAT(message, HasSubstr("Unpack gave 2 outputs, the node lists 1"));
}

// The passes a graph read from a file goes through (a cond's branches are optimised when read)
// take a node's output count from the node: constant folding and common subexpressions left a
// value undefined or read past the first node's outputs where two counts differed.
TEST_F(FunctionFile, ThePassesLeaveANodeListingAnotherOutputCountForTheExecutor) {
  const std::vector<tf::Tensor> inputs = {tf::ones({2, 2})};
  const tf::Tensor c = tf::constant(std::vector<float>{1, 2, 3, 4}, tf::Shape{2, 2});
  for (const bool of_constants : {false, true}) {
    graph::ExportedFunction f =
        tf::testing::GraphRecorder::record("twice", inputs, [&](const std::vector<tf::Tensor>& in) {
          const tf::Tensor& x = of_constants ? c : in[0];
          return std::vector<tf::Tensor>{tf::matmul(x, x), tf::matmul(x, x)};
        });
    graph::Graph g = std::move(f.graph);
    ASSERT_EQ(g.nodes.size(), 2u);
    g.nodes[1].outputs.push_back(g.add_value(tf::Shape{2, 2}, tf::DType::Float32));
    g.outputs.push_back(g.nodes[1].outputs.back());
    g.file = "forged.tff";
    // Found by the graph check where the passes are checked (the test suite, debug builds), else
    // by the executor; either way the file's DataLossError.
    for (const bool checking : {false, true}) {
      const bool was = graph::checking_after_passes();
      graph::set_checking_after_passes(checking);
      const std::string message = error_of<tf::DataLossError>([&] {
        const graph::Executor e(graph::optimized(g, /*fuse=*/false), "twice");
        e.run(inputs, graph::RunMode::kFast);
      });
      graph::set_checking_after_passes(was);
      EXPECT_THAT(message,
                  HasSubstr(checking ? "function file 'forged.tff' is corrupt: node 1 (MatMul) has 2 outputs "
                                       "where MatMul gives 1"
                                     : "function file 'forged.tff' is corrupt: MatMul gave 1 outputs, the "
                                       "node lists 2"))
          << of_constants;
    }
  }
}

// --- Writing ----------------------------------------------------------------------------------

TEST_F(FunctionFile, AFailedWriteLeavesThePreviousFile) {
  Recorded r;
  graph::write_function_file(path("f.tff"), r.f);
  const std::vector<unsigned char> before = read_bytes(path("f.tff"));
  tf::detail::set_checkpoint_write_fault(100);
  EXPECT_THAT(error_of<tf::FailedPreconditionError>([&] { graph::write_function_file(path("f.tff"), r.f); }),
              HasSubstr("[write_function_file] cannot write function file '" + path("f.tff").string()));
  tf::detail::set_checkpoint_write_fault(-1);
  EXPECT_EQ(read_bytes(path("f.tff")), before);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);  // no temporary left
  EXPECT_THAT(error_of<tf::FailedPreconditionError>([&] { graph::write_function_file(dir_, r.f); }),
              HasSubstr("it is a directory"));
}

TEST_F(FunctionFile, RefusesWhatItCannotWrite) {
  Recorded r;
  graph::ExportedFunction f = r.f;
  graph::Node custom;
  custom.op = &tf::autodiff::registry().get("CustomGradient");
  custom.attrs = std::make_shared<int>(0);
  f.graph.nodes.push_back(custom);
  EXPECT_THAT(error_of<tf::UnimplementedError>([&] { graph::write_function_file(path("c.tff"), f); }),
              HasSubstr("runs op 'CustomGradient', whose attributes cannot be written"));

  f = r.f;
  graph::Node fused;
  fused.kind = graph::NodeKind::kFused;
  f.graph.nodes.push_back(fused);
  EXPECT_THAT(error_of<tf::InternalError>([&] { graph::write_function_file(path("c.tff"), f); }),
              HasSubstr("is a fused kernel"));

  f = r.f;
  f.graph.outputs.push_back(static_cast<graph::ValueId>(f.graph.values.size()));
  EXPECT_THAT(error_of<tf::InternalError>([&] { graph::write_function_file(path("c.tff"), f); }),
              HasSubstr("the graph is malformed: graph output"));

  f = r.f;
  f.variable_values[0] = tf::constant(1.f);
  EXPECT_THAT(error_of<tf::InvalidArgumentError>([&] { graph::write_function_file(path("c.tff"), f); }),
              HasSubstr("the value of variable 0 ('scale:0', shape (3,), dtype float32) is of shape ()"));
  f.variable_values.pop_back();
  EXPECT_THAT(error_of<tf::InvalidArgumentError>([&] { graph::write_function_file(path("c.tff"), f); }),
              HasSubstr("1 variable values for 2 variables"));
  EXPECT_FALSE(fs::exists(path("c.tff")));
}

}  // namespace

namespace {

// A graph inside an op's attributes (tf::cond's branches) is read as strictly as a file's own.
TEST(NestedGraph, ForgedGraphsAreDataLossNotCrashes) {
  using tapeflow::autodiff::AttrReader;
  using tapeflow::autodiff::AttrWriter;
  auto read = [](const std::string& bytes) {
    AttrReader r({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}, "test");
    return tf::graph::read_nested_graph(r);
  };
  // One value (a float32 scalar), read by a node that was never defined.
  std::string bytes;
  AttrWriter w(bytes);
  w.u32(2);
  for (int i = 0; i < 2; ++i) w.dtype(tf::DType::Float32), w.shape(tf::Shape{});
  w.u32(1), w.u32(0);  // inputs: v0
  w.u32(1), w.u32(1);  // outputs: v1
  w.u32(0);            // no constants
  w.u32(1);            // one node: Neg(v5) -> v1
  w.string("Neg");
  w.u32(1), w.u32(5), w.u32(1), w.u32(1);
  EXPECT_THROW(read(bytes), tf::DataLossError);
  // An op this tapeflow does not define.
  std::string unknown;
  AttrWriter u(unknown);
  u.u32(0), u.u32(0), u.u32(0), u.u32(0), u.u32(1);
  u.string("NoSuchOp");
  u.u32(0), u.u32(0);
  EXPECT_THROW(read(unknown), tf::LookupError);
  // Truncated anywhere.
  for (std::size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(read(bytes.substr(0, n)), tf::DataLossError) << n;
}

// fuzz_function_file (a file read and written again differed): a branch graph holding a constant
// nothing reads was optimised when read (the constant dropped) and written back shorter. A graph
// from a file is kept as it was read; only its fused copy is optimised.
TEST(NestedGraph, ABranchIsWrittenBackAsItWasRead) {
  using tapeflow::autodiff::AttrReader;
  using tapeflow::autodiff::AttrWriter;
  std::string bytes;
  AttrWriter w(bytes);
  for (int branch = 0; branch < 2; ++branch) {
    // v0 -> Neg(v0) = v1, and v2, a constant no node reads.
    w.u32(3);
    for (int v = 0; v < 3; ++v) w.dtype(tf::DType::Float32), w.shape(tf::Shape{});
    w.u32(1), w.u32(0), w.u32(1), w.u32(1);
    w.u32(1), w.u32(2), w.tensor(tf::constant(2.5f));
    w.u32(1);
    w.string("Neg");
    w.u32(1), w.u32(0), w.u32(1), w.u32(1);
  }
  const tapeflow::autodiff::AttrsCodec& codec = *tf::graph::control_flow_op("StatelessIf")->attrs_codec;
  AttrReader r({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}, "test");
  const auto attrs = codec.read(r);
  std::string again;
  AttrWriter aw(again);
  codec.write(attrs.get(), aw);
  EXPECT_EQ(again, bytes);
}

// fuzz_function_file (a file read and written again differed): a loop without an iteration limit
// accepted any bytes in the limit's field and wrote them back as 0. One encoding per loop now.
TEST(NestedGraph, ALoopWithoutALimitHasALimitFieldOfZero) {
  using tapeflow::autodiff::AttrReader;
  using tapeflow::autodiff::AttrWriter;
  auto loop_attrs = [](std::int64_t limit_field) {
    std::string bytes;
    AttrWriter w(bytes);
    // cond: v0 (float32) -> Greater(v0, v0) = v1 (bool); body: v0 -> Neg(v0) = v1.
    for (const bool cond : {true, false}) {
      w.u32(2), w.dtype(tf::DType::Float32), w.shape(tf::Shape{});
      w.dtype(cond ? tf::DType::Bool : tf::DType::Float32), w.shape(tf::Shape{});
      w.u32(1), w.u32(0), w.u32(1), w.u32(1), w.u32(0), w.u32(1);
      w.string(cond ? "Greater" : "Neg");
      if (cond)
        w.u32(2), w.u32(0), w.u32(0);
      else
        w.u32(1), w.u32(0);
      w.u32(1), w.u32(1);
    }
    w.u64(1), w.u8(0), w.i64(limit_field), w.u32(0);
    return bytes;
  };
  const tapeflow::autodiff::AttrsCodec& codec = *tf::graph::control_flow_op("StatelessWhile")->attrs_codec;
  auto read = [&](const std::string& bytes) {
    AttrReader r({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()}, "test");
    return codec.read(r);
  };
  const std::string canonical = loop_attrs(0);
  const auto attrs = read(canonical);
  std::string again;
  AttrWriter w(again);
  codec.write(attrs.get(), w);
  EXPECT_EQ(again, canonical);
  EXPECT_THROW(read(loop_attrs(7)), tf::DataLossError);
}

}  // namespace
