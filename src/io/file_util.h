#pragma once
// What the two file formats tapeflow writes (checkpoints, docs/CHECKPOINT_FORMAT.md; exported
// functions, docs/FUNCTION_FORMAT.md) share: zlib's CRC-32, reading only regular files, and
// atomic writes (temporary file, fsync, rename, fsync of the directory). Messages name the
// caller (`fn`, as "[fn]") and what the file is (`noun`: "checkpoint", "function file").

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tapeflow::detail {

/// CRC-32 of `n` bytes: zlib's crc32 (ISO-HDLC polynomial 0xEDB88320, reflected, initial and final
/// XOR 0xFFFFFFFF). `crc` continues an earlier checksum (0 starts one).
std::uint32_t crc32_of(const void* data, std::size_t n, std::uint32_t crc = 0);

/// A descriptor open for reading on a regular file, and the file's size when it was opened.
struct OpenRegularFile {
  int fd = -1;
  std::uint64_t size = 0;
};

/// Opens `path` for reading if it is a regular file. Opening uses O_NONBLOCK, so a FIFO with no
/// writer does not wait forever, and the type is checked on the open descriptor (no race with a
/// rename); the descriptor returned reads blocking, and the caller closes it. Throws `E` (an
/// Error class; InvalidArgumentError and FailedPreconditionError are instantiated): "[fn] cannot
/// open <noun> 'path' for reading: <reason>", or "[fn] <noun> 'path' is a FIFO (named pipe), not
/// a regular file" (a directory, a device, ...).
template <class E>
OpenRegularFile open_regular_file(const std::string& path, std::string_view fn, std::string_view noun);

/// A regular file open for reading. Opening uses O_NONBLOCK and checks the type on the open
/// descriptor, so a FIFO, device or directory is refused at once (InvalidArgumentError
/// "[fn] <noun> 'path' is a FIFO (named pipe), not a regular file"); a file that cannot be opened
/// is InvalidArgumentError with the system's reason.
class ReadOnlyFile {
 public:
  ReadOnlyFile(const std::string& path, std::string_view fn, std::string_view noun);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  /// The size when the file was opened.
  std::uint64_t size() const { return size_; }
  /// Reads exactly `n` bytes at `offset`; false on a short read (the file shrank) or an error.
  bool read_at(void* out, std::size_t n, std::uint64_t offset) const;

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

/// Checks that a file may be written at `path`: it is a regular file or nothing (rename would
/// replace a directory entry of any other type: a directory, device, FIFO, socket or symbolic
/// link), and its directory exists and is writable. FailedPreconditionError otherwise; an empty
/// path is InvalidArgumentError.
void check_writable_file_path(const std::string& path, std::string_view fn, std::string_view noun);

/// Writes `parts`, back to back, to an unnamed file beside `path` (O_TMPFILE, so a process killed
/// while writing leaves nothing; a named one where the file system lacks it), fsyncs it, links it
/// as `path + ".tmp.<pid>"`, renames that over `path` and fsyncs the directory, after removing the
/// temporaries of earlier writes to `path` whose process is dead. On failure the temporary is removed, the
/// file previously at `path` is untouched, and FailedPreconditionError names the path, the step and the
/// system's reason. One write at a time in the process, so two threads never share a temporary file. The
/// caller checks the path first (check_writable_file_path).
void write_file_atomically(const std::string& path, std::string_view fn, std::string_view noun,
                           const std::vector<std::span<const unsigned char>>& parts);

}  // namespace tapeflow::detail
