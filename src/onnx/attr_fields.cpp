// Reads an op's attribute bytes by its codec's layout (attr_fields.h). The layout grammar is
// attr_codec.h's: b, i8..i64, u8..u64, e<integer> (a scoped enum), f32, f64, dtype, shape,
// tensor, str, [T] (a vector), [T;N] (an array), (A,B) (a pair), {F,...} (a struct).

#include "onnx/attr_fields.h"

#include <bit>
#include <string_view>

#include "autodiff/attr_codec.h"
#include "core/check.h"

namespace tapeflow::onnx_export {
namespace {

/// One node of a parsed layout.
struct Layout {
  enum class Kind : std::uint8_t {
    kBool,
    kInt,
    kFloat,
    kDType,
    kShape,
    kTensor,
    kString,
    kVector,
    kArray,
    kTuple
  };
  Kind kind = Kind::kTuple;
  int bits = 0;               // kInt, kFloat
  bool is_signed = true;      // kInt
  std::size_t count = 0;      // kArray
  std::vector<Layout> items;  // kVector, kArray: the element; kTuple: the fields
};

class LayoutParser {
 public:
  explicit LayoutParser(std::string_view text) : text_(text) {}

  Layout parse() {
    Layout l = next();
    expect_end();
    return l;
  }

 private:
  Layout next() {
    Layout l;
    if (take("{") || take("(")) {
      const char close = text_[pos_ - 1] == '{' ? '}' : ')';
      while (!take(std::string_view(&close, 1))) {
        l.items.push_back(next());
        take(",");
      }
    } else if (take("[")) {
      l.items.push_back(next());
      l.kind = Layout::Kind::kVector;
      if (take(";")) {
        l.kind = Layout::Kind::kArray;
        l.count = static_cast<std::size_t>(number());
      }
      require(take("]"));
    } else if (take("dtype")) {
      l.kind = Layout::Kind::kDType;
    } else if (take("shape")) {
      l.kind = Layout::Kind::kShape;
    } else if (take("tensor")) {
      l.kind = Layout::Kind::kTensor;
    } else if (take("str")) {
      l.kind = Layout::Kind::kString;
    } else if (take("b")) {
      l.kind = Layout::Kind::kBool;
    } else if (take("f")) {
      l.kind = Layout::Kind::kFloat;
      l.bits = number();
    } else {
      take("e");  // an enum reads as its underlying integer
      l.kind = Layout::Kind::kInt;
      l.is_signed = take("i");
      require(l.is_signed || take("u"));
      l.bits = number();
    }
    return l;
  }

  bool take(std::string_view token) {
    if (text_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  int number() {
    int n = 0;
    const std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
      n = n * 10 + (text_[pos_++] - '0');
    require(pos_ > start);
    return n;
  }
  void require(bool ok) const {
    TAPEFLOW_ASSERT(ok, "the attribute layout '{}' is not understood at offset {}", text_, pos_);
  }
  void expect_end() const { require(pos_ == text_.size()); }

  std::string_view text_;
  std::size_t pos_ = 0;
};

AttrField read_field(const Layout& l, autodiff::AttrReader& r) {
  AttrField f;
  constexpr std::string_view what = "an attribute";
  switch (l.kind) {
    case Layout::Kind::kBool:
      f.kind = AttrField::Kind::kBool;
      f.integer = r.boolean(what) ? 1 : 0;
      break;
    case Layout::Kind::kInt: {
      f.kind = AttrField::Kind::kInt;
      const auto bytes = static_cast<std::size_t>(l.bits / 8);
      std::uint64_t u = 0;
      const std::span<const unsigned char> b = r.take(bytes, what);
      for (std::size_t i = 0; i < bytes; ++i) u |= std::uint64_t{b[i]} << (8 * i);
      // Sign-extend a narrower signed integer.
      if (l.is_signed && bytes < 8 && (u >> (8 * bytes - 1)) != 0) u |= ~std::uint64_t{0} << (8 * bytes);
      f.integer = static_cast<std::int64_t>(u);
      break;
    }
    case Layout::Kind::kFloat:
      f.kind = AttrField::Kind::kFloat;
      f.real = l.bits == 32 ? static_cast<double>(std::bit_cast<float>(r.le<std::uint32_t>(what)))
                            : std::bit_cast<double>(r.le<std::uint64_t>(what));
      break;
    case Layout::Kind::kDType:
      f.kind = AttrField::Kind::kDType;
      f.dtype = r.dtype(what);
      break;
    case Layout::Kind::kShape:
      f.kind = AttrField::Kind::kShape;
      f.shape = r.shape(what);
      break;
    case Layout::Kind::kTensor:
      f.kind = AttrField::Kind::kTensor;
      f.tensor = r.tensor(what);
      break;
    case Layout::Kind::kString:
      f.kind = AttrField::Kind::kString;
      f.text = r.string(what);
      break;
    case Layout::Kind::kVector:
    case Layout::Kind::kArray: {
      const std::size_t n = l.kind == Layout::Kind::kArray ? l.count : static_cast<std::size_t>(r.u64(what));
      for (std::size_t i = 0; i < n; ++i) f.items.push_back(read_field(l.items.front(), r));
      break;
    }
    case Layout::Kind::kTuple:
      for (const Layout& item : l.items) f.items.push_back(read_field(item, r));
      break;
  }
  return f;
}

}  // namespace

const AttrField& AttrField::operator[](std::size_t i) const {
  TAPEFLOW_ASSERT(kind == Kind::kList && i < items.size(), "an op's attributes have no field {} ({} fields)",
                  i, items.size());
  return items[i];
}

std::vector<std::int64_t> AttrField::ints() const {
  if (kind == Kind::kShape) return {shape.dims().begin(), shape.dims().end()};
  std::vector<std::int64_t> out;
  for (const AttrField& item : items) {
    TAPEFLOW_ASSERT(item.kind == Kind::kInt, "an attribute list holds a field that is not an integer");
    out.push_back(item.integer);
  }
  return out;
}

AttrField attr_fields(const graph::Node& node) {
  const autodiff::AttrsCodec* codec = node.op->attrs_codec;
  if (codec == nullptr || node.attrs == nullptr) return {};
  std::string bytes;
  autodiff::AttrWriter w(bytes);
  codec->write(node.attrs.get(), w);
  autodiff::AttrReader r({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()},
                         "[export_onnx] " + node.op->name() + "'s attributes");
  AttrField fields = read_field(LayoutParser(codec->layout).parse(), r);
  TAPEFLOW_ASSERT(r.remaining() == 0, "{}'s attributes did not end where their layout '{}' does",
                  node.op->name(), codec->layout);
  return fields;
}

}  // namespace tapeflow::onnx_export
