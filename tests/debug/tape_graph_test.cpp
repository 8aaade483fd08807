// tf::debug::to_dot / to_svg: the picture of the recorded computation. The tests parse the
// DOT text (and the SVG Graphviz makes of it) and check which nodes and edges are highlighted,
// which are greyed and why, and that edge thickness follows the gradient norm.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "support/gradient_callback.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
using ::testing::HasSubstr;

namespace {

// ---------------------------------------------------------------------------------------------
// A tiny DOT reader for what to_dot writes: one statement per line, `id [k="v", ...];` or
// `a -> b [k="v", ...];`, every value quoted.

using Attrs = std::map<std::string, std::string>;
struct DotEdge {
  std::string from, to;
  Attrs attrs;
};
struct Dot {
  std::map<std::string, Attrs> nodes;
  std::vector<DotEdge> edges;

  /// The id of the one node whose label starts with `prefix`.
  std::string node_labelled(const std::string& prefix) const {
    std::vector<std::string> ids;
    for (const auto& [id, a] : nodes)
      if (a.contains("label") && a.at("label").starts_with(prefix)) ids.push_back(id);
    EXPECT_EQ(ids.size(), 1u) << "nodes labelled " << prefix;
    return ids.empty() ? "" : ids[0];
  }
  std::vector<const DotEdge*> edges_between(const std::string& from, const std::string& to) const {
    std::vector<const DotEdge*> out;
    for (const auto& e : edges)
      if (e.from == from && e.to == to) out.push_back(&e);
    return out;
  }
  const DotEdge& edge(const std::string& from, const std::string& to) const {
    auto es = edges_between(from, to);
    EXPECT_EQ(es.size(), 1u) << from << " -> " << to;
    static const DotEdge none;
    return es.empty() ? none : *es[0];
  }
  std::set<std::string> highlighted_nodes() const {
    std::set<std::string> out;
    for (const auto& [id, a] : nodes)
      if (a.contains("color") && a.at("color") == tf::kPathColor) out.insert(id);
    return out;
  }
};

Attrs parse_attrs(const std::string& s) {
  Attrs attrs;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
    const std::size_t eq = s.find('=', i);
    if (eq == std::string::npos) break;
    const std::string key = s.substr(i, eq - i);
    std::string value;
    std::size_t j = eq + 2;  // past ="
    for (; j < s.size() && s[j] != '"'; ++j) {
      if (s[j] == '\\' && j + 1 < s.size()) {
        ++j;
        value += s[j] == 'n' ? '\n' : s[j];
      } else {
        value += s[j];
      }
    }
    attrs[key] = value;
    i = j + 1;
  }
  return attrs;
}

Dot parse_dot(const std::string& text) {
  Dot dot;
  std::istringstream lines(text);
  static const std::regex edge_re(R"(^\s*(\w+) -> (\w+) \[(.*)\];$)");
  static const std::regex node_re(R"(^\s*(\w+) \[(.*)\];$)");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    if (std::regex_match(line, m, edge_re)) {
      dot.edges.push_back({m[1], m[2], parse_attrs(m[3])});
    } else if (std::regex_match(line, m, node_re) && m[1] != "node" && m[1] != "edge" && m[1] != "graph") {
      dot.nodes[m[1]] = parse_attrs(m[2]);
    }
  }
  return dot;
}

/// A small model: w feeds the target through Exp; v is frozen by stop_gradient; Sin(w) is computed
/// and not used; `unused` is never read.
struct FrozenBranchModel {
  tf::Variable w{tf::constant({1.0f, 2.0f}), {.name = "w"}};
  tf::Variable v{tf::constant({3.0f, 4.0f}), {.name = "v"}};
  tf::Variable unused{tf::constant({5.0f}), {.name = "unused"}};
  tf::GradientTape tape{{.persistent = true}};
  tf::Tensor y;
  FrozenBranchModel() {
    tf::Tensor a = tf::exp(w);
    tf::Tensor frozen = tf::stop_gradient(v * 2.0f);
    tf::Tensor side = tf::sin(w);
    y = tf::reduce_sum(a * frozen);
  }
  std::string dot(tf::GraphOptions o = {}) { return tf::debug::to_dot(tape, y, {w, v, unused}, o); }
};

TEST(TapeGraph, HighlightsExactlyTheNodesOnSourceToTargetPaths) {
  FrozenBranchModel m;
  const Dot dot = parse_dot(m.dot());
  const std::set<std::string> expected = {dot.node_labelled("w:0"), dot.node_labelled("Exp #"),
                                          dot.node_labelled("Mul #7"), dot.node_labelled("Sum #"),
                                          dot.node_labelled("target 0")};
  EXPECT_EQ(dot.highlighted_nodes(), expected);
  for (const char* grey : {"v:0", "Mul #3", "StopGradient #", "Sin #", "unused:0"})
    EXPECT_EQ(dot.nodes.at(dot.node_labelled(grey)).at("color"), tf::kGreyColor) << grey;
}

TEST(TapeGraph, OpNodesShowNameRecordNumberShapeAndDtype) {
  FrozenBranchModel m;
  const Dot dot = parse_dot(m.dot());
  EXPECT_EQ(dot.nodes.at(dot.node_labelled("Exp #")).at("label"), "Exp #1\n(2,) float32");
  EXPECT_EQ(dot.nodes.at(dot.node_labelled("Sum #")).at("label"), "Sum #8\n() float32");
  EXPECT_EQ(dot.nodes.at(dot.node_labelled("Exp #")).at("shape"), "box");
  EXPECT_EQ(dot.nodes.at(dot.node_labelled("w:0")).at("shape"), "ellipse");
  EXPECT_EQ(dot.nodes.at(dot.node_labelled("target 0")).at("shape"), "doubleoctagon");
}

TEST(TapeGraph, PathEdgesAreHighlightedAndEveryOtherEdgeIsGrey) {
  FrozenBranchModel m;
  const Dot dot = parse_dot(m.dot());
  const std::string w = dot.node_labelled("w:0"), exp = dot.node_labelled("Exp #"),
                    mul = dot.node_labelled("Mul #7"), sum = dot.node_labelled("Sum #");
  const std::set<std::pair<std::string, std::string>> path = {
      {w, exp}, {exp, mul}, {mul, sum}, {sum, "tgt0"}};
  for (const DotEdge& e : dot.edges) {
    const bool on = path.contains({e.from, e.to});
    EXPECT_EQ(e.attrs.at("color"), on ? tf::kPathColor : tf::kGreyColor) << e.from << " -> " << e.to;
  }
  for (const auto& [from, to] : path)
    EXPECT_EQ(dot.edges_between(from, to).size(), 1u) << from << " -> " << to;
}

TEST(TapeGraph, StopGradientCutIsADashedGreyEdgeWithTheReason) {
  FrozenBranchModel m;
  const Dot dot = parse_dot(m.dot());
  const DotEdge& cut = dot.edge(dot.node_labelled("Mul #3"), dot.node_labelled("StopGradient #"));
  EXPECT_EQ(cut.attrs.at("label"), "cut: StopGradient is not differentiable");
  EXPECT_EQ(cut.attrs.at("style"), "dashed");
  EXPECT_THAT(dot.nodes.at(dot.node_labelled("StopGradient #")).at("label"), HasSubstr("no gradient"));
  // The frozen value still flows into the product: that edge is grey, not cut.
  const DotEdge& frozen = dot.edge(dot.node_labelled("StopGradient #"), dot.node_labelled("Mul #7"));
  EXPECT_EQ(frozen.attrs.at("label"), "not on a path from a source");
}

TEST(TapeGraph, UnusedBranchesAndVariablesAreGreyedWithTheReason) {
  FrozenBranchModel m;
  const Dot dot = parse_dot(m.dot());
  EXPECT_EQ(dot.edge(dot.node_labelled("w:0"), dot.node_labelled("Sin #")).attrs.at("label"),
            "not on a path to the target");
  EXPECT_EQ(dot.edge(dot.node_labelled("v:0"), dot.node_labelled("Mul #3")).attrs.at("label"),
            "not on a path to the target");
  EXPECT_THAT(dot.nodes.at(dot.node_labelled("unused:0")).at("label"),
              HasSubstr("unused: no recorded op read it"));
  EXPECT_EQ(dot.nodes.at(dot.node_labelled("unused:0")).at("fillcolor"), "#eeeeee");
}

TEST(TapeGraph, EdgeThicknessFollowsGradientNorm) {
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor big = x * tf::constant(10.0f);
  tf::Tensor small = x * tf::constant(0.1f);
  tf::Tensor y = tf::reduce_sum(big) + tf::reduce_sum(small);
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, x));
  const std::string src = "src0";
  const DotEdge& to_big = dot.edge(src, dot.node_labelled("Mul #0"));
  const DotEdge& to_small = dot.edge(src, dot.node_labelled("Mul #1"));
  EXPECT_EQ(to_big.attrs.at("label"), "|g| 14.1");  // |10 * [1, 1]|
  EXPECT_EQ(to_small.attrs.at("label"), "|g| 0.141");
  // Every highlighted edge carrying a norm: a larger norm is never thinner, and strictly thicker
  // when the norms differ.
  std::vector<std::pair<double, double>> norm_width;
  for (const DotEdge& e : dot.edges)
    if (e.attrs.at("color") == tf::kPathColor && e.attrs.contains("label"))
      norm_width.emplace_back(std::stod(e.attrs.at("label").substr(4)), std::stod(e.attrs.at("penwidth")));
  ASSERT_EQ(norm_width.size(), 6u);  // x->Mul x2, Mul->Sum x2, Sum->AddV2 x2
  std::sort(norm_width.begin(), norm_width.end());
  for (std::size_t i = 1; i < norm_width.size(); ++i) {
    if (norm_width[i].first > norm_width[i - 1].first)
      EXPECT_GT(norm_width[i].second, norm_width[i - 1].second);
    else
      EXPECT_EQ(norm_width[i].second, norm_width[i - 1].second);
  }
}

TEST(TapeGraph, GradientNormsLeaveAPersistentTapeUsable) {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = tf::reduce_sum(w * w);
  const std::size_t ops = tape.num_recorded_ops();
  (void)tf::debug::to_dot(tape, y, w);
  EXPECT_EQ(tape.num_recorded_ops(), ops);
  EXPECT_EQ(tape.gradient(y, w)->to_vector<float>(), (std::vector<float>{2.0f, 4.0f}));
}

TEST(TapeGraph, GradientNormsNeedAPersistentTape) {
  tf::Variable w(tf::constant({1.0f, 2.0f}));
  tf::GradientTape tape;
  tf::Tensor y = tf::reduce_sum(w * w);
  EXPECT_THAT([&] { (void)tf::debug::to_dot(tape, y, w); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("persistent")));
  // Without norms the picture does not consume the tape.
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, w, {.gradient_norms = false}));
  const auto edges = dot.edges_between("src0", dot.node_labelled("Mul #"));
  ASSERT_EQ(edges.size(), 2u);  // w * w: one edge per input
  for (const DotEdge* e : edges) EXPECT_EQ(e->attrs.count("label"), 0u);
  EXPECT_TRUE(tape.gradient(y, w).has_value());
}

TEST(TapeGraph, ConsumedTapeHasNothingToDraw) {
  tf::Variable w(tf::constant({1.0f, 2.0f}));
  tf::GradientTape tape;
  tf::Tensor y = tf::reduce_sum(w * w);
  (void)tape.gradient(y, w);
  EXPECT_THAT([&] { (void)tf::debug::to_dot(tape, y, w, {.gradient_norms = false}); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("consumed")));
}

TEST(TapeGraph, IntegerEdgeSaysItCarriesNoGradient) {
  tf::Tensor x = tf::constant({0.5f, 1.5f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor index = tf::cast(x, tf::int32);  // [0, 1]
  tf::Tensor y = tf::reduce_sum(tf::gather(x, index));
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, x));
  const std::string cast = dot.node_labelled("Cast #0"), gather = dot.node_labelled("GatherV2 #1");
  const DotEdge& e = dot.edge(cast, gather);
  EXPECT_EQ(e.attrs.at("label"), "int32 carries no gradient");
  EXPECT_EQ(e.attrs.at("style"), "dashed");
  EXPECT_EQ(dot.nodes.at(cast).at("color"), tf::kGreyColor);
  EXPECT_EQ(dot.edge("src0", gather).attrs.at("color"), tf::kPathColor);
  EXPECT_EQ(dot.edge("src0", cast).attrs.at("label"), "not on a path to the target");
}

TEST(TapeGraph, AnOpNotRecordedOnAnIntegerInputIsADashedCut) {
  tf::Tensor x = tf::constant({0.4f, 1.6f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor rounded = tf::cast(tf::cast(x, tf::int32), tf::float32);  // the second Cast is not recorded
  tf::Tensor y = tf::reduce_sum(rounded * x);
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, x));
  const std::string to_int = dot.node_labelled("Cast #0"), cut = dot.node_labelled("Cast\nnot recorded");
  EXPECT_EQ(dot.nodes.at(cut).at("style"), "rounded,dashed");
  EXPECT_EQ(dot.nodes.at(cut).at("color"), tf::kGreyColor);
  const DotEdge& into_cut = dot.edge(to_int, cut);
  EXPECT_EQ(into_cut.attrs.at("label"), "integer input: not recorded");
  EXPECT_EQ(into_cut.attrs.at("style"), "dashed");
  EXPECT_EQ(dot.edge("src0", dot.node_labelled("Mul #1")).attrs.at("color"),
            tf::kPathColor);  // x * ... still flows
}

TEST(TapeGraph, AVariableUpdateIsACutIntoTheVariable) {
  tf::Variable v(1.0f, {.name = "v"}), w(2.0f, {.name = "w"});
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = v * 3.0f;
  w.assign_add(y);  // stateful: not recorded
  tf::Tensor z = w * 5.0f;
  const Dot dot = parse_dot(tf::debug::to_dot(tape, z, {v, w}));
  const std::string cut = dot.node_labelled("AssignAddVariableOp\nnot recorded: updates w:0");
  EXPECT_EQ(dot.edge(dot.node_labelled("Mul #1"), cut).attrs.at("label"),
            "variable update: not differentiable");
  const DotEdge& into_w = dot.edge(cut, "src1");
  EXPECT_EQ(into_w.attrs.at("label"), "later reads start a new path");
  EXPECT_EQ(into_w.attrs.at("style"), "dashed");
}

TEST(TapeGraph, TargetNotRecordedOnTheTapeIsSaid) {
  tf::Tensor x = tf::constant({1.0f});
  tf::Tensor y = x * 2.0f;  // before the tape exists
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, x));
  ASSERT_EQ(dot.edges.size(), 1u);
  EXPECT_EQ(dot.edges[0].to, "tgt0");
  EXPECT_EQ(dot.edges[0].attrs.at("label"), "not recorded on this tape");
  EXPECT_TRUE(dot.highlighted_nodes().empty());
}

TEST(TapeGraph, VariableReadsCanBeShownAsNodes) {
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = tf::reduce_sum(tf::exp(w));
  const Dot collapsed = parse_dot(tf::debug::to_dot(tape, y, w));
  EXPECT_EQ(collapsed.edge("src0", collapsed.node_labelled("Exp #1")).attrs.at("color"), tf::kPathColor);
  const Dot shown = parse_dot(tf::debug::to_dot(tape, y, w, {.show_variable_reads = true}));
  const std::string read = shown.node_labelled("ReadVariableOp #0");
  EXPECT_EQ(shown.edge("src0", read).attrs.at("color"), tf::kPathColor);
  EXPECT_EQ(shown.edge(read, shown.node_labelled("Exp #1")).attrs.at("color"), tf::kPathColor);
}

TEST(TapeGraph, TitleIsTheGraphLabel) {
  tf::Tensor x = tf::constant(1.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor y = x * x;
  EXPECT_THAT(tf::debug::to_dot(tape, y, x, {.title = "my \"model\""}),
              HasSubstr("label=\"my \\\"model\\\"\"; labelloc=\"t\";"));
}

TEST(TapeGraph, AnIntermediateSourceHasAGreyEdgeFromItsProducer) {
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor h = x * 2.0f;
  tf::Tensor y = tf::reduce_sum(h * h);
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, h));
  const DotEdge& into_source = dot.edge(dot.node_labelled("Mul #0"), "src0");
  EXPECT_EQ(into_source.attrs.at("label"), "gradients stop at the source");
  EXPECT_EQ(into_source.attrs.at("color"), tf::kGreyColor);
  for (const DotEdge* e : dot.edges_between("src0", dot.node_labelled("Mul #1")))  // h * h: two edges
    EXPECT_EQ(e->attrs.at("color"), tf::kPathColor);
}

TEST(TapeGraph, WatchedTensorsAndVariablesThatAreNotSourcesAreDashedLeaves) {
  tf::Variable w(1.0f, {.name = "w"}), v(2.0f, {.name = "v"});
  tf::Tensor z = tf::constant(3.0f);
  tf::GradientTape tape({.persistent = true});
  tape.watch(z);
  tf::Tensor y = w * v * z;
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, w));
  const Attrs& variable = dot.nodes.at(dot.node_labelled("v:0"));
  EXPECT_EQ(variable.at("label"), "v:0\n() float32\nwatched, not a source");
  EXPECT_EQ(variable.at("style"), "dashed");
  const Attrs& tensor = dot.nodes.at(dot.node_labelled("watched tensor"));
  EXPECT_EQ(tensor.at("label"), "watched tensor\n() float32\nnot a source");
  EXPECT_EQ(tensor.at("color"), tf::kGreyColor);
}

TEST(TapeGraph, AZeroGradientIsAThinEdge) {
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor zeroed = x * 0.0f;  // Mul #0
  tf::Tensor y = tf::reduce_sum(zeroed) + tf::reduce_sum(x * 2.0f);
  const Dot dot = parse_dot(tf::debug::to_dot(tape, y, x));
  const DotEdge& zero = dot.edge("src0", dot.node_labelled("Mul #0"));
  EXPECT_EQ(zero.attrs.at("label"), "|g| 0");
  EXPECT_EQ(zero.attrs.at("penwidth"), "0.80");
}

TEST(TapeGraph, AMissingGradientLeavesTheNormsIncompleteAndSaysSo) {
  tf::Variable image(tf::constant({{{0.5f, 0.0f, 0.0f}}}), {.name = "image"});
  tf::Variable delta(0.1f);
  tf::GradientTape tape({.persistent = true});
  tf::Tensor out = tf::image::adjust_contrast(image, delta);
  const std::string text = tf::debug::to_dot(tape, out, image);
  EXPECT_THAT(text, HasSubstr("label=\"gradient norms incomplete: "));
  const Dot dot = parse_dot(text);
  EXPECT_THAT(dot.nodes.at(dot.node_labelled("AdjustContrastv2 #")).at("label"),
              HasSubstr("no registered gradient"));
}

// ---------------------------------------------------------------------------------------------
// SVG through Graphviz.

TEST(TapeGraphSvg, MissingProgramIsAFailedPreconditionNamingIt) {
  EXPECT_FALSE(tf::graphviz_available("tapeflow-no-such-dot"));
  EXPECT_THAT([] { (void)tf::render_svg("digraph { a -> b; }", "tapeflow-no-such-dot"); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(::testing::AllOf(
                  HasSubstr("'tapeflow-no-such-dot'"), HasSubstr("apt-get install graphviz"))));
}

/// Elements of Graphviz's SVG: <g id=".." class="node|edge"><title>NAME</title> ... shapes with
/// stroke="COLOUR" (and stroke-width on edge paths) ... </g>.
struct SvgElement {
  std::string title;
  std::set<std::string> strokes;
  double stroke_width = 1.0;
};

std::string unescape_xml(std::string s) {
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&#45;", "-"}, {"&gt;", ">"}, {"&lt;", "<"}, {"&quot;", "\""}, {"&amp;", "&"}}) {
    for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
  }
  return s;
}

std::map<std::string, SvgElement> parse_svg(const std::string& svg, const std::string& cls) {
  std::map<std::string, SvgElement> out;
  const std::string open = "class=\"" + cls + "\">";
  for (std::size_t p = svg.find(open); p != std::string::npos; p = svg.find(open, p + 1)) {
    const std::size_t end = svg.find("</g>", p);
    const std::string body = svg.substr(p, end - p);
    SvgElement e;
    const std::size_t t0 = body.find("<title>") + 7;
    e.title = unescape_xml(body.substr(t0, body.find("</title>") - t0));
    static const std::regex stroke_re(R"re(stroke="([^"]*)")re");
    for (auto it = std::sregex_iterator(body.begin(), body.end(), stroke_re); it != std::sregex_iterator();
         ++it)
      if ((*it)[1] != "transparent" && (*it)[1] != "none") e.strokes.insert((*it)[1]);
    static const std::regex width_re(R"re(stroke-width="([^"]*)")re");
    std::smatch m;
    if (std::regex_search(body, m, width_re)) e.stroke_width = std::stod(m[1]);
    out.emplace(e.title, e);
  }
  return out;
}

TEST(TapeGraphSvg, SvgShowsTheHighlightedPathAndGreyedBranches) {
  if (!tf::graphviz_available()) GTEST_SKIP() << "Graphviz's dot is not installed";
  FrozenBranchModel m;
  const Dot dot = parse_dot(m.dot());
  const std::string svg = tf::debug::to_svg(m.tape, m.y, {m.w, m.v, m.unused});
  ASSERT_THAT(svg, HasSubstr("<svg"));
  const auto nodes = parse_svg(svg, "node");
  const auto edges = parse_svg(svg, "edge");
  ASSERT_EQ(nodes.size(), dot.nodes.size());
  ASSERT_EQ(edges.size(), dot.edges.size());  // no two edges share endpoints in this model
  const std::set<std::string> highlighted = dot.highlighted_nodes();
  for (const auto& [title, e] : nodes) {
    const std::string want(highlighted.contains(title) ? tf::kPathColor : tf::kGreyColor);
    EXPECT_TRUE(e.strokes.contains(want)) << title;
  }
  const std::string w = dot.node_labelled("w:0"), exp = dot.node_labelled("Exp #"),
                    sin = dot.node_labelled("Sin #");
  EXPECT_TRUE(edges.at(w + "->" + exp).strokes.contains(std::string(tf::kPathColor)));
  EXPECT_TRUE(edges.at(w + "->" + sin).strokes.contains(std::string(tf::kGreyColor)));
  EXPECT_THAT(svg, HasSubstr("cut: StopGradient is not differentiable"));
}

TEST(TapeGraphSvg, SvgEdgeWidthFollowsGradientNorm) {
  if (!tf::graphviz_available()) GTEST_SKIP() << "Graphviz's dot is not installed";
  tf::Tensor x = tf::constant({1.0f, 2.0f});
  tf::GradientTape tape({.persistent = true});
  tape.watch(x);
  tf::Tensor big = x * tf::constant(10.0f);   // op0
  tf::Tensor small = x * tf::constant(0.1f);  // op1
  tf::Tensor y = tf::reduce_sum(big) + tf::reduce_sum(small);
  const auto edges = parse_svg(tf::debug::to_svg(tape, y, x), "edge");
  EXPECT_GT(edges.at("src0->op0").stroke_width, edges.at("src0->op1").stroke_width);
}

TEST(TapeGraphSvg, WriteSvgWritesTheFile) {
  if (!tf::graphviz_available()) GTEST_SKIP() << "Graphviz's dot is not installed";
  tf::Variable w(tf::constant({1.0f, 2.0f}), {.name = "w"});
  tf::GradientTape tape({.persistent = true});
  tf::Tensor y = tf::reduce_sum(tf::exp(w));
  const auto path = std::filesystem::temp_directory_path() / "tapeflow_tape_graph_test.svg";
  tf::debug::write_svg(path.string(), tape, y, {w});
  std::ifstream f(path);
  const std::string text{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::filesystem::remove(path);
  EXPECT_THAT(text, HasSubstr("<title>src0&#45;&gt;op1</title>"));
}

TEST(TapeGraphSvg, GraphvizRejectionIsAnInvalidArgument) {
  if (!tf::graphviz_available()) GTEST_SKIP() << "Graphviz's dot is not installed";
  EXPECT_THROW((void)tf::render_svg("digraph { a -> ; }"), tf::InvalidArgumentError);
}

TEST(TapeGraph, ATapeDestroyedByAGradientFunctionOfTheNormPassStillDrawsItsGraph) {
  tf::Tensor x = tf::constant(3.0f);
  auto tape = std::make_unique<tf::GradientTape>(tf::TapeOptions{.persistent = true});
  tape->watch(x);
  tf::Tensor y = tf::sin(tf::testing::square_calling(x, [&] { tape.reset(); }));
  tf::GradientTape* const running = tape.get();
  const std::string dot = tf::debug::to_dot(*running, y, x);  // the tape is destroyed during the norm pass
  EXPECT_EQ(tape, nullptr);
  EXPECT_THAT(dot, ::testing::HasSubstr("Sin"));
}

}  // namespace
