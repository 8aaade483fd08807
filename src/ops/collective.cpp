// Collective ops over the ranks of an MPI job (tapeflow/distributed.h): allreduce, allgather,
// broadcast, alltoall, with their gradients, as Horovod defines them for TensorFlow. Each forward
// negotiates (src/distributed/world.h) and then exchanges on the communication thread; the
// exchange's sizes that other ranks decide (allgather's rows, alltoall's splits) are learnt by the
// public function and kept in the attributes, so a graph replaying the op checks them again in
// its negotiation instead of trusting a stale trace.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "autodiff/dispatch.h"
#include "core/tensor_impl.h"
#include "distributed/world.h"
#include "ops/op_util.h"
#include "ops/registrar.h"
#include "tapeflow/distributed.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow {
namespace ops {

namespace {

using distributed::ReduceOp;
using distributed::detail::wire_of;
using distributed::detail::World;

/// How a collective names itself in negotiation and errors: "'name'", or its call number
/// (World::unnamed_label: an unnamed call from a thread other than init()'s is refused).
std::string label(std::string_view name, World& w) {
  return name.empty() ? w.unnamed_label() : fmt::format("'{}'", name);
}

/// The name of the collective a gradient runs for the collective `name`: named too, so that a
/// named collective's gradient may run on any thread, as the collective itself may.
std::string gradient_name(std::string_view name, std::string_view part = "gradient") {
  return name.empty() ? std::string() : fmt::format("{} ({})", name, part);
}

/// "[*, 3]": a shape whose first dimension may differ between ranks.
std::string rows_shape(const Shape& s) {
  std::string out = "[*";
  for (int i = 1; i < s.rank(); ++i) out += fmt::format(", {}", s[i]);
  return out + "]";
}

/// The bytes of a tensor this op has just created with empty().
void* mutable_raw(const Tensor& t) { return const_cast<void*>(t.raw_data()); }

Tensor copy_of(const Tensor& x, std::string_view op) {
  Tensor y = detail::empty(x.shape(), x.dtype(), op);
  if (x.nbytes() > 0) std::memcpy(mutable_raw(y), x.raw_data(), x.nbytes());
  return y;
}

ReduceOp reduce_op_of(std::int64_t v) { return static_cast<ReduceOp>(v); }

ReduceOp parse_reduce_op(std::string_view s, std::string_view op) {
  for (ReduceOp r : {ReduceOp::Sum, ReduceOp::Average, ReduceOp::Min, ReduceOp::Max})
    if (distributed::to_string(r) == s) return r;
  throw InvalidArgumentError(
      fmt::format("[{}] reduce_op '{}' is not one of \"sum\", \"average\", \"min\", \"max\"", op, s));
}

/// The elements of one row of `x` (a slice along axis 0): the product of its other dims, which
/// every rank shares, also a rank that holds no rows.
std::int64_t row_elements(const Tensor& x, std::string_view op) {
  std::int64_t row = 1;
  for (int i = 1; i < x.rank(); ++i)
    TAPEFLOW_REQUIRE(!__builtin_mul_overflow(row, x.shape()[i], &row), InvalidArgumentError,
                     "[{}] a row of x ({} tensor of shape {}) holds more than 2^63 - 1 elements", op,
                     dtype_name(x.dtype()), x.shape().to_string());
  return row;
}

/// Rank r's first dimension in `sizes` must be `x`'s, and its other dims any.
void require_rows(const Tensor& x, std::string_view op) {
  TAPEFLOW_REQUIRE(
      x.rank() >= 1, InvalidArgumentError,
      "[{}] needs a tensor of rank >= 1 (its rows are exchanged along axis 0); got {} tensor of shape {}", op,
      dtype_name(x.dtype()), x.shape().to_string());
}

}  // namespace

struct AllreduceAttrs {
  std::int64_t reduce_op = 0;  // distributed::ReduceOp
  std::string name;
};

// y = the ranks' x combined elementwise.  Sum/Average: dx = allreduce(dy) with the same op (every
// rank's loss reads y). Min/Max: the summed dy to the ranks holding the extreme, split among ties.
struct Allreduce {
  static constexpr std::string_view kName = "Allreduce";
  static constexpr Saves kSaves{1, 1};
  static constexpr bool kStateful = true;
  using Attrs = AllreduceAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    TAPEFLOW_REQUIRE(a.reduce_op >= 0 && a.reduce_op <= 3, InvalidArgumentError, "[{}] unknown ReduceOp {}",
                     kName, a.reduce_op);
    const ReduceOp op = reduce_op_of(a.reduce_op);
    TAPEFLOW_REQUIRE(op != ReduceOp::Average || (x.dtype() == DType::Float32 || x.dtype() == DType::Float64),
                     InvalidArgumentError,
                     "[{}] an average needs float32 or float64, not {} (shape {}); use ReduceOp::Sum", kName,
                     dtype_name(x.dtype()), x.shape().to_string());
    TAPEFLOW_REQUIRE(x.dtype() != DType::Bool, InvalidArgumentError,
                     "[{}] cannot reduce a bool tensor (shape {}); cast it to int32", kName,
                     x.shape().to_string());
    World& w = World::get(kName);
    Tensor y = detail::empty(x.shape(), x.dtype(), kName);
    const std::string what = fmt::format("allreduce({}) {} {} {}", distributed::to_string(op),
                                         label(a.name, w), dtype_name(x.dtype()), x.shape().to_string());
    w.run([&] {
      w.negotiate(kName, what);
      w.allreduce(x.raw_data(), mutable_raw(y), y.num_elements(), wire_of(y.dtype()), op, what);
    });
    if (op == ReduceOp::Average && w.size() > 1)
      visit_floating(y.dtype(), [&]<class T>() {
        T* p = detail::mutable_data<T>(y);
        for (std::int64_t i = 0; i < y.num_elements(); ++i) p[i] /= static_cast<T>(w.size());
      });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    const ReduceOp op = reduce_op_of(a.reduce_op);
    if (op == ReduceOp::Sum || op == ReduceOp::Average)
      return {distributed::allreduce(c.dy(), op, gradient_name(a.name))};
    const Tensor holds = cast(equal(c.input(0), c.output(0)), c.dy().dtype());
    const Tensor ties = distributed::allreduce(holds, ReduceOp::Sum, gradient_name(a.name, "ties"));
    return {distributed::allreduce(c.dy(), ReduceOp::Sum, gradient_name(a.name)) * holds /
            maximum(ties, ones_like(ties))};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"reduce_op", "name"});
    return {distributed::allreduce(a.in(0), parse_reduce_op(a.s("reduce_op", "average"), kName),
                                   a.s("name", ""))};
  }
};

struct AllgatherAttrs {
  std::vector<std::int64_t> rows;  // every rank's first dimension, in rank order
  std::string name;
};

// y = concat(x of every rank, axis 0);  dx = this rank's rows of allreduce(dy, Sum).
struct Allgather {
  static constexpr std::string_view kName = "Allgather";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kStateful = true;
  using Attrs = AllgatherAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    require_rows(x, kName);
    World& w = World::get(kName);
    TAPEFLOW_REQUIRE(a.rows.size() == static_cast<std::size_t>(w.size()) &&
                         a.rows[static_cast<std::size_t>(w.rank())] == x.shape()[0],
                     InvalidArgumentError,
                     "[{}] rows {} do not give this rank ({} of {}) the {} rows of x (shape {})", kName,
                     a.rows, w.rank(), w.size(), x.shape()[0], x.shape().to_string());
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    const std::int64_t row = row_elements(x, kName);
    std::vector<std::int64_t> counts;
    dims[0] = 0;
    for (std::int64_t r : a.rows) {
      std::int64_t elements = 0;
      TAPEFLOW_REQUIRE(r >= 0 && !__builtin_add_overflow(dims[0], r, &dims[0]) &&
                           !__builtin_mul_overflow(r, row, &elements),
                       InvalidArgumentError, "[{}] rows {} hold a negative or overflowing count", kName,
                       a.rows);
      counts.push_back(elements);
    }
    Tensor y = detail::empty(Shape::checked(dims, kName), x.dtype(), kName);
    const std::string what = fmt::format("allgather {} {} {} rows {}", label(a.name, w),
                                         dtype_name(x.dtype()), rows_shape(x.shape()), a.rows);
    w.run([&] {
      w.negotiate(kName, what);
      w.allgatherv(x.raw_data(), mutable_raw(y), counts, wire_of(x.dtype()), what);
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    const int rank = World::get(kName).rank();
    const std::int64_t first = std::accumulate(a.rows.begin(), a.rows.begin() + rank, std::int64_t{0});
    std::vector<std::int64_t> begin(static_cast<std::size_t>(c.input_shape(0).rank()), 0), size;
    for (std::int64_t d : c.input_shape(0).dims()) size.push_back(d);
    begin[0] = first;
    return {slice(distributed::allreduce(c.dy(), ReduceOp::Sum, gradient_name(a.name)), begin, size)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"name"});
    return {distributed::allgather(a.in(0), a.s("name", ""))};
  }
};

struct BroadcastAttrs {
  std::int64_t root = 0;
  std::string name;
};

// y = x of rank `root`;  dx = allreduce(dy, Sum) on the root, zeros on the other ranks.
struct Broadcast {
  static constexpr std::string_view kName = "Broadcast";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kStateful = true;
  using Attrs = BroadcastAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    World& w = World::get(kName);
    TAPEFLOW_REQUIRE(a.root >= 0 && a.root < w.size(), InvalidArgumentError,
                     "[{}] root rank {} is not in 0..{} (the job has {} ranks); x is {} tensor of shape {}",
                     kName, a.root, w.size() - 1, w.size(), dtype_name(x.dtype()), x.shape().to_string());
    Tensor y = copy_of(x, kName);
    const std::string what = fmt::format("broadcast from rank {} {} {} {}", a.root, label(a.name, w),
                                         dtype_name(x.dtype()), x.shape().to_string());
    w.run([&] {
      w.negotiate(kName, what);
      w.broadcast(mutable_raw(y), y.num_elements(), wire_of(y.dtype()), static_cast<int>(a.root), what);
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    const Tensor summed = distributed::allreduce(c.dy(), ReduceOp::Sum, gradient_name(a.name));
    return {World::get(kName).rank() == a.root ? summed : zeros_like(summed)};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"root_rank", "name"});
    const std::int64_t root = a.i("root_rank", 0);
    TAPEFLOW_REQUIRE(root >= INT32_MIN && root <= INT32_MAX, InvalidArgumentError,
                     "[{}] root_rank {} is not a rank", kName, root);
    return {distributed::broadcast(a.in(0), static_cast<int>(root), a.s("name", ""))};
  }
};

struct AlltoallAttrs {
  /// Row-major size x size: splits[s * size + r] rows go from rank s to rank r.
  std::vector<std::int64_t> splits;
  std::string name;
};

// y = the rows every rank sends this rank, in rank order;  dx = the reverse exchange of dy (the
// transposed split matrix).
struct Alltoall {
  static constexpr std::string_view kName = "Alltoall";
  static constexpr Saves kSaves = kSavesNothing;
  static constexpr bool kStateful = true;
  using Attrs = AlltoallAttrs;
  static Tensor forward(const Attrs& a, const Tensor& x) {
    require_rows(x, kName);
    World& w = World::get(kName);
    const auto n = static_cast<std::size_t>(w.size()), me = static_cast<std::size_t>(w.rank());
    TAPEFLOW_REQUIRE(a.splits.size() == n * n, InvalidArgumentError,
                     "[{}] the split matrix has {} entries, not {} ({} ranks squared)", kName,
                     a.splits.size(), n * n, n);
    const std::int64_t row = row_elements(x, kName);
    std::vector<std::int64_t> send, recv;
    std::int64_t sent = 0, received = 0;
    for (std::size_t r = 0; r < n; ++r) {
      const std::int64_t s = a.splits[me * n + r], g = a.splits[r * n + me];
      std::int64_t s_elements = 0, g_elements = 0;
      TAPEFLOW_REQUIRE(s >= 0 && g >= 0 && !__builtin_add_overflow(sent, s, &sent) &&
                           !__builtin_add_overflow(received, g, &received) &&
                           !__builtin_mul_overflow(s, row, &s_elements) &&
                           !__builtin_mul_overflow(g, row, &g_elements),
                       InvalidArgumentError, "[{}] the split matrix {} holds a negative or overflowing count",
                       kName, a.splits);
      send.push_back(s_elements);
      recv.push_back(g_elements);
    }
    TAPEFLOW_REQUIRE(sent == x.shape()[0], InvalidArgumentError,
                     "[{}] splits {} send {} rows, but x ({} tensor of shape {}) has {}", kName,
                     std::vector<std::int64_t>(a.splits.begin() + static_cast<std::ptrdiff_t>(me * n),
                                               a.splits.begin() + static_cast<std::ptrdiff_t>(me * n + n)),
                     sent, dtype_name(x.dtype()), x.shape().to_string(), x.shape()[0]);
    std::vector<std::int64_t> dims(x.shape().dims().begin(), x.shape().dims().end());
    dims[0] = received;
    Tensor y = detail::empty(Shape::checked(dims, kName), x.dtype(), kName);
    const std::uint64_t matrix = distributed::detail::fnv1a(std::string_view(
        reinterpret_cast<const char*>(a.splits.data()), a.splits.size() * sizeof(std::int64_t)));
    const std::string what = fmt::format("alltoall {} {} {} split matrix {:016x}", label(a.name, w),
                                         dtype_name(x.dtype()), rows_shape(x.shape()), matrix);
    w.run([&] {
      w.negotiate(kName, what);
      w.alltoallv(x.raw_data(), send, mutable_raw(y), recv, wire_of(x.dtype()), what);
    });
    return y;
  }
  static Grads backward(const GradContext& c) {
    const Attrs& a = c.attrs<Attrs>();
    const auto n = static_cast<std::size_t>(std::sqrt(static_cast<double>(a.splits.size())));
    Attrs back{std::vector<std::int64_t>(a.splits.size()), gradient_name(a.name)};
    for (std::size_t s = 0; s < n; ++s)
      for (std::size_t r = 0; r < n; ++r) back.splits[r * n + s] = a.splits[s * n + r];
    return {autodiff::apply_with<Alltoall>(back, c.dy())};
  }
  static std::vector<Tensor> raw(const raw_ops::Args& a) {
    a.expect(1, {"splits", "name"});
    return {distributed::alltoall(a.in(0), a.ints("splits", raw_ops::Ints{}), a.s("name", ""))};
  }
};

void register_collective_ops(Registrar& r) {
  r.add<Allreduce>();
  r.add<Allgather>();
  r.add<Broadcast>();
  r.add<Alltoall>();
}

}  // namespace ops

namespace distributed {

using detail::World;

std::string_view to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return "sum";
    case ReduceOp::Average:
      return "average";
    case ReduceOp::Min:
      return "min";
    case ReduceOp::Max:
      return "max";
  }
  return "?";
}

Tensor allreduce(const Tensor& t, ReduceOp op, std::string_view name) {
  constexpr std::string_view kOp = ops::Allreduce::kName;
  ops::require_defined(t, kOp);
  TAPEFLOW_REQUIRE(
      op == ReduceOp::Sum || op == ReduceOp::Average || op == ReduceOp::Min || op == ReduceOp::Max,
      InvalidArgumentError, "[{}] unknown ReduceOp {}", kOp, static_cast<int>(op));
  return autodiff::apply_with<ops::Allreduce>({static_cast<std::int64_t>(op), std::string(name)}, t);
}

Tensor allgather(const Tensor& t, std::string_view name) {
  constexpr std::string_view kOp = ops::Allgather::kName;
  ops::require_defined(t, kOp);
  ops::require_rows(t, kOp);
  World& w = World::get(kOp);
  std::vector<std::int64_t> rows;
  const std::string what = fmt::format("allgather {} {} {} (rows)", ops::label(name, w),
                                       dtype_name(t.dtype()), ops::rows_shape(t.shape()));
  w.run([&] {
    w.negotiate(kOp, what);
    rows = w.allgather(t.shape()[0], what);
  });
  return autodiff::apply_with<ops::Allgather>({std::move(rows), std::string(name)}, t);
}

Tensor broadcast(const Tensor& t, int root, std::string_view name) {
  ops::require_defined(t, ops::Broadcast::kName);
  return autodiff::apply_with<ops::Broadcast>({root, std::string(name)}, t);
}

Tensor alltoall(const Tensor& t, const std::vector<std::int64_t>& splits, std::string_view name) {
  constexpr std::string_view kOp = ops::Alltoall::kName;
  ops::require_defined(t, kOp);
  ops::require_rows(t, kOp);
  World& w = World::get(kOp);
  const auto n = static_cast<std::size_t>(w.size());
  std::vector<std::int64_t> mine = splits;
  if (mine.empty()) {
    TAPEFLOW_REQUIRE(
        t.shape()[0] % w.size() == 0, InvalidArgumentError,
        "[{}] x ({} tensor of shape {}) has {} rows, which {} ranks cannot share evenly; pass splits", kOp,
        dtype_name(t.dtype()), t.shape().to_string(), t.shape()[0], w.size());
    mine.assign(n, t.shape()[0] / w.size());
  }
  TAPEFLOW_REQUIRE(mine.size() == n, InvalidArgumentError,
                   "[{}] splits {} have {} entries; the job has {} ranks (x: {} tensor of shape {})", kOp,
                   mine, mine.size(), n, dtype_name(t.dtype()), t.shape().to_string());
  for (std::int64_t s : mine)
    TAPEFLOW_REQUIRE(s >= 0, InvalidArgumentError, "[{}] splits {} hold a negative count (x: shape {})", kOp,
                     mine, t.shape().to_string());
  std::vector<std::int64_t> matrix(n * n);
  const std::string what = fmt::format("alltoall {} {} {} (splits)", ops::label(name, w),
                                       dtype_name(t.dtype()), ops::rows_shape(t.shape()));
  w.run([&] {
    w.negotiate(kOp, what);
    w.allgatherv(mine.data(), matrix.data(), std::vector<std::int64_t>(n, static_cast<std::int64_t>(n)),
                 distributed::detail::Wire::I64, what);
  });
  return autodiff::apply_with<ops::Alltoall>({std::move(matrix), std::string(name)}, t);
}

}  // namespace distributed
}  // namespace tapeflow
