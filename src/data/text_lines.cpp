// Dataset.text_line_dataset: a text file's lines as int32 tensors of Unicode code points (tapeflow
// has no string dtype), decoded from strict UTF-8.

#include <memory>

#include "core/check.h"
#include "data/line_reader.h"
#include "data/node.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::data {
namespace {

constexpr std::string_view kOp = "Dataset.text_line_dataset";

// The code points of `line`, or the index of the first byte that does not start a well-formed
// UTF-8 sequence (RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF).
struct Decoded {
  std::vector<std::int32_t> code_points;
  std::optional<std::size_t> bad_byte;
};

Decoded decode_utf8(std::string_view line) {
  Decoded out;
  std::size_t i = 0;
  while (i < line.size()) {
    const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(line[k]); };
    const std::uint8_t b0 = byte(i);
    int length = 0;
    std::uint32_t cp = 0, min = 0;
    if (b0 < 0x80) {
      length = 1, cp = b0;
    } else if ((b0 & 0xE0) == 0xC0) {
      length = 2, cp = b0 & 0x1Fu, min = 0x80;
    } else if ((b0 & 0xF0) == 0xE0) {
      length = 3, cp = b0 & 0x0Fu, min = 0x800;
    } else if ((b0 & 0xF8) == 0xF0) {
      length = 4, cp = b0 & 0x07u, min = 0x10000;
    } else {
      out.bad_byte = i;
      return out;
    }
    if (i + static_cast<std::size_t>(length) > line.size()) {
      out.bad_byte = i;
      return out;
    }
    for (int k = 1; k < length; ++k) {
      const std::uint8_t b = byte(i + static_cast<std::size_t>(k));
      if ((b & 0xC0) != 0x80) {
        out.bad_byte = i;
        return out;
      }
      cp = (cp << 6) | (b & 0x3Fu);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      out.bad_byte = i;
      return out;
    }
    out.code_points.push_back(static_cast<std::int32_t>(cp));
    i += static_cast<std::size_t>(length);
  }
  return out;
}

class TextLinesIterator final : public detail::NodeIterator {
 public:
  explicit TextLinesIterator(const std::string& path) : path_(path) {}

  std::optional<Element> next() override {
    std::optional<std::string> line = reader().next();
    if (!line) return std::nullopt;
    Decoded d = decode_utf8(*line);
    TAPEFLOW_REQUIRE(
        !d.bad_byte, DataLossError,
        "[{}] '{}' is not UTF-8 at byte offset {} (line {}): byte 0x{:02X} does not start a valid "
        "sequence",
        kOp, path_, reader_->line_offset() + *d.bad_byte, reader_->line_number(),
        static_cast<std::uint8_t>((*line)[*d.bad_byte]));
    return Element{constant(d.code_points)};
  }

  // Lines are passed over without being decoded.
  std::int64_t skip(std::int64_t n) override {
    std::int64_t skipped = 0;
    while (skipped < n && reader().next()) ++skipped;
    return skipped;
  }

 private:
  // Opened at the first next() or skip(), where TensorFlow reports a missing file too.
  LineReader& reader() {
    if (!reader_) reader_ = std::make_unique<LineReader>(path_, kOp);
    return *reader_;
  }

  const std::string& path_;
  std::unique_ptr<LineReader> reader_;
};

class TextLines final : public detail::DatasetNode {
 public:
  explicit TextLines(std::string path) : path_(std::move(path)) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t) const override {
    return std::make_unique<TextLinesIterator>(path_);
  }
  std::int64_t cardinality() const override { return kUnknownCardinality; }

 private:
  std::string path_;
};

}  // namespace

Dataset Dataset::text_line_dataset(const std::string& path) {
  return Dataset(std::make_shared<TextLines>(path));
}

}  // namespace tapeflow::data
