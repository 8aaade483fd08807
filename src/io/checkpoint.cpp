// Checkpoint writer and reader. The format is in docs/CHECKPOINT_FORMAT.md; in short:
//
//   header  (32 bytes)  magic "TFLWCKPT", u32 version, u32 flags (0), u64 count, u64 index_size
//   index   (index_size bytes) per tensor: u16 name_len, name, u8 dtype, u8 rank, i64 dims[rank],
//                       u64 byte_size, u64 data_offset, u32 data_crc32
//   u32 CRC32 of header + index
//   data    the tensors' bytes, in index order, back to back; the file ends where the last ends.
//
// Every integer is little-endian. The reader trusts nothing: it checks the header, the index
// checksum, then every field of every entry against the file size before allocating a tensor,
// matches the entries against the variables, reads and checksums all the data into new tensors,
// and only then assigns the variables. Any failure leaves the variables as they were.

#include "tapeflow/checkpoint.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/attr_codec.h"
#include "core/check.h"
#include "io/file_util.h"

namespace tapeflow {
namespace {

constexpr char kMagic[8] = {'T', 'F', 'L', 'W', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = 32;
constexpr std::size_t kCrcSize = 4;
constexpr std::size_t kMaxNameLength = 0xFFFF;
// The smallest index entry: a one-byte name and rank 0 (2 + 1 + 1 + 1 + 8 + 8 + 4).
constexpr std::uint64_t kMinEntrySize = 25;

// --- Little-endian encoding -------------------------------------------------------------------

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }
template <class U>
void put_le(std::string& out, U v) {
  for (std::size_t i = 0; i < sizeof(U); ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}
template <class U>
U get_le(const unsigned char* p) {
  U v = 0;
  for (std::size_t i = 0; i < sizeof(U); ++i) v |= static_cast<U>(p[i]) << (8 * i);
  return v;
}

// The file's dtype codes are autodiff::kDTypeOfCode (attr_codec.h), shared with tf::function's files.
using autodiff::dtype_code;
std::optional<DType> dtype_from_code(std::uint8_t c) {
  if (c >= autodiff::kDTypeOfCode.size()) return std::nullopt;
  return autodiff::kDTypeOfCode[c];
}

// Converts `n` bytes of elements of `elem` bytes between host and little-endian order, in place.
void to_from_little_endian(unsigned char* bytes, std::size_t n, std::size_t elem) {
  if constexpr (std::endian::native == std::endian::little) {
    (void)bytes, (void)n, (void)elem;
  } else {
    for (std::size_t i = 0; i + elem <= n; i += elem) std::reverse(bytes + i, bytes + i + elem);
  }
}

// --- Validation of the variable list ----------------------------------------------------------

void check_names(const NamedVariables& vars, std::string_view fn, const std::string& path) {
  std::unordered_set<std::string_view> seen;
  for (const auto& [name, var] : vars) {
    TAPEFLOW_REQUIRE(
        !var.moved_from(), InvalidArgumentError,
        "[{}] checkpoint '{}': the variable named '{}' is a moved-from Variable (std::move gave its "
        "state away)",
        fn, path, name);
    TAPEFLOW_REQUIRE(!name.empty(), InvalidArgumentError,
                     "[{}] checkpoint '{}': a variable ({}) has an empty name", fn, path, var.name());
    TAPEFLOW_REQUIRE(name.size() <= kMaxNameLength, InvalidArgumentError,
                     "[{}] checkpoint '{}': the name of variable {} has {} bytes; at most {} are allowed", fn,
                     path, var.name(), name.size(), kMaxNameLength);
    TAPEFLOW_REQUIRE(seen.insert(name).second, InvalidArgumentError,
                     "[{}] checkpoint '{}': the name '{}' is given to more than one variable; names must be "
                     "unique",
                     fn, path, name);
  }
}

// --- Reading the index ------------------------------------------------------------------------

struct IndexEntry {
  std::string name;
  DType dtype;
  Shape shape;
  std::uint64_t byte_size;
  std::uint64_t offset;
  std::uint32_t crc;
};

// An open checkpoint: only a regular file is opened (detail::ReadOnlyFile).
struct OpenCheckpoint {
  OpenCheckpoint(const std::string& path, std::string_view fn)
      : file(path, fn, "checkpoint"), file_size(file.size()) {}
  detail::ReadOnlyFile file;
  std::uint64_t file_size = 0;
  std::vector<IndexEntry> entries;
};

// Builds the DataLossError for a corrupt or truncated checkpoint: "[fn] checkpoint 'path' (size
// bytes) is corrupt or truncated: what".
struct CorruptCheckpoint {
  std::string_view fn;
  const std::string& path;
  std::uint64_t size;
  DataLossError operator()(std::string_view what) const {
    return DataLossError(
        fmt::format("[{}] checkpoint '{}' ({} bytes) is corrupt or truncated: {}", fn, path, size, what));
  }
};

// What the 32-byte header declares, checked against the file size.
struct Header {
  std::uint64_t count = 0;
  std::uint64_t index_size = 0;
};

Header read_header(const OpenCheckpoint& ck, const CorruptCheckpoint& loss) {
  const std::uint64_t size = ck.file_size;
  if (size < kHeaderSize + kCrcSize)
    throw loss(fmt::format("the file is shorter than the {}-byte header and index checksum",
                           kHeaderSize + kCrcSize));
  unsigned char header[kHeaderSize];
  if (!ck.file.read_at(header, kHeaderSize, 0)) throw loss("cannot read the header");
  if (std::memcmp(header, kMagic, sizeof kMagic) != 0)
    throw loss("bad magic: this is not a tapeflow checkpoint (expected \"TFLWCKPT\")");
  const auto version = get_le<std::uint32_t>(header + 8);
  if (version != kVersion)
    throw loss(fmt::format("unsupported format version {} (this build reads version {})", version, kVersion));
  const auto flags = get_le<std::uint32_t>(header + 12);
  if (flags != 0) throw loss(fmt::format("unknown header flags 0x{:08x} (expected 0)", flags));
  const auto count = get_le<std::uint64_t>(header + 16);
  const auto index_size = get_le<std::uint64_t>(header + 24);
  if (index_size > size - kHeaderSize - kCrcSize)
    throw loss(fmt::format("the index ({} bytes) extends past the end of the file", index_size));
  if (count > index_size / kMinEntrySize)
    throw loss(fmt::format("the header claims {} tensors, more than an index of {} bytes can hold", count,
                           index_size));
  return Header{count, index_size};
}

// Header + index + checksum, with the checksum verified. At most the file size (read_header
// checked the index size against it).
std::vector<unsigned char> read_checked_index(const OpenCheckpoint& ck, const Header& h,
                                              const CorruptCheckpoint& loss) {
  std::vector<unsigned char> index(kHeaderSize + static_cast<std::size_t>(h.index_size) + kCrcSize);
  if (!ck.file.read_at(index.data(), index.size(), 0)) throw loss("cannot read the index");
  const auto stored_crc = get_le<std::uint32_t>(index.data() + kHeaderSize + h.index_size);
  const std::uint32_t actual_crc =
      detail::crc32_of(index.data(), kHeaderSize + static_cast<std::size_t>(h.index_size));
  if (stored_crc != actual_crc)
    throw loss(fmt::format("header/index checksum mismatch (stored 0x{:08x}, computed 0x{:08x})", stored_crc,
                           actual_crc));
  return index;
}

// A bounds-checked cursor over the index. The checksum matched, but it is not a signature: every
// field is still checked as if hostile.
struct IndexCursor {
  const unsigned char* p;
  const unsigned char* end;
  const CorruptCheckpoint& loss;

  void need(std::size_t n, std::uint64_t entry, std::string_view field) const {
    if (static_cast<std::size_t>(end - p) < n)
      throw loss(fmt::format("index entry {}: the {} runs past the end of the index", entry, field));
  }
};

// Parses index entry `i` at the cursor. `data_cursor` is where its data must start (back to back
// after the previous entry's); `file_size` bounds the data.
IndexEntry parse_entry(IndexCursor& c, std::uint64_t i, std::uint64_t data_cursor, std::uint64_t file_size) {
  const CorruptCheckpoint& loss = c.loss;
  c.need(2, i, "name length");
  const auto name_len = get_le<std::uint16_t>(c.p);
  c.p += 2;
  if (name_len == 0) throw loss(fmt::format("index entry {}: empty name", i));
  c.need(name_len, i, "name");
  std::string name(reinterpret_cast<const char*>(c.p), name_len);
  c.p += name_len;
  const std::string who = fmt::format("tensor '{}' (index entry {})", name, i);
  c.need(2, i, "dtype and rank");
  const std::optional<DType> dtype = dtype_from_code(c.p[0]);
  if (!dtype) throw loss(fmt::format("{}: unknown dtype code {}", who, c.p[0]));
  const int rank = c.p[1];
  c.p += 2;
  if (rank > kMaxRank)
    throw loss(fmt::format("{}: rank {} exceeds the maximum rank {}", who, rank, kMaxRank));
  c.need(static_cast<std::size_t>(rank) * 8 + 20, i, "dims, byte size, offset and checksum");
  std::int64_t dims[kMaxRank];
  // Over the non-zero dims, as Shape counts (a zero dim must not hide an overflow of the others:
  // Shape would refuse (0, 2^62, 4) with ResourceExhaustedError, not naming the file).
  std::int64_t nonzero = 1;
  bool empty = false;
  for (int d = 0; d < rank; ++d) {
    dims[d] = static_cast<std::int64_t>(get_le<std::uint64_t>(c.p));
    c.p += 8;
    if (dims[d] < 0) throw loss(fmt::format("{}: dimension {} is negative ({})", who, d, dims[d]));
    empty = empty || dims[d] == 0;
    if (dims[d] != 0 && nonzero > kMaxElements / dims[d])
      throw loss(fmt::format("{}: the element count overflows (more than {}, not counting zero dimensions)",
                             who, kMaxElements));
    if (dims[d] != 0) nonzero *= dims[d];
  }
  const std::int64_t elements = empty ? 0 : nonzero;
  const auto byte_size = get_le<std::uint64_t>(c.p);
  const auto offset = get_le<std::uint64_t>(c.p + 8);
  const auto crc = get_le<std::uint32_t>(c.p + 16);
  c.p += 20;
  // Compared by division: elements (<= 2^62) x 8 would overflow 64 bits.
  const std::uint64_t elem_size = dtype_size(*dtype);
  if (byte_size % elem_size != 0 || byte_size / elem_size != static_cast<std::uint64_t>(elements))
    throw loss(fmt::format("{}: byte size {} does not equal {} elements x {} bytes ({})", who, byte_size,
                           elements, dtype_size(*dtype), dtype_name(*dtype)));
  if (offset != data_cursor)
    throw loss(
        fmt::format("{}: data offset {} should be {} (data are stored back to back in index order; "
                    "an offset elsewhere overlaps another tensor or leaves a gap)",
                    who, offset, data_cursor));
  if (byte_size > file_size || offset > file_size - byte_size)
    throw loss(fmt::format("{}: data at offset {} with {} bytes extend past the end of the file", who, offset,
                           byte_size));
  return IndexEntry{
      std::move(name), *dtype, Shape(std::span<const std::int64_t>(dims, static_cast<std::size_t>(rank))),
      byte_size,       offset, crc};
}

// Parses every entry of a checksummed index into ck.entries, and checks that the entries and
// their data fill the index and the file exactly.
void parse_index(const std::vector<unsigned char>& index, const Header& h, const CorruptCheckpoint& loss,
                 OpenCheckpoint& ck) {
  const std::uint64_t size = ck.file_size;
  IndexCursor c{index.data() + kHeaderSize, index.data() + kHeaderSize + h.index_size, loss};
  std::uint64_t data_cursor = kHeaderSize + h.index_size + kCrcSize;  // where the next tensor must start
  std::unordered_set<std::string> names;
  ck.entries.reserve(static_cast<std::size_t>(h.count));
  for (std::uint64_t i = 0; i < h.count; ++i) {
    IndexEntry e = parse_entry(c, i, data_cursor, size);
    data_cursor = e.offset + e.byte_size;
    if (!names.insert(e.name).second)
      throw loss(fmt::format("tensor '{}' (index entry {}): the name appears twice in the index", e.name, i));
    ck.entries.push_back(std::move(e));
  }
  if (c.p != c.end)
    throw loss(
        fmt::format("{} unparsed bytes at the end of the index", static_cast<std::size_t>(c.end - c.p)));
  if (data_cursor != size)
    throw loss(fmt::format("the data section should end at byte {} but the file has {} bytes{}", data_cursor,
                           size, data_cursor > size ? " (truncated)" : " (trailing bytes)"));
}

// Validates the header and index of the open checkpoint completely; throws before allocating
// anything whose size comes from the file (the index buffer is bounded by the file size).
void open_checkpoint(const std::string& path, std::string_view fn, OpenCheckpoint& ck) {
  const CorruptCheckpoint loss{fn, path, ck.file_size};
  const Header header = read_header(ck, loss);
  const std::vector<unsigned char> index = read_checked_index(ck, header, loss);
  parse_index(index, header, loss, ck);
}

}  // namespace

// --- Saving -----------------------------------------------------------------------------------

namespace {
void check_checkpoint_path(const std::string& path, std::string_view fn) {
  detail::check_writable_file_path(path, fn, "checkpoint");
}
}  // namespace

void check_checkpoint_path(const std::string& path) { check_checkpoint_path(path, "check_checkpoint_path"); }

namespace {

// The values to save, each read once (what is checksummed is what is written), and their bytes in
// little-endian order: the tensors' own bytes, or copies where the host is big-endian.
struct SaveSnapshot {
  std::vector<Tensor> values;
  std::vector<std::vector<unsigned char>> swapped;

  const void* bytes_of(std::size_t i) const {
    return swapped[i].empty() ? values[i].raw_data() : static_cast<const void*>(swapped[i].data());
  }
};

SaveSnapshot snapshot_values(const NamedVariables& vars) {
  SaveSnapshot snap;
  snap.values.reserve(vars.size());
  for (const auto& [name, var] : vars) snap.values.push_back(var.value());
  snap.swapped.resize(vars.size());
  if constexpr (std::endian::native != std::endian::little) {
    for (std::size_t i = 0; i < snap.values.size(); ++i) {
      const auto* b = static_cast<const unsigned char*>(snap.values[i].raw_data());
      snap.swapped[i].assign(b, b + snap.values[i].nbytes());
      to_from_little_endian(snap.swapped[i].data(), snap.swapped[i].size(),
                            dtype_size(snap.values[i].dtype()));
    }
  }
  return snap;
}

// The header, the index and the index checksum: everything the file holds before the data.
std::string encode_header_and_index(const NamedVariables& vars, const SaveSnapshot& snap) {
  std::uint64_t index_size = 0;
  for (std::size_t i = 0; i < vars.size(); ++i)
    index_size += 2 + vars[i].first.size() + 2 + static_cast<std::size_t>(snap.values[i].rank()) * 8 + 20;
  std::string head;
  head.reserve(kHeaderSize + index_size + kCrcSize);
  head.append(kMagic, sizeof kMagic);
  put_le<std::uint32_t>(head, kVersion);
  put_le<std::uint32_t>(head, 0);
  put_le<std::uint64_t>(head, vars.size());
  put_le<std::uint64_t>(head, index_size);
  std::uint64_t offset = kHeaderSize + index_size + kCrcSize;
  for (std::size_t i = 0; i < vars.size(); ++i) {
    const std::string& name = vars[i].first;
    const Tensor& t = snap.values[i];
    put_le<std::uint16_t>(head, static_cast<std::uint16_t>(name.size()));
    head.append(name);
    put_u8(head, dtype_code(t.dtype()));
    put_u8(head, static_cast<std::uint8_t>(t.rank()));
    for (std::int64_t d : t.shape().dims()) put_le<std::uint64_t>(head, static_cast<std::uint64_t>(d));
    put_le<std::uint64_t>(head, t.nbytes());
    put_le<std::uint64_t>(head, offset);
    put_le<std::uint32_t>(head, detail::crc32_of(snap.bytes_of(i), t.nbytes()));
    offset += t.nbytes();
  }
  TAPEFLOW_ASSERT(head.size() == kHeaderSize + index_size, "checkpoint index size {} != {}", head.size(),
                  kHeaderSize + index_size);
  put_le<std::uint32_t>(head, detail::crc32_of(head.data(), head.size()));
  return head;
}

}  // namespace

void save_checkpoint(const std::string& path, const NamedVariables& vars) {
  constexpr std::string_view fn = "save_checkpoint";
  check_names(vars, fn, path);
  check_checkpoint_path(path, fn);
  const SaveSnapshot snap = snapshot_values(vars);
  const std::string head = encode_header_and_index(vars, snap);
  std::vector<std::span<const unsigned char>> parts;
  parts.reserve(1 + snap.values.size());
  parts.emplace_back(reinterpret_cast<const unsigned char*>(head.data()), head.size());
  for (std::size_t i = 0; i < snap.values.size(); ++i)
    parts.emplace_back(static_cast<const unsigned char*>(snap.bytes_of(i)), snap.values[i].nbytes());
  detail::write_file_atomically(path, fn, "checkpoint", parts);
}

// --- Restoring --------------------------------------------------------------------------------

namespace {

// The index entry of each variable, in the variables' order. Throws InvalidArgumentError for a
// variable with no entry or one of another shape or dtype, and, unless `allow_unused`, for an
// entry no variable asks for. Allocates nothing whose size comes from the file.
std::vector<const IndexEntry*> match_entries(const OpenCheckpoint& ck, const NamedVariables& vars,
                                             bool allow_unused, std::string_view fn,
                                             const std::string& path) {
  std::unordered_map<std::string_view, const IndexEntry*> by_name;
  for (const IndexEntry& e : ck.entries) by_name.emplace(e.name, &e);
  std::vector<const IndexEntry*> matched;
  matched.reserve(vars.size());
  for (const auto& [name, var] : vars) {
    auto it = by_name.find(name);
    TAPEFLOW_REQUIRE(
        it != by_name.end(), InvalidArgumentError,
        "[{}] checkpoint '{}' has no tensor named '{}' (variable {}, shape {}, dtype {}); it holds {} "
        "tensors",
        fn, path, name, var.name(), var.shape().to_string(), dtype_name(var.dtype()), ck.entries.size());
    const IndexEntry& e = *it->second;
    TAPEFLOW_REQUIRE(
        e.dtype == var.dtype() && e.shape == var.shape(), InvalidArgumentError,
        "[{}] checkpoint '{}': tensor '{}' has shape {} and dtype {}, but variable {} has shape {} "
        "and dtype {}",
        fn, path, name, e.shape.to_string(), dtype_name(e.dtype), var.name(), var.shape().to_string(),
        dtype_name(var.dtype()));
    matched.push_back(&e);
  }
  if (!allow_unused && ck.entries.size() != vars.size()) {
    std::unordered_set<std::string_view> wanted;
    for (const auto& [name, var] : vars) wanted.insert(name);
    for (const IndexEntry& e : ck.entries) {
      TAPEFLOW_REQUIRE(wanted.contains(e.name), InvalidArgumentError,
                       "[{}] checkpoint '{}': tensor '{}' (shape {}, dtype {}) matches no variable; pass "
                       "RestoreOptions{{.allow_unused_entries = true}} to restore a subset",
                       fn, path, e.name, e.shape.to_string(), dtype_name(e.dtype));
    }
  }
  return matched;
}

// Reads entry `e`'s data straight into a new tensor, verifying its checksum and, for bool, its
// values; throws DataLossError.
Tensor read_entry(const OpenCheckpoint& ck, const IndexEntry& e, std::string_view fn,
                  const std::string& path) {
  auto read_verified = [&](std::span<std::byte> out) {
    auto* bytes = reinterpret_cast<unsigned char*>(out.data());
    const auto n = static_cast<std::size_t>(e.byte_size);
    if (!ck.file.read_at(bytes, n, e.offset))
      throw DataLossError(
          fmt::format("[{}] checkpoint '{}': cannot read the {} bytes of tensor '{}' at offset {} "
                      "(was the file truncated while reading?)",
                      fn, path, n, e.name, e.offset));
    const std::uint32_t crc = detail::crc32_of(bytes, n);
    if (crc != e.crc)
      throw DataLossError(
          fmt::format("[{}] checkpoint '{}' is corrupt: tensor '{}' ({} bytes at offset {}) has "
                      "checksum 0x{:08x}, the index says 0x{:08x}",
                      fn, path, e.name, n, e.offset, crc, e.crc));
    if (e.dtype == DType::Bool) {
      // A bool byte other than 0 or 1 is undefined behaviour to read as bool.
      const auto bad = std::find_if(bytes, bytes + n, [](unsigned char b) { return b > 1; });
      if (bad != bytes + n)
        throw DataLossError(
            fmt::format("[{}] checkpoint '{}' is corrupt: bool tensor '{}' holds byte {} at "
                        "element {} (only 0 and 1 are valid)",
                        fn, path, e.name, *bad, bad - bytes));
    }
    to_from_little_endian(bytes, n, dtype_size(e.dtype));
  };
  return tensor_for_overwrite(e.shape, e.dtype, read_verified, "RestoreCheckpoint");
}

}  // namespace

void restore_checkpoint(const std::string& path, const NamedVariables& vars, RestoreOptions options) {
  constexpr std::string_view fn = "restore_checkpoint";
  check_names(vars, fn, path);
  OpenCheckpoint ck(path, fn);
  open_checkpoint(path, fn, ck);
  const std::vector<const IndexEntry*> matched =
      match_entries(ck, vars, options.allow_unused_entries, fn, path);

  // Decode everything into new tensors before assigning any, so a failure leaves every variable as
  // it was.
  std::vector<Tensor> decoded;
  decoded.reserve(vars.size());
  for (const IndexEntry* e : matched) decoded.push_back(read_entry(ck, *e, fn, path));

  // Shapes and dtypes were matched above, so assign() cannot fail. A Variable is a handle: the
  // copy assigns the same variable the (const) list refers to.
  for (std::size_t i = 0; i < vars.size(); ++i) {
    Variable var = vars[i].second;
    var.assign(decoded[i]);
  }
}

std::vector<CheckpointEntry> list_checkpoint(const std::string& path) {
  OpenCheckpoint ck(path, "list_checkpoint");
  open_checkpoint(path, "list_checkpoint", ck);
  std::vector<CheckpointEntry> out;
  out.reserve(ck.entries.size());
  for (IndexEntry& e : ck.entries) out.push_back(CheckpointEntry{std::move(e.name), e.dtype, e.shape});
  return out;
}

// --- Modules ----------------------------------------------------------------------------------

NamedVariables checkpoint_variables(const Module& module, std::string_view prefix) {
  NamedVariables out;
  std::vector<Variable> vars = module.variables();
  out.reserve(vars.size());
  for (std::size_t i = 0; i < vars.size(); ++i)
    out.emplace_back(fmt::format("{}{}/{}", prefix, i, vars[i].name()), vars[i]);
  return out;
}

void save_checkpoint(const std::string& path, const Module& module) {
  save_checkpoint(path, checkpoint_variables(module));
}

void restore_checkpoint(const std::string& path, const Module& module, RestoreOptions options) {
  restore_checkpoint(path, checkpoint_variables(module), options);
}

}  // namespace tapeflow
