// The in-memory sources: from_tensor_slices (and from_idx, its slices of an IDX file),
// from_tensors, range. They skip by moving an index.

#include <fmt/ranges.h>

#include "core/check.h"
#include "data/node.h"
#include "tapeflow/data.h"
#include "tapeflow/ops/creation.h"

namespace tapeflow::data {
namespace {

// Row i of t (rank >= 1): a copy of its bytes, not an op, so no tape records it.
Tensor row(const Tensor& t, std::int64_t i) {
  const Shape& s = t.shape();
  const Shape row_shape(s.dims().subspan(1));
  const std::size_t row_bytes = static_cast<std::size_t>(row_shape.num_elements()) * dtype_size(t.dtype());
  const auto* bytes = static_cast<const std::byte*>(t.raw_data()) + static_cast<std::size_t>(i) * row_bytes;
  return tensor_from_bytes(row_shape, t.dtype(), {bytes, row_bytes}, "Dataset.from_tensor_slices");
}

class TensorSlices final : public detail::DatasetNode {
 public:
  explicit TensorSlices(std::vector<Tensor> components)
      : components_(std::move(components)), size_(components_[0].shape()[0]) {}

  class Iter final : public detail::NodeIterator {
   public:
    explicit Iter(const TensorSlices& node) : node_(node) {}
    std::optional<Element> next() override {
      if (index_ >= node_.size_) return std::nullopt;
      Element e;
      for (const Tensor& c : node_.components_) e.push_back(row(c, index_));
      ++index_;
      return e;
    }
    std::int64_t skip(std::int64_t n) override {
      const std::int64_t skipped = std::min(n, node_.size_ - index_);
      index_ += skipped;
      return skipped;
    }

   private:
    const TensorSlices& node_;
    std::int64_t index_ = 0;
  };

  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t) const override {
    return std::make_unique<Iter>(*this);
  }
  std::int64_t cardinality() const override { return size_; }

 private:
  std::vector<Tensor> components_;
  std::int64_t size_;
};

class Tensors final : public detail::DatasetNode {
 public:
  explicit Tensors(Element element) : element_(std::move(element)) {}

  class Iter final : public detail::NodeIterator {
   public:
    explicit Iter(const Element& element) : element_(element) {}
    std::optional<Element> next() override {
      if (done_) return std::nullopt;
      done_ = true;
      return element_;
    }

   private:
    const Element& element_;
    bool done_ = false;
  };

  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t) const override {
    return std::make_unique<Iter>(element_);
  }
  std::int64_t cardinality() const override { return 1; }

 private:
  Element element_;
};

class Range final : public detail::DatasetNode {
 public:
  Range(std::int64_t start, std::int64_t size, std::int64_t step) : start_(start), step_(step), size_(size) {}

  class Iter final : public detail::NodeIterator {
   public:
    explicit Iter(const Range& node) : node_(node) {}
    std::optional<Element> next() override {
      if (index_ >= node_.size_) return std::nullopt;
      return Element{constant(node_.start_ + node_.step_ * index_++)};
    }
    std::int64_t skip(std::int64_t n) override {
      const std::int64_t skipped = std::min(n, node_.size_ - index_);
      index_ += skipped;
      return skipped;
    }

   private:
    const Range& node_;
    std::int64_t index_ = 0;
  };

  std::unique_ptr<detail::NodeIterator> iterate(std::uint64_t) const override {
    return std::make_unique<Iter>(*this);
  }
  std::int64_t cardinality() const override { return size_; }

 private:
  std::int64_t start_, step_, size_;
};

std::string shapes_of(const std::vector<Tensor>& components) {
  std::vector<std::string> shapes;
  for (const Tensor& c : components) shapes.push_back(c.defined() ? c.shape().to_string() : "undefined");
  return fmt::format("{}", fmt::join(shapes, ", "));
}

}  // namespace

Dataset Dataset::from_tensor_slices(std::vector<Tensor> components) {
  constexpr std::string_view op = "Dataset.from_tensor_slices";
  TAPEFLOW_REQUIRE(!components.empty(), InvalidArgumentError, "[{}] needs at least one tensor", op);
  for (const Tensor& c : components) {
    TAPEFLOW_REQUIRE(c.defined() && c.rank() >= 1, InvalidArgumentError,
                     "[{}] every tensor needs a first dimension to slice; got shapes {}", op,
                     shapes_of(components));
    TAPEFLOW_REQUIRE(c.shape()[0] == components[0].shape()[0], InvalidArgumentError,
                     "[{}] the tensors' first dimensions must agree; got shapes {}", op,
                     shapes_of(components));
  }
  return Dataset(std::make_shared<TensorSlices>(std::move(components)));
}

Dataset Dataset::from_tensors(std::vector<Tensor> components) {
  TAPEFLOW_REQUIRE(!components.empty(), InvalidArgumentError,
                   "[Dataset.from_tensors] needs at least one tensor");
  for (const Tensor& c : components)
    TAPEFLOW_REQUIRE(c.defined(), InvalidArgumentError, "[Dataset.from_tensors] got an undefined tensor");
  return Dataset(std::make_shared<Tensors>(std::move(components)));
}

Dataset Dataset::range(std::int64_t start, std::int64_t stop, std::int64_t step) {
  TAPEFLOW_REQUIRE(step != 0, InvalidArgumentError, "[Dataset.range] step must not be 0");
  std::int64_t span = 0;
  TAPEFLOW_REQUIRE(!__builtin_sub_overflow(stop, start, &span), InvalidArgumentError,
                   "[Dataset.range] stop - start overflows int64: start {}, stop {}", start, stop);
  // ceil(span / step) elements when span and step have the same sign, else none.
  const bool any = step > 0 ? span > 0 : span < 0;
  const std::int64_t size = any ? (span - (step > 0 ? 1 : -1)) / step + 1 : 0;
  return Dataset(std::make_shared<Range>(start, size, step));
}

Dataset Dataset::from_idx(const std::string& path) { return from_tensor_slices({read_idx(path)}); }

}  // namespace tapeflow::data
