#include "distributed/world.h"

// MPI's C API only: without these, OpenMPI's mpi.h pulls its deprecated C++ bindings into C++.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <climits>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "core/half.h"
#include "tapeflow/logging.h"

namespace tapeflow::distributed::detail {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kTagAsk = 7301;
constexpr int kTagVerdict = 7302;
/// A verdict: status (0 agree, 1 differ, 2 ranks missing), the number of missing ranks, and the
/// first of them.
constexpr int kVerdictLength = 16;
enum Verdict : std::int64_t { kAgree = 0, kDiffer = 1, kMissing = 2 };
/// How long a negotiation spins before it sleeps. Ranks of one step arrive within tens of
/// microseconds of each other, and the shortest sleep costs about 100 µs on a VM (timer slack and
/// the wake-up): sleeping there made the MLP's two-rank step pay 130 µs a negotiation.
constexpr double kSpinSeconds = 500e-6;

/// Whether a launcher (OpenMPI's mpirun, a PMI or PMIx one) started this process as a rank.
bool launched_by_mpirun() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"})
    if (std::getenv(var) != nullptr) return true;
  return false;
}

/// `fallback`, or the environment variable `var` as a number of seconds >= 0.
double env_seconds(const char* var, double fallback) {
  const char* s = std::getenv(var);
  if (s == nullptr) return fallback;
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  TAPEFLOW_REQUIRE(end != s && *end == '\0' && v >= 0 && v < 1e9, InvalidArgumentError,
                   "[distributed::init] {}='{}' is not a number of seconds >= 0", var, s);
  return v;
}

MPI_Datatype mpi_type(Wire w) {
  switch (w) {
    case Wire::F32:
      return MPI_FLOAT;
    case Wire::F64:
      return MPI_DOUBLE;
    case Wire::I32:
      return MPI_INT32_T;
    case Wire::I64:
      return MPI_INT64_T;
    case Wire::U8:
      return MPI_UINT8_T;
    case Wire::BF16:
    case Wire::F16:
      return MPI_UINT16_T;
  }
  return MPI_DATATYPE_NULL;
}

/// MPI_Op functions summing 16-bit floats: each pair in float, rounded back.
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void sum16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const std::uint16_t*>(in);
  auto* b = static_cast<std::uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = FromFloat(ToFloat(a[i]) + ToFloat(b[i]));
}

/// MPI_Op functions for ReduceOp::Max and Min on floats: NaN propagates, as tapeflow's maximum and
/// minimum (MPI_MAX and MPI_MIN compare with > and <, so a NaN met second is dropped, and the
/// result depended on where the NaN sat in MPI's reduction order).
template <class T, bool kMax>
void extreme_nan(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const T*>(in);
  auto* b = static_cast<T*>(inout);
  for (int i = 0; i < *len; ++i)
    if (std::isnan(a[i]) || (kMax ? a[i] > b[i] : a[i] < b[i])) b[i] = a[i];
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// "ranks 0, 2: <line>; rank 1: <line>" for the first line where the ranks' texts differ.
std::string describe_difference(std::string_view op, const std::vector<std::string>& texts) {
  std::vector<std::vector<std::string>> lines;
  std::size_t longest = 0;
  for (const auto& t : texts) {
    lines.push_back(lines_of(t));
    longest = std::max(longest, lines.back().size());
  }
  for (std::size_t l = 0; l < longest; ++l) {
    std::map<std::string, std::vector<int>> by_value;
    for (std::size_t r = 0; r < lines.size(); ++r)
      by_value[l < lines[r].size() ? lines[r][l] : "(nothing)"].push_back(static_cast<int>(r));
    if (by_value.size() == 1) continue;
    std::string s = fmt::format("[{}] the ranks disagree on what to reduce{}: ", op,
                                l == 0 ? "" : fmt::format(" ({})", lines[0][0]));
    bool first = true;
    for (const auto& [value, ranks] : by_value) {
      s += fmt::format("{}{} {}", first ? "" : "; ", rank_list(ranks),
                       l == 0 ? "calls " + value : "has " + value);
      first = false;
    }
    return s +
           " (every rank must make the same collective calls, with the same tensors' shapes and dtypes, "
           "in the same order)";
  }
  return fmt::format("[{}] the ranks disagree on what to reduce", op);
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) s += (i ? ", " : "") + std::to_string(ranks[i]);
  return s;
}

std::uint64_t fnv1a(std::string_view bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::size_t wire_size(Wire w) {
  switch (w) {
    case Wire::F32:
    case Wire::I32:
      return 4;
    case Wire::F64:
    case Wire::I64:
      return 8;
    case Wire::U8:
      return 1;
    case Wire::BF16:
    case Wire::F16:
      return 2;
  }
  return 0;
}

Wire wire_of(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return Wire::F32;
    case DType::Float64:
      return Wire::F64;
    case DType::Int32:
      return Wire::I32;
    case DType::Int64:
      return Wire::I64;
    case DType::Bool:
      return Wire::U8;
    case DType::BFloat16:  // not reduced (the collectives refuse it), but its bytes travel as such
      return Wire::BF16;
  }
  return Wire::U8;
}

/// The communication thread, its queue, and the MPI objects it made.
struct World::Impl {
  std::thread thread;
  std::mutex mutex;
  std::condition_variable wake;
  std::deque<std::packaged_task<void()>> jobs;
  bool stop = false;
  /// A job is running, on this thread or inline on a caller's (run()).
  bool running = false;
  /// MPI granted MPI_THREAD_SERIALIZED: run() may make its job's MPI calls on the caller's thread.
  bool serialized = false;
  /// Set once a wait timed out: the message every later collective throws.
  std::string broken;
  MPI_Op sum_bf16 = MPI_OP_NULL, sum_f16 = MPI_OP_NULL;
  MPI_Op max_f32 = MPI_OP_NULL, max_f64 = MPI_OP_NULL, min_f32 = MPI_OP_NULL, min_f64 = MPI_OP_NULL;
  /// The blocking MPI call in progress (after its negotiation): what it is and since when, for
  /// the watchdog. Zero: none.
  std::atomic<std::int64_t> busy_since_ns{0};
  std::string busy_what;  // under `mutex`
  std::thread watchdog;
  std::condition_variable watchdog_wake;  // its own: a notify_one for a job must reach the loop
  const World* world = nullptr;
  bool mpi_up = false;  // MPI_Init_thread succeeded (on the communication thread)

  /// Runs one blocking MPI call, watched: every rank was at its negotiation, so it normally ends
  /// at once, but a rank that stops in the middle of a step (before its next bucket) would leave
  /// it waiting forever, which the watchdog ends.
  void watched(std::string_view call, std::string_view what, int rc_of_call);
  template <class F>
  void blocking(std::string_view call, std::string_view what, F&& f) {
    {
      std::lock_guard lock(mutex);
      busy_what = fmt::format("{} ({})", what, call);
    }
    busy_since_ns.store(Clock::now().time_since_epoch().count());
    const int rc = f();
    busy_since_ns.store(0);
    watched(call, what, rc);
  }

  /// Warns about a blocking call that waits longer than the stall time, and ends the job (every
  /// rank) when it waits past the timeout: a blocked MPI call cannot be interrupted.
  void watch() {
    std::int64_t warned_for = 0;
    for (;;) {
      {
        std::unique_lock lock(mutex);
        if (watchdog_wake.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop; })) return;
      }
      const std::int64_t since = busy_since_ns.load();
      if (since == 0) {
        warned_for = 0;
        continue;
      }
      const double waited =
          std::chrono::duration<double>(Clock::now().time_since_epoch() - Clock::duration(since)).count();
      const InitOptions limits = world->options();
      std::string what;
      {
        std::lock_guard lock(mutex);
        what = busy_what;
      }
      if (limits.stall_warning_seconds > 0 && waited >= limits.stall_warning_seconds * (warned_for + 1)) {
        ++warned_for;
        log(LogLevel::Warning,
            fmt::format("[distributed] {} has waited {:.0f} s: a rank stopped in the middle of "
                        "a step, after the step's negotiation (stall check)",
                        what, waited));
      }
      if (limits.timeout_seconds > 0 && waited >= limits.timeout_seconds) {
        log(LogLevel::Error,
            fmt::format("[distributed] {} timed out after {:.0f} s: a rank stopped in the middle of "
                        "a step; ending the job (MPI_Abort), since a blocked MPI call cannot be "
                        "interrupted",
                        what, waited));
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
  }

  void loop() {
    for (;;) {
      std::packaged_task<void()> job;
      {
        std::unique_lock lock(mutex);
        wake.wait(lock, [&] { return !running && (stop || !jobs.empty()); });
        if (jobs.empty()) return;
        job = std::move(jobs.front());
        jobs.pop_front();
        running = true;
      }
      job();
      std::lock_guard lock(mutex);
      running = false;
    }
  }

  /// Claims MPI for a job on the calling thread: only when nothing is queued or running, so the
  /// job keeps its place in the order of submission.
  bool begin_inline() {
    std::lock_guard lock(mutex);
    if (!serialized || stop || running || !jobs.empty()) return false;
    running = true;
    return true;
  }
  /// Gives MPI back, waking the communication thread if jobs were queued meanwhile.
  void end_inline() {
    bool queued = false;
    {
      std::lock_guard lock(mutex);
      running = false;
      queued = !jobs.empty();
    }
    if (queued) wake.notify_one();
  }
};

namespace {
std::mutex g_init_mutex;
std::atomic<World*> g_world{nullptr};
}  // namespace

World& World::get(std::string_view caller) {
  if (World* w = g_world.load()) [[likely]]
    return *w;
  // A single process needs no init(); a rank of a job must join it on purpose.
  TAPEFLOW_REQUIRE(
      !launched_by_mpirun(), FailedPreconditionError,
      "[{}] this process is a rank of an MPI job, but tf::distributed::init() has not been called "
      "(call it once at the start of the program)",
      caller);
  init({});
  return *g_world.load();
}

bool World::initialized() { return g_world != nullptr; }

void World::init(const InitOptions& options) {
  std::lock_guard lock(g_init_mutex);
  InitOptions o = options;
  o.stall_warning_seconds = env_seconds("TAPEFLOW_STALL_WARNING_SECONDS", o.stall_warning_seconds);
  o.timeout_seconds = env_seconds("TAPEFLOW_STALL_TIMEOUT_SECONDS", o.timeout_seconds);
  TAPEFLOW_REQUIRE(o.stall_warning_seconds >= 0 && o.timeout_seconds >= 0, InvalidArgumentError,
                   "[distributed::init] stall_warning_seconds ({}) and timeout_seconds ({}) must be >= 0",
                   o.stall_warning_seconds, o.timeout_seconds);
  if (World* w = g_world.load()) {
    w->set_options(o);
    return;
  }
  // Destroyed at exit, after main: the thread finalises MPI (or aborts the job if it broke).
  static World world;
  static std::string failed;  // why MPI could not be joined: a later init() says it again
  TAPEFLOW_REQUIRE(failed.empty(), UnavailableError, "{}", failed);
  world.set_options(o);
  world.init_thread_ = std::this_thread::get_id();
  world.impl_ = std::make_unique<Impl>();
  world.mpi_ = launched_by_mpirun();
  if (world.mpi_) {
    Impl& impl = *world.impl_;
    impl.world = &world;
    impl.thread = std::thread([&impl] { impl.loop(); });
    impl.watchdog = std::thread([&impl] { impl.watch(); });
    try {
      world.run([&impl] {
        int provided = 0;
        const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
        TAPEFLOW_REQUIRE(rc == MPI_SUCCESS, UnavailableError,
                         "[distributed::init] MPI_Init_thread failed ({})", rc);
        impl.mpi_up = true;
        {
          std::lock_guard lock(impl.mutex);
          impl.serialized = provided >= MPI_THREAD_SERIALIZED;
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &world.rank_);
        MPI_Comm_size(MPI_COMM_WORLD, &world.size_);
        MPI_Comm local;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank_, MPI_INFO_NULL, &local);
        MPI_Comm_rank(local, &world.local_rank_);
        MPI_Comm_size(local, &world.local_size_);
        MPI_Comm_free(&local);
        MPI_Op_create(&sum16<bf16_to_float, float_to_bf16>, 1, &impl.sum_bf16);
        MPI_Op_create(&sum16<half_to_float, float_to_half>, 1, &impl.sum_f16);
        MPI_Op_create(&extreme_nan<float, true>, 1, &impl.max_f32);
        MPI_Op_create(&extreme_nan<double, true>, 1, &impl.max_f64);
        MPI_Op_create(&extreme_nan<float, false>, 1, &impl.min_f32);
        MPI_Op_create(&extreme_nan<double, false>, 1, &impl.min_f64);
      });
    } catch (const Error& e) {
      failed = e.what();
      throw;
    }
  }
  g_world = &world;
}

World::~World() {
  if (!impl_ || !impl_->thread.joinable()) return;
  Impl& impl = *impl_;
  bool broken = false;
  {
    std::lock_guard lock(impl.mutex);
    broken = !impl.broken.empty();
    impl.stop = true;
    // The last job: finalise, or end the whole job when a peer is gone (MPI_Finalize would wait
    // for it forever).
    impl.jobs.emplace_back([broken, &impl] {
      if (!impl.mpi_up) return;  // MPI_Init_thread failed: nothing to finalise
      if (broken)
        MPI_Abort(MPI_COMM_WORLD, 1);
      else
        MPI_Finalize();
    });
  }
  impl.wake.notify_one();
  impl.watchdog_wake.notify_one();
  impl.thread.join();
  impl.watchdog.join();
}

void World::run(std::function<void()> job) {
  // Waking the communication thread and being woken by it cost tens of microseconds each on a
  // VM; a caller that waits anyway runs the job itself when MPI is free.
  if (!mpi_ || !impl_->begin_inline()) {
    submit(std::move(job)).get();
    return;
  }
  struct Release {
    Impl& impl;
    ~Release() { impl.end_inline(); }
  } release{*impl_};
  if (!impl_->broken.empty()) throw UnavailableError(impl_->broken);
  job();
}

std::future<void> World::submit(std::function<void()> job) {
  Impl& impl = *impl_;
  if (!mpi_) {
    std::packaged_task<void()> task(std::move(job));
    auto f = task.get_future();
    task();
    return f;
  }
  std::packaged_task<void()> task([this, job = std::move(job)] {
    if (!impl_->broken.empty()) throw UnavailableError(impl_->broken);
    job();
  });
  auto f = task.get_future();
  {
    std::lock_guard lock(impl.mutex);
    TAPEFLOW_REQUIRE(
        !impl.stop, FailedPreconditionError,
        "[distributed] a collective was called while the program exits (after MPI was finalised)");
    impl.jobs.push_back(std::move(task));
  }
  impl.wake.notify_one();
  return f;
}

void World::fail(std::string message) {
  impl_->broken = message;
  throw UnavailableError(std::move(message));
}

void World::poll(const std::function<bool()>& done, std::string_view what,
                 const std::function<std::string()>& missing, double timeout_scale) {
  const auto start = Clock::now();
  const InitOptions limits = options();
  double next_warning = limits.stall_warning_seconds;
  auto pause = std::chrono::microseconds(0);
  while (!done()) {
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (limits.stall_warning_seconds > 0 && waited >= next_warning) {
      log(LogLevel::Warning, fmt::format("[distributed] {} has waited {:.0f} s for {} (stall check; "
                                         "TAPEFLOW_STALL_WARNING_SECONDS sets the interval)",
                                         what, waited, missing()));
      next_warning += limits.stall_warning_seconds;
    }
    if (limits.timeout_seconds > 0 && waited >= limits.timeout_seconds * timeout_scale)
      fail(
          fmt::format("[distributed] {} timed out after {:.0f} s waiting for {}; the job cannot go on "
                      "(TAPEFLOW_STALL_TIMEOUT_SECONDS sets the limit)",
                      what, waited, missing()));
    // Spin briefly (a collective on loopback takes microseconds), then sleep longer and longer,
    // up to 1 ms, so a waiting rank leaves the cores to the computation.
    if (waited > kSpinSeconds) {
      pause = std::min(std::chrono::microseconds(1000), pause + std::chrono::microseconds(20));
      std::this_thread::sleep_for(pause);
    }
  }
}

std::string World::unnamed_label() {
  if (mpi_ && size_ > 1 && std::this_thread::get_id() != init_thread_) return std::string(kUnnamedElsewhere);
  return fmt::format("#{}", ++calls_);
}

void World::negotiate(std::string_view op, const std::string& what) {
  if (!mpi_ || size_ == 1) return;
  const std::string_view title(what.data(), std::min(what.find('\n'), what.size()));
  std::uint64_t hash = fnv1a(what);
  std::array<std::int64_t, kVerdictLength> verdict{};
  if (rank_ == 0) {
    std::vector<std::uint64_t> hashes(static_cast<std::size_t>(size_));
    std::vector<MPI_Request> asks(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
    std::vector<char> arrived(static_cast<std::size_t>(size_), 0);
    hashes[0] = hash;
    arrived[0] = 1;
    for (int r = 1; r < size_; ++r)
      MPI_Irecv(&hashes[static_cast<std::size_t>(r)], 1, MPI_UINT64_T, r, kTagAsk, MPI_COMM_WORLD,
                &asks[static_cast<std::size_t>(r)]);
    auto missing_ranks = [&] {
      std::vector<int> m;
      for (int r = 0; r < size_; ++r)
        if (!arrived[static_cast<std::size_t>(r)]) m.push_back(r);
      return m;
    };
    auto all_arrived = [&] {
      for (int r = 1; r < size_; ++r) {
        auto u = static_cast<std::size_t>(r);
        int flag = 0;
        if (!arrived[u] && MPI_Test(&asks[u], &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag)
          arrived[u] = 1;
      }
      return missing_ranks().empty();
    };
    try {
      poll(all_arrived, fmt::format("{} ({})", op, title), [&] { return rank_list(missing_ranks()); });
      verdict[0] = std::all_of(hashes.begin(), hashes.end(), [&](std::uint64_t h) { return h == hash; })
                       ? kAgree
                       : kDiffer;
    } catch (const UnavailableError&) {
      // Tell the ranks that came which ones did not, so they fail now with the same names.
      const auto m = missing_ranks();
      verdict[0] = kMissing;
      verdict[1] = static_cast<std::int64_t>(m.size());
      for (std::size_t i = 0; i < m.size() && i + 2 < verdict.size(); ++i) verdict[i + 2] = m[i];
      for (int r = 1; r < size_; ++r) {
        if (!arrived[static_cast<std::size_t>(r)]) {
          MPI_Cancel(&asks[static_cast<std::size_t>(r)]);
          continue;
        }
        MPI_Request send;
        MPI_Isend(verdict.data(), kVerdictLength, MPI_INT64_T, r, kTagVerdict, MPI_COMM_WORLD, &send);
        MPI_Request_free(&send);
      }
      throw;
    }
    std::vector<MPI_Request> sends(static_cast<std::size_t>(size_ - 1));
    for (int r = 1; r < size_; ++r)
      MPI_Isend(verdict.data(), kVerdictLength, MPI_INT64_T, r, kTagVerdict, MPI_COMM_WORLD,
                &sends[static_cast<std::size_t>(r - 1)]);
    MPI_Waitall(size_ - 1, sends.data(), MPI_STATUSES_IGNORE);
  } else {
    MPI_Request ask, answer;
    MPI_Isend(&hash, 1, MPI_UINT64_T, 0, kTagAsk, MPI_COMM_WORLD, &ask);
    MPI_Irecv(verdict.data(), kVerdictLength, MPI_INT64_T, 0, kTagVerdict, MPI_COMM_WORLD, &answer);
    int sent = 0, answered = 0;
    // A little longer than rank 0's limit, so that rank 0 names the missing ranks first.
    poll(
        [&] {
          if (!sent) MPI_Test(&ask, &sent, MPI_STATUS_IGNORE);
          if (!answered) MPI_Test(&answer, &answered, MPI_STATUS_IGNORE);
          return sent && answered;
        },
        fmt::format("{} ({})", op, title),
        [] {
          return std::string(
              "rank 0, which collects every rank's request (it may itself wait for another rank)");
        },
        1.1);
    if (verdict[0] == kMissing) {
      std::vector<int> m;
      for (std::int64_t i = 0; i < verdict[1] && i + 2 < kVerdictLength; ++i)
        m.push_back(static_cast<int>(verdict[static_cast<std::size_t>(i + 2)]));
      fail(fmt::format("[distributed] {} ({}) failed: {} did not join it within {:.0f} s (seen by rank 0)",
                       op, title, rank_list(m), options().timeout_seconds));
    }
  }
  if (verdict[0] == kAgree) {
    // Every rank's text says so (they agree): every rank throws, and no data has moved.
    TAPEFLOW_REQUIRE(title.find(kUnnamedElsewhere) == std::string_view::npos, InvalidArgumentError,
                     "[{}] {}: unnamed collectives are paired across the ranks by the order of their "
                     "calls, which only the thread that called distributed::init() defines; give a "
                     "collective issued by another thread a name (the same on every rank)",
                     op, title);
    return;
  }
  // Every rank is here and they differ: exchange the texts, so each rank can name the difference.
  const std::vector<std::int64_t> lengths = allgather(static_cast<std::int64_t>(what.size()), op);
  std::int64_t total = 0;
  for (std::int64_t l : lengths) total += l;
  std::string all(static_cast<std::size_t>(total), '\0');
  allgatherv(what.data(), all.data(), lengths, Wire::U8, op);
  std::vector<std::string> texts;
  std::size_t at = 0;
  for (std::int64_t l : lengths) {
    texts.push_back(all.substr(at, static_cast<std::size_t>(l)));
    at += static_cast<std::size_t>(l);
  }
  throw InvalidArgumentError(describe_difference(op, texts));
}

namespace {
/// Throws UnavailableError for an MPI error code.
void check_mpi(int rc, std::string_view call, std::string_view what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw UnavailableError(
      fmt::format("[distributed] {} failed in {}: {}", what, call, std::string_view(text, len)));
}

int checked_int(std::int64_t n, std::string_view what) {
  TAPEFLOW_REQUIRE(n <= INT_MAX, ResourceExhaustedError,
                   "[distributed] {}: {} elements in one exchange exceed MPI's int counts (2^31 - 1)", what,
                   n);
  return static_cast<int>(n);
}
}  // namespace

void World::Impl::watched(std::string_view call, std::string_view what, int rc) { check_mpi(rc, call, what); }

void World::allreduce(const void* in, void* out, std::int64_t count, Wire wire, ReduceOp op,
                      std::string_view what) {
  if (count == 0) return;
  if (!mpi_ || size_ == 1) {
    if (in != nullptr) std::memcpy(out, in, static_cast<std::size_t>(count) * wire_size(wire));
    return;
  }
  MPI_Op mpi_op = MPI_SUM;
  if (wire == Wire::BF16 || wire == Wire::F16) {
    TAPEFLOW_ASSERT(op == ReduceOp::Sum || op == ReduceOp::Average, "16-bit wire sums only");
    mpi_op = wire == Wire::BF16 ? impl_->sum_bf16 : impl_->sum_f16;
  } else if (op == ReduceOp::Min) {
    mpi_op = wire == Wire::F32 ? impl_->min_f32 : wire == Wire::F64 ? impl_->min_f64 : MPI_MIN;
  } else if (op == ReduceOp::Max) {
    mpi_op = wire == Wire::F32 ? impl_->max_f32 : wire == Wire::F64 ? impl_->max_f64 : MPI_MAX;
  }
  // MPI counts are ints: a huge tensor goes in pieces of 2^30 elements.
  constexpr std::int64_t kPiece = std::int64_t{1} << 30;
  const auto es = static_cast<std::int64_t>(wire_size(wire));
  for (std::int64_t at = 0; at < count; at += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, count - at));
    impl_->blocking("MPI_Allreduce", what, [&] {
      return MPI_Allreduce(in == nullptr ? MPI_IN_PLACE : static_cast<const char*>(in) + at * es,
                           static_cast<char*>(out) + at * es, n, mpi_type(wire), mpi_op, MPI_COMM_WORLD);
    });
  }
}

void World::allgatherv(const void* in, void* out, std::span<const std::int64_t> counts, Wire wire,
                       std::string_view what) {
  const std::size_t es = wire_size(wire);
  if (!mpi_ || size_ == 1) {
    std::memcpy(out, in, static_cast<std::size_t>(counts[0]) * es);
    return;
  }
  std::vector<int> n(counts.size()), displs(counts.size());
  std::int64_t at = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    n[r] = checked_int(counts[r], what);
    displs[r] = checked_int(at, what);
    at += counts[r];
  }
  checked_int(at, what);
  impl_->blocking("MPI_Allgatherv", what, [&] {
    return MPI_Allgatherv(in, n[static_cast<std::size_t>(rank_)], mpi_type(wire), out, n.data(),
                          displs.data(), mpi_type(wire), MPI_COMM_WORLD);
  });
}

void World::broadcast(void* buffer, std::int64_t count, Wire wire, int root, std::string_view what) {
  if (!mpi_ || size_ == 1 || count == 0) return;
  constexpr std::int64_t kPiece = std::int64_t{1} << 30;
  auto* bytes = static_cast<char*>(buffer);
  for (std::int64_t at = 0; at < count; at += kPiece) {
    impl_->blocking("MPI_Bcast", what, [&] {
      return MPI_Bcast(bytes + at * static_cast<std::int64_t>(wire_size(wire)),
                       static_cast<int>(std::min(kPiece, count - at)), mpi_type(wire), root, MPI_COMM_WORLD);
    });
  }
}

void World::alltoallv(const void* in, std::span<const std::int64_t> send, void* out,
                      std::span<const std::int64_t> recv, Wire wire, std::string_view what) {
  if (!mpi_ || size_ == 1) {
    std::memcpy(out, in, static_cast<std::size_t>(send[0]) * wire_size(wire));
    return;
  }
  auto ints = [&](std::span<const std::int64_t> counts, std::vector<int>& n, std::vector<int>& displs) {
    std::int64_t at = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      n.push_back(checked_int(counts[r], what));
      displs.push_back(checked_int(at, what));
      at += counts[r];
    }
    checked_int(at, what);
  };
  std::vector<int> sn, sd, rn, rd;
  ints(send, sn, sd);
  ints(recv, rn, rd);
  impl_->blocking("MPI_Alltoallv", what, [&] {
    return MPI_Alltoallv(in, sn.data(), sd.data(), mpi_type(wire), out, rn.data(), rd.data(), mpi_type(wire),
                         MPI_COMM_WORLD);
  });
}

std::vector<std::int64_t> World::allgather(std::int64_t value, std::string_view what) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(size_), value);
  const std::vector<std::int64_t> ones(static_cast<std::size_t>(size_), 1);
  allgatherv(&value, all.data(), ones, Wire::I64, what);
  return all;
}

}  // namespace tapeflow::distributed::detail

namespace tapeflow::distributed {

using detail::World;

void init(const InitOptions& options) { World::init(options); }
bool initialized() { return World::initialized(); }
bool is_mpi() { return World::get("distributed::is_mpi").mpi(); }
int rank() { return World::get("distributed::rank").rank(); }
int size() { return World::get("distributed::size").size(); }
int local_rank() { return World::get("distributed::local_rank").local_rank(); }
int local_size() { return World::get("distributed::local_size").local_size(); }

void barrier() {
  World& w = World::get("distributed::barrier");
  w.run([&] { w.negotiate("distributed::barrier", "barrier"); });
}

double allreduce(double value, ReduceOp op, std::string_view name) {
  constexpr std::string_view kOp = "distributed::allreduce";
  World& w = World::get(kOp);
  const std::string what = fmt::format("allreduce({}) {} of a number", to_string(op),
                                       name.empty() ? w.unnamed_label() : fmt::format("'{}'", name));
  w.run([&] {
    w.negotiate(kOp, what);
    w.allreduce(nullptr, &value, 1, detail::Wire::F64, op, what);
  });
  return op == ReduceOp::Average ? value / w.size() : value;
}

}  // namespace tapeflow::distributed
