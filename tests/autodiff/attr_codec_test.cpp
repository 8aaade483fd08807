// AttrsCodec (src/autodiff/attr_codec.h): the field reflection, each field type's encoding, the
// reader's refusals, and the registry's coverage: every op that ran with attributes (each op-table
// row, its gradient and its gradient's gradient, and the ops without gradients called directly)
// has a codec whose round trip gives equal attributes and the same forward results, and every op
// with a codec was among them.

#include "autodiff/attr_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "autodiff/op_def.h"
#include "autodiff/tracer.h"
#include "ops/op_cases.h"
#include "support/errors.h"

namespace tf = tapeflow;
namespace ad = tapeflow::autodiff;
using ::testing::HasSubstr;

namespace {

enum class Mode : std::int16_t { kOff = 0, kOn = -3 };

struct Inner {
  std::array<std::int64_t, 2> pair{1, 1};
  bool same = false;
};

struct Scalars {
  bool b = false;
  int i = 0;
  std::int64_t l = 0;
  std::uint8_t u = 0;
  double d = 0;
  float f = 0;
  tf::DType dtype = tf::DType::Float32;
  Mode mode = Mode::kOff;
};

struct Compound {
  Scalars scalars;
  Inner inner;
  tf::Shape shape;
  std::vector<int> axes;
  std::array<bool, 3> flags{};
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
  std::vector<Inner> inners;
  std::string label;
  tf::Tensor value;
};

struct Empty {};
struct Nested {
  Empty e;
  std::vector<std::vector<double>> rows;
};

static_assert(ad::codec_detail::field_count<Scalars>() == 8);
static_assert(ad::codec_detail::field_count<Inner>() == 2);
static_assert(ad::codec_detail::field_count<Compound>() == 9);
static_assert(ad::codec_detail::field_count<Empty>() == 0);
static_assert(ad::codec_detail::FieldCodec<Compound>::kMinBytes > 0);

Compound sample() {
  Compound c;
  c.scalars = {true,
               -7,
               std::int64_t{1} << 40,
               200,
               -0.0,
               std::numeric_limits<float>::quiet_NaN(),
               tf::DType::Int64,
               Mode::kOn};
  c.inner = {{2, 3}, true};
  c.shape = tf::Shape{2, 0, 5};
  c.axes = {0, -1, 2};
  c.flags = {true, false, true};
  c.paddings = {{1, 2}, {0, 3}};
  c.inners = {{{4, 5}, false}, {{6, 7}, true}};
  c.label = "SAME";
  c.value = tf::constant(std::vector<float>{1.5f, -2.f}, tf::Shape{2});
  return c;
}

std::string encode(const ad::AttrsCodec& codec, const void* attrs) {
  std::string out;
  ad::AttrWriter w(out);
  codec.write(attrs, w);
  return out;
}

std::span<const unsigned char> bytes_of(const std::string& s) {
  return {reinterpret_cast<const unsigned char*>(s.data()), s.size()};
}

std::shared_ptr<const void> decode(const ad::AttrsCodec& codec, const std::string& bytes) {
  ad::AttrReader r(bytes_of(bytes), "attrs");
  std::shared_ptr<const void> out = codec.read(r);
  EXPECT_EQ(r.remaining(), 0u);
  return out;
}

TEST(AttrCodec, LayoutNamesEveryFieldType) {
  EXPECT_EQ(ad::attrs_codec<Inner>().layout, "{[i64;2],b}");
  EXPECT_EQ(ad::attrs_codec<Scalars>().layout, "{b,i32,i64,u8,f64,f32,dtype,ei16}");
  EXPECT_EQ(ad::attrs_codec<Compound>().layout,
            "{{b,i32,i64,u8,f64,f32,dtype,ei16},{[i64;2],b},shape,[i32],[b;3],[(i64,i64)],[{[i64;2],b}],str,"
            "tensor}");
  EXPECT_EQ(ad::attrs_codec<Nested>().layout, "{{},[[f64]]}");
}

TEST(AttrCodec, RoundTripsEveryFieldType) {
  const ad::AttrsCodec& codec = ad::attrs_codec<Compound>();
  const Compound c = sample();
  const std::string bytes = encode(codec, &c);
  const auto back = std::static_pointer_cast<const Compound>(decode(codec, bytes));
  EXPECT_TRUE(codec.equal(&c, back.get()));
  EXPECT_EQ(codec.hash(&c), codec.hash(back.get()));
  EXPECT_EQ(encode(codec, back.get()), bytes);  // deterministic
  EXPECT_EQ(back->scalars.l, std::int64_t{1} << 40);
  EXPECT_TRUE(std::signbit(back->scalars.d));
  EXPECT_TRUE(std::isnan(back->scalars.f));
  EXPECT_EQ(back->scalars.mode, Mode::kOn);
  EXPECT_EQ(back->shape, (tf::Shape{2, 0, 5}));
  EXPECT_EQ(back->paddings[1].second, 3);
  EXPECT_EQ(back->inners[1].pair[1], 7);
  EXPECT_EQ(back->label, "SAME");
  EXPECT_EQ(back->value.to_vector<float>(), (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(codec.to_string(&c),
            "{{true, -7, 1099511627776, 200, -0, nan, int64, -3}, {[2, 3], true}, (2, 0, 5), [0, -1, 2], "
            "[true, false, true], [(1, 2), (0, 3)], [{[4, 5], false}, {[6, 7], true}], \"SAME\", "
            "tf.Tensor([ 1.5 -2. ], shape=(2,), dtype=float32)}");
}

TEST(AttrCodec, EqualityIsBitwiseAndHashAgrees) {
  const ad::AttrsCodec& codec = ad::attrs_codec<Compound>();
  const Compound a = sample();
  Compound b = sample();
  EXPECT_TRUE(codec.equal(&a, &b));  // NaN equals itself
  EXPECT_EQ(codec.hash(&a), codec.hash(&b));
  b.scalars.d = 0.0;  // -0 and +0 give different results (1 / x), so they differ
  EXPECT_FALSE(codec.equal(&a, &b));
  b = sample();
  b.value = tf::constant(std::vector<float>{1.5f, -2.5f}, tf::Shape{2});
  EXPECT_FALSE(codec.equal(&a, &b));
  b.value = tf::Tensor();
  EXPECT_FALSE(codec.equal(&a, &b));
  b = sample();
  b.inners[0].same = true;
  EXPECT_FALSE(codec.equal(&a, &b));
  EXPECT_NE(codec.hash(&a), codec.hash(&b));
}

TEST(AttrCodec, UndefinedAndBoolTensorsRoundTrip) {
  const ad::AttrsCodec& codec = ad::attrs_codec<Compound>();
  Compound c = sample();
  c.value = tf::Tensor();
  auto back = std::static_pointer_cast<const Compound>(decode(codec, encode(codec, &c)));
  EXPECT_FALSE(back->value.defined());
  c.value = tf::constant(std::vector<bool>{true, false, true}, tf::Shape{3});
  back = std::static_pointer_cast<const Compound>(decode(codec, encode(codec, &c)));
  EXPECT_TRUE(codec.equal(&c, back.get()));
}

TEST(AttrCodec, EveryTruncationIsDataLoss) {
  const ad::AttrsCodec& codec = ad::attrs_codec<Compound>();
  const Compound c = sample();
  const std::string bytes = encode(codec, &c);
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    ad::AttrReader r(bytes_of(bytes).first(n), "node 4 (Pad)");
    const std::string msg = tf::testing::error_of<tf::DataLossError>([&] { codec.read(r); });
    EXPECT_THAT(msg, HasSubstr("node 4 (Pad): ")) << n;
    EXPECT_THAT(msg, HasSubstr(" left")) << n;  // "... but only 3 are left", "... than the 3 bytes left hold"
  }
}

// The byte offset of each field in sample()'s encoding, for the corruption tests.
constexpr std::size_t kBoolAt = 0;
constexpr std::size_t kDTypeAt = 1 + 4 + 8 + 1 + 8 + 4;
constexpr std::size_t kShapeAt = kDTypeAt + 1 + 2 + (8 * 2 + 1);

TEST(AttrCodec, RefusesBadValuesWithTypedErrors) {
  const ad::AttrsCodec& codec = ad::attrs_codec<Compound>();
  const Compound c = sample();
  const std::string good = encode(codec, &c);
  auto refused = [&](std::size_t at, std::string patch) {
    std::string bad = good;
    bad.replace(at, patch.size(), patch);
    ad::AttrReader r(bytes_of(bad), "ctx");
    return tf::testing::error_of<tf::DataLossError>([&] { codec.read(r); });
  };
  EXPECT_THAT(refused(kBoolAt, "\x02"), HasSubstr("is byte 2 (only 0 and 1 are valid)"));
  EXPECT_THAT(refused(kDTypeAt, "\x06"), HasSubstr("unknown dtype code 6"));  // 5 is bfloat16
  EXPECT_THAT(refused(kShapeAt, "\x09"), HasSubstr("rank 9, more than the maximum rank 8"));
  // Dim 0 of the shape: -1.
  EXPECT_THAT(refused(kShapeAt + 1, std::string(8, '\xff')), HasSubstr("negative dimension -1"));
  // Dims 2^40, 0 would be fine; 2^40 x 2^40 overflows.
  std::string huge_dims = std::string("\x02", 1) + std::string("\x00\x00\x00\x00\x00\x01\x00\x00", 8) +
                          std::string("\x00\x00\x00\x00\x00\x01\x00\x00", 8);
  EXPECT_THAT(refused(kShapeAt, huge_dims), HasSubstr("elements"));
  // The axes list claims 2^60 entries: refused before anything is allocated.
  const std::size_t axes_at = kShapeAt + 1 + 3 * 8;
  EXPECT_THAT(refused(axes_at, std::string("\x00\x00\x00\x00\x00\x00\x00\x10", 8)),
              HasSubstr("more than the"));
}

TEST(AttrCodec, HugeTensorFieldIsRefusedBeforeAllocating) {
  struct OneTensor {
    tf::Tensor t;
  };
  const ad::AttrsCodec& codec = ad::attrs_codec<OneTensor>();
  std::string bytes;
  ad::AttrWriter w(bytes);
  w.u8(1);
  w.dtype(tf::DType::Float64);
  w.shape(tf::Shape{std::int64_t{1} << 20, std::int64_t{1} << 20});
  ad::AttrReader r(bytes_of(bytes), "ctx");
  EXPECT_THAT(tf::testing::error_of<tf::DataLossError>([&] { codec.read(r); }),
              HasSubstr("more than the 0 bytes"));

  bytes.clear();
  w.u8(1);
  w.dtype(tf::DType::Bool);
  w.shape(tf::Shape{2});
  w.u8(1);
  w.u8(7);
  ad::AttrReader r2(bytes_of(bytes), "ctx");
  EXPECT_THAT(tf::testing::error_of<tf::DataLossError>([&] { codec.read(r2); }),
              HasSubstr("holding byte 7 at element 1"));
}

TEST(AttrCodec, AListOverTheAllocationLimitIsResourceExhausted) {
  struct List {
    std::vector<std::int64_t> v;
  };
  List l;
  l.v.assign(1000, 7);
  const ad::AttrsCodec& codec = ad::attrs_codec<List>();
  const std::string bytes = encode(codec, &l);
  const std::int64_t saved = tf::allocation_limit();
  tf::set_allocation_limit(4096);
  ad::AttrReader r(bytes_of(bytes), "ctx");
  const std::string msg = tf::testing::error_of<tf::ResourceExhaustedError>([&] { codec.read(r); });
  tf::set_allocation_limit(saved);
  EXPECT_THAT(msg,
              HasSubstr("ctx: a list of 1000 items of 8 bytes exceed the allocation limit of 4096 bytes"));
}

// --- The registry's codecs ------------------------------------------------------------------

struct RanOp {
  const ad::OpDef* op;
  std::shared_ptr<const void> attrs;
  std::vector<tf::Tensor> inputs;
  std::vector<tf::Tensor> outputs;
};

// Keeps, for each op that ran with attributes, the first few runs.
class AttrsCapture : public ad::Tracer {
 public:
  AttrsCapture() : saved_(ad::t_tracer) { ad::t_tracer = this; }
  ~AttrsCapture() override { ad::t_tracer = saved_; }
  void op(const ad::OpDef& op, const std::shared_ptr<const void>& attrs,
          std::span<const tf::Tensor* const> inputs, std::span<const tf::Tensor> outputs) override {
    if (attrs == nullptr || ++count_[&op] > 4) return;
    RanOp r{&op, attrs, {}, {outputs.begin(), outputs.end()}};
    for (const tf::Tensor* t : inputs) r.inputs.push_back(*t);
    ran.push_back(std::move(r));
  }
  void variable_read(const tf::Variable&, const tf::Tensor&) override {}
  void variable_assigned(std::string_view, const tf::Variable&, const tf::Tensor&) override {}
  void aliased(const tf::Tensor&, const tf::Tensor&) override {}
  void opaque_gradient(std::string_view) override {}
  std::vector<RanOp> ran;

 private:
  ad::Tracer* saved_;
  std::map<const ad::OpDef*, int> count_;
};

std::vector<tf::Tensor> inputs_for(const tf::testing::OpCase& c, const std::vector<tf::Shape>& shapes) {
  std::vector<tf::Tensor> xs;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::vector<double> v(static_cast<std::size_t>(shapes[i].num_elements()));
    for (std::size_t k = 0; k < v.size(); ++k) {
      const double frac = std::fmod(0.618033988749895 * static_cast<double>(k + 7 * i + 1), 1.0);
      v[k] = c.lo + (c.hi - c.lo) * (0.1 + 0.8 * frac);
    }
    xs.push_back(tf::constant(v, shapes[i]));
  }
  return xs;
}

// Runs every op-table row with its first and second derivatives, and the ops without gradients
// that have attributes, under the capture.
std::vector<RanOp> run_every_op_with_attributes() {
  AttrsCapture capture;
  for (const tf::testing::OpCase& c : tf::testing::op_cases()) {
    for (const auto& shapes : c.shapes) {
      const std::vector<tf::Tensor> xs = inputs_for(c, shapes);
      try {
        tf::GradientTape outer;
        for (const auto& x : xs) outer.watch(x);
        tf::Tensor g2;
        {
          tf::GradientTape inner;
          for (const auto& x : xs) inner.watch(x);
          const tf::Tensor y = c.call(xs);
          const tf::Tensor loss = tf::reduce_sum(y * y);
          std::vector<tf::Source> sources(xs.begin(), xs.end());
          g2 = tf::constant(0.0);
          for (auto& g : inner.gradient_flat(loss, sources, {}, tf::UnconnectedGradients::Zero))
            g2 = g2 + tf::reduce_sum(*g * *g);
        }
        std::vector<tf::Source> sources(xs.begin(), xs.end());
        (void)outer.gradient_flat(g2, sources, {}, tf::UnconnectedGradients::Zero);
      } catch (const tf::LookupError&) {
        // A second derivative some op does not have: the ops that ran are captured.
      }
    }
  }
  const tf::Tensor x = tf::constant(std::vector<float>{1, -2, 3, 4, -5, 6}, tf::Shape{2, 3});
  (void)tf::argmax(x, 1);
  (void)tf::argmin(x, 0);
  (void)tf::cast(x, tf::DType::Int32);
  (void)tf::one_hot(tf::constant(std::vector<std::int32_t>{0, 2}, tf::Shape{2}), 3, 5.0, -1.0);
  (void)tf::random::stateless_uniform({2, 2}, tf::constant(std::vector<std::int64_t>{7, 1}, tf::Shape{2}));
  (void)tf::searchsorted(tf::constant({1.f, 2.f, 3.f}), tf::constant({2.5f}), "left", tf::DType::Int64);
  (void)tf::searchsorted(tf::constant({1.f, 2.f, 3.f}), tf::constant({2.5f}), "right");
  (void)tf::unique(tf::constant({1.f, 1.f, 3.f}), tf::DType::Int64);
  (void)tf::math::bincount(tf::constant(std::vector<std::int32_t>{1, 3}, tf::Shape{2}), {.minlength = 5});
  (void)tf::raw_ops::apply_adam(x, x, x * x, tf::constant(0.1f), x, 0.9, 0.999, 1e-7);
  (void)tf::raw_ops::apply_keras_momentum(x, x, tf::constant(0.1f), x, 0.9, true);
  return capture.ran;
}

TEST(AttrCodec, EveryOpThatRanWithAttributesRoundTrips) {
  const std::vector<RanOp> ran = run_every_op_with_attributes();
  std::set<std::string> seen;
  for (const RanOp& r : ran) {
    const std::string& name = r.op->name();
    const ad::AttrsCodec* codec = r.op->attrs_codec;
    ASSERT_NE(codec, nullptr) << name << " ran with attributes but has no codec";
    seen.insert(name);
    // Control flow (expm's while_loop) holds its branch graphs, which compare by identity: a
    // decoded copy is a new graph. Their file round trip is tests/graph/serialize_test.cpp's.
    if (codec->map_ints == nullptr) continue;
    const std::string bytes = encode(*codec, r.attrs.get());
    const std::shared_ptr<const void> back = decode(*codec, bytes);
    EXPECT_TRUE(codec->equal(r.attrs.get(), back.get())) << name << ": " << codec->to_string(r.attrs.get());
    EXPECT_EQ(codec->hash(r.attrs.get()), codec->hash(back.get())) << name;
    EXPECT_EQ(encode(*codec, back.get()), bytes) << name;
    EXPECT_EQ(codec->to_string(r.attrs.get()), codec->to_string(back.get())) << name;
    // The decoded attributes run the op to the same bytes.
    ASSERT_NE(r.op->forward, nullptr) << name;
    const std::vector<tf::Tensor> again = r.op->forward(back.get(), r.inputs);
    ASSERT_EQ(again.size(), r.outputs.size()) << name;
    for (std::size_t k = 0; k < again.size(); ++k) {
      ASSERT_EQ(again[k].shape(), r.outputs[k].shape()) << name;
      EXPECT_EQ(std::memcmp(again[k].raw_data(), r.outputs[k].raw_data(), again[k].nbytes()), 0) << name;
    }
  }
  // Every op the registry gave a codec was exercised above.
  std::vector<std::string> with_codec;
  for (const auto& [name, status] : ad::registry().list())
    if (ad::registry().get(name).attrs_codec != nullptr) with_codec.push_back(name);
  EXPECT_GT(with_codec.size(), 30u);
  for (const std::string& name : with_codec)
    EXPECT_TRUE(seen.contains(name)) << name << " has a codec but never ran";
}

TEST(AttrCodec, OpsWithoutAttributesOrForwardHaveNoCodec) {
  EXPECT_EQ(ad::registry().get("Exp").attrs_codec, nullptr);
  EXPECT_EQ(ad::registry().get("AddV2").attrs_codec, nullptr);
  EXPECT_EQ(ad::registry().get("CustomGradient").attrs_codec, nullptr);
  EXPECT_EQ(ad::registry().get("RecomputeGrad").attrs_codec, nullptr);
  EXPECT_EQ(ad::registry().get("ReadVariableOp").attrs_codec, nullptr);
  ASSERT_NE(ad::registry().get("MatMul").attrs_codec, nullptr);
  EXPECT_EQ(ad::registry().get("MatMul").attrs_codec->layout, "{b,b}");
  EXPECT_EQ(ad::registry().get("Sum").attrs_codec->layout, "{[i32],[b;8],b}");
}

}  // namespace
