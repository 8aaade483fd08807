// LineReader: a FILE* over a descriptor opened as a regular file (io/file_util.h).

#include "data/line_reader.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/check.h"
#include "io/file_util.h"

namespace tapeflow::data {

LineReader::LineReader(std::string path, std::string_view op) : path_(std::move(path)), op_(op) {
  const detail::OpenRegularFile f =
      detail::open_regular_file<FailedPreconditionError>(path_, op_, "text file");
  file_ = ::fdopen(f.fd, "rb");  // owns the descriptor from here
  if (file_ == nullptr) {
    const int error = errno;
    ::close(f.fd);
    throw FailedPreconditionError(fmt::format("[{}] cannot read '{}': {}", op_, path_, std::strerror(error)));
  }
}

LineReader::~LineReader() {
  if (file_) std::fclose(file_);
}

std::optional<std::string> LineReader::next() {
  char* buffer = nullptr;
  std::size_t capacity = 0;
  errno = 0;
  const ssize_t got = ::getline(&buffer, &capacity, file_);  // the line and its '\n', if any
  std::string line = got > 0 ? std::string(buffer, static_cast<std::size_t>(got)) : std::string();
  std::free(buffer);
  if (got < 0) {
    TAPEFLOW_REQUIRE(!std::ferror(file_), FailedPreconditionError, "[{}] cannot read '{}': {}", op_, path_,
                     std::strerror(errno));
    return std::nullopt;
  }
  line_offset_ = offset_;
  offset_ += line.size();
  ++line_number_;
  if (!line.empty() && line.back() == '\n') line.pop_back();
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace tapeflow::data
