#pragma once
/// \file function.h
/// tf::function: trace a C++ callable once, then run its graph (TensorFlow's `tf.function`).
///
///     auto loss = tf::function([&](const tf::Tensor& x, const tf::Tensor& y) {
///       return tf::reduce_mean(tf::square(model(x) - y));
///     });
///     tf::Tensor l = loss(x, y);   // first call with these dtypes and shapes: traced
///     l = loss(x2, y2);            // same signature: the graph runs, fused and planned
///
/// **What runs when.** The first call with a new *signature* (each tensor argument's dtype and
/// shape, the values of the non-tensor arguments, such as `bool training`, and the C++ types of
/// the arguments: a std::pair and a std::tuple, or a long and a long long, are two) runs the body
/// eagerly on the real arguments while every op, variable read and assignment is written into a
/// graph: that first call's results and side effects are the body's own. Later calls with the
/// same signature run the graph: C++ code in the body (printing, counters, `if` on a C++ value,
/// a loop's trip count) ran at trace time only, as Python code does under `tf.function`. A C++
/// decision on a tensor's *value* (`if (x.item<float>() > 0)`) is baked in; use tf::cond and
/// tf::while_loop (control_flow.h) for data-dependent control flow. One exception: a body that
/// ran custom_gradient runs again (not its graph) when called inside another function's trace or
/// under a ForwardAccumulator, since its graph holds the ops inside custom_gradient but not the
/// gradient function, which only the body can supply.
///
/// **Variables** read inside are captured by handle and read at each call; assignments inside
/// (`assign`, `assign_add`, an optimizer's update) happen at each call. A variable destroyed
/// after the trace makes the next call throw FailedPreconditionError. A Variable passed as an
/// *argument* is part of the signature by dtype, shape and trainability only, as in TensorFlow:
/// calling with another variable of that kind does not trace again; the graph reads and assigns
/// the variable passed (the trace's graph, rebound to it). One exception traces again: a body
/// whose tf::cond or tf::while_loop branches assign variables (their branch graphs hold the
/// variables they assign). Tensors the body captures
/// from outside (and constants it creates, seeded random draws included) are captured by value.
///
/// **Retracing.** A new signature traces again; after 5 traces of one function a warning says so
/// (TensorFlow's retracing warning): pass tensors instead of changing C++ values, or declare an
/// `input_signature`. With an input signature, a call must match it (dtype, rank, known dims):
/// otherwise InvalidArgumentError names the function and both signatures.
///
/// **Unknown dimensions.** A dimension declared unknown (-1) accepts any size, and, as
/// TensorFlow traces once for a `None` dimension, one graph may serve many sizes. Traces run on
/// real tensors, so this is checked, and only as far as traces reach: the first two traces at
/// different sizes (each unknown dimension different, each size at least 2) must give the same
/// graph, node for node, but for numbers in attributes and constants that are proportional to an
/// unknown size or to the product of two (a reshape to n rows, Mean's 1 / n or 1 / (n * t), a
/// constant of n ones: what gradients and training steps hold), which a third trace must then
/// confirm (a graph without such numbers needs no third). The graph is then *confirmed* on the
/// range of sizes those traces span: per unknown dimension, and per product of two sizes the
/// graph holds, from the smallest traced to the largest. A call at new sizes inside that range
/// runs the graph, with those numbers at its sizes, without running the body
/// (`FunctionStats::shared_graph_sizes`). A call at sizes outside it traces the body, which must
/// give the graph's prediction at those sizes, as the third trace did: then the range widens to
/// them (`FunctionStats::range_confirmations`, one per such trace); otherwise the function stops
/// sharing for good, and that call returns its trace's results. Sizes 0 and 1 always trace. So a
/// whole training step (forward, gradient, optimizer update) traces three times, then once more
/// for each batch size past the smallest and largest seen, and serves every size in between. A
/// body whose graph depends on the size some other way (a constant of that size with different
/// elements, a slice of min(n, 4) rows: caught by the first trace past 4), or which changes state
/// through an op or uses tf::cond or tf::while_loop, traces once per size instead
/// (`FunctionStats::specializations`; neither is warned about). No number of traces proves how
/// C++ computes its graph from a size: a body whose graph changes at a size between those traced
/// (`n == 5 ? a : b`, traced at 4 and 6) is not caught. As in TensorFlow, whose body sees the size
/// as None, a body must not branch in C++ on an unknown dimension's size; set
/// `FunctionOptions::share_graph_across_sizes = false` for one that does.
///
/// **Gradients.** Under a recording GradientTape a call is one record (TensorFlow's
/// PartitionedCall); its gradient is a graph derived once per signature from the ops' registered
/// gradients, then cached. With unknown dimensions, calls recorded on a tape learn their own shared
/// graph the same way (the forward graph and its gradient graph must both agree across three
/// traces, and both must be predicted by a trace outside the confirmed range): a recorded call at
/// new sizes inside its range runs without the body too. Under a
/// ForwardAccumulator the graph's ops run through the dispatch path, so their JVPs apply. A GradientTape
/// *inside* the body works, so a whole training step (forward, gradient, optimizer update) traces into one
/// graph.
///
/// Arguments and results: Tensor, and std::vector, std::map, std::pair, std::tuple and
/// std::array of them, nested; arguments may also be bool, integers, floating-point numbers,
/// std::string and Variable (part of the signature: values by value, variables by kind).

#include <array>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "tapeflow/tensor.h"
#include "tapeflow/tensor_spec.h"
#include "tapeflow/variable.h"

#pragma GCC visibility push(default)  // the public API: exported from a shared libtapeflow

namespace tapeflow {

/// Options of tf::function.
struct FunctionOptions {
  /// The name errors, warnings and exported files use.
  std::string name = "function";
  /// The tensor arguments' specs, in flat order; when set, every call must match it.
  std::optional<std::vector<TensorSpec>> input_signature = {};
  /// Run the graph passes (dead code, common subexpressions, constant folding, fusion).
  bool optimize = true;
  /// Let one graph serve the sizes of an unknown dimension that traces have confirmed it on once
  /// they show how it depends on them (see "Unknown dimensions" above); false traces each size.
  bool share_graph_across_sizes = true;
};

/// Counts and sizes of one function, for tests and benchmarks.
struct FunctionStats {
  int traces = 0;              ///< bodies traced (new signatures, gradient graphs, specializations)
  int specializations = 0;     ///< traces for a new size of a dim declared unknown
  int shared_graph_sizes = 0;  ///< new sizes of unknown dims run by the shared graph, untraced
  /// Traces at sizes of unknown dims outside the range a shared graph was confirmed on, compared
  /// with that graph there (see "Unknown dimensions" above; also counted in `traces`).
  int range_confirmations = 0;
  int graph_calls = 0;                 ///< calls that ran a graph instead of tracing
  double trace_ms = 0;                 ///< wall time of all traces, passes included
  double retrace_ms = 0;               ///< the part of trace_ms spent on traces after the first
  std::size_t nodes = 0;               ///< nodes of the latest graph after the passes
  std::size_t nodes_traced = 0;        ///< nodes of the latest graph as traced
  std::size_t planned_peak_bytes = 0;  ///< the latest graph's memory plan: peak live bytes
  /// Sets of Variable arguments other than a trace's that its graph was rebound to, untraced
  /// (each set once: the latest 64 rebound graphs are kept).
  int variable_rebinds = 0;
  /// Gradient graphs pruned to the gradients a recorded call's tapes need, dropped because a
  /// trace keeps the latest kMaxPrunedBackwards sets only (made again if needed again).
  int pruned_backward_evictions = 0;
};

/// How many pruned gradient graphs (one per set of gradients the tapes need) a trace keeps, the
/// least recently used dropped first: enough for every pattern a training loop cycles through.
inline constexpr std::size_t kMaxPrunedBackwards = 16;

namespace detail {

/// A flat view of a call: the tensors in order and a text key of everything else (the
/// structure, the non-tensor values, and the C++ types of the arguments and the result) that
/// selects the traced graph. save_function's view of a call has TensorSpecs in place of tensors.
struct FlatCall {
  std::vector<Tensor> tensors;
  std::vector<TensorSpec> specs;  ///< the TensorSpecs standing for tensors (save_function's calls)
  std::string key;
  /// The Variable arguments in order: the key holds only their kind, the graph reads these.
  std::vector<Variable> variables;
};

/// Ends a call's key with the C++ types of its arguments and of the result `F` returns for them:
/// calls whose values flatten alike (a std::pair and a std::tuple, a long and a long long) are
/// two signatures, and a trace's result structure is only ever rebuilt as its own type.
template <class F, class... Args>
void append_call_types(std::string& key) {
  using R = std::invoke_result_t<F&, const Args&...>;
  key += "->";
  key += typeid(R(Args...)).name();
}

/// Walks an argument or result structure: `flatten` appends leaves; `rebuild` returns a copy
/// with its tensor leaves taken from `it`, in the same order.
template <class T, class = void>
struct FunctionNest;

template <>
struct FunctionNest<Tensor> {
  static void flatten(const Tensor& t, FlatCall& c) {
    c.tensors.push_back(t);
    c.key += 'T';
  }
  template <class It>
  static Tensor rebuild(const Tensor&, It& it) {
    return *it++;
  }
};
template <class T>
struct FunctionNest<T, std::enable_if_t<std::is_arithmetic_v<T>>> {
  static void flatten(const T& v, FlatCall& c) {
    // The C++ type is part of the signature (true and 1 are two signatures, as are 1 and 1L): a
    // generic body may compute, and return, something else for each.
    c.key += std::is_same_v<T, bool>       ? 'b'
             : std::is_floating_point_v<T> ? 'f'
             : std::is_signed_v<T>         ? 'i'
                                           : 'u';
    c.key += std::to_string(sizeof(T));
    c.key += '(';
    if constexpr (std::is_floating_point_v<T>) {
      // The shortest text that reads back as v (so two values are two signatures, and messages
      // listing traces show 0.5, not bytes); a NaN also gets its bytes, payload and sign.
      char text[64];
      c.key.append(text, std::to_chars(text, text + sizeof(text), v).ptr);
      if (v != v) {
        unsigned char bytes[sizeof(T)];
        std::memcpy(bytes, &v, sizeof(T));
        for (unsigned char b : bytes) c.key += ':' + std::to_string(b);
      }
    } else {
      c.key += std::to_string(v);
    }
    c.key += ')';
  }
  template <class It>
  static T rebuild(const T& v, It&) {
    return v;
  }
};
template <>
struct FunctionNest<std::string> {
  static void flatten(const std::string& v, FlatCall& c) {
    // Length first: no content can make two lists of strings one key.
    c.key += 's' + std::to_string(v.size()) + ':';
    c.key += v;
  }
  template <class It>
  static std::string rebuild(const std::string& v, It&) {
    return v;
  }
};
template <>
struct FunctionNest<TensorSpec> {
  static void flatten(const TensorSpec& spec, FlatCall& c) {
    c.specs.push_back(spec);
    c.key += 'T';
  }
};
template <>
struct FunctionNest<Variable> {
  // By kind, as TensorFlow keys a variable argument: another variable of the same dtype, shape and
  // trainability runs the same graph, which reads the variable passed (FlatCall::variables).
  static void flatten(const Variable& v, FlatCall& c) {
    c.key += 'V';
    c.key +=
        TensorSpec{std::vector<std::int64_t>(v.shape().dims().begin(), v.shape().dims().end()), v.dtype()}
            .to_string();
    c.key += v.trainable() ? 't' : 'n';
    // One variable passed twice is one variable of the graph: the key says which it repeats.
    for (std::size_t k = 0; k < c.variables.size(); ++k)
      if (c.variables[k].handle_id() == v.handle_id()) {
        c.key += '=' + std::to_string(k);
        break;
      }
    c.variables.push_back(v);
  }
  template <class It>
  static Variable rebuild(const Variable& v, It&) {
    return v;
  }
};
template <class T>
struct FunctionNest<std::vector<T>> {
  static void flatten(const std::vector<T>& v, FlatCall& c) {
    c.key += '[';
    c.key += std::to_string(v.size());
    for (const T& e : v) FunctionNest<T>::flatten(e, c);
    c.key += ']';
  }
  template <class It>
  static std::vector<T> rebuild(const std::vector<T>& v, It& it) {
    std::vector<T> r;
    r.reserve(v.size());
    for (const T& e : v) r.push_back(FunctionNest<T>::rebuild(e, it));
    return r;
  }
};
template <class T, std::size_t N>
struct FunctionNest<std::array<T, N>> {
  static void flatten(const std::array<T, N>& v, FlatCall& c) {
    c.key += "A";
    for (const T& e : v) FunctionNest<T>::flatten(e, c);
  }
  template <class It>
  static std::array<T, N> rebuild(const std::array<T, N>& v, It& it) {
    std::array<T, N> r = v;
    for (T& e : r) e = FunctionNest<T>::rebuild(e, it);
    return r;
  }
};
template <class K, class T>
struct FunctionNest<std::map<K, T>> {
  static void flatten(const std::map<K, T>& m, FlatCall& c) {
    c.key += "{";
    for (const auto& [k, v] : m) {
      FunctionNest<K>::flatten(k, c);
      FunctionNest<T>::flatten(v, c);
    }
    c.key += "}";
  }
  template <class It>
  static std::map<K, T> rebuild(const std::map<K, T>& m, It& it) {
    std::map<K, T> r;
    for (const auto& [k, v] : m) r.emplace(k, FunctionNest<T>::rebuild(v, it));
    return r;
  }
};
template <class A, class B>
struct FunctionNest<std::pair<A, B>> {
  static void flatten(const std::pair<A, B>& p, FlatCall& c) {
    FunctionNest<A>::flatten(p.first, c);
    FunctionNest<B>::flatten(p.second, c);
  }
  template <class It>
  static std::pair<A, B> rebuild(const std::pair<A, B>& p, It& it) {
    A a = FunctionNest<A>::rebuild(p.first, it);  // sequenced: first before second
    B b = FunctionNest<B>::rebuild(p.second, it);
    return {std::move(a), std::move(b)};
  }
};
template <class... Ts>
struct FunctionNest<std::tuple<Ts...>> {
  static void flatten(const std::tuple<Ts...>& t, FlatCall& c) {
    std::apply([&](const Ts&... e) { (FunctionNest<Ts>::flatten(e, c), ...); }, t);
  }
  template <class It>
  static std::tuple<Ts...> rebuild(const std::tuple<Ts...>& t, It& it) {
    return std::apply([&](const Ts&... e) { return std::tuple<Ts...>{FunctionNest<Ts>::rebuild(e, it)...}; },
                      t);
  }
};

/// The type a call passes where save_function's arguments hold `T`: Tensor for TensorSpec, inside
/// any nesting; every other type is its own.
template <class T>
struct CallArgument {
  using type = T;
};
template <>
struct CallArgument<TensorSpec> {
  using type = Tensor;
};
template <class T>
struct CallArgument<std::vector<T>> {
  using type = std::vector<typename CallArgument<T>::type>;
};
template <class T, std::size_t N>
struct CallArgument<std::array<T, N>> {
  using type = std::array<typename CallArgument<T>::type, N>;
};
template <class K, class T>
struct CallArgument<std::map<K, T>> {
  using type = std::map<K, typename CallArgument<T>::type>;
};
template <class A, class B>
struct CallArgument<std::pair<A, B>> {
  using type = std::pair<typename CallArgument<A>::type, typename CallArgument<B>::type>;
};
template <class... Ts>
struct CallArgument<std::tuple<Ts...>> {
  using type = std::tuple<typename CallArgument<Ts>::type...>;
};

/// The engine behind Function<F> (src/function/function.cpp): signatures, traces, graphs.
class FunctionCore {
 public:
  /// Runs the body on the tensors given (fresh names for the call's tensors) and returns its
  /// flat results and the results' structure (type-erased; only the caller knows its type).
  using Body =
      std::function<std::pair<std::vector<Tensor>, std::shared_ptr<const void>>(std::vector<Tensor>)>;

  /// Labelled "function '<name>' (<file>:<line>)" from where tf::function was called.
  FunctionCore(FunctionOptions options, const char* file, int line);
  /// `label` names the function in errors and warnings ("function 'f' (loaded from m.tfn)").
  FunctionCore(FunctionOptions options, std::string label);
  ~FunctionCore();
  FunctionCore(const FunctionCore&) = delete;
  FunctionCore& operator=(const FunctionCore&) = delete;

  /// Calls the function: traces `body` for a new signature, else runs the graph. Returns the
  /// flat results and the structure to pack them into.
  std::pair<std::vector<Tensor>, std::shared_ptr<const void>> call(const FlatCall& call, const Body& body);

  const FunctionOptions& options() const;
  FunctionStats stats() const;
  /// The latest graph as a listing, one node per line.
  std::string graph_text() const;
  /// The flat tensor specs of each signature traced so far (concrete shapes).
  std::vector<std::vector<TensorSpec>> traced_signatures() const;

  struct State;
  const State* state() const { return state_.get(); }

 private:
  std::unique_ptr<State> state_;
};

/// Throws FailedPreconditionError: `what` (a tf::Function, a LoadedFunction) was moved from or
/// default-constructed, so it has no function to run.
[[noreturn]] void throw_empty_function(std::string_view what);

}  // namespace detail

/// A traced function; made by tf::function. Copies share one cache of traced graphs.
template <class F>
class Function {
 public:
  /// Wraps `f`; `file` and `line` (where tf::function was called) name the function in errors.
  Function(F f, FunctionOptions options, const char* file, int line)
      : f_(std::make_shared<F>(std::move(f))),
        core_(std::make_shared<detail::FunctionCore>(std::move(options), file, line)) {}

  /// Calls the function (see the file comment for when it traces).
  template <class... Args>
  auto operator()(const Args&... args) const {
    using R = std::invoke_result_t<F&, const Args&...>;
    detail::FlatCall call;
    (detail::FunctionNest<Args>::flatten(args, call), ...);
    detail::append_call_types<F, Args...>(call.key);
    const auto& f = f_;
    detail::FunctionCore::Body body = [&f, &args...](std::vector<Tensor> fresh) {
      auto it = fresh.cbegin();
      // Braced initialisation: the arguments are rebuilt left to right, in flatten's order.
      std::tuple<Args...> rebuilt{detail::FunctionNest<Args>::rebuild(args, it)...};
      std::pair<std::vector<Tensor>, std::shared_ptr<const void>> out;
      if constexpr (std::is_void_v<R>) {
        std::apply(*f, rebuilt);
      } else {
        auto result = std::make_shared<R>(std::apply(*f, rebuilt));
        detail::FlatCall flat;
        detail::FunctionNest<R>::flatten(*result, flat);
        out = {std::move(flat.tensors), std::move(result)};
      }
      return out;
    };
    auto [flat, structure] = checked_core().call(call, body);
    if constexpr (!std::is_void_v<R>) {
      auto it = flat.cbegin();
      return detail::FunctionNest<R>::rebuild(*static_cast<const R*>(structure.get()), it);
    }
  }

  /// Counts and sizes (traces, graph calls, nodes, the memory plan's peak).
  FunctionStats stats() const { return checked_core().stats(); }
  /// The latest graph, one node per line.
  std::string graph_text() const { return checked_core().graph_text(); }
  /// The options it was made with.
  const FunctionOptions& options() const { return checked_core().options(); }
  /// The engine (save_function uses it); FailedPreconditionError for a moved-from Function.
  detail::FunctionCore& checked_core() const {
    if (core_ == nullptr) detail::throw_empty_function("a moved-from tf::Function");
    return *core_;
  }
  /// The engine, shared by copies; null in a moved-from Function.
  const std::shared_ptr<detail::FunctionCore>& core() const { return core_; }

 private:
  std::shared_ptr<F> f_;
  std::shared_ptr<detail::FunctionCore> core_;
};

/// Writes the graph `fn` traced for `signature` (the flat tensor arguments' specs; -1 matches any
/// size), with the current values of the variables it reads, to `path`: versioned, checksummed
/// and written atomically, like checkpoints (docs/FUNCTION_FORMAT.md). The function must have
/// been called with arguments matching `signature` (FailedPreconditionError otherwise: saving does
/// not run the body); the file keeps that trace's shapes. Where calls with different non-tensor
/// arguments (`f(x, 3.0)` and `f(x, 5.0)`, `training` true and false) traced for `signature`, which
/// one to save is the caller's choice: InvalidArgumentError lists the traces, and the overload
/// below taking the call's arguments picks one. A dimension `signature` leaves unknown
/// stays unknown in the file, so the loaded function takes any size there: that needs the graph
/// the function shares across the sizes of its own unknown dimensions (see "Unknown dimensions"
/// above: call it at two sizes first, three where the graph holds sizes; FailedPreconditionError
/// says so), and, where the graph holds sizes, every dimension the function declared unknown left
/// unknown. The file holds no range of sizes: the function's traces confirmed the graph only
/// between the smallest and largest sizes they were at, but the loaded function has no body to
/// check it against and runs it at every size, so call the function at the extreme sizes the file
/// must serve before saving it. A graph holding an op whose attributes cannot be written is an
/// UnimplementedError naming the op (tf::cond and tf::while_loop are written with their
/// branches); so is a function that ran custom_gradient, whose gradient function a file cannot
/// hold.
///@{
void save_function(const detail::FunctionCore& fn, const std::vector<TensorSpec>& signature,
                   const std::filesystem::path& path);
template <class F>
void save_function(const Function<F>& fn, const std::vector<TensorSpec>& signature,
                   const std::filesystem::path& path) {
  save_function(fn.checked_core(), signature, path);
}
///@}

namespace detail {
/// save_function for the trace of the call whose key (FlatCall::key) is `call_key`, or of any
/// call (InvalidArgumentError where several match) without one; with a call key, its graph reads
/// and assigns `variables` (the call's FlatCall::variables).
void save_trace(const FunctionCore& fn, const std::vector<TensorSpec>& signature,
                const std::filesystem::path& path, const std::optional<std::string>& call_key,
                const std::vector<Variable>& variables = {});
}  // namespace detail

/// Writes, as save_function above, the trace `fn` made for a call with the arguments `args`: the
/// call's own, each tensor replaced by the TensorSpec it matched (TensorFlow's
/// `f.get_concrete_function(tf.TensorSpec(...), training=False)`). The non-tensor arguments (and
/// the arguments' C++ types) pick the trace among those of calls with others:
///
///     auto f = tf::function([](const tf::Tensor& x, bool training) { ... });
///     f(x, true);
///     f(x, false);
///     tf::save_function(f, "infer.tfn", tf::TensorSpec{{32, 784}}, false);
template <class F, class Path, class... Args>
requires std::is_convertible_v<const Path&, std::filesystem::path>  // a braced signature is no path
void save_function(const Function<F>& fn, const Path& path, const Args&... args) {
  detail::FlatCall call;
  (detail::FunctionNest<Args>::flatten(args, call), ...);
  detail::append_call_types<F, typename detail::CallArgument<Args>::type...>(call.key);
  detail::save_trace(fn.checked_core(), call.specs, path, call.key, call.variables);
}

/// A function loaded from a file save_function wrote: it runs without the C++ that built it
/// (TensorFlow's SavedModel role). It owns the variables the file holds. Calls take the flat
/// tensors of the signature and return the flat results; a call that does not match the
/// signature is an InvalidArgumentError naming the function and both signatures. Gradients,
/// forward mode and nesting inside tf::function work as for a traced function: the loaded graph
/// is the body.
class LoadedFunction {
 public:
  /// Calls the function on the flat tensors of its signature; returns the flat results.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  /// The name it was saved under (FunctionOptions::name).
  const std::string& name() const;
  /// The flat tensor specs a call must match (the saved trace's shapes; -1 takes any size).
  const std::vector<TensorSpec>& input_signature() const;
  /// The variables the graph reads and writes, restored from the file.
  const std::vector<Variable>& variables() const;
  /// Traces and graph calls, as for a traced function.
  FunctionStats stats() const;

  struct State;

 private:
  friend LoadedFunction load_function(const std::filesystem::path& path);
  std::shared_ptr<const State> state_;
  /// *state_; FailedPreconditionError where there is none (default-constructed, moved from).
  const State& checked_state() const;
};

/// Reads a file save_function wrote. Throws InvalidArgumentError for a path that cannot be read,
/// DataLossError for a corrupt, truncated or foreign file (a checkpoint, another format version),
/// LookupError for an op this build does not define.
LoadedFunction load_function(const std::filesystem::path& path);

/// False while tf::function traces a body on this thread (TensorFlow's tf.executing_eagerly()):
/// C++ code that runs then runs once per trace, and reading a traced tensor's value (`item()`)
/// is an error. True otherwise, including on threads a traced graph's ops run on. Code that
/// reports values it reads from tensors (warnings, counters printed) checks it first.
bool executing_eagerly();

/// Wraps `f` as a traced function (see the file comment). `file` and `line` default to the call's.
template <class F>
Function<std::decay_t<F>> function(F&& f, FunctionOptions options = {}, const char* file = __builtin_FILE(),
                                   int line = __builtin_LINE()) {
  return Function<std::decay_t<F>>(std::forward<F>(f), std::move(options), file, line);
}

}  // namespace tapeflow

#pragma GCC visibility pop
