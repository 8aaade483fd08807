// tf::debug::memory_report(): every tensor a tape keeps alive for its backward pass (the
// values each record's Saves declared), the op that saved it, and the total. Buffers are
// identified by their data pointer, as saved_bytes() does, so x * x (which saves x twice) and a
// reshape that shares its input's buffer are counted once.

#include <algorithm>
#include <array>
#include <iterator>
#include <unordered_map>

#include "autodiff/tape_access.h"
#include "core/check.h"
#include "tapeflow/debug.h"

namespace tapeflow {

namespace {

/// Where tensor `t` came from, as seen by the tape.
std::string origin_of(const detail::TapeState& tape, TensorId t) {
  auto it = tape.producer.find(t);
  if (it == tape.producer.end()) return "constant";
  if (it->second < 0) return "watched";
  const autodiff::OpRecord& rec = tape.ops[static_cast<std::size_t>(it->second)];
  if (rec.op->name() == "ReadVariableOp" && rec.num_inputs == 1) {
    for (const Variable& v : tape.watched_variables)
      if (v.handle_id() == rec.inputs()[0].id) return "read of " + v.name();
  }
  return fmt::format("{} #{}", rec.op->name(), it->second);
}

std::string human_bytes(std::int64_t b) {
  constexpr std::array<const char*, 4> kUnits{"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  std::size_t u = 0;
  for (v /= 1024; v >= 1024 && u + 1 < kUnits.size(); v /= 1024) ++u;
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

}  // namespace

MemoryReport debug::memory_report(const GradientTape& gradient_tape) {
  const detail::TapeState& tape = *detail::TapeAccess::state(gradient_tape);
  // The owner thread appends records (and may move them) while it runs ops.
  autodiff::require_owner(tape, "debug::memory_report");
  MemoryReport report;
  report.num_records = tape.ops.size();
  std::unordered_map<const void*, std::size_t> first_row;
  for (std::size_t k = 0; k < tape.ops.size(); ++k) {
    const autodiff::OpRecord& rec = tape.ops[k];
    for (std::size_t i = 0; i < rec.num_slots; ++i) {
      const autodiff::Slot& slot = rec.slots[i];
      if (!slot.saved.defined()) continue;
      SavedTensor row;
      row.record = k;
      row.op = rec.op->name();
      row.is_output = i >= rec.num_inputs;
      row.position = static_cast<int>(row.is_output ? i - rec.num_inputs : i);
      row.shape = slot.saved.shape();
      row.dtype = slot.saved.dtype();
      row.bytes = static_cast<std::int64_t>(slot.saved.nbytes());
      row.origin = origin_of(tape, slot.id);
      auto [it, inserted] = first_row.try_emplace(slot.saved.raw_data(), report.rows.size());
      if (inserted) {
        report.total_bytes += row.bytes;
        ++report.num_buffers;
      } else {
        row.same_buffer_as = it->second;
        report.shared_bytes += row.bytes;
      }
      report.rows.push_back(std::move(row));
    }
  }
  return report;
}

std::string MemoryReport::to_string() const {
  if (rows.empty())
    return fmt::format("The tape holds no tensors ({} recorded op{}, none saves a value).\n", num_records,
                       num_records == 1 ? "" : "s");
  const std::array<std::string, 7> head{"row", "record", "saved", "shape", "dtype", "bytes", "tensor"};
  std::vector<std::array<std::string, 7>> cells;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const SavedTensor& s = rows[r];
    std::string tensor = s.origin;
    if (s.same_buffer_as) tensor += fmt::format("  (same buffer as row {}: counted once)", *s.same_buffer_as);
    cells.push_back({std::to_string(r), fmt::format("#{} {}", s.record, s.op),
                     fmt::format("{} {}", s.is_output ? "output" : "input", s.position), s.shape.to_string(),
                     std::string(dtype_name(s.dtype)), std::to_string(s.bytes), tensor});
  }
  std::array<std::size_t, 7> width{};
  for (std::size_t c = 0; c < 7; ++c) {
    width[c] = head[c].size();
    for (const auto& row : cells) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto line = [&](const std::array<std::string, 7>& row) {
    std::string l;
    for (std::size_t c = 0; c < 7; ++c) {
      const bool right = c == 0 || c == 5;  // numbers align right
      const std::size_t pad = width[c] - row[c].size();
      if (right)
        l += std::string(pad, ' ') + row[c];
      else
        l += c + 1 < 7 ? row[c] + std::string(pad, ' ') : row[c];
      if (c + 1 < 7) l += "  ";
    }
    out += l + "\n";
  };
  line(head);
  for (const auto& row : cells) line(row);
  const std::string human = total_bytes >= 1024 ? fmt::format(" ({})", human_bytes(total_bytes)) : "";
  out += fmt::format("total: {} bytes{} in {} buffer{}, {} saved tensor{} from {} recorded op{}", total_bytes,
                     human, num_buffers, num_buffers == 1 ? "" : "s", rows.size(),
                     rows.size() == 1 ? "" : "s", num_records, num_records == 1 ? "" : "s");
  if (shared_bytes > 0) out += fmt::format("; {} bytes saved more than once are counted once", shared_bytes);
  out += "\n";
  return out;
}

}  // namespace tapeflow
