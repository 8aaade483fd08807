// Dataset.prefetch: a producer thread runs the input and fills a bounded queue; next() takes from
// it. The thread starts at the first next(), so a restore's skip() runs on the input directly; the
// destructor stops it and joins it. An error the producer meets is queued in its element's place
// and rethrown by next(); the producer goes on after it, as next() would without prefetch.

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "core/check.h"
#include "data/node.h"

namespace tapeflow::data {
namespace {

class PrefetchIterator final : public detail::NodeIterator {
 public:
  PrefetchIterator(std::unique_ptr<detail::NodeIterator> input, std::size_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {}
  ~PrefetchIterator() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (producer_.joinable()) producer_.join();
  }

  std::optional<Element> next() override {
    if (!producer_.joinable()) producer_ = std::thread([this] { produce(); });
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || input_done_; });
    if (queue_.empty()) return std::nullopt;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    changed_.notify_all();
    if (item.error) std::rethrow_exception(item.error);
    return std::move(item.element);
  }

  std::int64_t skip(std::int64_t n) override {
    if (!producer_.joinable()) return input_->skip(n);
    return NodeIterator::skip(n);
  }

 private:
  struct Item {
    std::optional<Element> element;
    std::exception_ptr error;
  };

  void produce() {
    for (;;) {
      {
        std::unique_lock lock(mutex_);
        changed_.wait(lock, [&] { return stopping_ || queue_.size() < buffer_size_; });
        if (stopping_) return;
      }
      Item item;
      bool end = false;
      try {
        item.element = input_->next();
        end = !item.element;
      } catch (...) {
        item.error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        if (end) {
          input_done_ = true;
        } else {
          queue_.push_back(std::move(item));
        }
      }
      changed_.notify_all();
      if (end) return;
    }
  }

  std::unique_ptr<detail::NodeIterator> input_;  // the producer's once it has started
  std::size_t buffer_size_;
  std::mutex mutex_;
  std::condition_variable changed_;  // an item queued or taken, the input's end, or stopping
  std::deque<Item> queue_;
  bool input_done_ = false;
  bool stopping_ = false;
  std::thread producer_;
};

class Prefetch final : public detail::DatasetNode {
 public:
  Prefetch(detail::NodePtr input, std::int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<PrefetchIterator>(input_->iterate(iteration),
                                              static_cast<std::size_t>(buffer_size_));
  }
  std::int64_t cardinality() const override { return input_->cardinality(); }

 private:
  detail::NodePtr input_;
  std::int64_t buffer_size_;
};

}  // namespace

Dataset Dataset::prefetch(std::int64_t buffer_size) const {
  TAPEFLOW_REQUIRE(buffer_size >= 1 || buffer_size == kAutotune, InvalidArgumentError,
                   "[Dataset.prefetch] buffer_size must be >= 1 or kAutotune (-1), got {}", buffer_size);
  return Dataset(std::make_shared<Prefetch>(node_, buffer_size == kAutotune ? 2 : buffer_size));
}

}  // namespace tapeflow::data
