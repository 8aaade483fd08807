// A save killed midway: a writer process saves checkpoints in a loop and is killed with SIGKILL
// at a random moment; the checkpoint on disk must still restore, completely, to one of the saved
// states (the last finished save or the previous one), never to a mix or a corrupt file; and the
// temporary files the killed saves leave are removed by the next save.
//
// The writer is this test binary re-executed with TAPEFLOW_CHECKPOINT_WRITER set (a forked copy of
// a multithreaded process may not use its thread pool): CheckpointKillWriter.SavesUntilKilled
// runs the loop in that process and is skipped otherwise.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tapeflow/tapeflow.h"

namespace tf = tapeflow;
namespace fs = std::filesystem;

namespace {

constexpr const char* kWriterEnv = "TAPEFLOW_CHECKPOINT_WRITER";
constexpr const char* kReportEnv = "TAPEFLOW_CHECKPOINT_REPORT_FD";
constexpr std::int64_t kElements = 1 << 20;  // 4 MiB per variable: a save takes milliseconds

/// Two variables whose every element holds `step`: a restored file is consistent if all
/// elements of both agree.
tf::NamedVariables state(float step) {
  return {{"a", tf::Variable(tf::fill({kElements}, step))},
          {"b", tf::Variable(tf::fill({kElements / 2}, -step))}};
}

/// Starts the writer process on `path`; it writes one byte to `report_fd` per finished save.
pid_t start_writer(const std::string& path, int report_fd) {
  const pid_t pid = fork();
  if (pid == 0) {
    const int null_fd = open("/dev/null", O_WRONLY);
    dup2(null_fd, STDOUT_FILENO);
    setenv(kWriterEnv, path.c_str(), 1);
    setenv(kReportEnv, std::to_string(report_fd).c_str(), 1);
    execl("/proc/self/exe", "tapeflow_tests", "--gtest_filter=CheckpointKillWriter.SavesUntilKilled",
          "--gtest_brief=1", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

}  // namespace

TEST(CheckpointKillWriter, SavesUntilKilled) {
  const char* path = std::getenv(kWriterEnv);
  if (!path) GTEST_SKIP() << "runs only as the writer process of CheckpointKill tests";
  const int report_fd = std::atoi(std::getenv(kReportEnv));
  for (int step = 1;; ++step) {
    tf::save_checkpoint(path, state(static_cast<float>(step)));
    const char done = 1;
    if (write(report_fd, &done, 1) != 1) return;
  }
}

TEST(CheckpointKill, ASaveKilledMidwayLeavesTheLastFinishedCheckpointIntact) {
  const fs::path dir = fs::temp_directory_path() / ("tapeflow_kill_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "model.ckpt").string();
  tf::save_checkpoint(path, state(0.f));
  std::mt19937 rng(7);
  for (int round = 0; round < 6; ++round) {
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t writer = start_writer(path, pipe_fds[1]);
    ASSERT_GT(writer, 0);
    close(pipe_fds[1]);
    // Wait for at least one finished save (the writer works), then kill it at a random moment
    // of a later one.
    char byte;
    ASSERT_EQ(read(pipe_fds[0], &byte, 1), 1) << "the writer process finished no save";
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 20000)(rng)));
    kill(writer, SIGKILL);
    int status = 0;
    waitpid(writer, &status, 0);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "round " << round;
    int finished = 1;
    while (read(pipe_fds[0], &byte, 1) == 1) ++finished;
    close(pipe_fds[0]);

    tf::NamedVariables restored = state(-1.f);
    ASSERT_NO_THROW(tf::restore_checkpoint(path, restored)) << "round " << round;
    const std::vector<float> a = restored[0].second.value().to_vector<float>();
    const std::vector<float> b = restored[1].second.value().to_vector<float>();
    // The last finished save, or the one after it if the kill came after its rename.
    EXPECT_TRUE(a.front() == finished || a.front() == finished + 1) << "round " << round << ": " << a.front();
    for (float v : a) ASSERT_EQ(v, a.front()) << "round " << round;
    for (float v : b) ASSERT_EQ(v, -a.front()) << "round " << round;
  }
  // The killed saves left their temporary files (`model.ckpt.tmp.<pid>`); the next save removes
  // those of dead processes, so repeated kills do not fill the disk.
  tf::save_checkpoint(path, state(0.f));
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path().filename().string());
  EXPECT_EQ(files, std::vector<std::string>{"model.ckpt"});
  fs::remove_all(dir);
}
