// Dataset.map: a function applied to every element, on the consumer's thread or on worker threads
// with the results delivered in the input's order.
//
// Parallel map: next() keeps up to `parallelism` input elements in flight, each in a Slot queued
// for the workers; it then waits for the oldest slot and returns its result (or rethrows its
// error). Input elements are pulled only on the consumer's thread, so the input iterator needs no
// lock; the workers touch only the task queue and the slots, under one mutex.

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "data/node.h"

namespace tapeflow::data {
namespace {

using MapFn = std::function<Element(const Element&)>;

class SerialMapIterator final : public detail::NodeIterator {
 public:
  SerialMapIterator(std::unique_ptr<detail::NodeIterator> input, const MapFn& fn)
      : input_(std::move(input)), fn_(fn) {}
  std::optional<Element> next() override {
    std::optional<Element> e = input_->next();
    if (!e) return std::nullopt;
    return fn_(*e);
  }
  // 1:1, so skipping outputs is skipping inputs; fn is not called for them.
  std::int64_t skip(std::int64_t n) override { return input_->skip(n); }

 private:
  std::unique_ptr<detail::NodeIterator> input_;
  const MapFn& fn_;
};

class ParallelMapIterator final : public detail::NodeIterator {
 public:
  ParallelMapIterator(std::unique_ptr<detail::NodeIterator> input, const MapFn& fn, std::int64_t parallelism)
      : input_(std::move(input)), fn_(fn), parallelism_(static_cast<std::size_t>(parallelism)) {
    for (std::size_t i = 0; i < parallelism_; ++i) workers_.emplace_back([this] { work(); });
  }
  ~ParallelMapIterator() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    task_ready_.notify_all();
    for (std::thread& w : workers_) w.join();
  }

  std::optional<Element> next() override {
    while (!input_done_ && in_flight_.size() < parallelism_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_done_ = true;
        break;
      }
      auto slot = std::make_shared<Slot>();
      slot->input = std::move(*e);
      in_flight_.push_back(slot);
      {
        std::lock_guard lock(mutex_);
        tasks_.push_back(slot);
      }
      task_ready_.notify_one();
    }
    if (in_flight_.empty()) return std::nullopt;
    std::shared_ptr<Slot> oldest = std::move(in_flight_.front());
    in_flight_.pop_front();
    std::unique_lock lock(mutex_);
    result_ready_.wait(lock, [&] { return oldest->done; });
    if (oldest->error) std::rethrow_exception(oldest->error);
    return std::move(oldest->output);
  }

  // Elements in flight count first (their results are dropped), then the input skips the rest.
  std::int64_t skip(std::int64_t n) override {
    std::int64_t skipped = 0;
    for (; skipped < n && !in_flight_.empty(); ++skipped) in_flight_.pop_front();
    return skipped + input_->skip(n - skipped);
  }

 private:
  struct Slot {
    Element input;
    std::optional<Element> output;
    std::exception_ptr error;
    bool done = false;  // guarded by mutex_
  };

  void work() {
    for (;;) {
      std::shared_ptr<Slot> slot;
      {
        std::unique_lock lock(mutex_);
        task_ready_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        if (stopping_) return;
        slot = std::move(tasks_.front());
        tasks_.pop_front();
      }
      std::optional<Element> output;
      std::exception_ptr error;
      try {
        output = fn_(slot->input);
      } catch (...) {
        error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        slot->output = std::move(output);
        slot->error = error;
        slot->done = true;
      }
      result_ready_.notify_all();
    }
  }

  std::unique_ptr<detail::NodeIterator> input_;
  const MapFn& fn_;
  const std::size_t parallelism_;
  bool input_done_ = false;
  std::deque<std::shared_ptr<Slot>> in_flight_;  // the consumer's, oldest first

  std::mutex mutex_;
  std::condition_variable task_ready_, result_ready_;
  std::deque<std::shared_ptr<Slot>> tasks_;  // not yet taken by a worker
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // last: started once everything they use exists
};

class Map final : public detail::DatasetNode {
 public:
  Map(detail::NodePtr input, MapFn fn, std::int64_t parallelism)
      : input_(std::move(input)), fn_(std::move(fn)), parallelism_(parallelism) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    if (parallelism_ == 1) return std::make_unique<SerialMapIterator>(input_->iterate(iteration), fn_);
    return std::make_unique<ParallelMapIterator>(input_->iterate(iteration), fn_, parallelism_);
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  detail::NodePtr input_;
  MapFn fn_;
  std::int64_t parallelism_;
};

}  // namespace

Dataset Dataset::map(std::function<Element(const Element&)> fn, std::int64_t num_parallel_calls) const {
  constexpr std::string_view op = "Dataset.map";
  TAPEFLOW_REQUIRE(fn != nullptr, InvalidArgumentError, "[{}] the map function is empty", op);
  TAPEFLOW_REQUIRE(num_parallel_calls >= 1 || num_parallel_calls == kAutotune, InvalidArgumentError,
                   "[{}] num_parallel_calls must be >= 1 or kAutotune (-1), got {}", op, num_parallel_calls);
  const std::int64_t parallelism = num_parallel_calls == kAutotune
                                       ? std::max<std::int64_t>(1, std::thread::hardware_concurrency())
                                       : num_parallel_calls;
  return Dataset(std::make_shared<Map>(node_, std::move(fn), parallelism));
}

}  // namespace tapeflow::data
