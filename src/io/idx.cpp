// IDX files (the MNIST family's format) and the Fashion-MNIST loader.
//
// Reading goes in three steps, and nothing is allocated until the step before has succeeded:
//   1. the header (magic, type code, ndims, dims) is read and validated, and the payload size is
//      computed with checked arithmetic;
//   2. the payload is read: for a raw file the file size is compared with the expected size
//      first; for gzip the buffer grows with the bytes actually inflated, so a header claiming
//      terabytes costs nothing until the bytes exist; one more byte is then requested to detect
//      trailing data (which also makes zlib verify the gzip CRC at the end of the stream);
//   3. the big-endian elements are converted into the output tensor.

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "io/file_util.h"
#include "tapeflow/data.h"
#include "tapeflow/memory.h"

namespace tapeflow::data {
namespace {

constexpr std::string_view kOp = "read_idx";

// ---- byte source: a raw file or a gzip stream --------------------------------------------------

class ByteSource {
 public:
  explicit ByteSource(const std::string& path) : path_(path) {
    // Only a regular file: a FIFO with no writer would block the open forever, and a pipe cannot be
    // read from its start again after the gzip magic is looked at.
    const detail::OpenRegularFile f =
        detail::open_regular_file<FailedPreconditionError>(path, kOp, "IDX file");
    unsigned char magic[2] = {0, 0};
    const ssize_t got = ::pread(f.fd, magic, 2, 0);  // leaves the offset at the start
    if (got < 0) fail(f.fd, "read");
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
      gz_ = gzdopen(f.fd, "rb");  // owns the descriptor from here
      if (gz_ == nullptr) fail(f.fd, "open as gzip");
      gzbuffer(gz_, 1 << 17);
    } else {
      file_ = ::fdopen(f.fd, "rb");  // owns the descriptor from here
      if (file_ == nullptr) fail(f.fd, "open as a stream");
      raw_size_ = static_cast<std::int64_t>(f.size);
    }
  }
  ByteSource(const ByteSource&) = delete;
  ByteSource& operator=(const ByteSource&) = delete;
  ~ByteSource() {
    if (file_) std::fclose(file_);
    if (gz_) gzclose(gz_);
  }

  bool is_gzip() const { return gz_ != nullptr; }
  /// The size of a raw file when it was opened.
  std::int64_t raw_size() const { return raw_size_; }
  /// zlib's complaint after a short read of a gzip stream ("unexpected end of file"), or "".
  const std::string& gzip_note() const { return gzip_note_; }

  /// Reads up to `n` bytes; fewer only at the end of the data. Throws DataLossError on a corrupt
  /// gzip stream and FailedPreconditionError on an I/O error.
  std::size_t read(unsigned char* dst, std::size_t n) {
    std::size_t total = 0;
    while (total < n) {
      const std::size_t want = std::min<std::size_t>(n - total, std::size_t{1} << 30);
      std::size_t got = 0;
      if (gz_) {
        const int r = gzread(gz_, dst + total, static_cast<unsigned>(want));
        int err = Z_OK;
        const char* msg = gzerror(gz_, &err);
        if (r < 0 || (err != Z_OK && err != Z_BUF_ERROR)) {
          throw DataLossError(fmt::format("[{}] '{}' holds a corrupt gzip stream (zlib: {})", kOp, path_,
                                          err == Z_ERRNO ? std::strerror(errno) : msg));
        }
        if (err == Z_BUF_ERROR) gzip_note_ = fmt::format(" (zlib: {})", msg);
        got = static_cast<std::size_t>(r);
      } else {
        got = std::fread(dst + total, 1, want, file_);
        TAPEFLOW_REQUIRE(!std::ferror(file_), FailedPreconditionError, "[{}] cannot read '{}': {}", kOp,
                         path_, std::strerror(errno));
      }
      total += got;
      if (got < want) break;
    }
    return total;
  }

  /// Reads and discards everything left; returns how many bytes that was.
  std::int64_t drain() {
    std::vector<unsigned char> sink(std::size_t{1} << 16);
    std::int64_t total = 0;
    for (;;) {
      const std::size_t got = read(sink.data(), sink.size());
      total += static_cast<std::int64_t>(got);
      if (got < sink.size()) return total;
    }
  }

 private:
  /// Closes `fd` (not yet owned by stdio or zlib) and throws FailedPreconditionError saying what
  /// failed and errno's reason.
  [[noreturn]] void fail(int fd, std::string_view what) const {
    const int err = errno;
    ::close(fd);
    throw FailedPreconditionError(
        fmt::format("[{}] cannot {} '{}': {}", kOp, what, path_, std::strerror(err)));
  }

  std::string path_;
  std::FILE* file_ = nullptr;
  gzFile gz_ = nullptr;
  std::int64_t raw_size_ = 0;
  std::string gzip_note_;
};

// ---- header -------------------------------------------------------------------------------------

struct IdxType {
  std::uint8_t code;
  std::string_view name;
  std::size_t size;  // bytes per element in the file
  DType dtype;       // what read_idx returns
};

constexpr std::array<IdxType, 6> kIdxTypes = {{
    {0x08, "uint8", 1, DType::Int32},
    {0x09, "int8", 1, DType::Int32},
    {0x0B, "int16", 2, DType::Int32},
    {0x0C, "int32", 4, DType::Int32},
    {0x0D, "float32", 4, DType::Float32},
    {0x0E, "float64", 8, DType::Float64},
}};

std::uint32_t load_be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// The validated contents of an IDX file: its header and its payload bytes, still big-endian.
struct IdxFile {
  IdxType type;
  Shape shape;
  std::int64_t header_bytes = 0;
  std::vector<unsigned char> payload;
};

// What an IDX header declares, validated: the element type, the shape, and the payload's size
// (within the allocation limit) and where it starts.
struct IdxHeader {
  IdxType type;
  Shape shape;
  std::int64_t payload_bytes = 0;
  std::int64_t header_bytes = 0;
};

// Step 1 of the file comment: reads and validates the header; allocates nothing.
IdxHeader read_idx_header(ByteSource& src, const std::string& path) {
  unsigned char head[4];
  const std::size_t got_head = src.read(head, 4);
  TAPEFLOW_REQUIRE(got_head == 4, DataLossError,
                   "[{}] '{}' is truncated: an IDX header needs 4 bytes, the file holds {}{}", kOp, path,
                   got_head, src.gzip_note());
  TAPEFLOW_REQUIRE(head[0] == 0 && head[1] == 0, DataLossError,
                   "[{}] '{}' is not an IDX file: its magic number starts with {:02x} {:02x}, expected 00 00",
                   kOp, path, head[0], head[1]);
  const auto type_it =
      std::find_if(kIdxTypes.begin(), kIdxTypes.end(), [&](const IdxType& t) { return t.code == head[2]; });
  TAPEFLOW_REQUIRE(type_it != kIdxTypes.end(), DataLossError,
                   "[{}] '{}' has unknown IDX type code 0x{:02X}; expected 0x08 (uint8), 0x09 (int8), "
                   "0x0B (int16), 0x0C (int32), 0x0D (float32) or 0x0E (float64)",
                   kOp, path, head[2]);
  const int ndims = head[3];
  TAPEFLOW_REQUIRE(ndims >= 1 && ndims <= kMaxRank, DataLossError,
                   "[{}] '{}' declares {} dimensions; tapeflow reads IDX files with 1 to {}", kOp, path,
                   ndims, kMaxRank);

  unsigned char dim_bytes[4 * kMaxRank];
  const std::size_t want_dims = 4 * static_cast<std::size_t>(ndims);
  const std::size_t got_dims = src.read(dim_bytes, want_dims);
  TAPEFLOW_REQUIRE(got_dims == want_dims, DataLossError,
                   "[{}] '{}' is truncated: its header needs {} bytes for {} dimensions, the file holds {}{}",
                   kOp, path, 4 + want_dims, ndims, 4 + got_dims, src.gzip_note());

  std::array<std::int64_t, kMaxRank> dims{};
  std::int64_t elements = 1;
  bool overflow = false;
  for (int i = 0; i < ndims; ++i) {
    dims[static_cast<std::size_t>(i)] = load_be32(dim_bytes + 4 * i);
    const std::int64_t d = dims[static_cast<std::size_t>(i)];
    if (d != 0 && elements > kMaxElements / d)
      overflow = true;
    else
      elements *= d;
  }
  const std::span<const std::int64_t> dim_span(dims.data(), static_cast<std::size_t>(ndims));
  // A zero dimension makes the product 0 however large the others are; still reject an overflowing
  // prefix, because no real file declares it.
  TAPEFLOW_REQUIRE(!overflow, DataLossError,
                   "[{}] '{}' declares dimensions ({}) whose product exceeds the {} element limit", kOp, path,
                   fmt::join(dim_span, ", "), kMaxElements);
  Shape shape(dim_span);

  const IdxType type = *type_it;
  // elements <= 2^62, so the byte counts below fit in int64 only after this check.
  const std::int64_t limit = allocation_limit();
  const std::int64_t out_size = static_cast<std::int64_t>(dtype_size(type.dtype));
  TAPEFLOW_REQUIRE(
      elements <= limit / out_size && elements <= limit / static_cast<std::int64_t>(type.size),
      ResourceExhaustedError,
      "[{}] '{}' declares shape {} of {}: the tensor would need {} elements of {} bytes, above the "
      "allocation limit of {} bytes (see set_allocation_limit)",
      kOp, path, shape.to_string(), type.name, elements, out_size, limit);
  const std::int64_t payload_bytes = elements * static_cast<std::int64_t>(type.size);
  const std::int64_t header_bytes = 4 + 4 * ndims;
  return IdxHeader{type, shape, payload_bytes, header_bytes};
}

// Step 2: reads the payload that header `h` declares, growing the buffer only with bytes that
// arrive, and checks that nothing follows it.
std::vector<unsigned char> read_idx_payload(ByteSource& src, const std::string& path, const IdxHeader& h) {
  const Shape& shape = h.shape;
  const IdxType& type = h.type;
  const std::int64_t payload_bytes = h.payload_bytes;
  const std::int64_t header_bytes = h.header_bytes;
  auto size_error = [&](std::int64_t actual_payload) {
    return DataLossError(fmt::format(
        "[{}] '{}' is {}: its header declares shape {} of {}, which needs {} data bytes after the {}-byte "
        "header ({} bytes in all), but the {} holds {} data bytes ({} in all){}",
        kOp, path, actual_payload < payload_bytes ? "truncated" : "followed by trailing bytes",
        shape.to_string(), type.name, payload_bytes, header_bytes, header_bytes + payload_bytes,
        src.is_gzip() ? "decompressed stream" : "file", actual_payload, header_bytes + actual_payload,
        src.gzip_note()));
  };

  std::vector<unsigned char> payload;
  if (!src.is_gzip()) {
    const std::int64_t actual = src.raw_size() - header_bytes;
    if (actual != payload_bytes) throw size_error(actual);
    payload.resize(static_cast<std::size_t>(payload_bytes));
    const std::size_t got = src.read(payload.data(), payload.size());
    // The file changed under us (or the size was wrong): report what we really read.
    if (got != payload.size()) throw size_error(static_cast<std::int64_t>(got));
  } else {
    // Grow with the bytes that really arrive (a lying header cannot make us allocate).
    constexpr std::int64_t kChunk = std::int64_t{1} << 22;
    std::int64_t have = 0;
    while (have < payload_bytes) {
      const std::int64_t want = std::min(kChunk, payload_bytes - have);
      payload.resize(static_cast<std::size_t>(have + want));
      const std::size_t got = src.read(payload.data() + have, static_cast<std::size_t>(want));
      have += static_cast<std::int64_t>(got);
      if (static_cast<std::int64_t>(got) < want) throw size_error(have);
    }
  }
  unsigned char extra = 0;
  if (src.read(&extra, 1) != 0) throw size_error(payload_bytes + 1 + src.drain());
  // All the data arrived, but the gzip trailer (CRC-32 and length) is cut off.
  TAPEFLOW_REQUIRE(
      src.gzip_note().empty(), DataLossError,
      "[{}] '{}' is truncated: the gzip stream ends before its trailer, after all {} declared bytes{}", kOp,
      path, header_bytes + payload_bytes, src.gzip_note());
  return payload;
}

IdxFile read_idx_file(const std::string& path) {
  ByteSource src(path);
  const IdxHeader h = read_idx_header(src, path);
  return IdxFile{h.type, h.shape, h.header_bytes, read_idx_payload(src, path, h)};
}

// A new tensor of element type T holding load(p, i) for each element i of the payload p.
template <Element T, class Load>
Tensor decode_as(const IdxFile& f, Load load) {
  const unsigned char* p = f.payload.data();
  return tensor_for_overwrite<T>(
      f.shape,
      [&](std::span<T> out) {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = load(p, i);
      },
      kOp);
}

// Converts the big-endian payload into a new tensor of the type's dtype.
Tensor decode(const IdxFile& f) {
  using Bytes = const unsigned char*;
  switch (f.type.code) {
    case 0x08:
      return decode_as<std::int32_t>(f, [](Bytes p, std::size_t i) { return p[i]; });
    case 0x09:
      return decode_as<std::int32_t>(f,
                                     [](Bytes p, std::size_t i) { return static_cast<std::int8_t>(p[i]); });
    case 0x0B:
      return decode_as<std::int32_t>(f, [](Bytes p, std::size_t i) {
        return static_cast<std::int16_t>(static_cast<std::uint16_t>((p[2 * i] << 8) | p[2 * i + 1]));
      });
    case 0x0C:
      return decode_as<std::int32_t>(
          f, [](Bytes p, std::size_t i) { return static_cast<std::int32_t>(load_be32(p + 4 * i)); });
    case 0x0D:
      return decode_as<float>(
          f, [](Bytes p, std::size_t i) { return std::bit_cast<float>(load_be32(p + 4 * i)); });
    case 0x0E:
      return decode_as<double>(f, [](Bytes p, std::size_t i) {
        return std::bit_cast<double>((std::uint64_t{load_be32(p + 8 * i)} << 32) | load_be32(p + 8 * i + 4));
      });
    default:
      TAPEFLOW_ASSERT(false, "IDX type 0x{:02X} passed validation but has no decoder", f.type.code);
  }
  return Tensor();
}

// ---- Fashion-MNIST ------------------------------------------------------------------------------

// The file `name` (or `name` without .gz) in `dir`; throws the "install the package" error.
std::string find_fashion_file(const std::string& dir, std::string_view name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path gz = fs::path(dir) / name;
  if (fs::is_regular_file(gz, ec)) return gz.string();
  fs::path raw = gz;
  raw.replace_extension();
  if (fs::is_regular_file(raw, ec)) return raw.string();
  throw FailedPreconditionError(fmt::format(
      "[load_fashion_mnist] '{}' not found. Fashion-MNIST comes with Debian's package dataset-fashion-mnist: "
      "run `sudo apt-get install dataset-fashion-mnist` (it installs to {}), or pass the directory that "
      "holds the four IDX files",
      gz.string(), kFashionMnistDir));
}

Tensor load_images(const std::string& path) {
  const IdxFile f = read_idx_file(path);
  const Shape& s = f.shape;
  TAPEFLOW_REQUIRE(f.type.code == 0x08 && s.rank() == 3 && s[1] == 28 && s[2] == 28, DataLossError,
                   "[load_fashion_mnist] '{}' should hold uint8 images of shape (n, 28, 28), it holds {} {}",
                   path, f.type.name, s.to_string());
  return tensor_for_overwrite<float>(
      Shape{s[0], 28, 28, 1},
      [&](std::span<float> out) {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(f.payload[i]) / 255.0f;
      },
      "load_fashion_mnist");
}

Tensor load_labels(const std::string& path, std::int64_t expected_count) {
  const IdxFile f = read_idx_file(path);
  TAPEFLOW_REQUIRE(
      f.type.code == 0x08 && f.shape.rank() == 1 && f.shape[0] == expected_count, DataLossError,
      "[load_fashion_mnist] '{}' should hold uint8 labels of shape ({},) to match the images, it "
      "holds {} {}",
      path, expected_count, f.type.name, f.shape.to_string());
  return tensor_for_overwrite<std::int32_t>(
      f.shape,
      [&](std::span<std::int32_t> out) {
        for (std::size_t i = 0; i < out.size(); ++i) {
          TAPEFLOW_REQUIRE(
              f.payload[i] <= 9, DataLossError,
              "[load_fashion_mnist] '{}' holds label {} at position {}; Fashion-MNIST labels are 0..9", path,
              f.payload[i], i);
          out[i] = f.payload[i];
        }
      },
      "load_fashion_mnist");
}

}  // namespace

Tensor read_idx(const std::string& path) { return decode(read_idx_file(path)); }

Tensor pixels_to_float(const Tensor& pixels) {
  constexpr std::string_view op = "pixels_to_float";
  TAPEFLOW_REQUIRE(pixels.defined(), InvalidArgumentError, "[{}] pixels is an undefined tensor", op);
  TAPEFLOW_REQUIRE(pixels.dtype() == DType::Int32, InvalidArgumentError,
                   "[{}] pixels must be int32 (as read_idx returns uint8 data), got {} with shape {}", op,
                   dtype_name(pixels.dtype()), pixels.shape().to_string());
  const Shape& s = pixels.shape();
  TAPEFLOW_REQUIRE(s.rank() >= 1 && s.rank() < kMaxRank, InvalidArgumentError,
                   "[{}] pixels must have rank 1 to {} (a channel axis is appended), got shape {}", op,
                   kMaxRank - 1, s.to_string());
  std::array<std::int64_t, kMaxRank> dims{};
  std::copy(s.dims().begin(), s.dims().end(), dims.begin());
  dims[static_cast<std::size_t>(s.rank())] = 1;
  const auto in = pixels.values<std::int32_t>();
  return tensor_for_overwrite<float>(
      Shape(std::span<const std::int64_t>(dims.data(), s.rank() + 1)),
      [&](std::span<float> out) {
        for (std::size_t i = 0; i < in.size(); ++i) {
          TAPEFLOW_REQUIRE(in[i] >= 0 && in[i] <= 255, InvalidArgumentError,
                           "[{}] pixel values must be in 0..255, got {} at flat position {} of shape {}", op,
                           in[i], i, s.to_string());
          out[i] = static_cast<float>(in[i]) / 255.0f;
        }
      },
      op);
}

FashionMnist load_fashion_mnist(const std::string& dir) {
  // Look for all four files first, so a missing package fails before any reading.
  const std::string train_x = find_fashion_file(dir, "train-images-idx3-ubyte.gz");
  const std::string train_y = find_fashion_file(dir, "train-labels-idx1-ubyte.gz");
  const std::string test_x = find_fashion_file(dir, "t10k-images-idx3-ubyte.gz");
  const std::string test_y = find_fashion_file(dir, "t10k-labels-idx1-ubyte.gz");
  FashionMnist ds;
  ds.train_images = load_images(train_x);
  ds.train_labels = load_labels(train_y, ds.train_images.shape()[0]);
  ds.test_images = load_images(test_x);
  ds.test_labels = load_labels(test_y, ds.test_images.shape()[0]);
  return ds;
}

const std::array<std::string_view, 10>& class_names() {
  static constexpr std::array<std::string_view, 10> kNames = {
      "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
      "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return kNames;
}

}  // namespace tapeflow::data
