// Checkpoints: bitwise round trips, refusal of every truncation and bit flip, all-or-nothing
// restore, mismatch errors, and atomic saves that keep the previous checkpoint on failure;
// tf::Checkpoint's restoration of variables created after restore() and its load status.

#include "tapeflow/checkpoint.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "io/checkpoint_testing.h"
#include "support/errors.h"
#include "support/files.h"
#include "support/log_capture.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace fs = std::filesystem;
using ::testing::HasSubstr;
using tf::testing::error_of;
using tf::testing::read_bytes;
using tf::testing::write_bytes;

namespace {

/// The raw bytes of a tensor, to compare values bitwise (NaN payloads and -0.0 included).
std::vector<unsigned char> bytes_of(const tf::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  return {p, p + t.nbytes()};
}

/// Snapshots the variables' values, to check later that nothing changed.
std::vector<std::vector<unsigned char>> snapshot(const tf::NamedVariables& vars) {
  std::vector<std::vector<unsigned char>> out;
  for (const auto& [name, v] : vars) out.push_back(bytes_of(v.value()));
  return out;
}

/// Plain bitwise CRC-32 (the zlib polynomial), to forge files whose index checksum is valid.
std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  std::uint32_t c = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

std::uint64_t get_u64(const std::vector<unsigned char>& b, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(b[at + i]) << (8 * i);
  return v;
}
void put_u64(std::vector<unsigned char>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<unsigned char>(v >> (8 * i));
}
/// Recomputes the header/index checksum after a test edited the index.
void fix_index_crc(std::vector<unsigned char>& b) {
  const std::size_t index_end = 32 + get_u64(b, 24);
  const std::uint32_t c = crc32(b.data(), index_end);
  for (int i = 0; i < 4; ++i) b[index_end + i] = static_cast<unsigned char>(c >> (8 * i));
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tapeflow_ckpt_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    tf::detail::set_checkpoint_write_fault(-1);
    fs::remove_all(dir_);
  }
  std::string path(const std::string& file) const { return (dir_ / file).string(); }
  /// Files in the test directory other than `keep` (leftover temporaries).
  std::vector<std::string> other_files(const std::string& keep) const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename() != keep) out.push_back(e.path().filename().string());
    return out;
  }

  fs::path dir_;
};

/// Three small variables of different dtypes: a ~150-byte checkpoint.
tf::NamedVariables small_vars() {
  return {{"w", tf::Variable(tf::constant({1.5f, -2.f}))},
          {"step", tf::Variable(tf::constant(std::int64_t{7}))},
          {"mask", tf::Variable(tf::constant({true, false, true}))}};
}

TEST_F(CheckpointTest, RoundTripIsBitwiseForEveryDtypeAndShape) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float denorm = std::numeric_limits<float>::denorm_min();
  tf::NamedVariables vars = {
      {"f32",
       tf::Variable(tf::constant(std::vector<float>{1.f, -0.f, inf, -inf, nan, denorm}, tf::Shape{2, 3}))},
      {"f64_scalar", tf::Variable(tf::constant(3.141592653589793))},
      {"i32_empty", tf::Variable(tf::zeros(tf::Shape{0}, tf::int32))},
      {"i64",
       tf::Variable(tf::constant(std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), -1,
                                                           std::numeric_limits<std::int64_t>::max()},
                                 tf::Shape{3, 1}))},
      {"i64_empty_3d", tf::Variable(tf::zeros(tf::Shape{1, 0, 3}, tf::int64))},
      {"bool", tf::Variable(tf::constant(std::vector<bool>{true, false, false, true}, tf::Shape{2, 2}))},
      {"i32_rank8",
       tf::Variable(tf::constant(std::vector<std::int32_t>{-5, 6}, tf::Shape{1, 1, 1, 2, 1, 1, 1, 1}))},
  };
  const auto saved = snapshot(vars);
  tf::save_checkpoint(path("a.ckpt"), vars);
  for (auto& [name, v] : vars) v.assign(tf::zeros_like(v.value()));

  tf::restore_checkpoint(path("a.ckpt"), vars);

  EXPECT_EQ(snapshot(vars), saved);
  EXPECT_EQ(vars[0].second.shape(), (tf::Shape{2, 3}));
  EXPECT_EQ(vars[4].second.shape(), (tf::Shape{1, 0, 3}));
}

TEST_F(CheckpointTest, SaveOfNoVariablesRoundTrips) {
  tf::save_checkpoint(path("empty.ckpt"), tf::NamedVariables{});
  EXPECT_NO_THROW(tf::restore_checkpoint(path("empty.ckpt"), tf::NamedVariables{}));
  EXPECT_TRUE(tf::list_checkpoint(path("empty.ckpt")).empty());
}

TEST_F(CheckpointTest, SaveReplacesAnExistingCheckpointAndLeavesNoTemporaryFile) {
  tf::NamedVariables vars = small_vars();
  tf::save_checkpoint(path("a.ckpt"), vars);
  vars[0].second.assign(tf::constant({9.f, 8.f}));
  tf::save_checkpoint(path("a.ckpt"), vars);
  vars[0].second.assign(tf::constant({0.f, 0.f}));

  tf::restore_checkpoint(path("a.ckpt"), vars);

  EXPECT_EQ(vars[0].second.value().to_vector<float>(), (std::vector<float>{9.f, 8.f}));
  EXPECT_THAT(other_files("a.ckpt"), ::testing::IsEmpty());
}

TEST_F(CheckpointTest, ListCheckpointReportsNamesShapesAndDtypesInOrder) {
  tf::save_checkpoint(path("a.ckpt"), small_vars());
  const auto entries = tf::list_checkpoint(path("a.ckpt"));
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "w");
  EXPECT_EQ(entries[0].dtype, tf::float32);
  EXPECT_EQ(entries[0].shape, (tf::Shape{2}));
  EXPECT_EQ(entries[1].name, "step");
  EXPECT_EQ(entries[1].dtype, tf::int64);
  EXPECT_EQ(entries[1].shape, tf::Shape());
  EXPECT_EQ(entries[2].name, "mask");
  EXPECT_EQ(entries[2].dtype, tf::bool_);
}

TEST_F(CheckpointTest, TruncationAtEveryByteIsDataLossAndLeavesVariablesUnchanged) {
  tf::save_checkpoint(path("full.ckpt"), small_vars());
  const auto full = read_bytes(path("full.ckpt"));
  ASSERT_GT(full.size(), 100u);
  tf::NamedVariables target = {{"w", tf::Variable(tf::constant({0.f, 0.f}))},
                               {"step", tf::Variable(tf::constant(std::int64_t{0}))},
                               {"mask", tf::Variable(tf::constant({false, false, false}))}};
  const auto before = snapshot(target);
  for (std::size_t len = 0; len < full.size(); ++len) {
    write_bytes(path("cut.ckpt"),
                std::vector<unsigned char>(full.begin(), full.begin() + static_cast<long>(len)));
    try {
      tf::restore_checkpoint(path("cut.ckpt"), target);
      ADD_FAILURE() << "a checkpoint truncated to " << len << " of " << full.size() << " bytes was accepted";
    } catch (const tf::DataLossError& e) {
      EXPECT_THAT(e.what(), HasSubstr("cut.ckpt")) << "length " << len;
    }
    ASSERT_EQ(snapshot(target), before)
        << "variables changed by a checkpoint truncated to " << len << " bytes";
  }
}

TEST_F(CheckpointTest, EveryBitFlipOfASmallCheckpointIsDetected) {
  tf::save_checkpoint(path("full.ckpt"), small_vars());
  const auto full = read_bytes(path("full.ckpt"));
  tf::NamedVariables target = small_vars();
  for (auto& [name, v] : target) v.assign(tf::zeros_like(v.value()));
  const auto before = snapshot(target);
  for (std::size_t bit = 0; bit < full.size() * 8; ++bit) {
    auto bytes = full;
    bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    write_bytes(path("flip.ckpt"), bytes);
    EXPECT_THROW(tf::restore_checkpoint(path("flip.ckpt"), target), tf::DataLossError) << "bit " << bit;
    ASSERT_EQ(snapshot(target), before) << "variables changed by a flip of bit " << bit;
  }
}

TEST_F(CheckpointTest, ThousandsOfRandomBitFlipsAreAllDetected) {
  // A larger checkpoint (several KB, most of it data) and 3000 seeded random flips, single bits
  // and bursts of up to 32 bits within 4 bytes (both always caught by CRC-32).
  tf::NamedVariables vars;
  std::mt19937 rng(20261122);
  std::normal_distribution<float> normal;
  for (int i = 0; i < 6; ++i) {
    std::vector<float> values(200);
    for (float& x : values) x = normal(rng);
    vars.emplace_back("layer_" + std::to_string(i), tf::Variable(tf::constant(values, tf::Shape{20, 10})));
  }
  tf::save_checkpoint(path("full.ckpt"), vars);
  const auto full = read_bytes(path("full.ckpt"));
  for (auto& [name, v] : vars) v.assign(tf::zeros_like(v.value()));
  const auto before = snapshot(vars);
  std::uniform_int_distribution<std::size_t> pos(0, full.size() * 8 - 1);
  std::uniform_int_distribution<int> burst(1, 32);
  for (int trial = 0; trial < 3000; ++trial) {
    auto bytes = full;
    const std::size_t first = pos(rng);
    const int len = trial % 2 == 0 ? 1 : burst(rng);  // half single bits, half bursts
    for (int k = 0; k < len && first + k < full.size() * 8; ++k) {
      const std::size_t bit = first + static_cast<std::size_t>(k);
      if (k == 0 || k == len - 1 || rng() % 2) bytes[bit / 8] ^= static_cast<unsigned char>(1u << (bit % 8));
    }
    write_bytes(path("flip.ckpt"), bytes);
    EXPECT_THROW(tf::restore_checkpoint(path("flip.ckpt"), vars), tf::DataLossError)
        << "trial " << trial << ", bit " << first << ", burst " << len;
    ASSERT_EQ(snapshot(vars), before) << "trial " << trial;
  }
}

TEST_F(CheckpointTest, DataChecksumMismatchNamesTheTensor) {
  tf::save_checkpoint(path("a.ckpt"), small_vars());
  auto bytes = read_bytes(path("a.ckpt"));
  bytes.back() ^= 0x01;  // the last byte is mask's last bool: 1 -> 0, valid but with a wrong checksum
  write_bytes(path("a.ckpt"), bytes);
  tf::NamedVariables target = small_vars();
  try {
    tf::restore_checkpoint(path("a.ckpt"), target);
    FAIL() << "expected DataLossError";
  } catch (const tf::DataLossError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a.ckpt"));
    EXPECT_THAT(e.what(), HasSubstr("tensor 'mask'"));
    EXPECT_THAT(e.what(), HasSubstr("checksum"));
  }
}

// Forged files whose index checksum is valid: the loader must still check every field.
class ForgedCheckpointTest : public CheckpointTest {
 protected:
  /// One float32 tensor "x" of shape (2, 3): the first index entry starts at byte 32 with
  /// u16 name_len = 1, the name at 34, dtype at 35, rank at 36, dims at 37 and 45, byte size at
  /// 53, offset at 61, crc at 69; the index ends at 73.
  void SetUp() override {
    CheckpointTest::SetUp();
    vars_ = {{"x", tf::Variable(tf::zeros(tf::Shape{2, 3}))}};
    tf::save_checkpoint(path("a.ckpt"), vars_);
    bytes_ = read_bytes(path("a.ckpt"));
    ASSERT_EQ(get_u64(bytes_, 24), 41u);  // index size, as the layout above assumes
  }
  /// Writes the edited bytes with a valid index checksum; expects DataLossError naming `what`.
  void expect_data_loss(const std::string& what) {
    fix_index_crc(bytes_);
    write_bytes(path("forged.ckpt"), bytes_);
    try {
      tf::restore_checkpoint(path("forged.ckpt"), vars_);
      FAIL() << "expected DataLossError mentioning: " << what;
    } catch (const tf::DataLossError& e) {
      EXPECT_THAT(e.what(), HasSubstr(what));
      EXPECT_THAT(e.what(), HasSubstr("forged.ckpt"));
    }
  }
  tf::NamedVariables vars_;
  std::vector<unsigned char> bytes_;
};

TEST_F(ForgedCheckpointTest, UnknownDtypeCode) {
  bytes_[35] = 9;
  expect_data_loss("unknown dtype code 9");
}
TEST_F(ForgedCheckpointTest, RankAboveMaximum) {
  bytes_[36] = 9;
  expect_data_loss("rank 9 exceeds the maximum rank 8");
}
TEST_F(ForgedCheckpointTest, NegativeDimension) {
  put_u64(bytes_, 37, static_cast<std::uint64_t>(-2));
  expect_data_loss("dimension 0 is negative (-2)");
}
TEST_F(ForgedCheckpointTest, ElementCountOverflow) {
  put_u64(bytes_, 37, std::uint64_t{1} << 40);
  put_u64(bytes_, 45, std::uint64_t{1} << 40);
  expect_data_loss("element count overflows");
}
// A zero dim made the count 0 and hid the overflow of the others, which Shape then refused with
// ResourceExhaustedError not naming the file.
TEST_F(ForgedCheckpointTest, ElementCountOverflowBehindAZeroDimension) {
  put_u64(bytes_, 37, 0);
  put_u64(bytes_, 45, (std::uint64_t{1} << 62) + 1);
  put_u64(bytes_, 53, 0);
  expect_data_loss("element count overflows (more than 4611686018427387904, not counting zero dimensions)");
}
TEST_F(ForgedCheckpointTest, ByteSizeNotDtypeSizeTimesElements) {
  put_u64(bytes_, 53, 25);
  expect_data_loss("byte size 25 does not equal 6 elements x 4 bytes");
}
TEST_F(ForgedCheckpointTest, HugeDimsWithMatchingByteSizeRunPastTheFile) {
  put_u64(bytes_, 37, std::uint64_t{1} << 30);
  put_u64(bytes_, 53, (std::uint64_t{1} << 30) * 3 * 4);
  expect_data_loss("extend past the end of the file");
}
TEST_F(ForgedCheckpointTest, OffsetOutsideTheDataSection) {
  put_u64(bytes_, 61, 0);
  expect_data_loss("data offset 0 should be 77");
}
TEST_F(ForgedCheckpointTest, TensorCountLargerThanTheIndex) {
  put_u64(bytes_, 16, std::uint64_t{1} << 60);
  expect_data_loss("claims 1152921504606846976 tensors");
}
TEST_F(ForgedCheckpointTest, UnsupportedVersion) {
  bytes_[8] = 2;
  expect_data_loss("unsupported format version 2");
}
TEST_F(ForgedCheckpointTest, BadMagic) {
  bytes_[0] = 'X';
  expect_data_loss("bad magic");
}
TEST_F(ForgedCheckpointTest, TrailingBytes) {
  bytes_.push_back(0);
  expect_data_loss("trailing bytes");
}

TEST_F(CheckpointTest, MissingFileIsAnErrorNamingThePath) {
  tf::NamedVariables vars = small_vars();
  try {
    tf::restore_checkpoint(path("nope.ckpt"), vars);
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path("nope.ckpt")));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
}

TEST_F(CheckpointTest, MissingNameIsInvalidArgumentAndChangesNothing) {
  tf::save_checkpoint(path("a.ckpt"), small_vars());
  tf::NamedVariables target = {{"w", tf::Variable(tf::constant({0.f, 0.f}))},
                               {"bias", tf::Variable(tf::constant({0.f}))}};
  const auto before = snapshot(target);
  try {
    tf::restore_checkpoint(path("a.ckpt"), target, {.allow_unused_entries = true});
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("a.ckpt"));
    EXPECT_THAT(e.what(), HasSubstr("no tensor named 'bias'"));
  }
  EXPECT_EQ(snapshot(target), before);
}

TEST_F(CheckpointTest, ShapeMismatchIsInvalidArgumentAndChangesNothing) {
  tf::save_checkpoint(path("a.ckpt"), small_vars());
  tf::NamedVariables target = small_vars();
  target[0].second = tf::Variable(tf::constant({0.f, 0.f, 0.f}));
  target[1].second.assign(tf::constant(std::int64_t{0}));
  const auto before = snapshot(target);
  try {
    tf::restore_checkpoint(path("a.ckpt"), target);
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'w' has shape (2,) and dtype float32"));
    EXPECT_THAT(e.what(), HasSubstr("has shape (3,) and dtype float32"));
  }
  EXPECT_EQ(snapshot(target), before);
}

TEST_F(CheckpointTest, DtypeMismatchIsInvalidArgument) {
  tf::save_checkpoint(path("a.ckpt"), small_vars());
  tf::NamedVariables target = small_vars();
  target[1].second = tf::Variable(tf::constant(std::int32_t{0}));
  try {
    tf::restore_checkpoint(path("a.ckpt"), target);
    FAIL() << "expected InvalidArgumentError";
  } catch (const tf::InvalidArgumentError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tensor 'step' has shape () and dtype int64"));
    EXPECT_THAT(e.what(), HasSubstr("dtype int32"));
  }
}

TEST_F(CheckpointTest, UnusedEntriesAreRefusedUnlessAllowed) {
  tf::save_checkpoint(path("a.ckpt"), small_vars());
  tf::NamedVariables subset = {{"step", tf::Variable(tf::constant(std::int64_t{0}))}};
  EXPECT_THAT(
      [&] { tf::restore_checkpoint(path("a.ckpt"), subset); },
      ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("tensor 'w' (shape (2,), dtype float32) "
                                                                   "matches no variable")));
  EXPECT_EQ(subset[0].second.value().item<std::int64_t>(), 0);

  tf::restore_checkpoint(path("a.ckpt"), subset, {.allow_unused_entries = true});
  EXPECT_EQ(subset[0].second.value().item<std::int64_t>(), 7);
}

TEST_F(CheckpointTest, DuplicateOrEmptyNamesAreRefused) {
  tf::NamedVariables dup = {{"a", tf::Variable(1.f)}, {"a", tf::Variable(2.f)}};
  EXPECT_THAT([&] { tf::save_checkpoint(path("a.ckpt"), dup); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("'a' is given to more than one")));
  EXPECT_FALSE(fs::exists(path("a.ckpt")));
  tf::NamedVariables empty_name = {{"", tf::Variable(1.f)}};
  EXPECT_THROW(tf::save_checkpoint(path("a.ckpt"), empty_name), tf::InvalidArgumentError);
  EXPECT_THROW(tf::restore_checkpoint(path("a.ckpt"), dup), tf::InvalidArgumentError);
}

TEST_F(CheckpointTest, SaveFailingMidwayKeepsThePreviousCheckpoint) {
  tf::NamedVariables vars = small_vars();
  tf::save_checkpoint(path("a.ckpt"), vars);
  const auto good = read_bytes(path("a.ckpt"));
  vars[0].second.assign(tf::constant({100.f, 200.f}));
  for (std::int64_t fail_after :
       {std::int64_t{0}, std::int64_t{1}, std::int64_t{40}, static_cast<std::int64_t>(good.size()) - 1}) {
    tf::detail::set_checkpoint_write_fault(fail_after);
    try {
      tf::save_checkpoint(path("a.ckpt"), vars);
      ADD_FAILURE() << "a save failing after " << fail_after << " bytes reported success";
    } catch (const tf::FailedPreconditionError& e) {
      EXPECT_THAT(e.what(), HasSubstr("a.ckpt"));
      EXPECT_THAT(e.what(), HasSubstr("Input/output error"));
    }
    EXPECT_EQ(read_bytes(path("a.ckpt")), good) << "fail after " << fail_after;
    EXPECT_THAT(other_files("a.ckpt"), ::testing::IsEmpty()) << "the temporary file was left behind";
  }
  tf::detail::set_checkpoint_write_fault(-1);
  tf::NamedVariables restored = small_vars();
  restored[0].second.assign(tf::constant({0.f, 0.f}));
  tf::restore_checkpoint(path("a.ckpt"), restored);
  EXPECT_EQ(restored[0].second.value().to_vector<float>(), (std::vector<float>{1.5f, -2.f}));
}

TEST_F(CheckpointTest, SaveOntoADirectoryFailsAndRemovesTheTemporaryFile) {
  fs::create_directory(path("taken"));
  EXPECT_THAT([&] { tf::save_checkpoint(path("taken"), small_vars()); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("is a directory")));
  EXPECT_THAT(other_files("taken"), ::testing::IsEmpty());
}

TEST_F(CheckpointTest, SaveRefusesAFifoOrASymbolicLinkAndLeavesItInPlace) {
  // rename() would replace the FIFO (or a device: the case was /dev/null) with a regular
  // file, and a symbolic link with a file instead of writing where it points.
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  fs::create_symlink("/dev/null", path("link"));
  for (const auto& [name, kind] : {std::pair{"pipe", "a FIFO"}, std::pair{"link", "a symbolic link"}}) {
    SCOPED_TRACE(name);
    EXPECT_THAT(([&, name = name] { tf::save_checkpoint(path(name), small_vars()); }),
                ::testing::ThrowsMessage<tf::FailedPreconditionError>(
                    ::testing::AllOf(HasSubstr(path(name)), HasSubstr(kind))));
  }
  EXPECT_TRUE(fs::is_fifo(fs::symlink_status(path("pipe"))));
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(path("link"))));
  EXPECT_EQ(fs::read_symlink(path("link")), "/dev/null");
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
  EXPECT_EQ(other_files("").size(), 2u);  // no temporary file left beside them
}

TEST_F(CheckpointTest, CheckCheckpointPathRefusesWhatASaveWouldRefuseWithoutWriting) {
  EXPECT_NO_THROW(tf::check_checkpoint_path(path("new.ckpt")));
  EXPECT_FALSE(fs::exists(path("new.ckpt")));
  tf::save_checkpoint(path("old.ckpt"), small_vars());
  EXPECT_NO_THROW(tf::check_checkpoint_path(path("old.ckpt")));
  EXPECT_THAT([&] { tf::check_checkpoint_path(path("no_dir/a.ckpt")); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("does not exist")));
  EXPECT_THAT([&] { tf::check_checkpoint_path(path("old.ckpt/a.ckpt")); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("is not a directory")));
  EXPECT_THAT([&] { tf::check_checkpoint_path(dir_.string()); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("is a directory")));
  EXPECT_THROW(tf::check_checkpoint_path(""), tf::InvalidArgumentError);
  if (::geteuid() != 0) {  // root may write anywhere
    fs::create_directory(path("read_only"));
    fs::permissions(path("read_only"), fs::perms::owner_read | fs::perms::owner_exec);
    EXPECT_THAT([&] { tf::check_checkpoint_path(path("read_only/a.ckpt")); },
                ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr("not writable")));
    fs::permissions(path("read_only"), fs::perms::owner_all);
  }
}

/// The pid of a process that has exited (and been reaped).
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

TEST_F(CheckpointTest, SaveRemovesTemporariesOfDeadWritersOfThatPathOnly) {
  // What a save killed midway leaves behind, beside files that must survive: a live process's
  // temporary (a concurrent writer), another checkpoint's temporary, names that only look alike.
  const pid_t dead = dead_pid();
  const std::string stale = path(fmt::format("a.ckpt.tmp.{}", dead));
  const std::vector<std::string> kept = {
      path(fmt::format("a.ckpt.tmp.{}", ::getppid())), path(fmt::format("b.ckpt.tmp.{}", dead)),
      path(fmt::format("a.ckpt.tmp.{}x", dead)), path(fmt::format("a.ckpt.tmp.0{}", dead)),
      path(fmt::format("xa.ckpt.tmp.{}", dead))};
  for (const auto& p : kept) std::ofstream(p) << "keep";
  std::ofstream(stale) << "half a checkpoint";

  tf::save_checkpoint(path("a.ckpt"), small_vars());

  EXPECT_FALSE(fs::exists(stale));
  for (const auto& p : kept) EXPECT_TRUE(fs::exists(p)) << p;
  EXPECT_EQ(other_files("a.ckpt").size(), kept.size());
}

TEST_F(CheckpointTest, ASaveKilledWhileWritingLeavesNoTemporaryFile) {
  // The writer is killed midway by the kernel: its file size limit is smaller than the checkpoint,
  // so the write that crosses it raises SIGXFSZ, whose default action ends the process.
  const tf::NamedVariables vars = {{"big", tf::Variable(tf::fill({1 << 16}, 1.5f))}};
  const pid_t writer = ::fork();
  if (writer == 0) {
    const rlimit file_size{4096, 4096}, no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::setrlimit(RLIMIT_FSIZE, &file_size);
    ::signal(SIGXFSZ, SIG_DFL);
    tf::save_checkpoint(path("a.ckpt"), vars);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(writer, &status, 0), writer);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << "the save was not killed: " << status;
  EXPECT_FALSE(fs::exists(path("a.ckpt")));
  EXPECT_THAT(other_files("a.ckpt"), ::testing::IsEmpty()) << "the killed save left its temporary file";
}

TEST_F(CheckpointTest, RestoringFromAFifoFailsAtOnceInsteadOfWaitingForAWriter) {
  ASSERT_EQ(::mkfifo(path("pipe").c_str(), 0600), 0);
  auto restore = std::async(std::launch::async, [&] {
    tf::NamedVariables vars = small_vars();
    tf::restore_checkpoint(path("pipe"), vars);
  });
  if (restore.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    // Release the blocked open() so the test ends.
    const int writer = ::open(path("pipe").c_str(), O_WRONLY);
    ::close(writer);
    ADD_FAILURE() << "restore_checkpoint blocked opening a FIFO";
  }
  EXPECT_THAT([&] { restore.get(); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("a FIFO (named pipe)")));
  EXPECT_THAT([&] { tf::list_checkpoint(dir_.string()); },
              ::testing::ThrowsMessage<tf::InvalidArgumentError>(HasSubstr("is a directory")));
}

TEST_F(CheckpointTest, SaveIntoAMissingDirectoryNamesThePath) {
  EXPECT_THAT([&] { tf::save_checkpoint(path("no_dir/a.ckpt"), small_vars()); },
              ::testing::ThrowsMessage<tf::FailedPreconditionError>(HasSubstr(path("no_dir/a.ckpt"))));
}

/// Two variables with the same Keras-style name, as two Dense layers' kernels have.
class TwoKernels : public tf::Module {
 public:
  TwoKernels() : tf::Module("two_kernels") {
    a = track(tf::Variable(tf::constant({1.f, 2.f}), {.name = "kernel", .keras_style = true}));
    b = track(tf::Variable(tf::constant({3.0}), {.name = "kernel", .keras_style = true}));
    c = track(tf::Variable(tf::constant(4), {.name = "count"}));
  }
  tf::Variable a{0.f}, b{0.f}, c{0.f};
};

TEST_F(CheckpointTest, ModuleVariablesAreNamedByIndexAndName) {
  TwoKernels m;
  const auto named = tf::checkpoint_variables(m, "model/");
  ASSERT_EQ(named.size(), 3u);
  EXPECT_EQ(named[0].first, "model/0/kernel");
  EXPECT_EQ(named[1].first, "model/1/kernel");
  EXPECT_EQ(named[2].first, "model/2/count:0");
  EXPECT_TRUE(named[2].second == m.c);
}

TEST_F(CheckpointTest, ModuleRoundTrip) {
  TwoKernels saved;
  tf::save_checkpoint(path("m.ckpt"), saved);
  TwoKernels fresh;
  fresh.a.assign(tf::constant({0.f, 0.f}));
  fresh.b.assign(tf::constant({0.0}));
  fresh.c.assign(tf::constant(0));

  tf::restore_checkpoint(path("m.ckpt"), fresh);

  EXPECT_EQ(fresh.a.value().to_vector<float>(), (std::vector<float>{1.f, 2.f}));
  EXPECT_EQ(fresh.b.value().to_vector<double>(), (std::vector<double>{3.0}));
  EXPECT_EQ(fresh.c.value().item<std::int32_t>(), 4);
}

TEST_F(CheckpointTest, ModuleAndOptimizerStateInOneCheckpoint) {
  TwoKernels model;
  tf::NamedVariables slots = {{"iterations", tf::Variable(tf::constant(std::int64_t{12}))}};
  auto entries = tf::checkpoint_variables(model, "model/");
  for (const auto& [name, v] : slots) entries.emplace_back("optimizer/" + name, v);
  tf::save_checkpoint(path("train.ckpt"), entries);
  slots[0].second.assign(tf::constant(std::int64_t{0}));

  tf::restore_checkpoint(path("train.ckpt"), entries);

  EXPECT_EQ(slots[0].second.value().item<std::int64_t>(), 12);
  // The model alone, from the combined file.
  TwoKernels other;
  other.c.assign(tf::constant(0));
  tf::restore_checkpoint(path("train.ckpt"), tf::checkpoint_variables(other, "model/"),
                         {.allow_unused_entries = true});
  EXPECT_EQ(other.c.value().item<std::int32_t>(), 4);
}

TEST_F(CheckpointTest, MovedFromVariableIsRejectedNamingTheCallAndTheEntry) {
  tf::Variable w(tf::constant({1.f, 2.f}));
  tf::NamedVariables vars = {{"w", w}};
  tf::save_checkpoint(path("w.ckpt"), vars);
  tf::Variable taken = std::move(vars[0].second);
  for (const auto& call : {std::function<void()>([&] { tf::save_checkpoint(path("x.ckpt"), vars); }),
                           std::function<void()>([&] { tf::restore_checkpoint(path("w.ckpt"), vars); })}) {
    try {
      call();
      ADD_FAILURE() << "expected InvalidArgumentError";
    } catch (const tf::InvalidArgumentError& e) {
      EXPECT_THAT(e.what(), HasSubstr("the variable named 'w' is a moved-from Variable"));
      EXPECT_THAT(e.what(),
                  ::testing::AnyOf(HasSubstr("[save_checkpoint]"), HasSubstr("[restore_checkpoint]")));
    }
  }
  EXPECT_FALSE(fs::exists(path("x.ckpt")));
}

// --- tf::Checkpoint ----------------------------------------------------------------------------

/// A two-layer model, unbuilt until its first call.
std::shared_ptr<tf::layers::Sequential> two_dense() {
  return tf::layers::sequential({tf::layers::dense(3, "relu"), tf::layers::dense(2)});
}

/// A two_dense() model tracked as "model" by a Checkpoint.
struct TrackedModel {
  TrackedModel() { ckpt.track("model", *model); }
  std::shared_ptr<tf::layers::Sequential> model = two_dense();
  tf::Checkpoint ckpt;  // declared last, so it ends before the model goes
};

const tf::Tensor kInput = tf::reshape(tf::constant({0.5f, -1.f, 2.f, 0.25f}), {1, 4});

/// Each variable's value, bitwise, in order.
std::vector<std::vector<unsigned char>> values_of(const std::vector<tf::Variable>& vars) {
  std::vector<std::vector<unsigned char>> out;
  for (const tf::Variable& v : vars) out.push_back(bytes_of(v.value()));
  return out;
}

/// Writes a checkpoint of a built two_dense() model and an Adam optimizer that took one step on
/// it, under "model" and "optimizer" (4 + 9 tensors); returns the model's and the optimizer's
/// values.
struct SavedTraining {
  std::vector<std::vector<unsigned char>> model, optimizer;
};
SavedTraining save_training(const std::string& path) {
  auto model = two_dense();
  tf::optimizers::Adam opt(0.1);
  tf::GradientTape tape;
  const tf::Tensor loss = tf::reduce_sum((*model)(kInput));
  const auto vars = model->trainable_variables();
  opt.apply_gradients(tape.gradient(loss, vars), vars);
  tf::Checkpoint ckpt;
  ckpt.track("model", *model).track("optimizer", opt);
  ckpt.write(path);
  std::vector<tf::Variable> opt_vars;
  for (const auto& [name, v] : opt.variables()) opt_vars.push_back(v);
  return {values_of(model->variables()), values_of(opt_vars)};
}

TEST_F(CheckpointTest, CheckpointNamesEntriesAsSaveCheckpointDoesUnderEachObjectsName) {
  TwoKernels model;
  tf::Variable step(tf::constant(std::int64_t{3}));
  tf::Checkpoint ckpt;
  ckpt.track("model", model).track("step", step);
  std::vector<std::string> names;
  for (const auto& [name, v] : ckpt.variables()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"model/0/kernel", "model/1/kernel", "model/2/count:0", "step"}));
}

TEST_F(CheckpointTest, RestoreBeforeTheFirstCallRestoresTheLayersWhenTheCallBuildsThem) {
  const SavedTraining saved = save_training(path("train.ckpt"));
  TrackedModel t;

  tf::CheckpointLoadStatus status = t.ckpt.restore(path("train.ckpt"));
  ASSERT_TRUE(t.model->variables().empty());
  (*t.model)(kInput);

  EXPECT_EQ(values_of(t.model->variables()), saved.model);
  status.expect_partial();  // the file's optimizer state has no optimizer here
}

TEST_F(CheckpointTest, OptimizerIterationsRestoreAtOnceAndSlotsWhenBuilt) {
  const SavedTraining saved = save_training(path("train.ckpt"));
  auto model = two_dense();
  (*model)(kInput);
  tf::optimizers::Adam opt(0.1);
  tf::Checkpoint ckpt;
  ckpt.track("model", *model).track("optimizer", opt);

  ckpt.restore(path("train.ckpt"));
  EXPECT_EQ(opt.iterations().value().item<std::int64_t>(), 1);
  opt.build(model->trainable_variables());

  std::vector<tf::Variable> opt_vars;
  for (const auto& [name, v] : opt.variables()) opt_vars.push_back(v);
  EXPECT_EQ(values_of(opt_vars), saved.optimizer);
}

TEST_F(CheckpointTest, AssertConsumedListsTheEntriesNoVariableMatchedYet) {
  save_training(path("train.ckpt"));
  auto model = two_dense();
  tf::optimizers::Adam opt(0.1);
  tf::Checkpoint ckpt;
  ckpt.track("model", *model).track("optimizer", opt);
  const tf::CheckpointLoadStatus status = ckpt.restore(path("train.ckpt"));

  const std::string msg = error_of([&] { status.assert_consumed(); });
  EXPECT_THAT(msg, HasSubstr("[CheckpointLoadStatus::assert_consumed]"));
  EXPECT_THAT(msg, HasSubstr("'model/0/kernel' ((4, 3), float32)"));
  EXPECT_THAT(msg, HasSubstr("'optimizer/kernel/m'"));
  EXPECT_THAT(msg, HasSubstr("call the model once"));

  (*model)(kInput);
  opt.build(model->trainable_variables());
  status.assert_consumed();
}

TEST_F(CheckpointTest, AssertExistingObjectsMatchedListsVariablesTheFileLacks) {
  TwoKernels saved;
  tf::Checkpoint writer;
  writer.track("model", saved);
  writer.write(path("m.ckpt"));
  TwoKernels model;
  tf::Variable extra(tf::constant(1.f));
  tf::Checkpoint ckpt;
  ckpt.track("model", model).track("extra", extra);

  const tf::CheckpointLoadStatus status = ckpt.restore(path("m.ckpt"));

  const std::string msg = error_of([&] { status.assert_existing_objects_matched(); });
  EXPECT_THAT(msg, HasSubstr("1 tracked variables have no tensor in the file: 'extra' ((), float32)"));
  EXPECT_THAT(error_of([&] { status.assert_consumed(); }), HasSubstr("'extra'"));
  status.assert_nontrivial_match();
}

TEST_F(CheckpointTest, EntriesNeverMatchedAreLoggedWhenTheCheckpointEnds) {
  save_training(path("train.ckpt"));
  tf::testing::LogCapture log;
  {
    TrackedModel t;
    t.ckpt.restore(path("train.ckpt"));
    (*t.model)(kInput);
  }
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_THAT(log.messages[0], HasSubstr("were never restored"));
  EXPECT_THAT(log.messages[0], HasSubstr("'optimizer/iterations'"));
  EXPECT_THAT(log.messages[0], ::testing::Not(HasSubstr("'model/0/kernel'")));
}

TEST_F(CheckpointTest, ExpectPartialSilencesTheWarningButNotTheAsserts) {
  save_training(path("train.ckpt"));
  tf::testing::LogCapture log;
  {
    TrackedModel t;
    const tf::CheckpointLoadStatus status = t.ckpt.restore(path("train.ckpt")).expect_partial();
    (*t.model)(kInput);
    status.assert_existing_objects_matched();
    EXPECT_THAT(error_of([&] { status.assert_consumed(); }), HasSubstr("'optimizer/iterations'"));
  }
  EXPECT_TRUE(log.messages.empty());
}

TEST_F(CheckpointTest, ARestoreThatMatchesNothingIsReportedNeverSilent) {
  save_training(path("train.ckpt"));
  tf::testing::LogCapture log;
  {
    TwoKernels unrelated;
    tf::Checkpoint ckpt;
    ckpt.track("net", unrelated);
    const tf::CheckpointLoadStatus status = ckpt.restore(path("train.ckpt"));
    EXPECT_THAT(error_of([&] { status.assert_nontrivial_match(); }),
                HasSubstr("none of its 13 tensors restored a variable"));
  }
  ASSERT_EQ(log.messages.size(), 1u);
  EXPECT_THAT(log.messages[0], HasSubstr("13 of its 13 tensors were never restored"));
}

TEST_F(CheckpointTest, RestoreCheckpointIntoAModelNotYetCalledRefusesInsteadOfRestoringNothing) {
  save_training(path("train.ckpt"));
  auto model = two_dense();

  const std::string msg = error_of([&] {
    tf::restore_checkpoint(path("train.ckpt"), tf::checkpoint_variables(*model, "model/"),
                           {.allow_unused_entries = true});
  });

  EXPECT_THAT(msg, HasSubstr("no variable was given, so nothing would be restored"));
  EXPECT_THAT(msg, HasSubstr("tf::Checkpoint"));
}

TEST_F(CheckpointTest, UnusedEntryErrorSaysTheVariablesMayNotExistYet) {
  save_training(path("train.ckpt"));
  auto model = two_dense();
  (*model)(kInput);

  const std::string msg = error_of(
      [&] { tf::restore_checkpoint(path("train.ckpt"), tf::checkpoint_variables(*model, "model/")); });

  EXPECT_THAT(msg, HasSubstr("matches no variable"));
  EXPECT_THAT(msg, HasSubstr("optimizer not built"));
}

TEST_F(CheckpointTest, ALayerCreatedWithAnotherShapeThrowsFromItsCreation) {
  save_training(path("train.ckpt"));
  auto model = tf::layers::sequential({tf::layers::dense(5), tf::layers::dense(2)});
  tf::Checkpoint ckpt;
  ckpt.track("model", *model);
  ckpt.restore(path("train.ckpt")).expect_partial();

  const std::string msg = error_of([&] { (*model)(kInput); });

  EXPECT_THAT(msg, HasSubstr("tensor 'model/0/kernel' has shape (4, 3)"));
  EXPECT_THAT(msg, HasSubstr("has shape (4, 5)"));
}

/// Tracks `first` then `second`, but calls `second` first: its variables are created before
/// those that precede them in variables().
class OutOfOrder : public tf::Module {
 public:
  OutOfOrder() : tf::Module("out_of_order") {
    track(first);
    track(second);
  }
  tf::Tensor operator()(const tf::Tensor& x) { return first(second(x)); }
  tf::layers::Dense first{4}, second{4};
};

TEST_F(CheckpointTest, AVariableCreatedOutOfTrackingOrderFailsInsteadOfTakingAnotherVariablesValue) {
  OutOfOrder saved;
  saved(kInput);
  tf::Checkpoint writer;
  writer.track("model", saved);
  writer.write(path("m.ckpt"));
  OutOfOrder model;
  tf::Checkpoint ckpt;
  ckpt.track("model", model);
  ckpt.restore(path("m.ckpt")).expect_partial();

  const std::string msg = tf::testing::error_of<tf::FailedPreconditionError>([&] { model(kInput); });

  EXPECT_THAT(msg, HasSubstr("entry 'model/0/kernel' was already restored into another variable"));
  EXPECT_THAT(msg, HasSubstr("Build the model (call it once) before restoring"));
}

TEST_F(CheckpointTest, AVariableTrackedUnderASecondNameAfterRestoreIsRestoredFromBoth) {
  tf::layers::Dense saved(2);
  saved(kInput);
  tf::Checkpoint writer;
  writer.track("layer", saved).track("kernel", saved.kernel());
  writer.write(path("m.ckpt"));
  tf::layers::Dense layer(2);
  layer(kInput);
  tf::Checkpoint ckpt;
  ckpt.track("layer", layer);
  const tf::CheckpointLoadStatus status = ckpt.restore(path("m.ckpt"));

  ckpt.track("kernel", layer.kernel());

  status.assert_consumed();
  EXPECT_EQ(bytes_of(layer.kernel().value()), bytes_of(saved.kernel().value()));
}

TEST_F(CheckpointTest, ADeferredRestoreReadsTheFileItOpenedAfterTheFileIsDeleted) {
  const SavedTraining saved = save_training(path("train.ckpt"));
  TrackedModel t;
  t.ckpt.restore(path("train.ckpt")).expect_partial();

  fs::remove(path("train.ckpt"));
  (*t.model)(kInput);

  EXPECT_EQ(values_of(t.model->variables()), saved.model);
}

TEST_F(CheckpointTest, AnObjectTrackedAfterRestoreIsRestored) {
  const SavedTraining saved = save_training(path("train.ckpt"));
  auto model = two_dense();
  (*model)(kInput);
  tf::Checkpoint ckpt;
  ckpt.restore(path("train.ckpt")).expect_partial();

  ckpt.track("model", *model);

  EXPECT_EQ(values_of(model->variables()), saved.model);
}

TEST_F(CheckpointTest, CheckpointRestoreOfACorruptFileIsDataLossAndChangesNothing) {
  save_training(path("train.ckpt"));
  std::vector<unsigned char> b = read_bytes(path("train.ckpt"));
  b.pop_back();
  write_bytes(path("train.ckpt"), b);
  auto model = two_dense();
  (*model)(kInput);
  const auto before = values_of(model->variables());
  tf::Checkpoint ckpt;
  ckpt.track("model", *model);

  const std::string msg = error_of<tf::DataLossError>([&] { ckpt.restore(path("train.ckpt")); });

  EXPECT_THAT(msg, HasSubstr("[Checkpoint::restore]"));
  EXPECT_EQ(values_of(model->variables()), before);
}

TEST_F(CheckpointTest, TrackingTwoObjectsUnderOneNameIsRefused) {
  TwoKernels a, b;
  tf::Checkpoint ckpt;
  ckpt.track("model", a);
  EXPECT_THAT(error_of([&] { ckpt.track("model", b); }), HasSubstr("the name 'model' is tracked already"));
  EXPECT_THAT(error_of([&] { ckpt.track("", b); }), HasSubstr("the name is empty"));
}

}  // namespace
