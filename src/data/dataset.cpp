// Dataset's iteration: the epoch counter, Iterator (next, and a position saved as a tensor and
// restored by skipping), the range-for. The sources and transformations are in their own files.

#include "core/check.h"
#include "data/node.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::data {

Dataset::Dataset(std::shared_ptr<const detail::DatasetNode> node)
    : node_(std::move(node)), iterations_(std::make_shared<std::atomic<std::int64_t>>(0)) {}

std::int64_t Dataset::cardinality() const { return node_->cardinality(); }

Iterator Dataset::make_iterator() const { return Iterator(*this, iterations_->fetch_add(1)); }

Dataset::RangeIterator Dataset::begin() const { return RangeIterator(make_iterator()); }

Dataset::RangeIterator::RangeIterator(Iterator it)
    : it_(std::make_shared<Iterator>(std::move(it))), current_(it_->next()) {}

Dataset::RangeIterator& Dataset::RangeIterator::operator++() {
  current_ = it_->next();
  return *this;
}

Iterator::Iterator(Dataset dataset, std::int64_t epoch)
    : dataset_(std::move(dataset)),
      epoch_(epoch),
      impl_(dataset_.node_->iterate(static_cast<std::uint64_t>(epoch))) {}

Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;
Iterator::~Iterator() = default;

std::optional<Element> Iterator::next() {
  std::optional<Element> element;
  try {
    element = impl_->next();
  } catch (...) {
    ++produced_;  // the error took an element's place: restore_state skips it as well
    throw;
  }
  if (element) ++produced_;
  return element;
}

Tensor Iterator::save_state() const { return constant(std::vector<std::int64_t>{epoch_, produced_}); }

void Iterator::restore_state(const Tensor& state) {
  constexpr std::string_view op = "Iterator.restore_state";
  TAPEFLOW_REQUIRE(
      state.defined() && state.dtype() == DType::Int64 && state.shape() == Shape{2}, InvalidArgumentError,
      "[{}] the state must be an int64 tensor of shape (2,) (epoch, elements produced) as "
      "save_state() returns; got {}",
      op,
      state.defined() ? fmt::format("{} {}", dtype_name(state.dtype()), state.shape().to_string())
                      : std::string("an undefined tensor"));
  const auto values = state.to_vector<std::int64_t>();
  const std::int64_t epoch = values[0], produced = values[1];
  TAPEFLOW_REQUIRE(epoch >= 0 && produced >= 0, InvalidArgumentError,
                   "[{}] the state holds a negative number: epoch {}, elements produced {}", op, epoch,
                   produced);
  std::unique_ptr<detail::NodeIterator> impl = dataset_.node_->iterate(static_cast<std::uint64_t>(epoch));
  const std::int64_t skipped = impl->skip(produced);
  TAPEFLOW_REQUIRE(skipped == produced, OutOfRangeError,
                   "[{}] the state is at element {} of epoch {}, but that epoch of this dataset has only {} "
                   "elements: it was saved from another dataset",
                   op, produced, epoch, skipped);
  impl_ = std::move(impl);
  epoch_ = epoch;
  produced_ = produced;
  // The iteration after this one is the next epoch, as in the run that saved the state.
  std::int64_t started = dataset_.iterations_->load();
  while (started <= epoch && !dataset_.iterations_->compare_exchange_weak(started, epoch + 1)) {
  }
}

}  // namespace tapeflow::data
