// The function file writer and reader (serialize.h; the format is docs/FUNCTION_FORMAT.md).
//
// Writing encodes the meta section with an AttrWriter, checks the graph first (the same
// invariants the reader checks, so what is written can be read), and hands the header, meta,
// checksum and the tensors' bytes to the atomic writer checkpoints use. Reading checks the header,
// reads header + meta (bounded by the file size) and verifies its checksum, parses the meta with a
// bounds-checked AttrReader, resolves the op table against the registry, checks the structure and
// the data section's size, and only then allocates the tensors and reads each one, verifying its
// own checksum.

#include "graph/serialize.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "autodiff/attr_codec.h"
#include "core/check.h"
#include "io/file_util.h"
#include "tapeflow/memory.h"
#include "tapeflow/version.h"

namespace tapeflow::graph {
namespace {

using autodiff::AttrReader;
using autodiff::AttrsCodec;
using autodiff::AttrWriter;

constexpr char kMagic[8] = {'T', 'F', 'L', 'W', 'F', 'U', 'N', 'C'};
constexpr char kCheckpointMagic[8] = {'T', 'F', 'L', 'W', 'C', 'K', 'P', 'T'};
constexpr std::uint32_t kVersion =
    3;  // 2 added the size template, 3 its product terms; 1 and 2 are still read
constexpr std::uint32_t kOldestVersion = 1;
constexpr std::size_t kHeaderSize = 32;
constexpr std::size_t kCrcSize = 4;
constexpr std::string_view kNoun = "function file";

// The file's node kinds: kNodeKindOfCode[code]. kFused is never written.
constexpr std::array<NodeKind, 5> kNodeKindOfCode = {
    NodeKind::kOp, NodeKind::kReadVariable, NodeKind::kAssign, NodeKind::kAssignAdd, NodeKind::kAssignSub};

// The smallest encodings, which bound the counts the reader accepts.
constexpr std::size_t kMinInputSpecBytes = 1 + 1 + 4;             // dtype, rank, empty name
constexpr std::size_t kMinValueBytes = 1 + 1;                     // dtype, rank 0
constexpr std::size_t kMinConstantBytes = 4 + 8 + 4;              // value id, byte size, crc
constexpr std::size_t kMinVariableBytes = 4 + 1 + 1 + 1 + 8 + 4;  // name, dtype, rank, trainable, size, crc
constexpr std::size_t kMinOpBytes = 4 + 4;                        // two empty strings
constexpr std::size_t kMinNodeBytes = 1 + 4 + 4 + 4;              // kind, op or variable, two counts
constexpr std::size_t kMinNestedNodeBytes = 4 + 4 + 4;            // op name, two counts
constexpr std::size_t kTermBytes = 8 + 8;                         // dims, multiple (version 2)
constexpr std::size_t kMinAttrTermBytes = 4 + 4 + kTermBytes;     // node, ordinal, term
constexpr std::size_t kMinConstantTermBytes = 4 + 1 + 1;          // constant, kind, rank 0
constexpr std::size_t kMinTensorBytes = 1;                        // an undefined tensor

std::uint8_t node_kind_code(NodeKind k) {
  const auto* it = std::find(kNodeKindOfCode.begin(), kNodeKindOfCode.end(), k);
  TAPEFLOW_ASSERT(it != kNodeKindOfCode.end(), "node kind {} has no file code", static_cast<int>(k));
  return static_cast<std::uint8_t>(it - kNodeKindOfCode.begin());
}

bool is_variable_node(NodeKind k) {
  return k == NodeKind::kReadVariable || k == NodeKind::kAssign || k == NodeKind::kAssignAdd ||
         k == NodeKind::kAssignSub;
}

std::string version_string(std::uint16_t major, std::uint16_t minor, std::uint16_t patch) {
  return fmt::format("{}.{}.{}", major, minor, patch);
}

// The bytes of a tensor in little-endian order: its own, or a swapped copy on a big-endian host.
struct LittleEndianBytes {
  explicit LittleEndianBytes(const Tensor& t) : tensor(t) {
    if constexpr (std::endian::native != std::endian::little) {
      const auto* b = static_cast<const unsigned char*>(t.raw_data());
      swapped.assign(b, b + t.nbytes());
      const std::size_t elem = dtype_size(t.dtype());
      for (std::size_t i = 0; i + elem <= swapped.size(); i += elem)
        std::reverse(swapped.begin() + static_cast<std::ptrdiff_t>(i),
                     swapped.begin() + static_cast<std::ptrdiff_t>(i + elem));
    }
  }
  std::span<const unsigned char> bytes() const {
    if (!swapped.empty()) return swapped;
    return {static_cast<const unsigned char*>(tensor.raw_data()), tensor.nbytes()};
  }
  Tensor tensor;
  std::vector<unsigned char> swapped;
};

}  // namespace

// --- The invariants both sides check ------------------------------------------------------------

namespace {

// The number of outputs op node `n` gives, where the node tells it without running: its op's
// (OpDef::output_count: one for a forward returning a Tensor, a declared count, Split's sizes), as
// many as their graphs give for tf::cond's and tf::while_loop's ops. nullopt for Unpack, whose count
// is the size of a dim the signature may leave unknown: the executor checks it when the node runs.
std::optional<std::size_t> output_count(const Node& n) {
  if (n.op->output_count != nullptr) return n.op->output_count(n.attrs.get());
  return control_flow_output_count(n);
}

}  // namespace

std::optional<std::string> structure_problem(const ExportedFunction& f) {
  const Graph& g = f.graph;
  if (g.values.size() > static_cast<std::size_t>(std::numeric_limits<ValueId>::max()))
    return fmt::format("{} values, more than a value id can number", g.values.size());
  const auto n_values = static_cast<ValueId>(g.values.size());
  std::vector<char> defined(g.values.size(), 0);  // 1 once an input, constant or node output defines it
  auto define = [&](ValueId v, const std::string& where) -> std::optional<std::string> {
    if (v < 0 || v >= n_values)
      return fmt::format("{} names value {}, but there are {} values", where, v, n_values);
    if (defined[static_cast<std::size_t>(v)] != 0)
      return fmt::format("{} defines value {} a second time", where, v);
    defined[static_cast<std::size_t>(v)] = 1;
    return std::nullopt;
  };
  auto use = [&](ValueId v, const std::string& where) -> std::optional<std::string> {
    if (v < 0 || v >= n_values)
      return fmt::format("{} names value {}, but there are {} values", where, v, n_values);
    if (defined[static_cast<std::size_t>(v)] == 0)
      return fmt::format("{} uses value {} before anything defines it", where, v);
    return std::nullopt;
  };

  if (f.inputs.size() != g.inputs.size())
    return fmt::format("the signature has {} input specs for {} graph inputs", f.inputs.size(),
                       g.inputs.size());
  for (std::size_t i = 0; i < f.inputs.size(); ++i) {
    const InputSpec& spec = f.inputs[i];
    if (spec.dims.size() > static_cast<std::size_t>(kMaxRank))
      return fmt::format("input spec {} has rank {}, more than {}", i, spec.dims.size(), kMaxRank);
    for (std::int64_t d : spec.dims)
      if (d < -1) return fmt::format("input spec {} has dimension {} (only -1 or a size >= 0)", i, d);
  }
  for (std::size_t i = 0; i < g.inputs.size(); ++i)
    if (auto p = define(g.inputs[i], fmt::format("graph input {}", i))) return p;
  for (std::size_t i = 0; i < g.constants.size(); ++i)
    if (auto p = define(g.constants[i].first, fmt::format("constant {}", i))) return p;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    std::string where;
    if (n.kind == NodeKind::kOp) {
      if (n.op == nullptr) return fmt::format("node {} is an op node without an op", i);
      where = fmt::format("node {} ({})", i, n.op->name());
    } else if (is_variable_node(n.kind)) {
      where = fmt::format("node {} (a variable {})", i,
                          n.kind == NodeKind::kReadVariable ? "read" : "assignment");
      if (n.variable < 0 || static_cast<std::size_t>(n.variable) >= g.variables.size())
        return fmt::format("{} names variable {}, but there are {} variables", where, n.variable,
                           g.variables.size());
    } else {
      return fmt::format("node {} is of kind {}, which a function file does not hold", i,
                         static_cast<int>(n.kind));
    }
    for (std::size_t k = 0; k < n.inputs.size(); ++k)
      if (auto p = use(n.inputs[k], fmt::format("input {} of {}", k, where))) return p;
    for (std::size_t k = 0; k < n.outputs.size(); ++k)
      if (auto p = define(n.outputs[k], fmt::format("output {} of {}", k, where))) return p;
    if (n.kind == NodeKind::kOp) {
      // A list op (ConcatV2, AddN) and tf::cond's and tf::while_loop's ops check their inputs
      // when they run: their counts depend on attributes or graphs the node carries.
      if (const std::optional<std::size_t> count = n.op->input_count; count && *count != n.inputs.size())
        return fmt::format("{} lists {} inputs, but {} takes {}", where, n.inputs.size(), n.op->name(),
                           *count);
      if (const std::optional<std::size_t> count = output_count(n); count && *count != n.outputs.size())
        return fmt::format("{} lists {} outputs, but {} gives {}", where, n.outputs.size(), n.op->name(),
                           *count);
    }
    if (is_variable_node(n.kind)) {
      const CapturedVariable& var = g.variables[static_cast<std::size_t>(n.variable)];
      const bool read = n.kind == NodeKind::kReadVariable;
      const std::vector<ValueId>& held = read ? n.outputs : n.inputs;
      if ((read ? n.inputs : n.outputs).size() != 0 || held.size() != 1)
        return fmt::format("{} has {} inputs and {} outputs (a read has one output, an assignment one input)",
                           where, n.inputs.size(), n.outputs.size());
      const Value& v = g.values[static_cast<std::size_t>(held[0])];
      if (v.shape != var.shape || v.dtype != var.dtype)
        return fmt::format(
            "{} moves a value of shape {} and dtype {} in or out of variable '{}' of shape {} and "
            "dtype {}",
            where, v.shape.to_string(), dtype_name(v.dtype), var.name, var.shape.to_string(),
            dtype_name(var.dtype));
    }
  }
  for (std::size_t i = 0; i < g.outputs.size(); ++i)
    if (auto p = use(g.outputs[i], fmt::format("graph output {}", i))) return p;
  return std::nullopt;
}

// --- Writing -------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kWriteFn = "write_function_file";

// Checks what structure_problem does not: node kinds and attributes against their ops' codecs, the
// constants' and variables' tensors. Returns the ops in order of first use.
std::vector<const autodiff::OpDef*> check_for_writing(const ExportedFunction& f, const std::string& path) {
  const Graph& g = f.graph;
  TAPEFLOW_REQUIRE(g.opaque_gradient.empty(), UnimplementedError,
                   "[{}] cannot export to '{}': the function runs a {} whose gradient function a file "
                   "cannot hold; the loaded function would differentiate the ops inside it instead",
                   kWriteFn, path, g.opaque_gradient);
  std::vector<const autodiff::OpDef*> ops;
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& n = g.nodes[i];
    TAPEFLOW_ASSERT(n.kind != NodeKind::kFused,
                    "[{}] '{}': node {} is a fused kernel; a function file holds the unfused graph (fusion "
                    "runs again after loading)",
                    kWriteFn, path, i);
    if (n.kind != NodeKind::kOp || n.op == nullptr) continue;
    const AttrsCodec* codec = n.op->attrs_codec;
    TAPEFLOW_REQUIRE(
        codec != nullptr || n.attrs == nullptr, UnimplementedError,
        "[{}] cannot export to '{}': node {} runs op '{}', whose attributes cannot be written (a "
        "custom gradient's function, say); a function using it cannot be exported",
        kWriteFn, path, i, n.op->name());
    TAPEFLOW_REQUIRE(n.op->forward != nullptr, UnimplementedError,
                     "[{}] cannot export to '{}': node {} runs op '{}', which a loaded graph could not run",
                     kWriteFn, path, i, n.op->name());
    TAPEFLOW_ASSERT(codec == nullptr || n.attrs != nullptr, "[{}] '{}': node {} ({}) has no attributes",
                    kWriteFn, path, i, n.op->name());
    if (std::find(ops.begin(), ops.end(), n.op) == ops.end()) ops.push_back(n.op);
  }
  if (auto problem = structure_problem(f))
    throw InternalError(fmt::format("this is a bug in tapeflow: [{}] '{}': the graph is malformed: {}",
                                    kWriteFn, path, *problem));
  for (std::size_t i = 0; i < g.constants.size(); ++i) {
    const auto& [id, t] = g.constants[i];
    const Value& v = g.values[static_cast<std::size_t>(id)];
    TAPEFLOW_ASSERT(t.defined() && t.shape() == v.shape && t.dtype() == v.dtype,
                    "[{}] '{}': constant {} is not a tensor of its value's shape {} and dtype {}", kWriteFn,
                    path, i, v.shape.to_string(), dtype_name(v.dtype));
  }
  TAPEFLOW_REQUIRE(f.variable_values.size() == g.variables.size(), InvalidArgumentError,
                   "[{}] '{}': {} variable values for {} variables", kWriteFn, path, f.variable_values.size(),
                   g.variables.size());
  for (std::size_t i = 0; i < g.variables.size(); ++i) {
    const CapturedVariable& var = g.variables[i];
    const Tensor& t = f.variable_values[i];
    TAPEFLOW_REQUIRE(
        t.defined() && t.shape() == var.shape && t.dtype() == var.dtype, InvalidArgumentError,
        "[{}] '{}': the value of variable {} ('{}', shape {}, dtype {}) is {}", kWriteFn, path, i, var.name,
        var.shape.to_string(), dtype_name(var.dtype),
        t.defined() ? fmt::format("of shape {} and dtype {}", t.shape().to_string(), dtype_name(t.dtype()))
                    : std::string("an undefined Tensor"));
  }
  return ops;
}

void write_ids(AttrWriter& w, const std::vector<ValueId>& ids) {
  w.u32(static_cast<std::uint32_t>(ids.size()));
  for (ValueId v : ids) w.u32(static_cast<std::uint32_t>(v));
}

// A graph's values (dtype, shape), then its inputs and outputs: a file's graph and a nested one.
void write_values_and_ids(AttrWriter& w, const Graph& g) {
  w.u32(static_cast<std::uint32_t>(g.values.size()));
  for (const Value& v : g.values) {
    w.dtype(v.dtype);
    w.shape(v.shape);
  }
  write_ids(w, g.inputs);
  write_ids(w, g.outputs);
}

void write_term(AttrWriter& w, const SizeTemplate::Term& t) {
  w.u64(t.dims);
  w.i64(t.multiple);
  w.u64(t.by);
}

void write_size_template(AttrWriter& w, const SizeTemplate& t) {
  w.u32(static_cast<std::uint32_t>(t.attrs.size()));
  for (const SizeTemplate::AttrInt& a : t.attrs) {
    w.u32(static_cast<std::uint32_t>(a.node));
    w.u32(static_cast<std::uint32_t>(a.ordinal));
    write_term(w, a.term);
  }
  w.u32(static_cast<std::uint32_t>(t.constants.size()));
  for (const SizeTemplate::Constant& c : t.constants) {
    w.u32(static_cast<std::uint32_t>(c.index));
    w.u8(static_cast<std::uint8_t>(c.kind));
    if (c.kind == SizeTemplate::Constant::Kind::kSplat) {
      w.u8(static_cast<std::uint8_t>(c.dims.size()));
      for (const std::optional<SizeTemplate::Term>& d : c.dims) {
        w.u8(d ? 1 : 0);
        if (d) write_term(w, *d);
      }
    } else {
      write_term(w, c.value);
    }
  }
}

// The meta section; `data` gets the constants' and variables' bytes in file order.
std::string encode_meta(const ExportedFunction& f, const std::vector<const autodiff::OpDef*>& ops,
                        const std::vector<LittleEndianBytes>& data) {
  const Graph& g = f.graph;
  std::string meta;
  AttrWriter w(meta);
  w.string(f.name);
  w.u32(static_cast<std::uint32_t>(f.inputs.size()));
  for (const InputSpec& spec : f.inputs) {
    w.dtype(spec.dtype);
    w.u8(static_cast<std::uint8_t>(spec.dims.size()));
    for (std::int64_t d : spec.dims) w.i64(d);
    w.string(spec.name);
  }
  w.string(f.output_structure);

  write_values_and_ids(w, g);
  std::size_t next = 0;
  w.u32(static_cast<std::uint32_t>(g.constants.size()));
  for (const auto& [id, t] : g.constants) {
    w.u32(static_cast<std::uint32_t>(id));
    w.u64(t.nbytes());
    const std::span<const unsigned char> b = data[next++].bytes();
    w.u32(detail::crc32_of(b.data(), b.size()));
  }
  w.u32(static_cast<std::uint32_t>(g.variables.size()));
  for (std::size_t i = 0; i < g.variables.size(); ++i) {
    const CapturedVariable& var = g.variables[i];
    w.string(var.name);
    w.dtype(var.dtype);
    w.shape(var.shape);
    w.u8(var.trainable ? 1 : 0);
    w.u64(f.variable_values[i].nbytes());
    const std::span<const unsigned char> b = data[next++].bytes();
    w.u32(detail::crc32_of(b.data(), b.size()));
  }

  w.u32(static_cast<std::uint32_t>(ops.size()));
  for (const autodiff::OpDef* op : ops) {
    w.string(op->name());
    w.string(op->attrs_codec != nullptr ? op->attrs_codec->layout : std::string());
  }
  w.u32(static_cast<std::uint32_t>(g.nodes.size()));
  std::string attrs;
  for (const Node& n : g.nodes) {
    w.u8(node_kind_code(n.kind));
    if (n.kind == NodeKind::kOp) {
      w.u32(static_cast<std::uint32_t>(std::find(ops.begin(), ops.end(), n.op) - ops.begin()));
      if (n.op->attrs_codec != nullptr) {
        attrs.clear();
        AttrWriter aw(attrs);
        n.op->attrs_codec->write(n.attrs.get(), aw);
        TAPEFLOW_REQUIRE(
            attrs.size() <= 0xFFFFFFFFu, UnimplementedError,
            "[{}] the attributes of op '{}' take {} bytes; a function file holds at most 2^32 - 1", kWriteFn,
            n.op->name(), attrs.size());
        w.u32(static_cast<std::uint32_t>(attrs.size()));
        w.bytes(attrs.data(), attrs.size());
      }
    } else {
      w.u32(static_cast<std::uint32_t>(n.variable));
    }
    write_ids(w, n.inputs);
    write_ids(w, n.outputs);
  }
  write_size_template(w, f.size_template);
  return meta;
}

}  // namespace

void write_function_file(const std::filesystem::path& path, const ExportedFunction& f) {
  const std::string p = path.string();
  const std::vector<const autodiff::OpDef*> ops = check_for_writing(f, p);
  detail::check_writable_file_path(p, kWriteFn, kNoun);

  std::vector<LittleEndianBytes> data;
  data.reserve(f.graph.constants.size() + f.variable_values.size());
  for (const auto& [id, t] : f.graph.constants) data.emplace_back(t);
  for (const Tensor& t : f.variable_values) data.emplace_back(t);
  const std::string meta = encode_meta(f, ops, data);

  std::string head;
  AttrWriter w(head);
  w.bytes(kMagic, sizeof kMagic);
  w.u32(kVersion);
  w.u32(0);
  w.le(std::uint16_t{TAPEFLOW_VERSION_MAJOR});
  w.le(std::uint16_t{TAPEFLOW_VERSION_MINOR});
  w.le(std::uint16_t{TAPEFLOW_VERSION_PATCH});
  w.le(std::uint16_t{0});
  w.u64(meta.size());
  w.bytes(meta.data(), meta.size());
  w.u32(detail::crc32_of(head.data(), head.size()));

  std::vector<std::span<const unsigned char>> parts;
  parts.reserve(1 + data.size());
  parts.emplace_back(reinterpret_cast<const unsigned char*>(head.data()), head.size());
  for (const LittleEndianBytes& d : data) parts.push_back(d.bytes());
  detail::write_file_atomically(p, kWriteFn, kNoun, parts);
}

// --- Reading -------------------------------------------------------------------------------------

namespace {

constexpr std::string_view kReadFn = "read_function_file";

// The file read_function_file is reading on this thread: the graphs nested in its ops' attributes,
// which the ops' codecs read from an AttrReader alone, record it as theirs (Graph::file).
thread_local std::string t_reading;

// Where a tensor's bytes are in the data section, and their checksum.
struct DataEntry {
  std::uint64_t byte_size = 0;
  std::uint32_t crc = 0;
};

struct Header {
  std::uint64_t meta_size = 0;
  std::string writer_version;  // "0.1.0"
  std::uint32_t format_version = kVersion;
};

/// A term as written; version 2's have no second factor.
SizeTemplate::Term read_term(AttrReader& r, std::uint32_t version, const std::string& what) {
  SizeTemplate::Term t;
  t.dims = r.u64(what);
  t.multiple = r.i64(what);
  if (version >= 3) t.by = r.u64(what);
  return t;
}

// The terms as written; template_problem checks them against the graph.
SizeTemplate read_size_template(AttrReader& r, std::uint32_t version) {
  SizeTemplate t;
  t.attrs.resize(r.count(r.u32("the attribute size term count"), kMinAttrTermBytes,
                         sizeof(SizeTemplate::AttrInt), "attribute size terms"));
  for (std::size_t i = 0; i < t.attrs.size(); ++i) {
    const std::string what = fmt::format("attribute size term {}", i);
    t.attrs[i].node = r.u32(what);
    t.attrs[i].ordinal = r.u32(what);
    t.attrs[i].term = read_term(r, version, what);
  }
  t.constants.resize(r.count(r.u32("the constant size term count"), kMinConstantTermBytes,
                             sizeof(SizeTemplate::Constant), "constant size terms"));
  for (std::size_t i = 0; i < t.constants.size(); ++i) {
    SizeTemplate::Constant& c = t.constants[i];
    const std::string what = fmt::format("constant size term {}", i);
    c.index = r.u32(what);
    const std::uint8_t kind = r.u8(what);
    if (kind > static_cast<std::uint8_t>(SizeTemplate::Constant::Kind::kReciprocal))
      r.fail(fmt::format("{} has unknown kind {}", what, kind));
    c.kind = static_cast<SizeTemplate::Constant::Kind>(kind);
    if (c.kind == SizeTemplate::Constant::Kind::kSplat) {
      const int rank = r.u8(what);
      if (rank > kMaxRank) r.fail(fmt::format("{} has rank {}, more than {}", what, rank, kMaxRank));
      for (int d = 0; d < rank; ++d)
        c.dims.push_back(r.boolean(what) ? std::optional(read_term(r, version, what)) : std::nullopt);
    } else {
      c.value = read_term(r, version, what);
    }
  }
  return t;
}

// The header, checked against the file size. `corrupt(what)` builds the DataLossError.
template <class Corrupt>
Header read_header(const detail::ReadOnlyFile& file, const Corrupt& corrupt) {
  const std::uint64_t size = file.size();
  unsigned char h[kHeaderSize];
  if (size < kHeaderSize + kCrcSize) {
    // Still say what the file is when its first bytes are a magic.
    if (size >= sizeof kMagic && file.read_at(h, sizeof kMagic, 0) &&
        std::memcmp(h, kMagic, sizeof kMagic) != 0)
      throw corrupt("bad magic: this is not a tapeflow function file (expected \"TFLWFUNC\")");
    throw corrupt(
        fmt::format("the file is shorter than the {}-byte header and checksum", kHeaderSize + kCrcSize));
  }
  if (!file.read_at(h, kHeaderSize, 0)) throw corrupt("cannot read the header");
  if (std::memcmp(h, kCheckpointMagic, sizeof kCheckpointMagic) == 0)
    throw corrupt("this is a tapeflow checkpoint, not a function file (read it with restore_checkpoint)");
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0)
    throw corrupt("bad magic: this is not a tapeflow function file (expected \"TFLWFUNC\")");
  AttrReader r({h, kHeaderSize}, "");
  r.take(sizeof kMagic, "magic");
  const std::uint32_t version = r.u32("version");
  const std::uint32_t flags = r.u32("flags");
  const auto major = r.le<std::uint16_t>("version");
  const auto minor = r.le<std::uint16_t>("version");
  const auto patch = r.le<std::uint16_t>("version");
  const auto reserved = r.le<std::uint16_t>("reserved");
  Header out{r.u64("meta size"), version_string(major, minor, patch), version};
  if (version < kOldestVersion || version > kVersion)
    throw corrupt(
        fmt::format("unsupported format version {} (written by tapeflow {}; this tapeflow, {}, reads "
                    "versions {} to {})",
                    version, out.writer_version, tapeflow::version(), kOldestVersion, kVersion));
  if (flags != 0) throw corrupt(fmt::format("unknown header flags 0x{:08x} (expected 0)", flags));
  if (reserved != 0) throw corrupt(fmt::format("reserved header field is {} (expected 0)", reserved));
  if (out.meta_size > size - kHeaderSize - kCrcSize)
    throw corrupt(fmt::format("the meta section ({} bytes) extends past the end of the file", out.meta_size));
  return out;
}

// The op `name` names among the op families' and the control-flow ops, or nullptr. (The
// registry's get() would make an entry for any name a file holds.)
const autodiff::OpDef* defined_op(const std::string& name) {
  const auto ops = autodiff::registry().list();
  if (std::any_of(ops.begin(), ops.end(), [&](const auto& e) { return e.first == name; }))
    return &autodiff::registry().get(name);
  return control_flow_op(name);
}

std::vector<ValueId> read_ids(AttrReader& r, const std::string& what) {
  const std::size_t n = r.count(r.u32(what), 4, sizeof(ValueId), what);
  std::vector<ValueId> ids(n);
  for (ValueId& v : ids) {
    const std::uint32_t id = r.u32(what);
    // Ids below 2^31 are checked against the value count by structure_problem.
    if (id > static_cast<std::uint32_t>(std::numeric_limits<ValueId>::max()))
      r.fail(fmt::format("{} names value {}, more than a value id can be", what, id));
    v = static_cast<ValueId>(id);
  }
  return ids;
}

// A registered op a graph can run, or a typed error.
const autodiff::OpDef& find_op(const std::string& name, const std::string& path, const Header& h) {
  const autodiff::OpDef* known = defined_op(name);
  TAPEFLOW_REQUIRE(
      known != nullptr, LookupError,
      "[{}] function file '{}' uses op '{}', which this tapeflow ({}) does not define (the file was "
      "written by tapeflow {})",
      kReadFn, path, name, tapeflow::version(), h.writer_version);
  const autodiff::OpDef& op = *known;
  TAPEFLOW_REQUIRE(
      op.forward != nullptr, LookupError,
      "[{}] function file '{}' uses op '{}', which a graph cannot run in this tapeflow ({}) (the file "
      "was written by tapeflow {})",
      kReadFn, path, name, tapeflow::version(), h.writer_version);
  return op;
}

// Parses the meta section (after the header in `r`) into `f`, the op table resolved and every
// node's attributes decoded; tensors are left undefined and their entries returned.
std::vector<DataEntry> parse_meta(AttrReader& r, ExportedFunction& f, const std::string& path,
                                  const Header& h) {
  Graph& g = f.graph;
  f.name = r.string("the function's name");
  f.inputs.resize(r.count(r.u32("the input count"), kMinInputSpecBytes, sizeof(InputSpec), "input specs"));
  for (std::size_t i = 0; i < f.inputs.size(); ++i) {
    InputSpec& spec = f.inputs[i];
    const std::string what = fmt::format("input spec {}", i);
    spec.dtype = r.dtype(what);
    const int rank = r.u8(what);
    if (rank > kMaxRank) r.fail(fmt::format("{} has rank {}, more than {}", what, rank, kMaxRank));
    for (int d = 0; d < rank; ++d) spec.dims.push_back(r.i64(what));
    spec.name = r.string(what);
  }
  f.output_structure = r.string("the output structure");

  g.values.resize(r.count(r.u32("the value count"), kMinValueBytes, sizeof(Value), "values"));
  if (g.values.size() > static_cast<std::size_t>(std::numeric_limits<ValueId>::max()))
    r.fail(fmt::format("{} values, more than a value id can number", g.values.size()));
  for (std::size_t i = 0; i < g.values.size(); ++i) {
    const std::string what = fmt::format("value {}", i);
    g.values[i].dtype = r.dtype(what);
    g.values[i].shape = r.shape(what);
  }
  g.inputs = read_ids(r, "the graph's inputs");
  g.outputs = read_ids(r, "the graph's outputs");

  std::vector<DataEntry> data;
  g.constants.resize(
      r.count(r.u32("the constant count"), kMinConstantBytes, sizeof(g.constants[0]), "constants"));
  for (std::size_t i = 0; i < g.constants.size(); ++i) {
    const std::string what = fmt::format("constant {}", i);
    const std::uint32_t id = r.u32(what);
    if (id >= g.values.size())
      r.fail(fmt::format("{} names value {}, but there are {} values", what, id, g.values.size()));
    g.constants[i].first = static_cast<ValueId>(id);
    data.push_back({r.u64(what), r.u32(what)});
  }
  g.variables.resize(
      r.count(r.u32("the variable count"), kMinVariableBytes, sizeof(CapturedVariable), "variables"));
  for (std::size_t i = 0; i < g.variables.size(); ++i) {
    CapturedVariable& var = g.variables[i];
    const std::string what = fmt::format("variable {}", i);
    var.name = r.string(what);
    var.dtype = r.dtype(what);
    var.shape = r.shape(what);
    var.trainable = r.boolean(what);
    data.push_back({r.u64(what), r.u32(what)});
  }

  const std::size_t n_ops = r.count(r.u32("the op count"), kMinOpBytes, sizeof(void*), "ops");
  std::vector<const autodiff::OpDef*> ops;
  ops.reserve(n_ops);
  for (std::size_t i = 0; i < n_ops; ++i) {
    const std::string name = r.string(fmt::format("op {}'s name", i));
    const std::string layout = r.string(fmt::format("op {}'s attribute layout", i));
    const autodiff::OpDef& op = find_op(name, path, h);
    const std::string ours = op.attrs_codec != nullptr ? op.attrs_codec->layout : std::string();
    if (layout != ours)
      throw DataLossError(fmt::format(
          "[{}] function file '{}' was written by tapeflow {}, whose op '{}' has the attributes {}; in this "
          "tapeflow ({}) they are {}, so the file cannot be read here",
          kReadFn, path, h.writer_version, name, layout.empty() ? "(none)" : layout, tapeflow::version(),
          ours.empty() ? "(none)" : ours));
    if (std::find(ops.begin(), ops.end(), &op) != ops.end())
      r.fail(fmt::format("op '{}' appears twice in the op table", name));
    ops.push_back(&op);
  }

  g.nodes.resize(r.count(r.u32("the node count"), kMinNodeBytes, sizeof(Node), "nodes"));
  std::size_t ops_used =
      0;  // the table lists the ops in order of first use, each used: one encoding per graph
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    std::string what = fmt::format("node {}", i);
    const std::uint8_t kind = r.u8(what);
    if (kind >= kNodeKindOfCode.size()) r.fail(fmt::format("{} has unknown kind {}", what, kind));
    n.kind = kNodeKindOfCode[kind];
    if (n.kind == NodeKind::kOp) {
      const std::uint32_t index = r.u32(what);
      if (index >= ops.size())
        r.fail(fmt::format("{} names op {}, but the op table has {}", what, index, ops.size()));
      if (index > ops_used)
        r.fail(
            fmt::format("{} uses op {} of the table before op {} (the table lists ops in order of first use)",
                        what, index, ops_used));
      if (index == ops_used) ++ops_used;
      n.op = ops[index];
      what = fmt::format("node {} ({})", i, n.op->name());
      if (const AttrsCodec* codec = n.op->attrs_codec) {
        const std::uint32_t size = r.u32(what + ": the attributes' size");
        AttrReader attrs(r.take(size, what + ": the attributes"),
                         fmt::format("{}: {}'s attributes ({} bytes at offset {})", r.context(), what, size,
                                     r.offset() - size));
        n.attrs = codec->read(attrs);
        if (attrs.remaining() != 0)
          attrs.fail(fmt::format("{} bytes are left after the last field", attrs.remaining()));
      }
    } else {
      const std::uint32_t var = r.u32(what);
      if (var >= g.variables.size())
        r.fail(fmt::format("{} names variable {}, but there are {}", what, var, g.variables.size()));
      n.variable = static_cast<std::int32_t>(var);
    }
    n.inputs = read_ids(r, what + ": inputs");
    n.outputs = read_ids(r, what + ": outputs");
  }
  if (ops_used != ops.size())
    r.fail(fmt::format("op {} of the table ('{}') is used by no node", ops_used, ops[ops_used]->name()));
  if (h.format_version >= 2) f.size_template = read_size_template(r, h.format_version);
  if (r.remaining() != 0)
    r.fail(fmt::format("{} unparsed bytes at the end of the meta section", r.remaining()));
  return data;
}

// Reads one tensor of the data section straight into a new tensor, verifying its checksum and, for
// bool, its values.
template <class Corrupt>
Tensor read_tensor(const detail::ReadOnlyFile& file, std::uint64_t offset, const DataEntry& e,
                   const Shape& shape, DType dtype, const std::string& what, const Corrupt& corrupt) {
  auto read_verified = [&](std::span<std::byte> out) {
    auto* bytes = reinterpret_cast<unsigned char*>(out.data());
    const std::size_t n = out.size();
    if (!file.read_at(bytes, n, offset))
      throw corrupt(
          fmt::format("cannot read the {} bytes of {} at offset {} (was the file truncated while "
                      "reading?)",
                      n, what, offset));
    const std::uint32_t crc = detail::crc32_of(bytes, n);
    if (crc != e.crc)
      throw corrupt(
          fmt::format("{} ({} bytes at offset {}) has checksum 0x{:08x}, the meta section says 0x{:08x}",
                      what, n, offset, crc, e.crc));
    if (dtype == DType::Bool) {
      const auto* bad = std::find_if(bytes, bytes + n, [](unsigned char b) { return b > 1; });
      if (bad != bytes + n)
        throw corrupt(fmt::format("bool tensor {} holds byte {} at element {} (only 0 and 1 are valid)", what,
                                  *bad, bad - bytes));
    }
    if constexpr (std::endian::native != std::endian::little) {
      const std::size_t elem = dtype_size(dtype);
      for (std::size_t i = 0; i + elem <= n; i += elem) std::reverse(bytes + i, bytes + i + elem);
    }
  };
  return tensor_for_overwrite(shape, dtype, read_verified, kReadFn);
}

}  // namespace

void write_nested_graph(AttrWriter& w, const Graph& g, std::string_view op) {
  write_values_and_ids(w, g);
  w.u32(static_cast<std::uint32_t>(g.constants.size()));
  for (const auto& [id, t] : g.constants) {
    w.u32(static_cast<std::uint32_t>(id));
    w.tensor(t);
  }
  w.u32(static_cast<std::uint32_t>(g.nodes.size()));
  std::string attrs;
  for (const Node& n : g.nodes) {
    TAPEFLOW_REQUIRE(n.kind == NodeKind::kOp, UnimplementedError,
                     "[{}] a graph of op '{}' {} a variable ({}): such an op cannot be exported", kWriteFn,
                     op, n.kind == NodeKind::kReadVariable ? "reads" : "assigns", n.name());
    const AttrsCodec* codec = n.op->attrs_codec;
    TAPEFLOW_REQUIRE(codec != nullptr || n.attrs == nullptr, UnimplementedError,
                     "[{}] a graph of op '{}' holds op '{}', whose attributes cannot be written", kWriteFn,
                     op, n.op->name());
    w.string(n.op->name());
    if (codec != nullptr) {
      attrs.clear();
      AttrWriter aw(attrs);
      codec->write(n.attrs.get(), aw);
      w.u64(attrs.size());
      w.bytes(attrs.data(), attrs.size());
    }
    write_ids(w, n.inputs);
    write_ids(w, n.outputs);
  }
}

Graph read_nested_graph(AttrReader& r) {
  // Each level is a C++ stack frame of the reader: a forged file must not nest without end.
  static thread_local int depth = 0;
  struct Depth {
    Depth() { ++depth; }
    ~Depth() { --depth; }
  } const level;
  if (depth > kMaxGraphNesting) r.fail(fmt::format("graphs nested more than {} deep", kMaxGraphNesting));
  Graph g;
  g.file = t_reading;
  g.values.resize(r.count(r.u32("a nested graph's value count"), kMinValueBytes, sizeof(Value), "values"));
  if (g.values.size() > static_cast<std::size_t>(std::numeric_limits<ValueId>::max()))
    r.fail(fmt::format("{} values, more than a value id can number", g.values.size()));
  for (Value& v : g.values) {
    v.dtype = r.dtype("a nested graph's value");
    v.shape = r.shape("a nested graph's value");
  }
  g.inputs = read_ids(r, "a nested graph's inputs");
  g.outputs = read_ids(r, "a nested graph's outputs");
  g.constants.resize(r.count(r.u32("a nested graph's constant count"), 4 + kMinTensorBytes,
                             sizeof(g.constants[0]), "constants"));
  for (auto& [id, t] : g.constants) {
    const std::uint32_t v = r.u32("a nested graph's constant");
    if (v >= g.values.size())
      r.fail(fmt::format("a nested graph's constant names value {}, but there are {} values", v,
                         g.values.size()));
    id = static_cast<ValueId>(v);
    t = r.tensor("a nested graph's constant");
    if (!t.defined() || t.dtype() != g.values[v].dtype || t.shape() != g.values[v].shape)
      r.fail(fmt::format("a nested graph's constant for value {} is not of the value's dtype and shape", v));
  }
  g.nodes.resize(r.count(r.u32("a nested graph's node count"), kMinNestedNodeBytes, sizeof(Node), "nodes"));
  for (std::size_t i = 0; i < g.nodes.size(); ++i) {
    Node& n = g.nodes[i];
    const std::string name = r.string(fmt::format("nested node {}'s op", i));
    n.op = defined_op(name);
    TAPEFLOW_REQUIRE(n.op != nullptr, LookupError,
                     "[{}] {}: a nested graph uses op '{}', which this tapeflow ({}) does not define",
                     kReadFn, r.context(), name, tapeflow::version());
    if (n.op->forward == nullptr)
      r.fail(fmt::format("nested node {} uses op '{}', which a graph cannot run", i, name));
    if (const AttrsCodec* codec = n.op->attrs_codec) {
      const std::string what = fmt::format("nested node {} ({}): the attributes", i, name);
      const std::uint64_t size = r.u64(what);
      if (size > r.remaining()) r.fail(fmt::format("{} take {} bytes, more than remain", what, size));
      AttrReader attrs(r.take(static_cast<std::size_t>(size), what), r.context() + ": " + what);
      n.attrs = codec->read(attrs);
      if (attrs.remaining() != 0)
        attrs.fail(fmt::format("{} bytes are left after the last field", attrs.remaining()));
    }
    n.inputs = read_ids(r, fmt::format("nested node {}'s inputs", i));
    n.outputs = read_ids(r, fmt::format("nested node {}'s outputs", i));
  }
  // The structure a function file's graph must have, with the graph's own inputs as the signature.
  ExportedFunction f;
  for (ValueId v : g.inputs) {
    InputSpec spec;
    if (v >= 0 && static_cast<std::size_t>(v) < g.values.size()) {
      spec.dtype = g.values[static_cast<std::size_t>(v)].dtype;
      const auto dims = g.values[static_cast<std::size_t>(v)].shape.dims();
      spec.dims.assign(dims.begin(), dims.end());
    }
    f.inputs.push_back(std::move(spec));
  }
  f.graph = std::move(g);
  if (const std::optional<std::string> problem = structure_problem(f)) r.fail("a nested graph: " + *problem);
  return std::move(f.graph);
}

ExportedFunction read_function_file(const std::filesystem::path& path) {
  const std::string p = path.string();
  const detail::ReadOnlyFile file(p, kReadFn, kNoun);
  const std::uint64_t size = file.size();
  const std::string context =
      fmt::format("[{}] function file '{}' ({} bytes) is corrupt or truncated", kReadFn, p, size);
  auto corrupt = [&](std::string_view what) { return DataLossError(fmt::format("{}: {}", context, what)); };

  const Header h = read_header(file, corrupt);
  // Header, meta and checksum: at most the file size (read_header checked).
  const std::uint64_t checked_size = kHeaderSize + h.meta_size + kCrcSize;
  check_allocation(static_cast<std::int64_t>(checked_size), 1, kReadFn);
  std::vector<unsigned char> head(static_cast<std::size_t>(checked_size));
  if (!file.read_at(head.data(), head.size(), 0)) throw corrupt("cannot read the meta section");
  const std::size_t crc_at = kHeaderSize + static_cast<std::size_t>(h.meta_size);
  std::uint32_t stored = 0;
  for (std::size_t i = 0; i < kCrcSize; ++i)
    stored |= static_cast<std::uint32_t>(head[crc_at + i]) << (8 * i);
  const std::uint32_t actual = detail::crc32_of(head.data(), crc_at);
  if (stored != actual)
    throw corrupt(
        fmt::format("header/meta checksum mismatch (stored 0x{:08x}, computed 0x{:08x})", stored, actual));

  ExportedFunction f;
  f.graph.file = p;
  AttrReader r({head.data(), crc_at}, context);
  r.take(kHeaderSize, "the header");
  const struct Reading {
    explicit Reading(const std::string& file) { t_reading = file; }
    ~Reading() { t_reading.clear(); }
  } reading(p);
  const std::vector<DataEntry> data = parse_meta(r, f, p, h);
  if (auto problem = structure_problem(f)) throw corrupt(*problem);
  std::size_t unknown_dims = 0;
  for (const InputSpec& spec : f.inputs)
    unknown_dims += static_cast<std::size_t>(std::count(spec.dims.begin(), spec.dims.end(), -1));
  if (std::string problem = template_problem(f.graph, f.size_template, unknown_dims); !problem.empty())
    throw corrupt(problem);

  // The data section: each tensor's declared size must be its shape's, and together they must fill
  // the rest of the file exactly.
  const Graph& g = f.graph;
  auto tensor_of = [&](std::size_t i) -> std::pair<Shape, DType> {
    if (i < g.constants.size()) {
      const Value& v = g.values[static_cast<std::size_t>(g.constants[i].first)];
      return {v.shape, v.dtype};
    }
    const CapturedVariable& var = g.variables[i - g.constants.size()];
    return {var.shape, var.dtype};
  };
  auto name_of = [&](std::size_t i) {
    return i < g.constants.size() ? fmt::format("constant {}", i)
                                  : fmt::format("variable {} ('{}')", i - g.constants.size(),
                                                g.variables[i - g.constants.size()].name);
  };
  const std::uint64_t data_start = checked_size;
  std::uint64_t cursor = data_start;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto [shape, dtype] = tensor_of(i);
    const std::uint64_t elem = dtype_size(dtype);
    // Compared by division: elements (<= 2^62) x 8 would overflow 64 bits.
    if (data[i].byte_size % elem != 0 ||
        data[i].byte_size / elem != static_cast<std::uint64_t>(shape.num_elements()))
      throw corrupt(fmt::format("{} declares {} bytes, but shape {} of {} takes {} x {} bytes", name_of(i),
                                data[i].byte_size, shape.to_string(), dtype_name(dtype), shape.num_elements(),
                                elem));
    if (data[i].byte_size > size - cursor)
      throw corrupt(fmt::format("{} ({} bytes at offset {}) extends past the end of the file (truncated)",
                                name_of(i), data[i].byte_size, cursor));
    cursor += data[i].byte_size;
  }
  if (cursor != size)
    throw corrupt(fmt::format(
        "the data section should end at byte {} but the file has {} bytes (trailing bytes)", cursor, size));

  cursor = data_start;
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto [shape, dtype] = tensor_of(i);
    Tensor t = read_tensor(file, cursor, data[i], shape, dtype, name_of(i), corrupt);
    cursor += data[i].byte_size;
    if (i < g.constants.size())
      f.graph.constants[i].second = std::move(t);
    else
      f.variable_values.push_back(std::move(t));
  }
  return f;
}

}  // namespace tapeflow::graph
