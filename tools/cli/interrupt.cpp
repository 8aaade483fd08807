#include "interrupt.h"

#include <signal.h>
#include <unistd.h>

namespace tapeflow::cli {
namespace {

// Lock-free, so the handler may touch it (async-signal-safe).
std::atomic<int> g_interrupts{0};
static_assert(std::atomic<int>::is_always_lock_free);
struct sigaction g_previous {};

void write_stderr(const char* text, std::size_t n) {
  // Nothing to do about a failed write inside a signal handler.
  [[maybe_unused]] const ssize_t r = ::write(STDERR_FILENO, text, n);
}

extern "C" void on_sigint(int) {
  if (g_interrupts.fetch_add(1) == 0) {
    constexpr char kFirst[] =
        "\ntapeflow: interrupted: finishing the current step (Ctrl-C again to quit at once)\n";
    write_stderr(kFirst, sizeof kFirst - 1);
    return;
  }
  constexpr char kSecond[] = "\ntapeflow: interrupted again: quitting without saving\n";
  write_stderr(kSecond, sizeof kSecond - 1);
  ::_exit(130);
}

}  // namespace

InterruptHandler::InterruptHandler() {
  g_interrupts.store(0);
  struct sigaction current {};
  if (::sigaction(SIGINT, nullptr, &current) != 0 || current.sa_handler == SIG_IGN) return;
  struct sigaction action {};
  action.sa_handler = on_sigint;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // slow system calls (reading the data set) resume, not fail
  installed_ = ::sigaction(SIGINT, &action, &g_previous) == 0;
}

InterruptHandler::~InterruptHandler() {
  if (installed_) ::sigaction(SIGINT, &g_previous, nullptr);
}

const std::atomic<int>& InterruptHandler::count() { return g_interrupts; }

}  // namespace tapeflow::cli
