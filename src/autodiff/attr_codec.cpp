// The non-template parts of attr_codec.h: the writer's and reader's compound fields, and tensors.

#include "autodiff/attr_codec.h"

#include "core/check.h"
#include "tapeflow/memory.h"

namespace tapeflow::autodiff {
namespace {

// Swaps each element of `n` bytes between host and little-endian order, in place (a no-op on a
// little-endian host).
void to_from_little_endian(unsigned char* bytes, std::size_t n, std::size_t elem) {
  if constexpr (std::endian::native == std::endian::little) {
    (void)bytes, (void)n, (void)elem;
  } else {
    for (std::size_t i = 0; i + elem <= n; i += elem) std::reverse(bytes + i, bytes + i + elem);
  }
}

}  // namespace

std::uint8_t dtype_code(DType d) {
  const auto* it = std::find(kDTypeOfCode.begin(), kDTypeOfCode.end(), d);
  TAPEFLOW_ASSERT(it != kDTypeOfCode.end(), "dtype {} has no file code", static_cast<int>(d));
  return static_cast<std::uint8_t>(it - kDTypeOfCode.begin());
}

// --- AttrWriter -------------------------------------------------------------------------------

void AttrWriter::dtype(DType d) { u8(dtype_code(d)); }

void AttrWriter::shape(const Shape& s) {
  u8(static_cast<std::uint8_t>(s.rank()));
  for (std::int64_t d : s.dims()) i64(d);
}

void AttrWriter::string(std::string_view s) {
  TAPEFLOW_REQUIRE(s.size() <= 0xFFFFFFFFu, InvalidArgumentError,
                   "a string of {} bytes is too long to write (at most 2^32 - 1)", s.size());
  u32(static_cast<std::uint32_t>(s.size()));
  bytes(s.data(), s.size());
}

void AttrWriter::elements(const void* data, std::size_t n, std::size_t elem) {
  const std::size_t at = out_.size();
  bytes(data, n);
  to_from_little_endian(reinterpret_cast<unsigned char*>(out_.data() + at), n, elem);
}

void AttrWriter::tensor(const Tensor& t) {
  u8(t.defined() ? 1 : 0);
  if (!t.defined()) return;
  dtype(t.dtype());
  shape(t.shape());
  elements(t.raw_data(), t.nbytes(), dtype_size(t.dtype()));
}

// --- AttrReader -------------------------------------------------------------------------------

void AttrReader::fail(std::string_view what) const {
  throw DataLossError(fmt::format("{}: {}", context_, what));
}

std::span<const unsigned char> AttrReader::take(std::size_t n, std::string_view what) {
  if (remaining() < n)
    fail(fmt::format("{} needs {} bytes at offset {}, but only {} are left", what, n, offset(), remaining()));
  const std::span<const unsigned char> out(p_, n);
  p_ += n;
  return out;
}

bool AttrReader::boolean(std::string_view what) {
  const std::uint8_t b = u8(what);
  if (b > 1) fail(fmt::format("{} at offset {} is byte {} (only 0 and 1 are valid)", what, offset() - 1, b));
  return b == 1;
}

DType AttrReader::dtype(std::string_view what) {
  const std::uint8_t c = u8(what);
  if (c >= kDTypeOfCode.size())
    fail(fmt::format("{} at offset {} has unknown dtype code {}", what, offset() - 1, c));
  return kDTypeOfCode[c];
}

Shape AttrReader::shape(std::string_view what) {
  const int rank = u8(what);
  if (rank > kMaxRank)
    fail(fmt::format("{} has rank {}, more than the maximum rank {}", what, rank, kMaxRank));
  std::array<std::int64_t, kMaxRank> dims{};
  // Over the non-zero dims, as Shape counts (a zero dim must not hide an overflow of the others:
  // Shape would refuse (0, 2^62, 4) with ResourceExhaustedError, not naming the file).
  std::int64_t nonzero = 1;
  for (int d = 0; d < rank; ++d) {
    const std::int64_t n = i64(what);
    if (n < 0) fail(fmt::format("{} has a negative dimension {} (dimension {})", what, n, d));
    if (n != 0 && nonzero > kMaxElements / n)
      fail(fmt::format("{} has more than {} elements, not counting zero dimensions (dimension {} is {})",
                       what, kMaxElements, d, n));
    if (n != 0) nonzero *= n;
    dims[static_cast<std::size_t>(d)] = n;
  }
  return Shape(std::span<const std::int64_t>(dims.data(), static_cast<std::size_t>(rank)));
}

std::string AttrReader::string(std::string_view what) {
  const std::uint32_t n = u32(what);
  const std::span<const unsigned char> b = take(n, what);
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

std::size_t AttrReader::count(std::uint64_t n, std::size_t min_item_bytes, std::size_t item_size,
                              std::string_view what) {
  const std::size_t per_item = std::max<std::size_t>(min_item_bytes, 1);
  if (n > remaining() / per_item)
    fail(fmt::format("{} claims {} items at offset {}, more than the {} bytes left can hold", what, n,
                     offset(), remaining()));
  // n is at most the bytes left, so n x item_size cannot overflow.
  const std::int64_t limit = allocation_limit();
  if (n * item_size > static_cast<std::uint64_t>(limit))
    throw ResourceExhaustedError(
        fmt::format("{}: {} of {} items of {} bytes exceed the allocation limit of {} bytes", context_, what,
                    n, item_size, limit));
  return static_cast<std::size_t>(n);
}

Tensor AttrReader::tensor(std::string_view what) {
  if (!boolean(what)) return Tensor();
  const DType d = dtype(what);
  const Shape s = shape(what);
  const std::size_t elem = dtype_size(d);
  if (static_cast<std::uint64_t>(s.num_elements()) > remaining() / elem)
    fail(fmt::format("{} of shape {} and dtype {} needs {} elements, more than the {} bytes left hold", what,
                     s.to_string(), dtype_name(d), s.num_elements(), remaining()));
  const std::span<const unsigned char> bytes = take(static_cast<std::size_t>(s.num_elements()) * elem, what);
  if (d == DType::Bool) {
    const auto bad = std::find_if(bytes.begin(), bytes.end(), [](unsigned char b) { return b > 1; });
    if (bad != bytes.end())
      fail(fmt::format("{} is a bool tensor holding byte {} at element {} (only 0 and 1 are valid)", what,
                       *bad, bad - bytes.begin()));
  }
  return tensor_for_overwrite(
      s, d,
      [&](std::span<std::byte> out) {
        std::memcpy(out.data(), bytes.data(), bytes.size());
        to_from_little_endian(reinterpret_cast<unsigned char*>(out.data()), out.size(), elem);
      },
      context_);
}

// --- Tensor fields ----------------------------------------------------------------------------

namespace codec_detail {

bool FieldCodec<Tensor>::equal(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void FieldCodec<Tensor>::hash(const Tensor& v, std::size_t& seed) {
  hash_combine(seed, v.defined() ? 1 : 0);
  if (!v.defined()) return;
  hash_combine(seed, static_cast<std::size_t>(v.dtype()));
  FieldCodec<Shape>::hash(v.shape(), seed);
  hash_combine(seed, std::hash<std::string_view>{}(
                         std::string_view(static_cast<const char*>(v.raw_data()), v.nbytes())));
}

void FieldCodec<Tensor>::format(const Tensor& v, std::string& out) {
  out += v.defined() ? tapeflow::to_string(v) : std::string("None");
}

}  // namespace codec_detail
}  // namespace tapeflow::autodiff
