// CheckpointManager: numbering, keeping the last N (deleting the others), finding the latest
// after a restart, restore-or-initialize, and typed errors for a damaged index.

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "io/checkpoint_testing.h"
#include "io/file_util.h"
#include "support/errors.h"
#include "support/files.h"
#include "support/temp_dir.h"
#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using tf::testing::error_of;

namespace {

class CheckpointManagerTest : public ::testing::Test {
 protected:
  void TearDown() override { tf::detail::set_checkpoint_write_fault(-1); }

  tf::testing::TempDir dir_;
  tf::Variable step_{tf::constant(std::int64_t{0})};
  tf::Checkpoint ckpt_;
  std::string run_ = dir_ / "run";

  void SetUp() override { ckpt_.track("step", step_); }
};

TEST_F(CheckpointManagerTest, SavesAreNumberedFromOneInTheDirectory) {
  tf::CheckpointManager manager(ckpt_, run_, {.max_to_keep = 5});
  EXPECT_EQ(manager.save(), run_ + "/ckpt-1");
  EXPECT_EQ(manager.save(), run_ + "/ckpt-2");
  EXPECT_EQ(manager.latest_checkpoint(), run_ + "/ckpt-2");
  EXPECT_EQ(tf::list_checkpoint(run_ + "/ckpt-2")[0].name, "step");
}

TEST_F(CheckpointManagerTest, KeepsTheLastNAndDeletesTheOlderFiles) {
  tf::CheckpointManager manager(ckpt_, run_, {.max_to_keep = 2});
  for (int i = 0; i < 4; ++i) manager.save();

  EXPECT_THAT(manager.checkpoints(), ElementsAre(run_ + "/ckpt-3", run_ + "/ckpt-4"));
  std::vector<std::string> on_disk;
  for (const auto& e : fs::directory_iterator(run_)) on_disk.push_back(e.path().filename().string());
  std::ranges::sort(on_disk);
  EXPECT_THAT(on_disk, ElementsAre("checkpoint", "ckpt-3", "ckpt-4"));
}

TEST_F(CheckpointManagerTest, ANewManagerOnTheDirectoryFindsTheLatestAndNumbersAfterIt) {
  {
    tf::CheckpointManager before_restart(ckpt_, run_, {.max_to_keep = 3});
    before_restart.save();
    before_restart.save();
  }
  tf::CheckpointManager manager(ckpt_, run_, {.max_to_keep = 3});

  EXPECT_EQ(manager.latest_checkpoint(), run_ + "/ckpt-2");
  EXPECT_THAT(manager.checkpoints(), ElementsAre(run_ + "/ckpt-1", run_ + "/ckpt-2"));
  EXPECT_EQ(manager.save(), run_ + "/ckpt-3");
}

TEST_F(CheckpointManagerTest, AnEmptyDirectoryHasNoLatestCheckpoint) {
  tf::CheckpointManager manager(ckpt_, run_);
  EXPECT_EQ(manager.latest_checkpoint(), std::nullopt);
  EXPECT_TRUE(manager.checkpoints().empty());
}

TEST_F(CheckpointManagerTest, RestoreOrInitializeInitializesWhenThereIsNoCheckpoint) {
  tf::CheckpointManager manager(ckpt_, run_);
  int initialized = 0;

  EXPECT_EQ(manager.restore_or_initialize([&] { ++initialized; }), std::nullopt);
  EXPECT_EQ(initialized, 1);
}

TEST_F(CheckpointManagerTest, RestoreOrInitializeRestoresTheLatestWithoutInitializing) {
  tf::CheckpointManager writer(ckpt_, run_);
  step_.assign(tf::constant(std::int64_t{10}));
  writer.save();
  step_.assign(tf::constant(std::int64_t{20}));
  writer.save();
  step_.assign(tf::constant(std::int64_t{0}));
  tf::CheckpointManager manager(ckpt_, run_);
  int initialized = 0;

  const auto status = manager.restore_or_initialize([&] { ++initialized; });

  ASSERT_TRUE(status.has_value());
  status->assert_consumed();
  EXPECT_EQ(status->path(), run_ + "/ckpt-2");
  EXPECT_EQ(step_.value().item<std::int64_t>(), 20);
  EXPECT_EQ(initialized, 0);
}

TEST_F(CheckpointManagerTest, RestoreOrInitializeOfAMissingLatestFileThrowsInsteadOfStartingOver) {
  {
    tf::CheckpointManager writer(ckpt_, run_);
    writer.save();
  }
  fs::remove(run_ + "/ckpt-1");
  tf::CheckpointManager manager(ckpt_, run_);

  EXPECT_THAT(error_of([&] { manager.restore_or_initialize([] { FAIL() << "initialized"; }); }),
              HasSubstr(run_ + "/ckpt-1"));
}

TEST_F(CheckpointManagerTest, SavingAnExistingNumberAgainMakesItTheLatest) {
  tf::CheckpointManager manager(ckpt_, run_);
  manager.save(7);
  manager.save(3);
  manager.save(7);
  EXPECT_THAT(manager.checkpoints(), ElementsAre(run_ + "/ckpt-3", run_ + "/ckpt-7"));
  EXPECT_EQ(manager.save(), run_ + "/ckpt-8");
}

TEST_F(CheckpointManagerTest, AFailedSaveKeepsTheIndexAndDeletesNothing) {
  tf::CheckpointManager manager(ckpt_, run_, {.max_to_keep = 1});
  manager.save();
  tf::detail::set_checkpoint_write_fault(0);

  error_of<tf::FailedPreconditionError>([&] { manager.save(); });

  tf::detail::set_checkpoint_write_fault(-1);
  EXPECT_THAT(manager.checkpoints(), ElementsAre(run_ + "/ckpt-1"));
  EXPECT_TRUE(fs::exists(run_ + "/ckpt-1"));
  EXPECT_EQ(tf::CheckpointManager(ckpt_, run_).latest_checkpoint(), run_ + "/ckpt-1");
}

TEST_F(CheckpointManagerTest, EveryBitFlipAndTruncationOfTheIndexIsDataLossNamingIt) {
  {
    tf::CheckpointManager writer(ckpt_, run_);
    writer.save();
    writer.save();
  }
  const std::string index = run_ + "/checkpoint";
  const std::vector<unsigned char> good = tf::testing::read_bytes(index);
  for (std::size_t at = 0; at < good.size(); ++at) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<unsigned char> b = good;
      b[at] ^= static_cast<unsigned char>(1 << bit);
      tf::testing::write_bytes(index, b);
      const std::string msg = error_of<tf::DataLossError>([&] { tf::CheckpointManager m(ckpt_, run_); });
      ASSERT_THAT(msg, HasSubstr("checkpoint index '" + index + "'")) << "byte " << at << " bit " << bit;
    }
    tf::testing::write_bytes(index, {good.begin(), good.begin() + static_cast<std::ptrdiff_t>(at)});
    ASSERT_THAT(error_of<tf::DataLossError>([&] { tf::CheckpointManager m(ckpt_, run_); }),
                HasSubstr("is corrupt"))
        << "truncated to " << at << " bytes";
  }
}

TEST_F(CheckpointManagerTest, AnIndexNamingAFileOutsideTheDirectoryIsRefused) {
  const std::string index = dir_ / "checkpoint";
  // A well-formed checksum over a hostile list: the reader checks every name, not only the CRC.
  std::string text = "tapeflow checkpoint index 1\n../../etc/passwd\n";
  text += fmt::format("crc32 {:08x}\n", tf::detail::crc32_of(text.data(), text.size()));
  tf::testing::write_bytes(index, {text.begin(), text.end()});

  EXPECT_THAT(error_of<tf::DataLossError>([&] { tf::CheckpointManager m(ckpt_, dir_.path().string()); }),
              HasSubstr("line 2 is not a checkpoint's file name: it holds '/'"));
}

TEST_F(CheckpointManagerTest, BadOptionsAreRefused) {
  EXPECT_THAT(error_of([&] { tf::CheckpointManager m(ckpt_, run_, {.max_to_keep = 0}); }),
              HasSubstr("max_to_keep must be at least 1"));
  EXPECT_THAT(error_of([&] { tf::CheckpointManager m(ckpt_, run_, {.checkpoint_name = "a/b"}); }),
              HasSubstr("checkpoint_name 'a/b'"));
  tf::CheckpointManager manager(ckpt_, run_);
  EXPECT_THAT(error_of([&] { manager.save(-1); }), HasSubstr("must be >= 0"));
}

TEST_F(CheckpointManagerTest, ADirectoryThatIsAFileIsRefused) {
  tf::testing::write_bytes(run_, {'x'});
  EXPECT_THAT(error_of<tf::FailedPreconditionError>([&] { tf::CheckpointManager m(ckpt_, run_); }),
              HasSubstr(run_));
}

}  // namespace
