#pragma once
// AttrsCodec: how a graph compares, hashes, prints, writes and reads an op's typed attributes (the
// `Attrs` struct its forward takes), generated from the struct itself, with no per-op code.
//
// Attrs structs are aggregates, so their fields can be listed without naming them: the number of
// fields is the largest N for which `Attrs{any, any, ...}` (N values convertible to any type)
// compiles, and a structured binding of that many names gives references to them. Each field is
// handled by FieldCodec<its type>; the encoding (little-endian, no padding) is
//
//   bool                                   one byte, 0 or 1
//   integers, scoped enums                 their width, two's complement
//   float, double                          their IEEE bit pattern
//   DType                                  one byte: 0 float32, 1 float64, 2 int32, 3 int64, 4 bool
//   Shape                                  u8 rank, then the dims as int64
//   Tensor (Pad's value, OneHot's on/off)  u8 defined; if 1: dtype, shape, the elements row-major
//   std::string                            u32 length, the bytes
//   std::vector<T>                         u64 count, the elements
//   std::array<T, N>, std::pair, structs   the elements or fields in order
//
// A field of any other type (a std::function, a Variable) does not compile: the error names
// kCannotEncode<that type>. An op whose Attrs cannot be written declares `static constexpr
// std::string_view kNoAttrsCodec = "why";` and gets no codec, so a graph holding it cannot be
// exported (CustomGradient and RecomputeGrad hold closures and Variables, and have no forward a
// graph could run anyway).
//
// `map_ints` rewrites a copy's integer fields and Shape dims in field order (a function graph
// shared across sizes, graph/shared_sizes.h, puts a new size into the attributes that hold one).
//
// Equality is bitwise for floating-point fields and tensors (NaN equals itself, -0 differs from
// 0: equal attributes give identical results), and hash agrees with it. Each codec also has a
// layout ("{b,b}" for MatMul's two flags) that the function file stores, so a file written by a
// tapeflow whose Attrs differ is refused instead of misread.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "tapeflow/dtype.h"
#include "tapeflow/errors.h"
#include "tapeflow/shape.h"
#include "tapeflow/tensor.h"

namespace tapeflow::autodiff {

/// The byte codes of the dtypes in tapeflow's files: kDTypeOfCode[code]. Written out rather than
/// cast from the enum, so reordering DType can never silently change a format.
inline constexpr std::array<DType, 6> kDTypeOfCode = {DType::Float32, DType::Float64, DType::Int32,
                                                      DType::Int64,   DType::Bool,    DType::BFloat16};
/// The byte code of `d` in tapeflow's files.
std::uint8_t dtype_code(DType d);

/// Appends little-endian encodings to a byte string.
class AttrWriter {
 public:
  explicit AttrWriter(std::string& out) : out_(out) {}
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  template <std::unsigned_integral U>
  void le(U v) {
    for (std::size_t i = 0; i < sizeof(U); ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  }
  void u32(std::uint32_t v) { le(v); }
  void u64(std::uint64_t v) { le(v); }
  void i64(std::int64_t v) { le(static_cast<std::uint64_t>(v)); }
  void bytes(const void* data, std::size_t n) { out_.append(static_cast<const char*>(data), n); }
  void dtype(DType d);
  /// u8 rank, then the dims.
  void shape(const Shape& s);
  /// u32 length, then the bytes; InvalidArgumentError for a string of 2^32 bytes or more.
  void string(std::string_view s);
  /// `n` bytes of elements of `elem` bytes each, converted to little-endian.
  void elements(const void* data, std::size_t n, std::size_t elem);
  /// u8 defined; if defined, dtype, shape and the elements.
  void tensor(const Tensor& t);
  std::size_t size() const { return out_.size(); }

 private:
  std::string& out_;
};

/// A bounds-checked cursor over bytes a writer made, trusting none of them: every problem throws
/// DataLossError "<context>: <what is wrong>", where `what` names the field being read.
class AttrReader {
 public:
  AttrReader(std::span<const unsigned char> bytes, std::string context)
      : begin_(bytes.data()),
        p_(bytes.data()),
        end_(bytes.data() + bytes.size()),
        context_(std::move(context)) {}

  std::size_t remaining() const { return static_cast<std::size_t>(end_ - p_); }
  std::size_t offset() const { return static_cast<std::size_t>(p_ - begin_); }
  const std::string& context() const { return context_; }
  [[noreturn]] void fail(std::string_view what) const;

  /// The next `n` bytes; fails (naming `what`) if fewer are left.
  std::span<const unsigned char> take(std::size_t n, std::string_view what);
  std::uint8_t u8(std::string_view what) { return take(1, what)[0]; }
  template <std::unsigned_integral U>
  U le(std::string_view what) {
    const std::span<const unsigned char> b = take(sizeof(U), what);
    U v = 0;
    for (std::size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(b[i]) << (8 * i);
    return v;
  }
  std::uint32_t u32(std::string_view what) { return le<std::uint32_t>(what); }
  std::uint64_t u64(std::string_view what) { return le<std::uint64_t>(what); }
  std::int64_t i64(std::string_view what) { return static_cast<std::int64_t>(le<std::uint64_t>(what)); }
  /// A byte that must be 0 or 1.
  bool boolean(std::string_view what);
  DType dtype(std::string_view what);
  /// Rank at most kMaxRank, dims >= 0, at most kMaxElements elements.
  Shape shape(std::string_view what);
  std::string string(std::string_view what);
  /// A count of items that take at least `min_item_bytes` each in the encoding (and `item_size` in
  /// memory): more than the bytes left can hold is DataLossError, more than the allocation limit
  /// allows is ResourceExhaustedError, both before anything is allocated.
  std::size_t count(std::uint64_t n, std::size_t min_item_bytes, std::size_t item_size,
                    std::string_view what);
  /// A tensor as AttrWriter::tensor wrote it (bool elements must be 0 or 1).
  Tensor tensor(std::string_view what);

 private:
  const unsigned char* begin_;
  const unsigned char* p_;
  const unsigned char* end_;
  std::string context_;
};

/// What AttrsCodec::map_ints applies to each integer of an Attrs.
using IntMap = std::function<std::int64_t(std::int64_t)>;

/// How a graph compares, hashes, prints, writes and reads one Attrs type (one static instance per
/// type: attrs_codec<Attrs>()). The pointers are an op's attributes as a node holds them.
struct AttrsCodec {
  bool (*equal)(const void* a, const void* b);
  std::size_t (*hash)(const void* attrs);
  void (*write)(const void* attrs, AttrWriter& w);
  /// Reads one Attrs, throwing DataLossError (from `r`) for bytes that do not encode one; the
  /// caller checks that the encoding ended where it should.
  std::shared_ptr<const void> (*read)(AttrReader& r);
  /// The values, "{[1, 2], true, (2, 3)}" (fields have no names at run time).
  std::string (*to_string)(const void* attrs);
  /// A copy whose integers (every integral field but bools and enums, and every Shape dim) are
  /// f(value), called in field order; InvalidArgumentError if a result does not fit its field.
  /// nullptr for the ops that hold graphs (control flow), which are never shared across sizes.
  std::shared_ptr<const void> (*map_ints)(const void* attrs, const IntMap& f);
  /// The field types, e.g. "{[i32],[b;8],b}" for a reduction.
  std::string layout;
};

namespace codec_detail {

// --- Aggregate reflection ---------------------------------------------------------------------

/// Converts to any type; only ever used unevaluated, to count an aggregate's fields.
template <std::size_t I>
struct AnyField {
  template <class T>
  operator T() const;  // NOLINT: implicit by design; never defined
};

template <class T, std::size_t N>
constexpr bool brace_constructible_from() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return requires { T{AnyField<I>{}...}; };
  }
  (std::make_index_sequence<N>{});
}

inline constexpr std::size_t kMaxFields = 10;

/// The number of fields of aggregate T: the most initialisers T{...} accepts. A field that is
/// itself an aggregate (a std::array) takes one initialiser: brace elision is only tried when the
/// initialiser cannot convert to the field, and these convert to anything.
template <class T, std::size_t N = 0>
constexpr std::size_t field_count() {
  if constexpr (N > kMaxFields || !brace_constructible_from<T, N + 1>())
    return N;
  else
    return field_count<T, N + 1>();
}

/// Calls f(field_0, field_1, ...) with references to the fields of aggregate `t`.
template <class T, class F>
decltype(auto) with_fields(T& t, F&& f) {
  constexpr std::size_t n = field_count<std::remove_const_t<T>>();
  static_assert(n <= kMaxFields, "attr_codec.h reflects aggregates of at most 10 fields: add a case below");
  // clang-format off
  if constexpr (n == 0) { return f(); }
  else if constexpr (n == 1) { auto& [a] = t; return f(a); }
  else if constexpr (n == 2) { auto& [a, b] = t; return f(a, b); }
  else if constexpr (n == 3) { auto& [a, b, c] = t; return f(a, b, c); }
  else if constexpr (n == 4) { auto& [a, b, c, d] = t; return f(a, b, c, d); }
  else if constexpr (n == 5) { auto& [a, b, c, d, e] = t; return f(a, b, c, d, e); }
  else if constexpr (n == 6) { auto& [a, b, c, d, e, g] = t; return f(a, b, c, d, e, g); }
  else if constexpr (n == 7) { auto& [a, b, c, d, e, g, h] = t; return f(a, b, c, d, e, g, h); }
  else if constexpr (n == 8) { auto& [a, b, c, d, e, g, h, i] = t; return f(a, b, c, d, e, g, h, i); }
  else if constexpr (n == 9) { auto& [a, b, c, d, e, g, h, i, j] = t; return f(a, b, c, d, e, g, h, i, j); }
  else { auto& [a, b, c, d, e, g, h, i, j, k] = t; return f(a, b, c, d, e, g, h, i, j, k); }
  // clang-format on
}

template <class T>
inline constexpr bool kIsStdArray = false;
template <class T, std::size_t N>
inline constexpr bool kIsStdArray<std::array<T, N>> = true;

/// A struct the codec reflects over: an aggregate class (std::array has its own codec).
template <class T>
concept Reflectable = std::is_class_v<T> && std::is_aggregate_v<T> && !kIsStdArray<T>;

inline void hash_combine(std::size_t& seed, std::size_t h) {
  seed ^= h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

// --- One codec per field type -----------------------------------------------------------------
//
// Each FieldCodec<T> has: kMinBytes (the shortest encoding, which bounds a count read from a
// file), layout(out), write(v, w), read(r, v), equal(a, b), hash(v, seed), format(v, out), and
// map_ints(v, f) (a no-op but for integers, Shapes and what holds them).

template <class T>
inline constexpr bool kCannotEncode = false;

/// A field type the codec cannot handle: the static_assert names it, as kCannotEncode<type>.
template <class T>
struct FieldCodec {
  static_assert(kCannotEncode<T>,
                "an op's Attrs has a field of a type attr_codec.h cannot encode (the compiler names it "
                "in kCannotEncode<...> and FieldCodec<...>): add a FieldCodec for it, or give the op "
                "`static constexpr std::string_view kNoAttrsCodec = \"why\";`");
};

template <>
struct FieldCodec<bool> {
  static constexpr std::size_t kMinBytes = 1;
  static void layout(std::string& out) { out += "b"; }
  static void write(bool v, AttrWriter& w) { w.u8(v ? 1 : 0); }
  static void read(AttrReader& r, bool& v) { v = r.boolean("a bool"); }
  static bool equal(bool a, bool b) { return a == b; }
  static void hash(bool v, std::size_t& seed) { hash_combine(seed, v ? 1 : 0); }
  static void format(bool v, std::string& out) { out += v ? "true" : "false"; }
  static void map_ints(bool&, const IntMap&) {}
};

template <class T>
requires std::integral<T> &&(!std::is_same_v<T, bool>)struct FieldCodec<T> {
  using U = std::make_unsigned_t<T>;
  static constexpr std::size_t kMinBytes = sizeof(T);
  static constexpr std::string_view kName = std::is_signed_v<T> ? "a signed integer" : "an unsigned integer";
  static void layout(std::string& out) {
    out += fmt::format("{}{}", std::is_signed_v<T> ? 'i' : 'u', 8 * sizeof(T));
  }
  static void write(T v, AttrWriter& w) { w.le(static_cast<U>(v)); }
  static void read(AttrReader& r, T& v) { v = static_cast<T>(r.le<U>(kName)); }
  static bool equal(T a, T b) { return a == b; }
  static void hash(T v, std::size_t& seed) { hash_combine(seed, std::hash<T>{}(v)); }
  static void format(T v, std::string& out) { out += fmt::format("{}", v); }
  static void map_ints(T& v, const IntMap& f) {
    const std::int64_t m = f(static_cast<std::int64_t>(v));
    if (!std::in_range<T>(m))
      throw InvalidArgumentError(
          fmt::format("an attribute's integer {} (was {}) does not fit its field", m, v));
    v = static_cast<T>(m);
  }
};

/// Scoped enums: any value of the underlying type is a valid value of the enum.
template <class T>
requires std::is_enum_v<T> &&
    (!std::is_convertible_v<T, std::underlying_type_t<T>>)&&(!std::is_same_v<T, DType>)struct FieldCodec<T> {
  using Int = FieldCodec<std::underlying_type_t<T>>;
  static constexpr std::size_t kMinBytes = Int::kMinBytes;
  static void layout(std::string& out) {
    out += "e";
    Int::layout(out);
  }
  static void write(T v, AttrWriter& w) { Int::write(static_cast<std::underlying_type_t<T>>(v), w); }
  static void read(AttrReader& r, T& v) {
    std::underlying_type_t<T> u{};
    Int::read(r, u);
    v = static_cast<T>(u);
  }
  static bool equal(T a, T b) { return a == b; }
  static void hash(T v, std::size_t& seed) { Int::hash(static_cast<std::underlying_type_t<T>>(v), seed); }
  static void format(T v, std::string& out) { Int::format(static_cast<std::underlying_type_t<T>>(v), out); }
  static void map_ints(T&, const IntMap&) {}
};

template <std::floating_point T>
struct FieldCodec<T> {
  using Bits = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
  static_assert(sizeof(T) == sizeof(Bits), "float and double are IEEE binary32 and binary64");
  static constexpr std::size_t kMinBytes = sizeof(T);
  static void layout(std::string& out) { out += fmt::format("f{}", 8 * sizeof(T)); }
  static void write(T v, AttrWriter& w) { w.le(std::bit_cast<Bits>(v)); }
  static void read(AttrReader& r, T& v) { v = std::bit_cast<T>(r.le<Bits>("a floating-point number")); }
  static bool equal(T a, T b) { return std::bit_cast<Bits>(a) == std::bit_cast<Bits>(b); }
  static void hash(T v, std::size_t& seed) { hash_combine(seed, std::hash<Bits>{}(std::bit_cast<Bits>(v))); }
  static void format(T v, std::string& out) { out += fmt::format("{}", v); }
  static void map_ints(T&, const IntMap&) {}
};

template <>
struct FieldCodec<DType> {
  static constexpr std::size_t kMinBytes = 1;
  static void layout(std::string& out) { out += "dtype"; }
  static void write(DType v, AttrWriter& w) { w.dtype(v); }
  static void read(AttrReader& r, DType& v) { v = r.dtype("a dtype"); }
  static bool equal(DType a, DType b) { return a == b; }
  static void hash(DType v, std::size_t& seed) { hash_combine(seed, static_cast<std::size_t>(v)); }
  static void format(DType v, std::string& out) { out += dtype_name(v); }
  static void map_ints(DType&, const IntMap&) {}
};

template <>
struct FieldCodec<Shape> {
  static constexpr std::size_t kMinBytes = 1;
  static void layout(std::string& out) { out += "shape"; }
  static void write(const Shape& v, AttrWriter& w) { w.shape(v); }
  static void read(AttrReader& r, Shape& v) { v = r.shape("a shape"); }
  static bool equal(const Shape& a, const Shape& b) { return a == b; }
  static void hash(const Shape& v, std::size_t& seed) {
    hash_combine(seed, static_cast<std::size_t>(v.rank()));
    for (std::int64_t d : v.dims()) hash_combine(seed, std::hash<std::int64_t>{}(d));
  }
  static void format(const Shape& v, std::string& out) { out += v.to_string(); }
  static void map_ints(Shape& v, const IntMap& f) {
    std::vector<std::int64_t> dims(v.dims().begin(), v.dims().end());
    for (std::int64_t& d : dims) d = f(d);
    v = Shape(dims);
  }
};

template <>
struct FieldCodec<Tensor> {
  static constexpr std::size_t kMinBytes = 1;
  static void layout(std::string& out) { out += "tensor"; }
  static void write(const Tensor& v, AttrWriter& w) { w.tensor(v); }
  static void read(AttrReader& r, Tensor& v) { v = r.tensor("a tensor"); }
  static bool equal(const Tensor& a, const Tensor& b);
  static void hash(const Tensor& v, std::size_t& seed);
  static void format(const Tensor& v, std::string& out);
  static void map_ints(Tensor&, const IntMap&) {}
};

template <>
struct FieldCodec<std::string> {
  static constexpr std::size_t kMinBytes = 4;
  static void layout(std::string& out) { out += "str"; }
  static void write(const std::string& v, AttrWriter& w) { w.string(v); }
  static void read(AttrReader& r, std::string& v) { v = r.string("a string"); }
  static bool equal(const std::string& a, const std::string& b) { return a == b; }
  static void hash(const std::string& v, std::size_t& seed) {
    hash_combine(seed, std::hash<std::string>{}(v));
  }
  static void format(const std::string& v, std::string& out) { out += fmt::format("\"{}\"", v); }
  static void map_ints(std::string&, const IntMap&) {}
};

template <class T>
struct FieldCodec<std::vector<T>> {
  using E = FieldCodec<T>;
  static constexpr std::size_t kMinBytes = 8;
  static void layout(std::string& out) {
    out += "[";
    E::layout(out);
    out += "]";
  }
  static void write(const std::vector<T>& v, AttrWriter& w) {
    w.u64(v.size());
    for (const T& e : v) E::write(e, w);
  }
  static void read(AttrReader& r, std::vector<T>& v) {
    const std::size_t n = r.count(r.u64("a list's length"), E::kMinBytes, sizeof(T), "a list");
    v.clear();
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      T e{};
      E::read(r, e);
      v.push_back(std::move(e));
    }
  }
  static bool equal(const std::vector<T>& a, const std::vector<T>& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const T& x, const T& y) { return E::equal(x, y); });
  }
  static void hash(const std::vector<T>& v, std::size_t& seed) {
    hash_combine(seed, v.size());
    for (const T& e : v) E::hash(e, seed);
  }
  static void format(const std::vector<T>& v, std::string& out) {
    out += "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (i > 0) out += ", ";
      E::format(v[i], out);
    }
    out += "]";
  }
  static void map_ints(std::vector<T>& v, const IntMap& f) {
    for (T& e : v) E::map_ints(e, f);
  }
};

template <class T, std::size_t N>
struct FieldCodec<std::array<T, N>> {
  using E = FieldCodec<T>;
  static constexpr std::size_t kMinBytes = N * E::kMinBytes;
  static void layout(std::string& out) {
    out += "[";
    E::layout(out);
    out += fmt::format(";{}]", N);
  }
  static void write(const std::array<T, N>& v, AttrWriter& w) {
    for (const T& e : v) E::write(e, w);
  }
  static void read(AttrReader& r, std::array<T, N>& v) {
    for (T& e : v) E::read(r, e);
  }
  static bool equal(const std::array<T, N>& a, const std::array<T, N>& b) {
    for (std::size_t i = 0; i < N; ++i)
      if (!E::equal(a[i], b[i])) return false;
    return true;
  }
  static void hash(const std::array<T, N>& v, std::size_t& seed) {
    for (const T& e : v) E::hash(e, seed);
  }
  static void format(const std::array<T, N>& v, std::string& out) {
    out += "[";
    for (std::size_t i = 0; i < N; ++i) {
      if (i > 0) out += ", ";
      E::format(v[i], out);
    }
    out += "]";
  }
  static void map_ints(std::array<T, N>& v, const IntMap& f) {
    for (T& e : v) E::map_ints(e, f);
  }
};

template <class A, class B>
struct FieldCodec<std::pair<A, B>> {
  using CA = FieldCodec<A>;
  using CB = FieldCodec<B>;
  static constexpr std::size_t kMinBytes = CA::kMinBytes + CB::kMinBytes;
  static void layout(std::string& out) {
    out += "(";
    CA::layout(out);
    out += ",";
    CB::layout(out);
    out += ")";
  }
  static void write(const std::pair<A, B>& v, AttrWriter& w) {
    CA::write(v.first, w);
    CB::write(v.second, w);
  }
  static void read(AttrReader& r, std::pair<A, B>& v) {
    CA::read(r, v.first);
    CB::read(r, v.second);
  }
  static bool equal(const std::pair<A, B>& a, const std::pair<A, B>& b) {
    return CA::equal(a.first, b.first) && CB::equal(a.second, b.second);
  }
  static void hash(const std::pair<A, B>& v, std::size_t& seed) {
    CA::hash(v.first, seed);
    CB::hash(v.second, seed);
  }
  static void format(const std::pair<A, B>& v, std::string& out) {
    out += "(";
    CA::format(v.first, out);
    out += ", ";
    CB::format(v.second, out);
    out += ")";
  }
  static void map_ints(std::pair<A, B>& v, const IntMap& f) {
    CA::map_ints(v.first, f);
    CB::map_ints(v.second, f);
  }
};

template <class... F>
struct TypeList {};

/// TypeList<the field types of aggregate T>, without making a T (an unevaluated call).
template <class T>
using FieldTypes = decltype(with_fields(
    std::declval<T&>(), [](auto&... f) { return TypeList<std::remove_cvref_t<decltype(f)>...>{}; }));

/// A struct: its fields in order (how every Attrs is handled, and nested structs too).
template <Reflectable T>
struct FieldCodec<T> {
  template <class F>
  using Of = FieldCodec<std::remove_cvref_t<F>>;

  template <class... F>
  static constexpr std::size_t min_bytes(TypeList<F...>) {
    return (std::size_t{0} + ... + FieldCodec<F>::kMinBytes);
  }
  template <class... F>
  static void layout_of(TypeList<F...>, std::string& out) {
    bool first = true;
    ((out += first ? "" : ",", first = false, FieldCodec<F>::layout(out)), ...);
  }

  static constexpr std::size_t kMinBytes = min_bytes(FieldTypes<T>{});
  static void layout(std::string& out) {
    out += "{";
    layout_of(FieldTypes<T>{}, out);
    out += "}";
  }
  static void write(const T& v, AttrWriter& w) {
    with_fields(v, [&](const auto&... f) { (Of<decltype(f)>::write(f, w), ...); });
  }
  static void read(AttrReader& r, T& v) {
    with_fields(v, [&](auto&... f) { (Of<decltype(f)>::read(r, f), ...); });
  }
  static bool equal(const T& a, const T& b) {
    const auto fa = with_fields(a, [](const auto&... f) { return std::tie(f...); });
    const auto fb = with_fields(b, [](const auto&... f) { return std::tie(f...); });
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (true && ... &&
              Of<std::tuple_element_t<I, decltype(fa)>>::equal(std::get<I>(fa), std::get<I>(fb)));
    }
    (std::make_index_sequence<std::tuple_size_v<decltype(fa)>>{});
  }
  static void hash(const T& v, std::size_t& seed) {
    with_fields(v, [&](const auto&... f) { (Of<decltype(f)>::hash(f, seed), ...); });
  }
  static void format(const T& v, std::string& out) {
    out += "{";
    bool first = true;
    with_fields(v, [&](const auto&... f) {
      ((out += first ? "" : ", ", first = false, Of<decltype(f)>::format(f, out)), ...);
    });
    out += "}";
  }
  static void map_ints(T& v, const IntMap& fn) {
    with_fields(v, [&](auto&... f) { (Of<decltype(f)>::map_ints(f, fn), ...); });
  }
};

template <class Attrs>
AttrsCodec make_codec() {
  using C = FieldCodec<Attrs>;
  AttrsCodec codec{
      .equal =
          [](const void* a, const void* b) {
            return C::equal(*static_cast<const Attrs*>(a), *static_cast<const Attrs*>(b));
          },
      .hash =
          [](const void* a) {
            std::size_t seed = 0;
            C::hash(*static_cast<const Attrs*>(a), seed);
            return seed;
          },
      .write = [](const void* a, AttrWriter& w) { C::write(*static_cast<const Attrs*>(a), w); },
      .read = [](AttrReader& r) -> std::shared_ptr<const void> {
        auto a = std::make_shared<Attrs>();
        C::read(r, *a);
        return a;
      },
      .to_string =
          [](const void* a) {
            std::string out;
            C::format(*static_cast<const Attrs*>(a), out);
            return out;
          },
      .map_ints = [](const void* a, const IntMap& f) -> std::shared_ptr<const void> {
        auto copy = std::make_shared<Attrs>(*static_cast<const Attrs*>(a));
        C::map_ints(*copy, f);
        return copy;
      },
      .layout = {},
  };
  C::layout(codec.layout);
  return codec;
}

/// The type of the first parameter of an op's forward: its Attrs, or Tensor for an op without.
template <class R, class First, class... Rest>
std::remove_cvref_t<First> first_parameter(R (*)(First, Rest...));
template <class Op>
using ForwardFirst = decltype(first_parameter(&Op::forward));

}  // namespace codec_detail

/// The codec of one Attrs type, built on first use. Attrs must be an aggregate whose fields are of
/// the types listed at the top of this file (anything else does not compile).
template <class Attrs>
const AttrsCodec& attrs_codec() {
  static_assert(codec_detail::Reflectable<Attrs>, "an op's Attrs must be an aggregate struct");
  static const AttrsCodec codec = codec_detail::make_codec<Attrs>();
  return codec;
}

/// The codec of op struct Op's attributes (the first parameter of its forward), or nullptr for an
/// op without attributes, without a forward, or that opts out with `kNoAttrsCodec`.
template <class Op>
const AttrsCodec* attrs_codec_of() {
  if constexpr (
      requires { Op::kNoAttrsCodec; } || !requires { &Op::forward; }) {
    return nullptr;
  } else {
    using Attrs = codec_detail::ForwardFirst<Op>;
    if constexpr (std::is_same_v<Attrs, Tensor> || std::is_empty_v<Attrs>)
      return nullptr;
    else
      return &attrs_codec<Attrs>();
  }
}

}  // namespace tapeflow::autodiff
