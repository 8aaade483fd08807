#include "interrupt.h"

#include <signal.h>
#include <unistd.h>

namespace tapeflow::cli {
namespace {

// Lock-free, so the handler may touch it (async-signal-safe).
std::atomic<int> g_interrupts{0};
static_assert(std::atomic<int>::is_always_lock_free);
constexpr int kStopSignals[2] = {SIGINT, SIGUSR1};
struct sigaction g_previous[2]{};

void write_stderr(const char* text, std::size_t n) {
  // Nothing to do about a failed write inside a signal handler.
  [[maybe_unused]] const ssize_t r = ::write(STDERR_FILENO, text, n);
}

extern "C" void on_stop_signal(int signal) {
  if (g_interrupts.fetch_add(1) == 0) {
    constexpr char kFirstSigint[] =
        "\ntapeflow: interrupted: finishing the current step (Ctrl-C again to quit at once)\n";
    constexpr char kFirstSigusr1[] =
        "\ntapeflow: stop requested (SIGUSR1): finishing the current step (SIGUSR1 or Ctrl-C again to "
        "quit at once)\n";
    if (signal == SIGUSR1)
      write_stderr(kFirstSigusr1, sizeof kFirstSigusr1 - 1);
    else
      write_stderr(kFirstSigint, sizeof kFirstSigint - 1);
    return;
  }
  constexpr char kSecond[] = "\ntapeflow: interrupted again: quitting without saving\n";
  write_stderr(kSecond, sizeof kSecond - 1);
  ::_exit(130);
}

}  // namespace

InterruptHandler::InterruptHandler() {
  g_interrupts.store(0);
  for (int i = 0; i < 2; ++i) {
    struct sigaction current {};
    if (::sigaction(kStopSignals[i], nullptr, &current) != 0 || current.sa_handler == SIG_IGN) continue;
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // slow system calls (reading the data set) resume, not fail
    installed_[i] = ::sigaction(kStopSignals[i], &action, &g_previous[i]) == 0;
  }
}

InterruptHandler::~InterruptHandler() {
  for (int i = 0; i < 2; ++i)
    if (installed_[i]) ::sigaction(kStopSignals[i], &g_previous[i], nullptr);
}

const std::atomic<int>& InterruptHandler::count() { return g_interrupts; }

}  // namespace tapeflow::cli
