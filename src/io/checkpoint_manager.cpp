// CheckpointManager: numbered checkpoints in a directory and the index file that lists them.
//
// The index ("<directory>/checkpoint", docs/CHECKPOINT_FORMAT.md) is a short text file:
//
//   tapeflow checkpoint index 1
//   ckpt-4
//   ckpt-5
//   crc32 8f1c02d3
//
// the kept checkpoints' file names, oldest first, then the CRC-32 of every byte before the last
// line. A save writes the checkpoint, then the index, each atomically (io/file_util.h), and only
// then deletes the checkpoints the new index dropped: whatever step a crash interrupts, the
// index names only complete files. The reader checks every line, so a damaged index is a
// DataLossError naming it, never a wrong list.

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <system_error>
#include <vector>

#include "core/check.h"
#include "io/file_util.h"
#include "tapeflow/checkpoint.h"
#include "tapeflow/logging.h"

namespace tapeflow {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kFn = "CheckpointManager";
constexpr std::string_view kIndexFileName = "checkpoint";
constexpr std::string_view kIndexHeader = "tapeflow checkpoint index 1";
constexpr std::string_view kCrcPrefix = "crc32 ";
// An index lists a few file names; a bigger file is not one (and is not read into memory).
constexpr std::uint64_t kMaxIndexSize = 1 << 20;
constexpr std::size_t kMaxFileNameLength = 255;

// Why `name` cannot be a checkpoint's file name in the directory, or "" if it can.
std::string_view file_name_problem(std::string_view name) {
  if (name.empty()) return "it is empty";
  if (name.size() > kMaxFileNameLength) return "it is longer than 255 bytes";
  if (name == "." || name == "..") return "it names a directory";
  if (name == kIndexFileName) return "it is the index's own name";
  for (char c : name) {
    if (c == '/') return "it holds '/'";
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "it holds a control character";
  }
  return "";
}

// The file names an index lists, oldest first. Throws DataLossError naming `path` when the file
// is not an index this version writes, or is damaged.
std::vector<std::string> parse_index(const std::string& text, const std::string& path) {
  const auto corrupt = [&](std::string_view what) {
    return DataLossError(
        fmt::format("[{}] checkpoint index '{}' ({} bytes) is corrupt: {}", kFn, path, text.size(), what));
  };
  if (text.empty() || text.back() != '\n') throw corrupt("it does not end with a newline (truncated?)");
  std::vector<std::string_view> lines;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t end = text.find('\n', at);
    lines.emplace_back(text.data() + at, end - at);
    at = end + 1;
  }
  if (lines.front() != kIndexHeader) throw corrupt(fmt::format("the first line is not \"{}\"", kIndexHeader));
  if (lines.size() < 2 || !lines.back().starts_with(kCrcPrefix))
    throw corrupt("the last line is not its checksum (\"crc32 <8 lower-case hex digits>\")");
  const std::string_view hex = lines.back().substr(kCrcPrefix.size());
  // Lower case only, as written: a flipped case bit must not pass as the same checksum.
  const auto lower_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
  if (hex.size() != 8 || !std::ranges::all_of(hex, lower_hex))
    throw corrupt(fmt::format("the checksum \"{}\" is not 8 lower-case hex digits", hex));
  std::uint32_t stored = 0;
  std::from_chars(hex.data(), hex.data() + hex.size(), stored, 16);
  const std::size_t checked = text.size() - lines.back().size() - 1;
  const std::uint32_t actual = detail::crc32_of(text.data(), checked);
  if (stored != actual)
    throw corrupt(fmt::format("checksum mismatch (stored {:08x}, computed {:08x})", stored, actual));
  std::vector<std::string> names;
  for (std::size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::string_view problem = file_name_problem(lines[i]);
    if (!problem.empty())
      throw corrupt(fmt::format("line {} is not a checkpoint's file name: {}", i + 1, problem));
    if (std::ranges::find(names, lines[i]) != names.end())
      throw corrupt(fmt::format("line {}: '{}' is listed twice", i + 1, lines[i]));
    names.emplace_back(lines[i]);
  }
  return names;
}

// The index at `path`, or nothing when there is no file there.
std::vector<std::string> read_index(const std::string& path) {
  std::error_code ec;
  // Only "not found" means no index; any other failure to look is reported by opening it.
  if (fs::symlink_status(path, ec).type() == fs::file_type::not_found) return {};
  const detail::ReadOnlyFile file(path, kFn, "checkpoint index");
  if (file.size() > kMaxIndexSize)
    throw DataLossError(
        fmt::format("[{}] checkpoint index '{}' ({} bytes) is corrupt: an index is at most {} bytes", kFn,
                    path, file.size(), kMaxIndexSize));
  std::string text(static_cast<std::size_t>(file.size()), '\0');
  if (!file.read_at(text.data(), text.size(), 0))
    throw DataLossError(
        fmt::format("[{}] cannot read checkpoint index '{}' (was it truncated while reading?)", kFn, path));
  return parse_index(text, path);
}

// The number N of a file name "<prefix>-N", if it has that form.
std::optional<std::int64_t> number_of(std::string_view file_name, std::string_view prefix) {
  if (!file_name.starts_with(prefix) || file_name.size() <= prefix.size() + 1 ||
      file_name[prefix.size()] != '-')
    return std::nullopt;
  const std::string_view digits = file_name.substr(prefix.size() + 1);
  std::int64_t n = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (ec != std::errc() || end != digits.data() + digits.size() || n < 0) return std::nullopt;
  return n;
}

}  // namespace

CheckpointManager::CheckpointManager(Checkpoint& checkpoint, std::string directory,
                                     CheckpointManagerOptions options)
    : checkpoint_(checkpoint), directory_(std::move(directory)), options_(std::move(options)) {
  TAPEFLOW_REQUIRE(!options_.max_to_keep || *options_.max_to_keep >= 1, InvalidArgumentError,
                   "[{}] max_to_keep must be at least 1 (std::nullopt keeps every checkpoint), got {}", kFn,
                   options_.max_to_keep.value_or(0));
  const std::string_view problem = file_name_problem(options_.checkpoint_name);
  TAPEFLOW_REQUIRE(problem.empty(), InvalidArgumentError,
                   "[{}] checkpoint_name '{}' cannot start a file name: {}", kFn, options_.checkpoint_name,
                   problem);
  TAPEFLOW_REQUIRE(!directory_.empty(), InvalidArgumentError, "[{}] the directory is empty", kFn);
  std::error_code ec;
  fs::create_directories(directory_, ec);
  TAPEFLOW_REQUIRE(!ec, FailedPreconditionError, "[{}] cannot create directory '{}': {}", kFn, directory_,
                   ec.message());
  TAPEFLOW_REQUIRE(fs::is_directory(directory_, ec), FailedPreconditionError, "[{}] '{}' is not a directory",
                   kFn, directory_);
  kept_ = read_index(path_of(std::string(kIndexFileName)));
}

std::string CheckpointManager::path_of(const std::string& file_name) const {
  return (fs::path(directory_) / file_name).string();
}

void CheckpointManager::write_index(const std::vector<std::string>& kept) const {
  std::string text = fmt::format("{}\n", kIndexHeader);
  for (const std::string& name : kept) text += name + "\n";
  text += fmt::format("{}{:08x}\n", kCrcPrefix, detail::crc32_of(text.data(), text.size()));
  const std::string path = path_of(std::string(kIndexFileName));
  detail::check_writable_file_path(path, kFn, "checkpoint index");
  detail::write_file_atomically(
      path, kFn, "checkpoint index",
      {std::span(reinterpret_cast<const unsigned char*>(text.data()), text.size())});
}

std::string CheckpointManager::save(std::optional<std::int64_t> number) {
  TAPEFLOW_REQUIRE(!number || *number >= 0, InvalidArgumentError,
                   "[{}] a checkpoint number must be >= 0, got {}", kFn, number.value_or(0));
  if (!number) {
    number = 1;
    for (const std::string& name : kept_)
      if (auto n = number_of(name, options_.checkpoint_name)) number = std::max(*number, *n + 1);
  }
  const std::string file_name = fmt::format("{}-{}", options_.checkpoint_name, *number);
  const std::string path = path_of(file_name);
  checkpoint_.write(path);

  std::vector<std::string> kept = kept_;
  std::erase(kept, file_name);  // saved again: now the newest
  kept.push_back(file_name);
  std::vector<std::string> dropped;
  if (options_.max_to_keep && kept.size() > static_cast<std::size_t>(*options_.max_to_keep)) {
    const auto excess = static_cast<std::ptrdiff_t>(kept.size()) - *options_.max_to_keep;
    dropped.assign(kept.begin(), kept.begin() + excess);
    kept.erase(kept.begin(), kept.begin() + excess);
  }
  write_index(kept);
  kept_ = std::move(kept);
  for (const std::string& name : dropped) {
    std::error_code ec;
    // The index no longer lists it, so a file that will not go is only disk space: say so.
    if (!fs::remove(path_of(name), ec) && ec)
      log(LogLevel::Warning,
          fmt::format("[{}] cannot delete old checkpoint '{}': {}", kFn, path_of(name), ec.message()));
  }
  return path;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  if (kept_.empty()) return std::nullopt;
  return path_of(kept_.back());
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> out;
  out.reserve(kept_.size());
  for (const std::string& name : kept_) out.push_back(path_of(name));
  return out;
}

std::optional<CheckpointLoadStatus> CheckpointManager::restore_or_initialize(
    const std::function<void()>& initialize) {
  if (const std::optional<std::string> latest = latest_checkpoint()) return checkpoint_.restore(*latest);
  if (initialize) initialize();
  return std::nullopt;
}

}  // namespace tapeflow
