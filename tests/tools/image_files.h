#pragma once
// Writing the image files `tapeflow predict MODEL.tfn FILE...` reads (tools/cli/images.h), for the
// tests of tests/tools/: 28x28 grey pixels as an IDX file, a NumPy .npy array or PNG images.
//
//   const std::vector<std::uint8_t> pixels = ...;          // n * 28 * 28
//   write_npy(dir / "a.npy", "|u1", "(2, 28, 28)", bytes_of(pixels));

#include <cairo.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <vector>

#include "support/files.h"

namespace tapeflow::testing {

/// The bytes of `values`, as they lie in memory (little-endian here, as .npy's '<' says).
template <class T>
std::vector<unsigned char> bytes_of(const std::vector<T>& values) {
  std::vector<unsigned char> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

/// A .npy file (format version 1.0) of dtype `descr` ('|u1', '<f4', ...) and shape `shape` (a
/// Python tuple such as "(2, 28, 28)") holding `data`; `fortran_order` as the header says.
inline void write_npy(const std::filesystem::path& path, const std::string& descr, const std::string& shape,
                      const std::vector<unsigned char>& data, bool fortran_order = false) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': " + (fortran_order ? "True" : "False") +
                       ", 'shape': " + shape + ", }";
  header.append(63 - (10 + header.size()) % 64, ' ');  // the data start at a multiple of 64
  header += '\n';
  std::vector<unsigned char> bytes;
  bytes.reserve(10 + header.size() + data.size());
  for (const unsigned char c : std::initializer_list<unsigned char>{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0})
    bytes.push_back(c);                                               // the magic and version 1.0
  bytes.push_back(static_cast<unsigned char>(header.size() & 0xFF));  // the header's length, little-endian
  bytes.push_back(static_cast<unsigned char>(header.size() >> 8));
  bytes.insert(bytes.end(), header.begin(), header.end());
  bytes.insert(bytes.end(), data.begin(), data.end());
  write_bytes(path, bytes);
}

/// A raw IDX file of uint8 `pixels` with dimensions `dims`.
inline void write_idx(const std::filesystem::path& path, const std::vector<std::uint32_t>& dims,
                      const std::vector<std::uint8_t>& pixels) {
  std::vector<unsigned char> bytes = {0, 0, 0x08, static_cast<unsigned char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<unsigned char>(d >> shift));
  bytes.insert(bytes.end(), pixels.begin(), pixels.end());
  write_bytes(path, bytes);
}

/// A PNG image `width` x `height` (cairo's RGB24) of grey `pixels`, row by row.
inline void write_png(const std::filesystem::path& path, int width, int height,
                      const std::vector<std::uint8_t>& pixels) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::uint32_t p = pixels[static_cast<std::size_t>(y * width + x)];
      const std::uint32_t rgb = p << 16 | p << 8 | p;
      std::memcpy(data + y * stride + 4 * x, &rgb, 4);
    }
  cairo_surface_mark_dirty(surface);
  cairo_surface_write_to_png(surface, path.c_str());
  cairo_surface_destroy(surface);
}

}  // namespace tapeflow::testing
