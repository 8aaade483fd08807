// The recording listener of the diagnostics: keeps, per tape, what tf::debug::explain needs to
// know about what the tape did not record (trace.h). Installed before main by the static object
// at the end of this file, which a program links as soon as it calls a diagnostic (each of them
// reads trace_of): a program that never does pays nothing for the trace.
//
// Costs. Nothing on a recorded op. A cut is checked only for ops a recording tape does not record
// and finds nothing to do unless one of their inputs is an integer tensor the tape produced or a
// cut output (then it stores one CutRecord; at most kMaxCuts per tape). An assignment under a
// recording tape costs one hash lookup per recording tape; a pause two id allocations; an op on a
// thread with no tape while another thread has one a mutex-guarded ring write.

#include "debug/trace.h"

#include <array>
#include <mutex>

#include "autodiff/recording_listener.h"
#include "core/tensor_impl.h"

namespace tapeflow::debug {

namespace {

TapeTrace& notes(detail::TapeState& tape) {
  if (!tape.notes) tape.notes = std::make_unique<TapeTrace>();
  return static_cast<TapeTrace&>(*tape.notes);
}

/// The most recent tensors computed on a thread with no tape while another thread had one.
struct UnrecordedRing {
  static constexpr std::size_t kSize = 4096;
  std::mutex mutex;
  std::array<std::pair<TensorId, std::thread::id>, kSize> entries{};
  std::size_t next = 0;
};
UnrecordedRing& unrecorded_ring() {
  static UnrecordedRing ring;
  return ring;
}

class Trace final : public autodiff::RecordingListener {
 public:
  void tape_started(detail::TapeState& tape) override {
    TapeTrace& t = notes(tape);
    t.paused_ids.clear();
    // A tape reset inside a stop_recording() block is paused from its start.
    if (tape.pauses > 0) t.paused_ids.emplace_back(detail::next_tensor_id(), ~TensorId{0});
    t.first_id = detail::next_tensor_id();
  }
  void pause_began(detail::TapeState& tape) override {
    notes(tape).paused_ids.emplace_back(detail::next_tensor_id(), ~TensorId{0});
  }
  void pause_ended(detail::TapeState& tape) override {
    TapeTrace& t = notes(tape);
    if (!t.paused_ids.empty()) t.paused_ids.back().second = detail::next_tensor_id();
  }
  void records_released(detail::TapeState& tape) override {
    TapeTrace& t = notes(tape);
    t.cuts.clear();
    t.cut_ids.clear();
  }
  void op_not_recorded(detail::TapeState& tape, const autodiff::OpDef& op,
                       std::span<const Tensor* const> inputs, std::span<const Tensor> outputs) override {
    if (!takes_cut_input(tape, inputs)) return;
    std::vector<TensorId> in_ids, out_ids;
    for (const Tensor* in : inputs) in_ids.push_back(in->id());
    for (const Tensor& out : outputs) out_ids.push_back(out.id());
    add_cut(tape, op.name(), CutReason::kIntegerInput, std::move(in_ids), std::move(out_ids));
  }
  void variable_updated(detail::TapeState& tape, std::string_view op, const Variable& var,
                        const Tensor& value) override {
    if (tape.producer.contains(value.id()) || notes(tape).cut_ids.contains(value.id()))
      add_cut(tape, op, CutReason::kVariableUpdate, {value.id()}, {var.handle_id()}, var.name());
  }
  void computed_without_tape(std::span<const Tensor> outputs) override {
    UnrecordedRing& ring = unrecorded_ring();
    const std::lock_guard lock(ring.mutex);
    for (const Tensor& out : outputs)
      ring.entries[ring.next++ % UnrecordedRing::kSize] = {out.id(), std::this_thread::get_id()};
  }

 private:
  /// Whether an op the tape does not record takes a tracked input: an integer/bool tensor the
  /// tape produced or watched, or the output of an earlier cut.
  static bool takes_cut_input(detail::TapeState& tape, std::span<const Tensor* const> inputs) {
    const TapeTrace& t = notes(tape);
    for (const Tensor* in : inputs)
      if ((!is_floating(in->dtype()) && tape.producer.contains(in->id())) ||
          (!t.cut_ids.empty() && t.cut_ids.contains(in->id())))
        return true;
    return false;
  }
  static void add_cut(detail::TapeState& tape, std::string_view op, CutReason reason,
                      std::vector<TensorId> inputs, std::vector<TensorId> outputs,
                      std::string variable = {}) {
    TapeTrace& t = notes(tape);
    if (t.cuts.size() >= TapeTrace::kMaxCuts) return;
    for (TensorId id : outputs) t.cut_ids.insert(id);
    t.cuts.push_back(
        {op, reason, tape.ops.size(), std::move(inputs), std::move(outputs), std::move(variable)});
  }
};

Trace g_trace;

/// Installs the trace before main (see the file comment).
[[maybe_unused]] const bool g_trace_installed = [] {
  autodiff::g_recording_listener.store(&g_trace);
  return true;
}();

}  // namespace

const TapeTrace& trace_of(const detail::TapeState& tape) {
  static const TapeTrace kNone;
  return tape.notes ? static_cast<const TapeTrace&>(*tape.notes) : kNone;
}

std::optional<std::thread::id> unrecorded_thread_of(TensorId id) {
  UnrecordedRing& ring = unrecorded_ring();
  const std::lock_guard lock(ring.mutex);
  for (const auto& [t, thread] : ring.entries)
    if (t == id && id != 0) return thread;
  return std::nullopt;
}

}  // namespace tapeflow::debug
