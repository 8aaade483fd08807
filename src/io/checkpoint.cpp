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
//
// tf::Checkpoint's restoration (at the end) is the same reader kept open: a PendingRestore holds
// the validated index and remembers which variable each entry went into. restore() assigns the
// variables that exist; the hooks of io/restore_hooks.h, called where modules and optimizers
// create variables, assign the others when they appear. A process-wide list of the pending
// restorations connects the two.

#include "tapeflow/checkpoint.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "autodiff/attr_codec.h"
#include "core/check.h"
#include "io/file_util.h"
#include "io/restore_hooks.h"
#include "tapeflow/logging.h"
#include "tapeflow/optim/optimizer.h"

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

// Throws InvalidArgumentError unless entry `e` has the shape and dtype of `var`, saved as `name`.
void require_fits(const IndexEntry& e, const std::string& name, const Variable& var, std::string_view fn,
                  const std::string& path) {
  TAPEFLOW_REQUIRE(
      e.dtype == var.dtype() && e.shape == var.shape(), InvalidArgumentError,
      "[{}] checkpoint '{}': tensor '{}' has shape {} and dtype {}, but variable {} has shape {} "
      "and dtype {}",
      fn, path, name, e.shape.to_string(), dtype_name(e.dtype), var.name(), var.shape().to_string(),
      dtype_name(var.dtype()));
}

// What to try when variables are missing: they are created when a model is first called or an
// optimizer is built, and only tf::Checkpoint waits for them.
constexpr std::string_view kNotCreatedHint =
    "if the model has not been called yet (or the optimizer not built), its variables do not exist: "
    "call it once first, or restore with tf::Checkpoint, which restores variables as they are "
    "created";

// The index entry of each variable, in the variables' order. Throws InvalidArgumentError for a
// variable with no entry or one of another shape or dtype, and, unless `allow_unused`, for an
// entry no variable asks for; for no variables at all when the file holds tensors, which would
// restore nothing. Allocates nothing whose size comes from the file.
std::vector<const IndexEntry*> match_entries(const OpenCheckpoint& ck, const NamedVariables& vars,
                                             bool allow_unused, std::string_view fn,
                                             const std::string& path) {
  TAPEFLOW_REQUIRE(!vars.empty() || ck.entries.empty(), InvalidArgumentError,
                   "[{}] checkpoint '{}' holds {} tensors (the first is '{}') but no variable was given, "
                   "so nothing would be restored; {}",
                   fn, path, ck.entries.size(), ck.entries.empty() ? "" : ck.entries.front().name,
                   kNotCreatedHint);
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
    require_fits(*it->second, name, var, fn, path);
    matched.push_back(it->second);
  }
  if (!allow_unused && ck.entries.size() != vars.size()) {
    std::unordered_set<std::string_view> wanted;
    for (const auto& [name, var] : vars) wanted.insert(name);
    for (const IndexEntry& e : ck.entries) {
      TAPEFLOW_REQUIRE(wanted.contains(e.name), InvalidArgumentError,
                       "[{}] checkpoint '{}': tensor '{}' (shape {}, dtype {}) matches no variable; {}; "
                       "pass RestoreOptions{{.allow_unused_entries = true}} only to restore a subset "
                       "of the file",
                       fn, path, e.name, e.shape.to_string(), dtype_name(e.dtype), kNotCreatedHint);
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

// --- tf::Checkpoint: restoring variables as they are created ----------------------------------

namespace detail {

// What a Checkpoint tracks, in tracking order; each object is a module, an optimizer or a
// variable. Immutable once shared: track() makes a new list.
struct CheckpointObjects {
  struct Object {
    std::string name;
    const Module* module = nullptr;
    const optimizers::Optimizer* optimizer = nullptr;
    std::optional<Variable> variable;

    // Its variables under their names in the file.
    NamedVariables variables() const {
      if (module) return checkpoint_variables(*module, name + "/");
      if (variable) return {{name, *variable}};
      NamedVariables out;
      for (auto& [slot, var] : optimizer->variables()) out.emplace_back(name + "/" + slot, std::move(var));
      return out;
    }
  };
  std::vector<Object> objects;

  NamedVariables variables() const {
    NamedVariables out;
    for (const Object& o : objects) std::ranges::move(o.variables(), std::back_inserter(out));
    return out;
  }
  // The variables of the modules only. Unlike variables(), safe to call from an optimizer's slot
  // creation, which may hold the optimizer's lock that Optimizer::variables() takes.
  NamedVariables module_variables() const {
    NamedVariables out;
    for (const Object& o : objects)
      if (o.module) std::ranges::move(o.variables(), std::back_inserter(out));
    return out;
  }
};

// One restoration of a Checkpoint: the open, validated file and, for each entry, the variable it
// was assigned to. An entry is assigned at most once. The mutex orders the hooks' calls, which
// come from any thread that creates variables.
struct PendingRestore {
  static constexpr std::string_view kFn = "Checkpoint::restore";
  using Candidates = std::function<NamedVariables(const CheckpointObjects&)>;

  PendingRestore(const std::string& file, std::shared_ptr<const CheckpointObjects> tracked)
      : path(file), objects_(std::move(tracked)), ck_(std::make_unique<OpenCheckpoint>(file, kFn)) {
    open_checkpoint(path, kFn, *ck_);
    entries_ = ck_->entries;
    restored_into_.resize(entries_.size());
    for (std::size_t i = 0; i < entries_.size(); ++i) index_of_.emplace(entries_[i].name, i);
  }

  // Assigns each of `candidates(objects)` whose name has an entry not assigned yet, all or
  // nothing; nothing once the restoration ended. Throws FailedPreconditionError when a name's
  // entry already went into another variable (the module's numbering moved, see Checkpoint in
  // checkpoint.h); InvalidArgumentError for a shape or dtype that differs or a name given twice;
  // DataLossError for data that fail their checksum.
  void restore_matching(const Candidates& candidates) {
    std::lock_guard lock(mutex_);
    if (!ck_) return;
    const NamedVariables vars = candidates(*objects_);
    check_names(vars, kFn, path);
    std::vector<std::pair<std::size_t, Variable>> to_assign;  // (entry index, variable) pairs matched now
    for (const auto& [name, var] : vars) {
      const auto it = index_of_.find(name);
      if (it == index_of_.end()) continue;
      const std::optional<TensorId>& into = restored_into_[it->second];
      if (into == var.handle_id()) continue;
      if (into) throw renumbered(name, var);
      require_fits(entries_[it->second], name, var, kFn, path);
      to_assign.emplace_back(it->second, var);
    }
    std::vector<Tensor> decoded;
    decoded.reserve(to_assign.size());
    for (const auto& [i, var] : to_assign) decoded.push_back(read_entry(*ck_, entries_[i], kFn, path));
    for (std::size_t k = 0; k < to_assign.size(); ++k) {
      auto& [i, var] = to_assign[k];
      var.assign(decoded[k]);
      restored_into_[i] = var.handle_id();
      restored_variables_.insert(var.handle_id());
    }
    assigned_ += to_assign.size();
    if (assigned_ == entries_.size()) ck_.reset();  // every entry assigned: close the file
  }

  // Tracks `more` (the old objects and new ones) from now on, and assigns the new ones' `vars`.
  void track(std::shared_ptr<const CheckpointObjects> more, const NamedVariables& vars) {
    {
      std::lock_guard lock(mutex_);
      objects_ = std::move(more);
    }
    restore_matching([&](const CheckpointObjects&) { return vars; });
  }

  // Ends the restoration: later variables are not restored. Warns, listing them, about entries
  // never assigned unless a partial restore was declared.
  void finish() {
    std::vector<std::string> unmatched;
    {
      std::lock_guard lock(mutex_);
      if (!ck_) return;
      ck_.reset();
      unmatched = unmatched_entries_locked();
    }
    if (!unmatched.empty() && !partial_expected)
      log(LogLevel::Warning,
          fmt::format("[Checkpoint] checkpoint '{}': {} of its {} tensors were never restored, as no tracked "
                      "variable of their names was created: {}; call expect_partial() on the status "
                      "restore() returned if a partial restore is intended",
                      path, unmatched.size(), entries_.size(), list_some(unmatched)));
  }

  // The entries never assigned, as "'name' (shape, dtype)".
  std::vector<std::string> unmatched_entries() {
    std::lock_guard lock(mutex_);
    return unmatched_entries_locked();
  }

  // The variables of the tracked objects that exist now and were not assigned, likewise.
  std::vector<std::string> unrestored_variables() {
    std::shared_ptr<const CheckpointObjects> tracked;
    {
      std::lock_guard lock(mutex_);
      tracked = objects_;
    }
    const NamedVariables vars = tracked->variables();  // unlocked: may take optimizers' locks
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [name, var] : vars)
      if (!restored_variables_.contains(var.handle_id()))
        out.push_back(fmt::format("'{}' ({}, {})", name, var.shape().to_string(), dtype_name(var.dtype())));
    return out;
  }

  // How many entries were assigned.
  std::size_t restored_count() {
    std::lock_guard lock(mutex_);
    return assigned_;
  }

  // Whether `optimizer` is tracked, and under which name.
  std::optional<std::string> name_of(const optimizers::Optimizer& optimizer) {
    std::lock_guard lock(mutex_);
    for (const CheckpointObjects::Object& o : objects_->objects)
      if (o.optimizer == &optimizer) return o.name;
    return std::nullopt;
  }

  std::size_t entry_count() const { return entries_.size(); }

  // The first ten of `items`, comma-separated, and how many more.
  static std::string list_some(const std::vector<std::string>& items) {
    constexpr std::size_t kShown = 10;
    const auto shown = static_cast<std::ptrdiff_t>(std::min(items.size(), kShown));
    std::string out = fmt::format("{}", fmt::join(items.begin(), items.begin() + shown, ", "));
    if (items.size() > kShown) out += fmt::format(" and {} more", items.size() - kShown);
    return out;
  }

  const std::string path;
  std::atomic<bool> partial_expected = false;

 private:
  std::vector<std::string> unmatched_entries_locked() const {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (!restored_into_[i])
        out.push_back(fmt::format("'{}' ({}, {})", entries_[i].name, entries_[i].shape.to_string(),
                                  dtype_name(entries_[i].dtype)));
    return out;
  }

  FailedPreconditionError renumbered(const std::string& name, const Variable& var) const {
    return FailedPreconditionError(fmt::format(
        "[{}] checkpoint '{}': variable {} was created as '{}', but entry '{}' was already restored "
        "into another variable when that was created: a variable was created out of the modules' "
        "tracking order, which renumbers a module's variables. Build the model (call it once) before "
        "restoring, so that restore() finds every variable in place",
        kFn, path, var.name(), name, name));
  }

  std::mutex mutex_;
  std::shared_ptr<const CheckpointObjects> objects_;
  std::unique_ptr<OpenCheckpoint> ck_;  // null once every entry is assigned or the restoration ended
  std::vector<IndexEntry> entries_;     // the file's index
  std::vector<std::optional<TensorId>> restored_into_;     // per entry: the variable assigned
  std::unordered_map<std::string, std::size_t> index_of_;  // entry name -> index
  std::unordered_set<TensorId> restored_variables_;        // the variables assigned
  std::size_t assigned_ = 0;                               // entries assigned
};

}  // namespace detail

namespace {

// The restorations that may still assign variables: what the hooks visit.
struct PendingRestores {
  std::mutex mutex;
  std::vector<std::weak_ptr<detail::PendingRestore>> list;

  void add(const std::shared_ptr<detail::PendingRestore>& r) {
    std::lock_guard lock(mutex);
    std::erase_if(list, [](const auto& w) { return w.expired(); });
    list.push_back(r);
  }
  std::vector<std::shared_ptr<detail::PendingRestore>> live() {
    std::lock_guard lock(mutex);
    std::vector<std::shared_ptr<detail::PendingRestore>> out;
    for (const auto& w : list)
      if (auto r = w.lock()) out.push_back(std::move(r));
    return out;
  }
};

PendingRestores& pending_restores() {
  static PendingRestores pending;
  return pending;
}

}  // namespace

namespace detail {

void restore_new_module_variables() {
  for (const auto& r : pending_restores().live())
    r->restore_matching([](const CheckpointObjects& tracked) { return tracked.module_variables(); });
}

void restore_new_optimizer_slots(const optimizers::Optimizer& optimizer, const std::vector<Variable>& slots) {
  for (const auto& r : pending_restores().live()) {
    const std::optional<std::string> name = r->name_of(optimizer);
    if (!name) continue;
    NamedVariables named;
    for (const Variable& slot : slots) named.emplace_back(*name + "/" + slot.name(), slot);
    r->restore_matching([&](const CheckpointObjects&) { return named; });
  }
}

}  // namespace detail

// --- CheckpointLoadStatus ---------------------------------------------------------------------

namespace {

// Throws InvalidArgumentError "[assertion] checkpoint 'path': N <what>: <items>; <hint>" unless
// `items` is empty.
void require_none(const std::vector<std::string>& items, std::string_view assertion, const std::string& path,
                  std::string_view what, std::string_view hint) {
  TAPEFLOW_REQUIRE(items.empty(), InvalidArgumentError, "[{}] checkpoint '{}': {} {}: {}; {}", assertion,
                   path, items.size(), what, detail::PendingRestore::list_some(items), hint);
}

constexpr std::string_view kUnrestoredVariables = "tracked variables have no tensor in the file";
constexpr std::string_view kOtherObjectsHint = "the file was written for other objects, or under other names";

}  // namespace

const CheckpointLoadStatus& CheckpointLoadStatus::assert_consumed() const {
  constexpr std::string_view fn = "CheckpointLoadStatus::assert_consumed";
  require_none(restore_->unmatched_entries(), fn, restore_->path, "tensors of the file matched no variable",
               "their variables were never created (call the model once, build the optimizer) or are "
               "named otherwise; expect_partial() declares a partial restore intended");
  require_none(restore_->unrestored_variables(), fn, restore_->path, kUnrestoredVariables, kOtherObjectsHint);
  return *this;
}

const CheckpointLoadStatus& CheckpointLoadStatus::assert_existing_objects_matched() const {
  require_none(restore_->unrestored_variables(), "CheckpointLoadStatus::assert_existing_objects_matched",
               restore_->path, kUnrestoredVariables, kOtherObjectsHint);
  return *this;
}

const CheckpointLoadStatus& CheckpointLoadStatus::assert_nontrivial_match() const {
  TAPEFLOW_REQUIRE(restore_->restored_count() > 0, InvalidArgumentError,
                   "[CheckpointLoadStatus::assert_nontrivial_match] checkpoint '{}': none of its {} tensors "
                   "restored a variable; {}",
                   restore_->path, restore_->entry_count(), kNotCreatedHint);
  return *this;
}

const CheckpointLoadStatus& CheckpointLoadStatus::expect_partial() const {
  restore_->partial_expected = true;
  return *this;
}

const std::string& CheckpointLoadStatus::path() const { return restore_->path; }

// --- Checkpoint -------------------------------------------------------------------------------

Checkpoint::Checkpoint() : objects_(std::make_shared<const detail::CheckpointObjects>()) {}

Checkpoint::~Checkpoint() {
  if (pending_) pending_->finish();
}

namespace {

// Checkpoint::track: `objects` with `object` added; a pending restoration assigns its variables
// that the file holds at once.
void add_object(std::shared_ptr<const detail::CheckpointObjects>& objects,
                const std::shared_ptr<detail::PendingRestore>& pending,
                detail::CheckpointObjects::Object object) {
  TAPEFLOW_REQUIRE(!object.name.empty(), InvalidArgumentError, "[Checkpoint::track] the name is empty");
  for (const auto& o : objects->objects)
    TAPEFLOW_REQUIRE(o.name != object.name, InvalidArgumentError,
                     "[Checkpoint::track] the name '{}' is tracked already; each object needs its own name",
                     object.name);
  auto more = std::make_shared<detail::CheckpointObjects>(*objects);
  more->objects.push_back(std::move(object));
  objects = std::move(more);
  if (pending) pending->track(objects, objects->objects.back().variables());
}

}  // namespace

Checkpoint& Checkpoint::track(const std::string& name, const Module& module) {
  add_object(objects_, pending_,
             {.name = name, .module = &module, .optimizer = nullptr, .variable = std::nullopt});
  return *this;
}

Checkpoint& Checkpoint::track(const std::string& name, const optimizers::Optimizer& optimizer) {
  add_object(objects_, pending_,
             {.name = name, .module = nullptr, .optimizer = &optimizer, .variable = std::nullopt});
  return *this;
}

Checkpoint& Checkpoint::track(const std::string& name, const Variable& variable) {
  add_object(objects_, pending_, {.name = name, .variable = variable});
  return *this;
}

NamedVariables Checkpoint::variables() const { return objects_->variables(); }

void Checkpoint::write(const std::string& path) const { save_checkpoint(path, variables()); }

CheckpointLoadStatus Checkpoint::restore(const std::string& path) {
  const NamedVariables existing = variables();
  auto restore = std::make_shared<detail::PendingRestore>(path, objects_);
  restore->restore_matching([&](const detail::CheckpointObjects&) { return existing; });
  if (pending_) pending_->finish();
  pending_ = restore;
  pending_restores().add(restore);
  return CheckpointLoadStatus(restore);
}

}  // namespace tapeflow
