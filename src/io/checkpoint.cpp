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

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "core/check.h"
#include "io/checkpoint_testing.h"

namespace tapeflow {
namespace {

constexpr char kMagic[8] = {'T', 'F', 'L', 'W', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion = 1;
constexpr std::size_t kHeaderSize = 32;
constexpr std::size_t kCrcSize = 4;
constexpr std::size_t kMaxNameLength = 0xFFFF;
// The smallest index entry: a one-byte name and rank 0 (2 + 1 + 1 + 1 + 8 + 8 + 4).
constexpr std::uint64_t kMinEntrySize = 25;

std::atomic<std::int64_t> g_write_fault_after{-1};

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

// The file's dtype codes: kDTypeOfCode[code]. Written out rather than cast from the enum, so
// reordering DType can never silently change the format.
constexpr std::array<DType, 5> kDTypeOfCode = {DType::Float32, DType::Float64, DType::Int32, DType::Int64,
                                               DType::Bool};

std::uint8_t dtype_code(DType d) {
  const auto it = std::find(kDTypeOfCode.begin(), kDTypeOfCode.end(), d);
  if (it == kDTypeOfCode.end())
    throw UnimplementedError(fmt::format("[save_checkpoint] unsupported dtype code {}", static_cast<int>(d)));
  return static_cast<std::uint8_t>(it - kDTypeOfCode.begin());
}
std::optional<DType> dtype_from_code(std::uint8_t c) {
  if (c >= kDTypeOfCode.size()) return std::nullopt;
  return kDTypeOfCode[c];
}

std::uint32_t crc32_of(const void* data, std::size_t n) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<std::uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), n));
}

// Converts `n` bytes of elements of `elem` bytes between host and little-endian order, in place.
void to_from_little_endian(unsigned char* bytes, std::size_t n, std::size_t elem) {
  if constexpr (std::endian::native == std::endian::little) {
    (void)bytes, (void)n, (void)elem;
  } else {
    for (std::size_t i = 0; i + elem <= n; i += elem) std::reverse(bytes + i, bytes + i + elem);
  }
}

std::string errno_text(int err) { return std::strerror(err); }

// --- File helpers -----------------------------------------------------------------------------

// Closes a descriptor on scope exit unless released.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

// Writes all of `data`; returns 0 or an errno value. Honors the test fault hook.
int write_all(int fd, const void* data, std::size_t n, std::int64_t& written) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    std::size_t chunk = n;
    const std::int64_t fault = g_write_fault_after.load();
    if (fault >= 0) {
      if (written >= fault) return EIO;
      chunk = std::min<std::size_t>(chunk, static_cast<std::size_t>(fault - written));
    }
    const ssize_t r = ::write(fd, p, chunk);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += r;
    n -= static_cast<std::size_t>(r);
    written += r;
  }
  return 0;
}

// Reads exactly `n` bytes at `offset`; false on a short read (the file shrank) or an error.
bool read_at(int fd, void* out, std::size_t n, std::uint64_t offset) {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

std::string directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? std::string(".") : dir;
}

// What a file of type `mode` is, for messages: "a directory", "a character device", ...
std::string_view file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

// The temporary file a save by process `pid` writes before renaming it over `path`.
std::string temporary_path(const std::string& path, pid_t pid) { return fmt::format("{}.tmp.{}", path, pid); }

// Removes the temporaries of earlier saves of `path` whose process is dead (a save killed midway
// leaves one): only files named exactly `<name>.tmp.<pid>` for this path, only regular files, and
// only when kill(pid, 0) says no such process exists, so a live writer's temporary survives
// (and so does one whose pid was reused: it is merely kept until a later save). Best effort: a
// file that cannot be removed stays.
void remove_stale_temporaries(const std::string& path) {
  const std::string dir = directory_of(path);
  const std::string prefix = std::filesystem::path(path).filename().string() + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(d)) {
    const std::string_view name = entry->d_name;
    if (!name.starts_with(prefix)) continue;
    const std::string_view digits = name.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.front() == '0' ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    const auto pid = static_cast<pid_t>(std::stol(std::string(digits)));
    if (pid == self || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
    const std::string stale = (std::filesystem::path(dir) / name).string();
    struct stat st {};
    if (::lstat(stale.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(stale.c_str());
  }
  ::closedir(d);
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

struct OpenCheckpoint {
  Fd fd;
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

// Opens `path` for reading into ck.fd, refusing anything but a regular file, and sets ck.file_size.
void open_regular_file(const std::string& path, std::string_view fn, OpenCheckpoint& ck) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. The type
  // is checked on the open descriptor (no race with a rename), then reads block as usual.
  ck.fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  TAPEFLOW_REQUIRE(ck.fd.fd >= 0, InvalidArgumentError, "[{}] cannot open checkpoint '{}' for reading: {}",
                   fn, path, errno_text(errno));
  struct stat st {};
  TAPEFLOW_REQUIRE(::fstat(ck.fd.fd, &st) == 0, InvalidArgumentError, "[{}] cannot stat checkpoint '{}': {}",
                   fn, path, errno_text(errno));
  TAPEFLOW_REQUIRE(S_ISREG(st.st_mode), InvalidArgumentError,
                   "[{}] checkpoint '{}' is {}, not a regular file", fn, path, file_type_name(st.st_mode));
  TAPEFLOW_REQUIRE(::fcntl(ck.fd.fd, F_SETFL, 0) == 0, InvalidArgumentError,
                   "[{}] cannot read checkpoint '{}': {}", fn, path, errno_text(errno));
  ck.file_size = static_cast<std::uint64_t>(st.st_size);
}

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
  if (!read_at(ck.fd.fd, header, kHeaderSize, 0)) throw loss("cannot read the header");
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
  if (!read_at(ck.fd.fd, index.data(), index.size(), 0)) throw loss("cannot read the index");
  const auto stored_crc = get_le<std::uint32_t>(index.data() + kHeaderSize + h.index_size);
  const std::uint32_t actual_crc =
      crc32_of(index.data(), kHeaderSize + static_cast<std::size_t>(h.index_size));
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
  std::int64_t elements = 1;
  for (int d = 0; d < rank; ++d) {
    dims[d] = static_cast<std::int64_t>(get_le<std::uint64_t>(c.p));
    c.p += 8;
    if (dims[d] < 0) throw loss(fmt::format("{}: dimension {} is negative ({})", who, d, dims[d]));
    if (dims[d] != 0 && elements > kMaxElements / dims[d])
      throw loss(fmt::format("{}: the element count overflows (more than {})", who, kMaxElements));
    elements *= dims[d];
  }
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

// Opens `path` and validates its header and index completely; throws before allocating anything
// whose size comes from the file (the index buffer is bounded by the file size).
void open_checkpoint(const std::string& path, std::string_view fn, OpenCheckpoint& ck) {
  open_regular_file(path, fn, ck);
  const CorruptCheckpoint loss{fn, path, ck.file_size};
  const Header header = read_header(ck, loss);
  const std::vector<unsigned char> index = read_checked_index(ck, header, loss);
  parse_index(index, header, loss, ck);
}

}  // namespace

namespace detail {
void set_checkpoint_write_fault(std::int64_t fail_after_bytes) {
  g_write_fault_after.store(fail_after_bytes);
}
}  // namespace detail

// --- Saving -----------------------------------------------------------------------------------

namespace {
void check_checkpoint_path(const std::string& path, std::string_view fn) {
  TAPEFLOW_REQUIRE(!path.empty(), InvalidArgumentError, "[{}] the checkpoint path is empty", fn);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    // rename() would replace whatever is there: a device, a FIFO, a symbolic link (not its target).
    TAPEFLOW_REQUIRE(S_ISREG(st.st_mode), FailedPreconditionError,
                     "[{}] cannot write checkpoint '{}': it is {}; a checkpoint replaces only a regular file "
                     "(or is created where nothing is)",
                     fn, path, file_type_name(st.st_mode));
  } else {
    // ENOENT, ENOTDIR: nothing there; the directory checks below say what is wrong with it.
    const int err = errno;
    TAPEFLOW_REQUIRE(err == ENOENT || err == ENOTDIR, FailedPreconditionError,
                     "[{}] cannot write checkpoint '{}': {}", fn, path, errno_text(err));
  }
  const std::string dir = directory_of(path);
  struct stat dir_st {};
  TAPEFLOW_REQUIRE(::stat(dir.c_str(), &dir_st) == 0, FailedPreconditionError,
                   "[{}] cannot write checkpoint '{}': its directory '{}' does not exist ({})", fn, path, dir,
                   errno_text(errno));
  TAPEFLOW_REQUIRE(S_ISDIR(dir_st.st_mode), FailedPreconditionError,
                   "[{}] cannot write checkpoint '{}': '{}' is not a directory", fn, path, dir);
  TAPEFLOW_REQUIRE(::access(dir.c_str(), W_OK | X_OK) == 0, FailedPreconditionError,
                   "[{}] cannot write checkpoint '{}': its directory '{}' is not writable ({})", fn, path,
                   dir, errno_text(errno));
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
    put_le<std::uint32_t>(head, crc32_of(snap.bytes_of(i), t.nbytes()));
    offset += t.nbytes();
  }
  TAPEFLOW_ASSERT(head.size() == kHeaderSize + index_size, "checkpoint index size {} != {}", head.size(),
                  kHeaderSize + index_size);
  put_le<std::uint32_t>(head, crc32_of(head.data(), head.size()));
  return head;
}

// Writes `head` and the data to this process's temporary file beside `path`, syncs it and renames
// it over `path`; on failure removes the temporary and throws FailedPreconditionError.
void write_temporary_and_rename(const std::string& path, std::string_view fn, const std::string& head,
                                const SaveSnapshot& snap) {
  remove_stale_temporaries(path);
  const std::string tmp = temporary_path(path, ::getpid());
  auto fail = [&](std::string_view step, int err) -> FailedPreconditionError {
    ::unlink(tmp.c_str());
    return FailedPreconditionError(fmt::format("[{}] cannot write checkpoint '{}': {} '{}' failed: {}", fn,
                                               path, step, tmp, errno_text(err)));
  };

  Fd fd;
  fd.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd.fd < 0) {
    const int err = errno;
    throw FailedPreconditionError(
        fmt::format("[{}] cannot write checkpoint '{}': creating the temporary file '{}' "
                    "failed: {}",
                    fn, path, tmp, errno_text(err)));
  }
  std::int64_t written = 0;
  auto write_part = [&](const void* data, std::size_t n) {
    if (int err = write_all(fd.fd, data, n, written)) {
      ::close(fd.release());
      throw fail("writing", err);
    }
  };
  write_part(head.data(), head.size());
  for (std::size_t i = 0; i < snap.values.size(); ++i) write_part(snap.bytes_of(i), snap.values[i].nbytes());
  if (::fsync(fd.fd) != 0) {
    const int err = errno;
    ::close(fd.release());
    throw fail("fsync of", err);
  }
  if (::close(fd.release()) != 0) throw fail("closing", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("renaming", errno);
}

// Makes the rename durable. The new checkpoint is already in place; a failure here means only
// that it might not survive a crash.
void sync_directory(const std::string& path, std::string_view fn) {
  const std::string dir = directory_of(path);
  Fd dfd;
  dfd.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  TAPEFLOW_REQUIRE(dfd.fd >= 0 && ::fsync(dfd.fd) == 0, FailedPreconditionError,
                   "[{}] checkpoint '{}' was written, but syncing its directory '{}' failed ({}); it may not "
                   "survive a crash",
                   fn, path, dir, errno_text(errno));
}

}  // namespace

void save_checkpoint(const std::string& path, const NamedVariables& vars) {
  constexpr std::string_view fn = "save_checkpoint";
  check_names(vars, fn, path);
  check_checkpoint_path(path, fn);
  const SaveSnapshot snap = snapshot_values(vars);
  const std::string head = encode_header_and_index(vars, snap);

  // One save at a time in this process, so two threads never share the temporary file.
  static std::mutex save_mutex;
  std::lock_guard lock(save_mutex);
  write_temporary_and_rename(path, fn, head, snap);
  sync_directory(path, fn);
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
    if (!read_at(ck.fd.fd, bytes, n, e.offset))
      throw DataLossError(
          fmt::format("[{}] checkpoint '{}': cannot read the {} bytes of tensor '{}' at offset {} "
                      "(was the file truncated while reading?)",
                      fn, path, n, e.name, e.offset));
    const std::uint32_t crc = crc32_of(bytes, n);
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
  OpenCheckpoint ck;
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
  OpenCheckpoint ck;
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
