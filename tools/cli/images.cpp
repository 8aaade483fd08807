#include "images.h"

#include <cairo.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "tapeflow/data.h"
#include "tapeflow/errors.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"
#include "train.h"

namespace tapeflow::cli {
namespace {

constexpr std::int64_t kSide = 28;  // Fashion-MNIST's images are kSide x kSide pixels
constexpr std::string_view kPngMagic = "\x89PNG\r\n\x1a\n";
constexpr std::string_view kNpyMagic = "\x93NUMPY";

[[noreturn]] void bad_file(const std::string& path, const std::string& why) {
  throw UsageError(fmt::format("the images '{}' {}", path, why));
}

/// The whole of `path`, which must be a regular file (a FIFO would never end).
std::string read_bytes(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec) bad_file(path, "cannot be read: " + ec.message());
  if (!std::filesystem::is_regular_file(status)) bad_file(path, "are not a regular file");
  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (!f.good() && !f.eof()) bad_file(path, "cannot be read");
  return bytes;
}

/// How many images an array of shape `dims` holds: [28, 28] is one, [n, 28, 28] and
/// [n, 28, 28, 1] are n.
std::int64_t image_count(const std::string& path, const std::vector<std::int64_t>& dims) {
  const auto is_images = [&](std::size_t first) {
    return dims.size() - first >= 2 && dims[first] == kSide && dims[first + 1] == kSide &&
           (dims.size() - first == 2 || dims[first + 2] == 1);
  };
  if (dims.size() == 2 && is_images(0)) return 1;
  if ((dims.size() == 3 || dims.size() == 4) && is_images(1)) return dims[0];
  bad_file(path, fmt::format("hold an array of shape ({}), not 28x28 images: the shapes taken are "
                             "(28, 28), (n, 28, 28) and (n, 28, 28, 1)",
                             fmt::join(dims, ", ")));
}

/// `values` (n images, row-major) as float32 [n, 28, 28, 1] in [0, 1]: pixels (0..255) are
/// divided by 255, other values are taken as they are and must be in [0, 1] already.
Tensor images_of(const std::string& path, std::vector<float> values, std::int64_t n, bool pixels) {
  const float top = pixels ? 255.0f : 1.0f;
  const auto outside =
      std::find_if(values.begin(), values.end(), [&](float v) { return !(v >= 0 && v <= top); });
  if (outside != values.end())
    bad_file(path, fmt::format("hold the value {} at element {}: {} are in [0, {}]", *outside,
                               outside - values.begin(), pixels ? "pixels" : "the images' values", top));
  if (pixels)
    for (float& v : values) v /= 255.0f;
  return constant(values, Shape({n, kSide, kSide, 1}));
}

Tensor read_idx_images(const std::string& path) {
  Tensor t;
  try {
    t = data::read_idx(path);
  } catch (const Error& e) {
    bad_file(path, fmt::format("are not a readable IDX file: {}", e.what()));
  }
  const auto dims = t.shape().dims();
  const std::int64_t n = image_count(path, {dims.begin(), dims.end()});
  // read_idx returns the integer types (uint8 pixels among them) as int32.
  return images_of(path, cast(t, DType::Float32).to_vector<float>(), n, t.dtype() == DType::Int32);
}

// --- PNG --------------------------------------------------------------------------------------

Tensor read_png_images(const std::string& path, const std::string& bytes) {
  struct Reader {
    std::string_view rest;
  } reader{bytes};
  const auto read = [](void* closure, unsigned char* data, unsigned int length) {
    auto* r = static_cast<Reader*>(closure);
    if (r->rest.size() < length) return CAIRO_STATUS_READ_ERROR;
    std::memcpy(data, r->rest.data(), length);
    r->rest.remove_prefix(length);
    return CAIRO_STATUS_SUCCESS;
  };
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> png(
      cairo_image_surface_create_from_png_stream(read, &reader), &cairo_surface_destroy);
  if (const cairo_status_t status = cairo_surface_status(png.get()); status != CAIRO_STATUS_SUCCESS)
    bad_file(path, fmt::format("are not a PNG image that can be read: {}", cairo_status_to_string(status)));
  const int width = cairo_image_surface_get_width(png.get()),
            height = cairo_image_surface_get_height(png.get());
  if (width != kSide || height != kSide)
    bad_file(path, fmt::format("are a {}x{} image, not 28x28", width, height));
  // Painted onto black ARGB32 whatever the PNG's own format (grey, 16 bits, ...): one layout to read.
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> argb(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, width, height), &cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> cr(cairo_create(argb.get()), &cairo_destroy);
  cairo_set_source_surface(cr.get(), png.get(), 0, 0);
  cairo_paint(cr.get());
  cairo_surface_flush(argb.get());
  const unsigned char* data = cairo_image_surface_get_data(argb.get());
  const int stride = cairo_image_surface_get_stride(argb.get());
  std::vector<float> grey;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      std::uint32_t pixel = 0;  // premultiplied 0xAARRGGBB: transparent is black
      std::memcpy(&pixel, data + y * stride + 4 * x, 4);
      const double r = (pixel >> 16) & 0xFF, g = (pixel >> 8) & 0xFF, b = pixel & 0xFF;
      grey.push_back(static_cast<float>(std::round(0.299 * r + 0.587 * g + 0.114 * b)));
    }
  return images_of(path, std::move(grey), 1, /*pixels=*/true);
}

// --- NumPy .npy -------------------------------------------------------------------------------

/// The text after `'key':` in a .npy header (a Python dict literal), spaces skipped.
std::string_view npy_value(const std::string& path, std::string_view header, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  std::size_t at = header.find(quoted);
  if (at == std::string_view::npos) bad_file(path, fmt::format("have a .npy header without '{}'", key));
  at = header.find_first_not_of(" :", at + quoted.size());
  return at == std::string_view::npos ? std::string_view() : header.substr(at);
}

std::vector<std::int64_t> npy_shape(const std::string& path, std::string_view header) {
  std::string_view text = npy_value(path, header, "shape");
  const std::size_t close = text.find(')');
  if (text.empty() || text[0] != '(' || close == std::string_view::npos)
    bad_file(path, "have a .npy header whose 'shape' is not a tuple");
  text = text.substr(1, close - 1);
  std::vector<std::int64_t> dims;
  while (!text.empty()) {
    const std::size_t comma = std::min(text.find(','), text.size());
    std::string_view item = text.substr(0, comma);
    item.remove_prefix(std::min(item.find_first_not_of(' '), item.size()));
    item = item.substr(0, item.find_last_not_of(' ') + 1);
    std::int64_t d = -1;
    if (!item.empty()) {
      const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), d);
      if (ec != std::errc() || end != item.data() + item.size() || d < 0)
        bad_file(path, fmt::format("have a .npy header whose shape holds '{}', not a size", item));
      dims.push_back(d);
    }
    text.remove_prefix(std::min(comma + 1, text.size()));
  }
  return dims;
}

Tensor read_npy_images(const std::string& path, const std::string& bytes) {
  static_assert(std::endian::native == std::endian::little, "the .npy reader copies little-endian values");
  // Magic, version (major, minor), header length (2 bytes in version 1, 4 in 2 and 3), header.
  if (bytes.size() < 10) bad_file(path, "are a .npy file cut short in its header");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    bad_file(path, fmt::format("are a .npy file of version {}, not 1, 2 or 3", major));
  const std::size_t length_size = major == 1 ? 2 : 4;
  std::uint64_t header_length = 0;
  if (bytes.size() < 8 + length_size) bad_file(path, "are a .npy file cut short in its header");
  for (std::size_t i = 0; i < length_size; ++i)
    header_length |= std::uint64_t{static_cast<unsigned char>(bytes[8 + i])} << (8 * i);
  const std::uint64_t data_start = 8 + length_size + header_length;
  if (data_start > bytes.size()) bad_file(path, "are a .npy file cut short in its header");
  const std::string_view header = std::string_view(bytes).substr(8 + length_size, header_length);

  const std::string_view fortran = npy_value(path, header, "fortran_order");
  if (fortran.starts_with("True"))
    bad_file(path, "hold an array in Fortran order: save it in C order (numpy.ascontiguousarray)");
  std::string_view descr = npy_value(path, header, "descr");
  if (descr.size() < 2 || (descr[0] != '\'' && descr[0] != '"') ||
      descr.find(descr[0], 1) == std::string_view::npos)
    bad_file(path, "have a .npy header whose 'descr' is not a string");
  descr = descr.substr(1, descr.find(descr[0], 1) - 1);
  const std::vector<std::int64_t> dims = npy_shape(path, header);
  const std::int64_t n = image_count(path, dims);

  const std::size_t item_size = descr == "|u1" ? 1 : descr == "<f4" ? 4 : descr == "<f8" ? 8 : 0;
  if (item_size == 0)
    bad_file(path, fmt::format("hold dtype '{}': the dtypes taken are '|u1' (pixels 0..255), '<f4' and "
                               "'<f8' (values in [0, 1])",
                               descr));
  const std::uint64_t count = static_cast<std::uint64_t>(n) * kSide * kSide;
  const std::uint64_t data_size = bytes.size() - data_start;
  if (data_size != count * item_size)
    bad_file(path, fmt::format("hold {} bytes of data where shape ({}) of '{}' needs {}", data_size,
                               fmt::join(dims, ", "), descr, count * item_size));
  const char* data = bytes.data() + data_start;
  std::vector<float> values(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    if (item_size == 1) {
      values[i] = static_cast<unsigned char>(data[i]);
    } else if (item_size == 4) {
      std::memcpy(&values[i], data + 4 * i, 4);
    } else {
      double v = 0;
      std::memcpy(&v, data + 8 * i, 8);
      values[i] = static_cast<float>(v);
    }
  }
  return images_of(path, std::move(values), n, /*pixels=*/item_size == 1);
}

}  // namespace

Tensor read_images(const std::string& path) {
  const std::string bytes = read_bytes(path);
  const std::string_view head = bytes;
  if (head.starts_with(kPngMagic)) return read_png_images(path, bytes);
  if (head.starts_with(kNpyMagic)) return read_npy_images(path, bytes);
  // IDX files start with two zero bytes; gzip's magic is 1f 8b (read_idx reads both).
  if (head.starts_with(std::string_view("\0\0", 2)) || head.starts_with("\x1f\x8b"))
    return read_idx_images(path);
  bad_file(path, "are not an IDX, PNG or NumPy .npy file (their first bytes are none of those formats')");
}

}  // namespace tapeflow::cli
