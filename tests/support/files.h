#pragma once
// Reading and writing whole files as bytes in tests, to truncate, flip or forge what a writer
// saved:
//
//   std::vector<unsigned char> b = read_bytes(path);
//   b[12] ^= 0x01;
//   write_bytes(path, b);

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace tapeflow::testing {

/// The bytes of the file at `p` (none when it cannot be read).
inline std::vector<unsigned char> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Replaces the file at `p` with `bytes`.
inline void write_bytes(const std::filesystem::path& p, const std::vector<unsigned char>& bytes) {
  // NOTE: remove, then create: truncating a file in place makes ext4 (auto_da_alloc) flush it to
  // disk on close, which costs milliseconds in the tests' loops over every truncation and byte.
  std::filesystem::remove(p);
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace tapeflow::testing
