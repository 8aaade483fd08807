#pragma once
// A concurrent program decoded from fuzz input, for the concurrency fuzzer (fuzz_threads.cpp, under
// ASan + UBSan) and the seeded thread test (tests/threads/thread_programs_test.cpp, under
// ThreadSanitizer). Two to four threads run decoded actions at once on shared objects:
//   - a shared counter Variable that every thread adds whole numbers to (assign_add);
//   - a variable one thread assigns whole values to (every element equal) while others read it;
//   - one SGD (momentum) and one Adam optimizer shared by all threads, each thread stepping its
//     own variables with apply_gradients or the fused minimize;
//   - a tf::function shared by all threads, called with batches of several sizes (traced from
//     whichever thread comes first), and each thread's own tape with its gradients;
//   - a RecordingPause made on one thread and destroyed on another (the tape's gradient is then
//     right or a tapeflow::Error, never silently missing).
// After the threads join, what every interleaving must give is checked: the counter holds every
// addition; no read saw a half-written value; each thread's SGD variables end bitwise as when
// that thread runs alone; Adam counts every step and holds each slot once; the function's results
// and every gradient equal the same computation done eagerly. run_thread_program
// returns what failed (empty when everything held).

#include <fmt/format.h>

#include <latch>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fuzz_input.h"

namespace tapeflow::fuzz {

namespace thread_program {

enum class Action {
  CounterAdd,
  HotAssign,
  HotRead,
  SgdStep,
  AdamMinimize,
  CallFunction,
  TapeGradient,
  PauseHandoff
};
inline constexpr int kActions = 8;

struct Step {
  Action action;
  std::int64_t amount;  // a whole number to add or assign; the batch size of a call
};

/// The loss of a thread's own variables: the same in the concurrent run and in the replay.
inline Tensor own_loss(const std::vector<Variable>& vars, const Tensor& data) {
  return reduce_sum(tanh(matmul(data, vars[0].read_value()) + vars[1].read_value()));
}

/// A thread's own variables, the same for a seed in the run and in its replay.
inline std::vector<Variable> own_variables(std::uint64_t seed) {
  return {Variable(random::uniform({3, 2}, -1.0, 1.0, DType::Float64, seed)),
          Variable(random::uniform({2}, -1.0, 1.0, DType::Float64, seed + 1))};
}

/// What the function computes, written once for the trace and for the eager check.
inline Tensor weighted_tanh_sum(const Tensor& x, const Variable& weights) {
  return reduce_sum(tanh(x) * weights.read_value(), {1});
}

class Failures {
 public:
  void add(std::string what) {
    const std::lock_guard lock(mu_);
    if (list_.size() < 8) list_.push_back(std::move(what));
  }
  std::string text() const {
    const std::lock_guard lock(mu_);
    std::string s;
    for (const auto& f : list_) s += f + "\n";
    return s;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> list_;
};

}  // namespace thread_program

/// Decodes a program from `in` and runs it; returns the failures, one per line ("" when none).
inline std::string run_thread_program(FuzzInput& in) {
  using namespace thread_program;
  const int threads = static_cast<int>(in.range(2, 4));
  std::vector<std::vector<Step>> program(static_cast<std::size_t>(threads));
  for (auto& steps : program)
    for (std::int64_t i = 0, n = in.range(1, 12); i < n; ++i)
      steps.push_back({static_cast<Action>(in.u8() % kActions), in.range(1, 4)});

  Failures failures;
  Variable counter(constant(0.0), VariableOptions{.trainable = false});
  Variable hot(fill({64}, 0.0f), VariableOptions{.trainable = false});
  const Variable weights(random::uniform({4}, -1.0, 1.0, DType::Float64, 7));
  optimizers::SGD sgd(0.05, 0.9);
  optimizers::Adam adam(0.01);
  // An unknown batch dimension: calls at several sizes trace, share and serve one graph at once.
  auto fn = function([&weights](const Tensor& x) { return weighted_tanh_sum(x, weights); },
                     FunctionOptions{.name = "weighted_tanh_sum",
                                     .input_signature = std::vector{TensorSpec{{-1, 4}, DType::Float64}}});
  std::vector<std::vector<Variable>> sgd_vars, adam_vars;
  for (int t = 0; t < threads; ++t) {
    sgd_vars.push_back(own_variables(100 + 10 * static_cast<std::uint64_t>(t)));
    adam_vars.push_back(own_variables(500 + 10 * static_cast<std::uint64_t>(t)));
  }
  const Tensor data = random::uniform({5, 3}, -1.0, 1.0, DType::Float64, 3);

  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      const auto ti = static_cast<std::size_t>(t);
      start.arrive_and_wait();
      for (const Step& s : program[ti]) {
        try {
          switch (s.action) {
            case Action::CounterAdd:
              counter.assign_add(constant(static_cast<double>(s.amount)));
              break;
            case Action::HotAssign:
              hot.assign(fill({64}, static_cast<float>(s.amount + 4 * t)));
              break;
            case Action::HotRead: {
              const auto v = hot.read_value().to_vector<float>();
              for (float e : v)
                if (e != v[0]) {
                  failures.add(fmt::format("thread {}: a read of a variable saw a half-written value", t));
                  break;
                }
              break;
            }
            case Action::SgdStep: {
              GradientTape tape;
              const Tensor loss = own_loss(sgd_vars[ti], data);
              sgd.apply_gradients(tape.gradient(loss, sgd_vars[ti]), sgd_vars[ti]);
              break;
            }
            case Action::AdamMinimize: {
              GradientTape tape;
              adam.minimize(own_loss(adam_vars[ti], data), adam_vars[ti], tape);
              break;
            }
            case Action::CallFunction: {
              const Tensor x = random::uniform({s.amount, 4}, -2.0, 2.0, DType::Float64,
                                               static_cast<std::uint64_t>(1000 * t + s.amount));
              const auto traced = fn(x).to_vector<double>();
              const auto eager = weighted_tanh_sum(x, weights).to_vector<double>();
              if (traced != eager)
                failures.add(
                    fmt::format("thread {}: the shared function's result for a batch of {} differs "
                                "from the eager one",
                                t, s.amount));
              break;
            }
            case Action::TapeGradient: {
              const Tensor x = random::uniform({s.amount, 4}, -2.0, 2.0, DType::Float64,
                                               static_cast<std::uint64_t>(2000 * t + s.amount));
              GradientTape tape;
              tape.watch(x);
              const Tensor y = reduce_sum(weighted_tanh_sum(x, weights));
              const auto got = tape.gradient(y, x)->to_vector<double>();
              const Tensor th = tanh(x);
              const auto want = ((1.0 - th * th) * weights.read_value()).to_vector<double>();
              for (std::size_t i = 0; i < want.size(); ++i)
                if (std::abs(got[i] - want[i]) > 1e-12) {
                  failures.add(fmt::format("thread {}: a gradient on its own tape is wrong", t));
                  break;
                }
              break;
            }
            case Action::PauseHandoff: {
              // The guard is not movable: only `new` with a prvalue puts it on the heap.
              GradientTape tape(TapeOptions{.persistent = true});
              const Tensor x = constant(2.0);
              tape.watch(x);
              std::unique_ptr<GradientTape::RecordingPause> pause(
                  new GradientTape::RecordingPause(tape.stop_recording()));
              std::thread([&pause] { pause.reset(); }).join();
              const Tensor y = x * x;
              try {
                const auto g = tape.gradient(y, x);
                if (!g || g->item<double>() != 4.0)
                  failures.add(
                      fmt::format("thread {}: a tape whose pause ended on another thread gave a "
                                  "missing or wrong gradient",
                                  t));
              } catch (const Error&) {
                // What the guard's documentation promises instead of a silently missing gradient.
              }
              break;
            }
          }
        } catch (const std::exception& e) {
          failures.add(fmt::format("thread {}: {}", t, e.what()));
        }
      }
    });
  for (auto& th : pool) th.join();

  // What every interleaving must give.
  std::int64_t added = 0, adam_steps = 0;
  for (const auto& steps : program)
    for (const Step& s : steps) {
      if (s.action == Action::CounterAdd) added += s.amount;
      if (s.action == Action::AdamMinimize) ++adam_steps;
    }
  if (counter.value().item<double>() != static_cast<double>(added))
    failures.add(fmt::format("the counter holds {} after additions summing to {}",
                             counter.value().item<double>(), added));
  if (adam.iterations().value().item<std::int64_t>() != adam_steps)
    failures.add(fmt::format("Adam counted {} steps of {}", adam.iterations().value().item<std::int64_t>(),
                             adam_steps));
  for (int t = 0; t < threads; ++t) {
    const auto ti = static_cast<std::size_t>(t);
    bool stepped = false;
    for (const Step& s : program[ti]) stepped |= s.action == Action::AdamMinimize;
    for (const Variable& v : adam_vars[ti])
      if (stepped && adam.slot(v, "m").shape() != v.shape())
        failures.add(fmt::format("thread {}: Adam's slot of its variable is missing", t));
    // The thread's SGD steps replayed alone, with an optimizer of its own.
    const auto alone = own_variables(100 + 10 * static_cast<std::uint64_t>(t));
    optimizers::SGD own(0.05, 0.9);
    for (const Step& s : program[ti])
      if (s.action == Action::SgdStep) {
        GradientTape tape;
        const Tensor loss = own_loss(alone, data);
        own.apply_gradients(tape.gradient(loss, alone), alone);
      }
    for (std::size_t i = 0; i < alone.size(); ++i)
      if (alone[i].value().to_vector<double>() != sgd_vars[ti][i].value().to_vector<double>())
        failures.add(
            fmt::format("thread {}: its SGD variable {} differs from the same steps run alone", t, i));
  }
  return failures.text();
}

}  // namespace tapeflow::fuzz
