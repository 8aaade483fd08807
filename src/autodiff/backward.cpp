// The backward pass.
//
// Terms. A *target* is a tensor we differentiate (a loss); a *source* is a tensor or variable we
// differentiate with respect to; a *cotangent* of a tensor t is dL/dt, the gradient of the summed
// targets with respect to t, with t's shape.
//
// Records are in execution order, which is already a topological order, so no graph sort is
// needed (the eager-tape observation stan-dev/math makes):
//   1. Prune. A reverse sweep from the targets marks the records an output of which *reaches* a
//      target through the floating inputs of differentiable records; a forward sweep marks the
//      *live* records: differentiable, with a floating input that depends on a source (is one,
//      or is an output of a live record). The pass runs the records that are both, and only their
//      source-dependent inputs get gradients. Paths are cut where gradients stop: an integer/bool
//      input never depends on a source, and a no_gradient op (StopGradient, argmax) is not live,
//      so nothing it feeds depends on a source through it (no gradient function behind a cut is
//      ever called). A record whose id map entry is later re-used as another record's output (a
//      custom gradient returning its input) is followed by index, never by the later producer.
//      Assignments and unwatched reads are cut at recording time: they give tensors the tape
//      never linked to their inputs. An op with a *Missing* gradient stays live: reaching it is
//      gradient()'s LookupError.
//   2. Seed each target's cotangent with its output gradient, or ones.
//   3. Walk the kept records in reverse. A record none of whose outputs has a cotangent is
//      skipped; missing output cotangents are zeros. The registry's gradient function maps output
//      cotangents to input cotangents (checked for count, shape and dtype: a mismatch is an
//      InternalError naming the op), which are summed per tensor id in this fixed reverse order,
//      so results are bitwise reproducible.
//      In gradient() a gradient function may give an input's cotangent as rows (IndexedSlices:
//      gather's table): rows pass through a gradient that is dy itself (a variable's read), rows
//      added to rows are concatenated, and rows added to a tensor or read by a gradient function
//      become dense.
//   4. Each source reads its id's cotangent: none when none arrived. A source's cotangent is final
//      once the walk has passed the earliest record that reads it; an observer hears it then.
// Gradient functions are written with public ops, so another tape that is recording while a pass
// runs records the backward ops: nested tapes give higher derivatives.

#include "autodiff/backward.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "autodiff/dispatch.h"
#include "autodiff/masked_lanes.h"
#include "core/check.h"
#include "tapeflow/ops/array.h"
#include "tapeflow/ops/creation.h"
#include "tapeflow/ops/math.h"

namespace tapeflow::autodiff {

constinit thread_local int t_cotangent_batch_rank = 0;

Shape with_batch(std::span<const std::int64_t> batch, const Shape& s) {
  if (batch.empty()) return s;
  std::vector<std::int64_t> dims(batch.begin(), batch.end());
  dims.insert(dims.end(), s.dims().begin(), s.dims().end());
  return Shape::checked(dims, "GradientTape");
}

namespace {

/// Row-sparse cotangents added: the rows of both, as TensorFlow aggregates IndexedSlices (int64
/// indices where the two differ).
IndexedSlices concat_rows(const IndexedSlices& a, const IndexedSlices& b) {
  const DType index = a.indices().dtype() == b.indices().dtype() ? a.indices().dtype() : DType::Int64;
  return IndexedSlices(concat({a.values(), b.values()}, 0),
                       concat({cast(a.indices(), index), cast(b.indices(), index)}, 0), a.dense_shape());
}

/// Cotangents by tensor id, summed with the public (differentiable) add. A cotangent is a tensor,
/// or rows (IndexedSlices) in a pass that takes them; rows added to a tensor, or read as one,
/// become dense.
class Cotangents {
 public:
  void add(TensorId id, Tensor g) {
    if (!rows_.empty())
      if (auto node = rows_.extract(id)) g = node.mapped().to_dense() + g;
    auto [it, inserted] = map_.try_emplace(id, std::move(g));
    if (inserted) return;
    // A lane stays masked only if it is masked in every contribution.
    const Tensor* m1 = masked_lanes(it->second);
    const Tensor* m2 = masked_lanes(g);
    const Tensor both = m1 && m2 ? logical_and(*m1, *m2) : Tensor();
    it->second = it->second + g;
    if (both.defined()) mark_masked_lanes(it->second, both);
  }
  void add_rows(TensorId id, IndexedSlices g) {
    if (auto it = map_.find(id); it != map_.end()) {
      it->second = it->second + g.to_dense();
      return;
    }
    auto [it, inserted] = rows_.try_emplace(id, g);
    if (!inserted) it->second = concat_rows(it->second, g);
  }
  bool contains(TensorId id) const { return map_.contains(id) || (!rows_.empty() && rows_.contains(id)); }
  bool any_rows() const { return !rows_.empty(); }
  /// id's cotangent if it is rows, else nullptr.
  const IndexedSlices* find_rows(TensorId id) const {
    auto it = rows_.find(id);
    return it == rows_.end() ? nullptr : &it->second;
  }
  /// id's cotangent as a tensor (rows made dense here), or nullptr.
  const Tensor* find(TensorId id) {
    densify(id);
    auto it = map_.find(id);
    return it == map_.end() ? nullptr : &it->second;
  }
  /// Removes and returns id's cotangent as a tensor.
  std::optional<Tensor> take(TensorId id) {
    densify(id);
    auto it = map_.find(id);
    if (it == map_.end()) return std::nullopt;
    std::optional<Tensor> g(std::move(it->second));
    map_.erase(it);
    return g;
  }
  /// Removes and returns id's cotangent as it is, rows or tensor; missing when none arrived.
  Gradient take_gradient(TensorId id) {
    if (auto node = rows_.extract(id)) return Gradient(std::move(node.mapped()));
    auto it = map_.find(id);
    if (it == map_.end()) return Gradient();
    Gradient g(std::move(it->second));
    map_.erase(it);
    return g;
  }
  /// Puts back a cotangent take_gradient took.
  void put(TensorId id, Gradient g) {
    if (const IndexedSlices* rows = g.indexed_slices())
      rows_.try_emplace(id, *rows);
    else
      map_.try_emplace(id, std::move(g).value());
  }
  /// Removes and returns id's rows; only where find_rows(id) is set.
  IndexedSlices take_rows(TensorId id) { return std::move(rows_.extract(id).mapped()); }
  /// id's cotangent as it is, rows or tensor; missing (no reason) when none arrived.
  Gradient gradient(TensorId id) const {
    if (const IndexedSlices* rows = find_rows(id)) return Gradient(*rows);
    auto it = map_.find(id);
    return it == map_.end() ? Gradient() : Gradient(it->second);
  }
  void erase(TensorId id) {
    map_.erase(id);
    rows_.erase(id);
  }

 private:
  void densify(TensorId id) {
    if (rows_.empty()) return;
    if (auto node = rows_.extract(id)) map_.try_emplace(id, node.mapped().to_dense());
  }
  IdMap<Tensor> map_;
  IdMap<IndexedSlices> rows_;
};

/// The gradient entry of `op`, looked up once per pass.
const GradientEntry& entry_of(Pruned& p, const OpDef* op) {
  auto [it, inserted] = p.entries.try_emplace(op);
  if (inserted) it->second = op->gradient();
  return *it->second;
}

void check_input_gradient(const OpRecord& rec, std::size_t i, const Tensor& g,
                          std::span<const std::int64_t> batch) {
  const Slot& in = rec.inputs()[i];
  TAPEFLOW_REQUIRE(g.defined() && g.shape() == with_batch(batch, *in.shape) && g.dtype() == in.dtype,
                   InternalError,
                   "Recorded operation '{}' returned a gradient for input {} with shape {} and dtype "
                   "{}, but the input has shape {} and dtype {}",
                   rec.op->name(), i, g.defined() ? g.shape().to_string() : "(undefined)",
                   g.defined() ? dtype_name(g.dtype()) : "-", in.shape->to_string(), dtype_name(in.dtype));
}

/// Runs record `rec`'s gradient function, naming it for check-numerics while it runs. `rows`
/// (nullptr: none) collects the gradients it gives row-sparse.
Grads run_gradient(const GradientEntry& entry, const OpRecord& rec, std::span<const Tensor> dys,
                   std::span<const bool> needed, std::span<const bool> reached,
                   std::vector<std::optional<IndexedSlices>>* rows) {
  const OpDef* outer = std::exchange(t_gradient_of, rec.op);
  struct Restore {
    const OpDef* op;
    ~Restore() { t_gradient_of = op; }
  } restore{outer};
  Grads grads = entry.fn(GradContext(rec, dys, needed, reached, rows));
  TAPEFLOW_REQUIRE(grads.size() == rec.num_inputs, InternalError,
                   "Recorded operation '{}' returned too {} gradients. Expected {} but received {}",
                   rec.op->name(), grads.size() < rec.num_inputs ? "few" : "many", rec.num_inputs,
                   grads.size());
  return grads;
}

/// Tells the observer about sources whose cotangent is final, the latest first reader first. A
/// source's cotangent is final once the walk has passed the earliest kept record that reads it,
/// and it is reported once the walk has also passed every kept record whose gradient runs user
/// code (GradientEntry::runs_user_code): that code may read any variable, and the observer may
/// update the source's variable (a fused optimizer step) the moment it hears of it. Built only
/// for an observed pass: a plain gradient() pays nothing for it.
class FinalSources {
 public:
  FinalSources(const Records& ops, const Pruned& p, std::span<const Source> sources,
               BackwardObserver* observer)
      : sources_(sources), observer_(observer) {
    if (observer == nullptr) return;
    IdMap<std::size_t> first_reader;
    std::optional<std::size_t> first_user_code;  // the earliest kept record running user code
    for (std::size_t k = 0; k < ops.size(); ++k) {
      if (!p.keep[k]) continue;
      if (!first_user_code && p.entries.at(ops[k].op)->runs_user_code) first_user_code = k;
      const std::span<const bool> needed = p.needed(k, ops[k].num_inputs);
      for (std::size_t i = 0; i < needed.size(); ++i)
        if (needed[i] && p.source_ids.contains(ops[k].inputs()[i].id))
          first_reader.try_emplace(ops[k].inputs()[i].id, k);
      // A source a kept record also produces (a watched intermediate) passes its cotangent on
      // to that record: the pass keeps it even if the observer takes it.
      for (const Slot& out : ops[k].outputs())
        if (p.source_ids.contains(out.id)) produced_.insert(out.id);
    }
    for (std::size_t i = 0; i < sources.size(); ++i) {
      ++unreported_[sources[i].id()];
      // A source no kept record reads is final now.
      const auto it = first_reader.find(sources[i].id());
      const std::size_t first = it == first_reader.end() ? ops.size() : it->second;
      pending_.push_back({first_user_code ? std::min(first, *first_user_code) : first, i});
    }
    std::ranges::sort(pending_, std::greater<>());
  }
  /// Reports the sources whose first reader comes after record `k`: the walk is about to run k.
  void before(std::size_t k, Cotangents& grads) {
    report([&](std::size_t first) { return first > k; }, grads);
  }
  /// Reports the rest: the walk is over.
  void finish(Cotangents& grads) {
    report([](std::size_t) { return true; }, grads);
  }

 private:
  template <class Due>
  void report(Due due, Cotangents& grads) {
    if (observer_ == nullptr) return;
    std::vector<TensorId> taken;  // erased after every source of that id heard it
    for (; next_ < pending_.size() && due(pending_[next_].first); ++next_) {
      const std::size_t i = pending_[next_].second;
      const TensorId id = sources_[i].id();
      // The last source of an id that no record passes on hears of its cotangent after the pass
      // has let go of it, so the observer may hold the only reference (a DistributedGradientTape
      // then reduces the gradient's own bytes instead of a copy).
      const bool last = --unreported_[id] == 0 && !produced_.contains(id);
      Gradient g;
      if (is_floating(sources_[i].dtype())) g = last ? grads.take_gradient(id) : grads.gradient(id);
      const bool had = g.has_value();
      const bool took = observer_->source_final(i, had ? &g : nullptr);
      if (last && had && !took) grads.put(id, std::move(g));
      if (took && had && !produced_.contains(id)) taken.push_back(id);
    }
    for (TensorId id : taken) grads.erase(id);
  }

  std::span<const Source> sources_;
  BackwardObserver* observer_;
  std::vector<std::pair<std::size_t, std::size_t>> pending_;  // (first reader, source index)
  IdMap<int> unreported_;                                     // per source id: its sources not reported yet
  IdSet produced_;
  std::size_t next_ = 0;
};

}  // namespace

Pruned prune(const Records& ops, const IdMap<std::int64_t>& producer, std::span<const Source> ys,
             std::span<const Source> sources) {
  // The record before `k` that produced `id`, or -1 (a later index is the id re-used as an
  // output, e.g. a custom gradient's function returning its input, and counts as a leaf).
  const auto producer_before = [&](TensorId id, std::size_t k) -> std::int64_t {
    const auto it = producer.find(id);
    return it != producer.end() && it->second >= 0 && static_cast<std::size_t>(it->second) < k ? it->second
                                                                                               : -1;
  };
  Pruned p;
  // Whether record k's op is differentiable, looked up at most once per record (most records are
  // asked in both sweeps): 0 unknown, 1 no, 2 yes.
  detail::RecyclingVector<char> differentiable_cache(ops.size(), 0);
  const auto differentiable = [&](std::size_t k) {
    if (differentiable_cache[k] == 0)
      differentiable_cache[k] = entry_of(p, ops[k].op).status != GradientStatus::NotDifferentiable ? 2 : 1;
    return differentiable_cache[k] == 2;
  };
  // Reverse sweep: the records an output of which reaches a target.
  p.reaches.assign(ops.size(), 0);
  for (const Source& y : ys)
    if (const std::int64_t j = producer_before(y.id(), ops.size()); j >= 0 && is_floating(y.dtype()))
      p.reaches[static_cast<std::size_t>(j)] = 1;
  for (std::size_t k = ops.size(); k-- > 0;) {
    if (!p.reaches[k] || !differentiable(k)) continue;
    for (const Slot& in : ops[k].inputs())
      if (is_floating(in.dtype))
        if (const std::int64_t j = producer_before(in.id, k); j >= 0)
          p.reaches[static_cast<std::size_t>(j)] = 1;
  }
  // Forward sweep: the live records and the inputs that need gradients; the pass keeps the live
  // records that reach a target.
  for (const Source& s : sources) p.source_ids.insert(s.id());
  p.first_input.resize(ops.size());
  std::size_t num_inputs = 0;
  for (std::size_t k = 0; k < ops.size(); ++k) {
    p.first_input[k] = num_inputs;
    num_inputs += ops[k].num_inputs;
  }
  p.input_needed = detail::RecyclingArray<bool>(num_inputs);
  p.live.assign(ops.size(), 0);
  p.keep.assign(ops.size(), 0);
  for (std::size_t k = 0; k < ops.size(); ++k) {
    bool depends = false;
    bool* needed = p.input_needed.get() + p.first_input[k];
    for (const Slot& in : ops[k].inputs()) {
      *needed = false;
      if (is_floating(in.dtype)) {
        const bool source = p.source_ids.contains(in.id);
        const std::int64_t j = source ? -1 : producer_before(in.id, k);
        *needed = source || (j >= 0 && p.live[static_cast<std::size_t>(j)]);
      }
      depends = depends || *needed;
      ++needed;
    }
    p.live[k] = depends && differentiable(k);
    p.keep[k] = p.live[k] && p.reaches[k];
  }
  return p;
}

namespace {

/// Steps 2-4, for backward() and backward_gradients().
std::vector<Gradient> run_backward(Records& ops, const Pruned& p, const BackwardPass& pass, bool take_rows) {
  struct BatchRank {
    int saved = t_cotangent_batch_rank;
    ~BatchRank() { t_cotangent_batch_rank = saved; }
  } restore;
  t_cotangent_batch_rank = static_cast<int>(pass.batch.size());
  const MaskedLanesScope masked_lanes;
  Cotangents grads;
  for (std::size_t i = 0; i < pass.ys.size(); ++i)
    if (is_floating(pass.ys[i].dtype())) grads.add(pass.ys[i].id(), pass.seeds[i]);

  FinalSources finals(ops, p, pass.sources, pass.observer);

  std::vector<Tensor> dys;
  std::unique_ptr<bool[]> reached;  // per output of the record: did a gradient reach it
  std::size_t reached_capacity = 0;
  // Row-sparse gradients of the record's inputs (a pass that takes them, without batch dimensions).
  const bool rows_taken = take_rows && pass.batch.empty();
  std::vector<std::optional<IndexedSlices>> input_rows;
  for (std::size_t k = ops.size(); k-- > 0;) {
    if (pass.observer != nullptr) finals.before(k, grads);
    if (!p.keep[k]) continue;
    OpRecord& rec = ops[k];
    const auto outs = rec.outputs();
    bool any = false;
    for (const Slot& out : outs) any = any || grads.contains(out.id);
    if (!any) continue;
    const GradientEntry& entry = *p.entries.at(rec.op);
    const auto ins = rec.inputs();
    const std::span<const bool> needed = p.needed(k, ins.size());
    // Rows reaching a gradient that is dy itself (a variable's read) pass to its input unchanged.
    if (grads.any_rows() && entry.is_dy && outs.size() == 1 && ins.size() == 1 && needed[0])
      if (const IndexedSlices* rows = grads.find_rows(outs[0].id)) {
        grads.add_rows(ins[0].id, p.source_ids.contains(outs[0].id) ? *rows : grads.take_rows(outs[0].id));
        if (pass.release)
          for (Slot& slot : rec.all_slots()) slot.saved = Tensor();
        continue;
      }
    if (pass.observer != nullptr) pass.observer->before_record(k);
    if (entry.status == GradientStatus::Missing)
      throw LookupError(fmt::format("gradient registry has no entry for: {}", rec.op->name()));
    if (outs.size() > reached_capacity) {
      reached_capacity = outs.size();
      reached = std::make_unique<bool[]>(reached_capacity);
    }
    for (const Slot& out : outs) {
      // A consumed cotangent leaves the map (freed early) unless a source reads it at the end.
      const Tensor* kept = p.source_ids.contains(out.id) ? grads.find(out.id) : nullptr;
      std::optional<Tensor> g = kept ? std::optional<Tensor>(*kept) : grads.take(out.id);
      reached[dys.size()] = g.has_value();
      dys.push_back(g ? std::move(*g) : zeros(with_batch(pass.batch, *out.shape), out.dtype));
    }
    if (rows_taken && input_rows.size() < ins.size()) input_rows.resize(ins.size());
    Grads input_grads = run_gradient(entry, rec, dys, needed, {reached.get(), outs.size()},
                                     rows_taken ? &input_rows : nullptr);
    for (std::size_t i = 0; i < ins.size(); ++i)
      if (needed[i] && input_grads[i]) check_input_gradient(rec, i, *input_grads[i], pass.batch);
    if (pass.observer != nullptr) pass.observer->after_record(k, dys, needed, input_grads);
    for (std::size_t i = 0; i < ins.size(); ++i) {
      if (needed[i] && input_grads[i]) grads.add(ins[i].id, std::move(*input_grads[i]));
      // Rows given are taken (unless a tensor was given too) and their slot emptied for the next record.
      if (rows_taken && input_rows[i]) {
        if (needed[i] && !input_grads[i]) grads.add_rows(ins[i].id, std::move(*input_rows[i]));
        input_rows[i].reset();
      }
    }
    // The cotangents used go now: a gradient that is dy itself (a variable's read) is then held
    // by the map alone, and an observer told of it may hold the only reference.
    dys.clear();
    if (pass.release)
      for (Slot& slot : rec.all_slots()) slot.saved = Tensor();
  }
  finals.finish(grads);

  std::vector<Gradient> result;
  result.reserve(pass.sources.size());
  for (const Source& s : pass.sources)
    result.push_back(is_floating(s.dtype()) ? grads.gradient(s.id()) : Gradient());
  return result;
}

}  // namespace

std::vector<std::optional<Tensor>> backward(Records& ops, const Pruned& p, const BackwardPass& pass) {
  std::vector<std::optional<Tensor>> result;
  for (Gradient& g : run_backward(ops, p, pass, /*take_rows=*/false))
    result.push_back(g ? std::optional<Tensor>(std::move(g).value()) : std::nullopt);
  return result;
}

std::vector<Gradient> backward_gradients(Records& ops, const Pruned& p, const BackwardPass& pass) {
  return run_backward(ops, p, pass, /*take_rows=*/true);
}

}  // namespace tapeflow::autodiff
