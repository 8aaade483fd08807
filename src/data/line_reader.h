#pragma once
// Reading a text file line by line, for from_csv and text_line_dataset: lines without their "\n"
// or "\r\n", with the line's number and byte offset for error messages.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

namespace tapeflow::data {

class LineReader {
 public:
  /// Opens `path`, a regular file (a FIFO or directory is refused at once). Throws
  /// FailedPreconditionError "[op] cannot open text file 'path' for reading: <reason>".
  LineReader(std::string path, std::string_view op);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  /// The next line, std::nullopt at the end of the file (a final "\n" ends the last line, it
  /// does not start an empty one). Throws FailedPreconditionError on a read error.
  std::optional<std::string> next();
  /// The number (from 1) and byte offset of the line next() returned last.
  std::int64_t line_number() const { return line_number_; }
  std::uint64_t line_offset() const { return line_offset_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::string op_;
  std::FILE* file_ = nullptr;
  std::int64_t line_number_ = 0;
  std::uint64_t line_offset_ = 0;
  std::uint64_t offset_ = 0;  // of the next line
};

}  // namespace tapeflow::data
