// Dataset.batch and Dataset.padded_batch: groups of consecutive elements, each component stacked
// along a new first dimension; padded_batch first pads each component to a common shape.

#include "core/check.h"
#include "data/node.h"
#include "tapeflow/ops/array.h"

namespace tapeflow::data {
namespace {

// padded_batch's arguments; batch has none.
struct Padding {
  std::optional<std::vector<std::vector<std::int64_t>>> shapes;  // per component; -1: the longest
  std::optional<std::vector<double>> values;                     // per component; default 0
};

std::string describe(const Tensor& t) {
  return fmt::format("{} {}", dtype_name(t.dtype()), t.shape().to_string());
}

// The shape component `c` of `batch` is padded to: the padded shape's fixed dimensions, the longest
// in the batch for the others. Checks ranks and that no element is longer than a fixed dimension.
std::vector<std::int64_t> padded_shape(const std::vector<Element>& batch, std::size_t c,
                                       const Padding& padding) {
  constexpr std::string_view op = "Dataset.padded_batch";
  const Tensor& first = batch[0][c];
  std::vector<std::int64_t> target(first.shape().dims().begin(), first.shape().dims().end());
  for (const Element& e : batch)
    for (int axis = 0; axis < first.rank(); ++axis)
      target[static_cast<std::size_t>(axis)] =
          std::max(target[static_cast<std::size_t>(axis)], e[c].shape()[axis]);
  if (!padding.shapes) return target;
  const std::vector<std::int64_t>& fixed = (*padding.shapes)[c];
  TAPEFLOW_REQUIRE(fixed.size() == target.size(), InvalidArgumentError,
                   "[{}] padded_shapes[{}] has rank {}, but component {} has shape {}", op, c, fixed.size(),
                   c, first.shape().to_string());
  for (std::size_t axis = 0; axis < fixed.size(); ++axis) {
    if (fixed[axis] == -1) continue;
    TAPEFLOW_REQUIRE(target[axis] <= fixed[axis], InvalidArgumentError,
                     "[{}] component {} of an element has dimension {} along axis {}, longer than its padded "
                     "shape ({}); pass a larger padded shape or -1 (pad to the longest)",
                     op, c, target[axis], axis, fmt::join(fixed, ", "));
    target[axis] = fixed[axis];
  }
  return target;
}

Tensor pad_to(const Tensor& t, const std::vector<std::int64_t>& target, double value) {
  std::vector<std::pair<std::int64_t, std::int64_t>> paddings;
  bool any = false;
  for (int axis = 0; axis < t.rank(); ++axis) {
    const std::int64_t after = target[static_cast<std::size_t>(axis)] - t.shape()[axis];
    paddings.emplace_back(0, after);
    any = any || after > 0;
  }
  return any ? pad(t, paddings, value) : t;
}

// Stacks the components of `batch` (padding them first when `padding` is given).
Element combine(const std::vector<Element>& batch, const Padding* padding) {
  const std::string_view op = padding ? "Dataset.padded_batch" : "Dataset.batch";
  const std::size_t components = batch[0].size();
  if (padding) {
    const auto count_ok = [&](const auto& list) { return !list || list->size() == components; };
    TAPEFLOW_REQUIRE(count_ok(padding->shapes) && count_ok(padding->values), InvalidArgumentError,
                     "[{}] the elements have {} components, but padded_shapes has {} and padding_values {}",
                     op, components, padding->shapes ? padding->shapes->size() : components,
                     padding->values ? padding->values->size() : components);
  }
  Element out;
  for (std::size_t c = 0; c < components; ++c) {
    std::vector<Tensor> parts;
    for (std::size_t i = 0; i < batch.size(); ++i) {
      TAPEFLOW_REQUIRE(batch[i].size() == components, InvalidArgumentError,
                       "[{}] element {} of a batch has {} components, element 0 has {}", op, i,
                       batch[i].size(), components);
      const Tensor& a = batch[0][c];
      const Tensor& b = batch[i][c];
      const bool fits = a.dtype() == b.dtype() && (padding ? a.rank() == b.rank() : a.shape() == b.shape());
      TAPEFLOW_REQUIRE(
          fits, InvalidArgumentError,
          "[{}] component {} must have one {} in a batch to be stacked: element 0 has {}, element {} "
          "has {}{}",
          op, c, padding ? "dtype and rank" : "shape and dtype", describe(a), i, describe(b),
          padding || a.dtype() != b.dtype() ? "" : "; use padded_batch to pad them to a common shape");
      parts.push_back(b);
    }
    if (padding) {
      const std::vector<std::int64_t> target = padded_shape(batch, c, *padding);
      const double value = padding->values ? (*padding->values)[c] : 0.0;
      for (Tensor& p : parts) p = pad_to(p, target, value);
    }
    out.push_back(stack(parts));
  }
  return out;
}

class BatchIterator final : public detail::NodeIterator {
 public:
  BatchIterator(std::unique_ptr<detail::NodeIterator> input, std::int64_t batch_size, bool drop_remainder,
                const Padding* padding)
      : input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padding_(padding) {}

  std::optional<Element> next() override {
    std::vector<Element> batch;
    while (static_cast<std::int64_t>(batch.size()) < batch_size_) {
      std::optional<Element> e = input_->next();
      if (!e) break;
      batch.push_back(std::move(*e));
    }
    if (batch.empty() || (drop_remainder_ && static_cast<std::int64_t>(batch.size()) < batch_size_))
      return std::nullopt;
    return combine(batch, padding_);
  }

  std::int64_t skip(std::int64_t n) override {
    std::int64_t inputs = 0;
    if (__builtin_mul_overflow(n, batch_size_, &inputs)) return NodeIterator::skip(n);
    const std::int64_t skipped = input_->skip(inputs);
    return drop_remainder_ ? skipped / batch_size_ : (skipped + batch_size_ - 1) / batch_size_;
  }

 private:
  std::unique_ptr<detail::NodeIterator> input_;
  std::int64_t batch_size_;
  bool drop_remainder_;
  const Padding* padding_;  // the node's, or null for batch
};

class Batch final : public detail::DatasetNode {
 public:
  Batch(detail::NodePtr input, std::int64_t batch_size, bool drop_remainder, std::optional<Padding> padding)
      : input_(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        padding_(std::move(padding)) {}
  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t iteration) const override {
    return std::make_unique<BatchIterator>(input_->iterate(iteration), batch_size_, drop_remainder_,
                                           padding_ ? &*padding_ : nullptr);
  }
  std::int64_t cardinality() const override {
    const std::int64_t n = input_->cardinality();
    if (n < 0) return n;  // infinite or unknown
    return drop_remainder_ ? n / batch_size_ : n / batch_size_ + (n % batch_size_ != 0 ? 1 : 0);
  }

 private:
  detail::NodePtr input_;
  std::int64_t batch_size_;
  bool drop_remainder_;
  std::optional<Padding> padding_;
};

}  // namespace

Dataset Dataset::batch(std::int64_t batch_size, bool drop_remainder) const {
  TAPEFLOW_REQUIRE(batch_size >= 1, InvalidArgumentError, "[Dataset.batch] batch_size must be >= 1, got {}",
                   batch_size);
  return Dataset(std::make_shared<Batch>(node_, batch_size, drop_remainder, std::nullopt));
}

Dataset Dataset::padded_batch(std::int64_t batch_size,
                              std::optional<std::vector<std::vector<std::int64_t>>> padded_shapes,
                              std::optional<std::vector<double>> padding_values, bool drop_remainder) const {
  constexpr std::string_view op = "Dataset.padded_batch";
  TAPEFLOW_REQUIRE(batch_size >= 1, InvalidArgumentError, "[{}] batch_size must be >= 1, got {}", op,
                   batch_size);
  if (padded_shapes)
    for (const auto& shape : *padded_shapes)
      for (std::int64_t d : shape)
        TAPEFLOW_REQUIRE(d >= -1, InvalidArgumentError,
                         "[{}] a padded shape's dimensions must be >= 0, or -1 for the longest; got ({})", op,
                         fmt::join(shape, ", "));
  return Dataset(std::make_shared<Batch>(node_, batch_size, drop_remainder,
                                         Padding{std::move(padded_shapes), std::move(padding_values)}));
}

}  // namespace tapeflow::data
