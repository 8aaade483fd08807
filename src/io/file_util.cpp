// Shared by the checkpoint and function-file writers and readers (file_util.h).

#include "io/file_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "core/check.h"
#include "io/checkpoint_testing.h"

namespace tapeflow::detail {
namespace {

std::atomic<std::int64_t> g_write_fault_after{-1};

std::string errno_text(int err) { return std::strerror(err); }

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

// The temporary file a write by process `pid` makes before renaming it over `path`.
std::string temporary_path(const std::string& path, pid_t pid) { return fmt::format("{}.tmp.{}", path, pid); }

// Removes the temporaries of earlier writes of `path` whose process is dead (a write killed midway
// leaves one): only files named exactly `<name>.tmp.<pid>` for this path, only regular files, and
// only when kill(pid, 0) says no such process exists, so a live writer's temporary survives
// (and so does one whose pid was reused: it is merely kept until a later write). Best effort: a
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

// Writes `parts` to this process's temporary file beside `path`, syncs it and renames it over
// `path`; on failure removes the temporary and throws FailedPreconditionError.
//
// The bytes go to a file without a name (O_TMPFILE in the directory of `path`), which is linked
// as the temporary only once written and synced, just before the rename: a process killed while
// writing leaves nothing behind. Where the file system has no O_TMPFILE (or /proc, through which
// an unnamed file is linked without privileges), the temporary is named from the start.
void write_temporary_and_rename(const std::string& path, std::string_view fn, std::string_view noun,
                                const std::vector<std::span<const unsigned char>>& parts) {
  remove_stale_temporaries(path);
  const std::string tmp = temporary_path(path, ::getpid());
  auto fail = [&](std::string_view step, int err) -> FailedPreconditionError {
    ::unlink(tmp.c_str());
    return FailedPreconditionError(fmt::format("[{}] cannot write {} '{}': {} '{}' failed: {}", fn, noun,
                                               path, step, tmp, errno_text(err)));
  };

  Fd fd;
  if (::access("/proc/self/fd", X_OK) == 0)
    fd.fd = ::open(directory_of(path).c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
  const bool unnamed = fd.fd >= 0;
  if (!unnamed) fd.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd.fd < 0) {
    const int err = errno;
    throw FailedPreconditionError(
        fmt::format("[{}] cannot write {} '{}': creating the temporary file '{}' "
                    "failed: {}",
                    fn, noun, path, tmp, errno_text(err)));
  }
  std::int64_t written = 0;
  for (const std::span<const unsigned char> part : parts) {
    if (int err = write_all(fd.fd, part.data(), part.size(), written)) {
      ::close(fd.release());
      throw fail("writing", err);
    }
  }
  if (::fsync(fd.fd) != 0) {
    const int err = errno;
    ::close(fd.release());
    throw fail("fsync of", err);
  }
  if (unnamed) {
    ::unlink(tmp.c_str());  // this process's name: left only by a dead process that had our pid
    const std::string self = fmt::format("/proc/self/fd/{}", fd.fd);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      const int err = errno;
      ::close(fd.release());
      throw fail("linking", err);
    }
  }
  if (::close(fd.release()) != 0) throw fail("closing", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw fail("renaming", errno);
}

// Makes the rename durable. The new file is already in place; a failure here means only that it
// might not survive a crash.
void sync_directory(const std::string& path, std::string_view fn, std::string_view noun) {
  const std::string dir = directory_of(path);
  Fd dfd;
  dfd.fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  TAPEFLOW_REQUIRE(dfd.fd >= 0 && ::fsync(dfd.fd) == 0, FailedPreconditionError,
                   "[{}] {} '{}' was written, but syncing its directory '{}' failed ({}); it may not "
                   "survive a crash",
                   fn, noun, path, dir, errno_text(errno));
}

}  // namespace

void set_checkpoint_write_fault(std::int64_t fail_after_bytes) {
  g_write_fault_after.store(fail_after_bytes);
}

std::uint32_t crc32_of(const void* data, std::size_t n, std::uint32_t crc) {
  return static_cast<std::uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), n));
}

template <class E>
OpenRegularFile open_regular_file(const std::string& path, std::string_view fn, std::string_view noun) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever. The type
  // is checked on the open descriptor (no race with a rename), then reads block as usual.
  // (TAPEFLOW_REQUIRE names its error class in namespace tapeflow; E is a template parameter.)
  Fd fd{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (fd.fd < 0)
    throw E(fmt::format("[{}] cannot open {} '{}' for reading: {}", fn, noun, path, errno_text(errno)));
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0)
    throw E(fmt::format("[{}] cannot stat {} '{}': {}", fn, noun, path, errno_text(errno)));
  if (!S_ISREG(st.st_mode))
    throw E(
        fmt::format("[{}] {} '{}' is {}, not a regular file", fn, noun, path, file_type_name(st.st_mode)));
  if (::fcntl(fd.fd, F_SETFL, 0) != 0)
    throw E(fmt::format("[{}] cannot read {} '{}': {}", fn, noun, path, errno_text(errno)));
  return OpenRegularFile{fd.release(), static_cast<std::uint64_t>(st.st_size)};
}

template OpenRegularFile open_regular_file<InvalidArgumentError>(const std::string&, std::string_view,
                                                                 std::string_view);
template OpenRegularFile open_regular_file<FailedPreconditionError>(const std::string&, std::string_view,
                                                                    std::string_view);

ReadOnlyFile::ReadOnlyFile(const std::string& path, std::string_view fn, std::string_view noun) {
  const OpenRegularFile f = open_regular_file<InvalidArgumentError>(path, fn, noun);
  fd_ = f.fd;
  size_ = f.size;
}

ReadOnlyFile::~ReadOnlyFile() {
  if (fd_ >= 0) ::close(fd_);
}

bool ReadOnlyFile::read_at(void* out, std::size_t n, std::uint64_t offset) const {
  auto* p = static_cast<char*>(out);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
  return true;
}

void check_writable_file_path(const std::string& path, std::string_view fn, std::string_view noun) {
  TAPEFLOW_REQUIRE(!path.empty(), InvalidArgumentError, "[{}] the {} path is empty", fn, noun);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    // rename() would replace whatever is there: a device, a FIFO, a symbolic link (not its target).
    TAPEFLOW_REQUIRE(S_ISREG(st.st_mode), FailedPreconditionError,
                     "[{}] cannot write {} '{}': it is {}; a {} replaces only a regular file (or is created "
                     "where nothing is)",
                     fn, noun, path, file_type_name(st.st_mode), noun);
  } else {
    // ENOENT, ENOTDIR: nothing there; the directory checks below say what is wrong with it.
    const int err = errno;
    TAPEFLOW_REQUIRE(err == ENOENT || err == ENOTDIR, FailedPreconditionError,
                     "[{}] cannot write {} '{}': {}", fn, noun, path, errno_text(err));
  }
  const std::string dir = directory_of(path);
  struct stat dir_st {};
  TAPEFLOW_REQUIRE(::stat(dir.c_str(), &dir_st) == 0, FailedPreconditionError,
                   "[{}] cannot write {} '{}': its directory '{}' does not exist ({})", fn, noun, path, dir,
                   errno_text(errno));
  TAPEFLOW_REQUIRE(S_ISDIR(dir_st.st_mode), FailedPreconditionError,
                   "[{}] cannot write {} '{}': '{}' is not a directory", fn, noun, path, dir);
  TAPEFLOW_REQUIRE(::access(dir.c_str(), W_OK | X_OK) == 0, FailedPreconditionError,
                   "[{}] cannot write {} '{}': its directory '{}' is not writable ({})", fn, noun, path, dir,
                   errno_text(errno));
}

void write_file_atomically(const std::string& path, std::string_view fn, std::string_view noun,
                           const std::vector<std::span<const unsigned char>>& parts) {
  // One write at a time in this process, so two threads never share the temporary file.
  static std::mutex write_mutex;
  std::lock_guard lock(write_mutex);
  write_temporary_and_rename(path, fn, noun, parts);
  sync_directory(path, fn, noun);
}

}  // namespace tapeflow::detail
