#pragma once
/// \file distributed.h
/// Data-parallel training over MPI (Debian's OpenMPI), as Horovod does it for TensorFlow: every
/// rank runs the same program on its own shard of the data, and a DistributedGradientTape averages
/// the gradients over the ranks while the backward pass is still running.
///
///   namespace tf = tapeflow;
///   tf::distributed::init();                                   // rank and size from mpirun
///   tf::distributed::broadcast_variables(model.variables());   // every rank starts from rank 0's
///   for (...) {
///     tf::distributed::DistributedGradientTape tape;
///     tf::Tensor loss = ...;
///     auto vars = model.trainable_variables();
///     opt.apply_gradients(tape.gradient(loss, vars), vars);   // averaged over the ranks
///   }
///
/// Run it with `mpirun -np 4 ./train` (as root, OpenMPI also wants `--allow-run-as-root`). Started
/// without mpirun, the same program is one rank of one: every collective returns its input.
///
/// MPI calls run one at a time, in the order the calling threads submit them: on a communication thread that
/// init() starts, or on the caller of a collective itself when nothing else is queued (it waits for the
/// result anyway); a DistributedGradientTape's all-reduces can run beside the backward pass (Overlap). All
/// ranks must call the collectives in the same order, as MPI requires; tapeflow checks it: before each
/// collective (and once per DistributedGradientTape::gradient for all of its tensors) the ranks compare what
/// they are about to reduce (Horovod's negotiation), so a rank that reduces another tensor, shape or dtype
/// gets an InvalidArgumentError naming the tensor and the ranks, on every rank, instead of a hang or garbage.
/// Any thread may issue collectives, but unnamed ones only the thread that called init() (elsewhere:
/// InvalidArgumentError on every rank). A rank that stops taking part is named by the others: after
/// stall_warning_seconds they log which ranks they wait for, after timeout_seconds they throw
/// UnavailableError naming them (and every later collective throws too). A rank that dies is seen by mpirun,
/// which ends the whole job with the rank's number.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tapeflow/gradient.h"
#include "tapeflow/tape.h"
#include "tapeflow/tensor.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow
namespace tapeflow::optimizers {
class Optimizer;
}  // namespace tapeflow::optimizers

namespace tapeflow::distributed {

/// How long a collective waits for the other ranks.
struct InitOptions {
  /// Seconds a collective may wait before a warning names the ranks it waits for (Horovod's stall
  /// check). Environment: TAPEFLOW_STALL_WARNING_SECONDS.
  double stall_warning_seconds = 60;
  /// Seconds after which the wait fails with UnavailableError naming those ranks; 0 waits forever.
  /// Environment: TAPEFLOW_STALL_TIMEOUT_SECONDS.
  double timeout_seconds = 600;
};

/// Joins the job mpirun started (MPI_Init_thread on the communication thread), or, started
/// without mpirun, makes this process rank 0 of 1. Calling it again changes only the options.
/// The environment variables above override `options`. MPI is finalized at exit.
void init(const InitOptions& options = {});
/// Whether init() has run.
bool initialized();
/// Whether this process is one of several ranks mpirun started (false: a single process).
bool is_mpi();
/// This process's rank in 0..size()-1, the number of ranks, and the rank and number of ranks on
/// this machine (to share its cores: give each rank hardware threads / local_size()). Throw
/// FailedPreconditionError before init().
///@{
int rank();
int size();
int local_rank();
int local_size();
///@}
/// Waits until every rank has called it.
void barrier();

/// How allreduce combines the ranks' tensors.
enum class ReduceOp { Sum, Average, Min, Max };
/// "sum", "average", "min", "max".
std::string_view to_string(ReduceOp op);

/// The elementwise sum, average, minimum or maximum of `t` over the ranks; every rank passes the same shape
/// and dtype (float32, float64, int32, int64; Average: float only); Min and Max give NaN where any rank holds
/// NaN, as tf::maximum and tf::minimum. Differentiable (recorded on tapes): the gradient of a Sum or Average
/// is the same all-reduce of the cotangents, since every rank's loss reads the result; of a Min or Max, the
/// summed cotangents go to the ranks that hold the extreme, split evenly among ties (as reduce_max's). `name`
/// appears in errors; unnamed collectives are numbered by call, and refused on threads other than init()'s.
Tensor allreduce(const Tensor& t, ReduceOp op = ReduceOp::Average, std::string_view name = {});
/// The ranks' tensors concatenated along axis 0 in rank order; the first dimension may differ between ranks
/// (and be 0), the others and the dtype may not. Gradient: this rank's rows of the sum of the ranks'
/// cotangents.
Tensor allgather(const Tensor& t, std::string_view name = {});
/// Rank `root`'s tensor on every rank (the others pass a tensor of the same shape and dtype).
/// Gradient: the sum of the ranks' cotangents on the root, zeros elsewhere.
Tensor broadcast(const Tensor& t, int root = 0, std::string_view name = {});
/// Sends splits[r] consecutive rows of `t` (along axis 0, in order) to rank r and returns the rows received,
/// concatenated in rank order; any split may be 0 (a rank may send or receive no rows). Empty `splits`: the
/// rows divided evenly (the first dimension must be a multiple of size()). Gradient: the reverse exchange.
Tensor alltoall(const Tensor& t, const std::vector<std::int64_t>& splits = {}, std::string_view name = {});
/// The sum, average, minimum or maximum of a number over the ranks: metrics for reporting.
double allreduce(double value, ReduceOp op, std::string_view name = {});

/// Assigns rank `root`'s values to `vars` on every rank (at the start of training, and after a
/// resume, so every rank starts from the same weights).
void broadcast_variables(const std::vector<Variable>& vars, int root = 0);
/// Assigns rank `root`'s optimizer state (iterations and every slot, optim.variables()) on
/// every rank. The slots must exist on every rank (build() them first); a rank whose slots differ
/// is named by the negotiation.
void broadcast_optimizer_state(const optimizers::Optimizer& optimizer, int root = 0);

/// How gradients travel between ranks.
enum class Compression {
  None,      ///< the gradients' own dtype
  BFloat16,  ///< float32's range, 8 bits of mantissa: half the bytes, rounded to nearest even
  Float16,   ///< IEEE half: half the bytes, more mantissa, overflows above 65504
};

/// Whether a DistributedGradientTape sends its buckets while the backward pass runs.
enum class Overlap {
  /// Overlap where this process has a core for its communication thread beside its compute
  /// threads (cores / local_size() > num_threads()); else exchange after the pass.
  Auto,
  /// Each bucket goes to the communication thread as soon as its gradients are final (DDP's and
  /// Horovod's overlap): the exchange hides behind the rest of the pass when a core is free.
  Always,
  /// The whole exchange is one job after the pass: no thread competes with the pass for a core,
  /// and the step pays one hand-off to the communication thread instead of one per bucket.
  Never,
};

/// The options of DistributedGradientTape (Horovod's and DDP's).
struct GradientOptions {
  /// Average (the default) or Sum of the ranks' gradients.
  ReduceOp op = ReduceOp::Average;
  /// What the gradients are cast to on the wire; they are summed in that type.
  Compression compression = Compression::None;
  /// Gradients are divided by this before the sum and by size() / factor after it (Horovod's
  /// gradient_predivide_factor; keeps float16 sums in range). Average only; > 0.
  double gradient_predivide_factor = 1.0;
  /// Gradients are packed into buckets of about this many bytes, each all-reduced as soon as all
  /// of its gradients are final (DDP's bucket_cap_mb, 25 MB; Horovod fuses up to 64 MB). A
  /// gradient larger than a bucket has a bucket of its own.
  std::int64_t bucket_bytes = 25 << 20;
  /// Gradients of this many backward passes are summed locally and reduced once, on the last
  /// (Horovod's backward_passes_per_step); needs a GradientReducer that outlives the tapes.
  int backward_passes_per_step = 1;
  /// When the buckets go out (see Overlap). Values are bitwise the same either way.
  Overlap overlap = Overlap::Auto;
};

/// What the last DistributedGradientTape::gradient of a reducer did.
struct ReduceStats {
  bool reduced = false;             ///< false on a local accumulation pass
  int buckets = 0;                  ///< all-reduces run
  std::int64_t wire_bytes = 0;      ///< bytes each rank contributed to them
  bool overlapped = false;          ///< whether the buckets went out during the pass
  double backward_seconds = 0;      ///< the backward pass, with the buckets sent beside it
  double wait_seconds = 0;          ///< waiting after the pass for the all-reduces still running
  std::vector<std::string> unused;  ///< sources with no gradient on some rank ("name (ranks 1, 3)")
};

namespace detail {
struct ReducerState;
}  // namespace detail

/// The state a DistributedGradientTape's reductions keep between steps: the options, the bucket
/// buffers (reused, so a step allocates no wire memory), the locally accumulated gradients of
/// backward_passes_per_step, and the last step's stats. Owned by the training loop.
class GradientReducer {
 public:
  /// Throws InvalidArgumentError for bad options, naming them.
  explicit GradientReducer(GradientOptions options = {});
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;
  /// The options given at construction.
  const GradientOptions& options() const;
  /// What the last gradient() of a tape using this reducer did.
  const ReduceStats& last_stats() const;

 private:
  friend class DistributedGradientTape;
  std::unique_ptr<detail::ReducerState> state_;
};

/// A GradientTape whose gradient() is the average (or sum) of every rank's gradients, reduced in
/// buckets while the backward pass runs (see GradientOptions). Record on it as on a GradientTape.
/// Sources must be float32 or float64. A source that gets no gradient on some ranks gets those
/// ranks' zeros in its average, and is named once in a warning and in ReduceStats::unused; one
/// that gets no gradient on any rank is missing, as gradient() returns it. The gradients are
/// values, not recorded on any tape.
///
/// Inside a tf::function (a traced training step), gradient() writes the same reduction as ops
/// the graph records: each bucket concatenated, summed by an Allreduce op and divided, in the
/// graph's order after the backward pass (no overlap), bitwise the eager step's values. There
/// compression and backward_passes_per_step are refused (UnimplementedError), and a source no
/// rank has a gradient for comes back as zeros (which ranks have one is not known at trace time).
class DistributedGradientTape {
 public:
  /// A tape with its own reducer: backward_passes_per_step must be 1.
  explicit DistributedGradientTape(GradientOptions options = {}, TapeOptions tape_options = {});
  /// A tape whose reductions use `reducer` (which must outlive it).
  explicit DistributedGradientTape(GradientReducer& reducer, TapeOptions tape_options = {});
  ~DistributedGradientTape();

  /// The wrapped tape: watch(), stop_recording(), jacobian(), ... as on any GradientTape.
  GradientTape& tape() { return tape_; }
  /// Watches a tensor or variable, as GradientTape::watch.
  void watch(const Source& source) { tape_.watch(source); }

  /// The gradients of `target` for `sources`, averaged over the ranks. On a local accumulation
  /// pass (backward_passes_per_step > 1, not the last) it returns the local sum so far and
  /// reduced() is false: apply the gradients only when reduced() is true. Throws what
  /// GradientTape::gradient throws, and the collectives' errors.
  ///@{
  std::vector<Gradient> gradient(const Targets& target, const std::vector<Variable>& sources);
  std::vector<Gradient> gradient(const Targets& target, std::span<const Source> sources);
  ///@}
  /// Whether the last gradient() reduced over the ranks.
  bool reduced() const;

 private:
  std::unique_ptr<GradientReducer> own_;
  GradientReducer& reducer_;
  GradientTape tape_;
};

}  // namespace tapeflow::distributed
#pragma GCC visibility pop
