// tf.Variable and the C++ side of tf.GradientTape. The Python class (python/tapeflow/tape.py)
// adds what Python's semantics need: `with`, nested structures of targets and sources.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

/// A GradientTape that records only inside `with`, as TensorFlow's: the C++ tape records from
/// its creation, so the first entry creates it and leaving the block pauses it; entering again
/// resumes recording onto the same tape. With reduce options it is a DistributedGradientTape
/// (tapeflow.distributed), whose gradients are averaged over the MPI ranks.
class ScopedTape {
 public:
  ScopedTape(bool persistent, bool watch_accessed_variables,
             std::optional<distributed::GradientOptions> reduce = std::nullopt)
      : options_{.persistent = persistent, .watch_accessed_variables = watch_accessed_variables},
        reduce_(std::move(reduce)) {}

  void enter() {
    if (tape_ || distributed_) {
      paused_.reset();
    } else if (reduce_) {
      reducer_ = std::make_unique<distributed::GradientReducer>(*reduce_);
      distributed_ = std::make_unique<distributed::DistributedGradientTape>(*reducer_, options_);
    } else {
      tape_ = std::make_unique<GradientTape>(options_);
    }
  }

  void exit() {
    if ((tape_ || distributed_) && !paused_ && !consumed_)
      paused_.reset(new GradientTape::RecordingPause(tape("exit").stop_recording()));
  }

  /// Runs `result(tape)`, a gradient or a jacobian: a non-persistent tape records nothing after its
  /// first, so leaving `with` after one (TensorFlow allows it inside the block) pauses nothing.
  template <class Result>
  auto use(const char* what, Result&& result) {
    auto r = result(tape(what));
    if (!options_.persistent) consumed_ = true;
    return r;
  }

  GradientTape& tape(const char* what) {
    if (distributed_) return distributed_->tape();
    if (!tape_)
      throw FailedPreconditionError(fmt::format(
          "[GradientTape.{}] the tape has recorded nothing: use it as `with tf.GradientTape() as tape:`",
          what));
    return *tape_;
  }

  /// The gradients of `targets`; a distributed tape averages them over the ranks (it takes no
  /// output_gradients, as Horovod's DistributedGradientTape).
  std::vector<Gradient> gradient(const std::vector<Source>& targets, const std::vector<Source>& sources,
                                 const std::vector<Tensor>& seeds, UnconnectedGradients unconnected) {
    return use("gradient", [&](GradientTape& t) {
      if (!distributed_) return t.gradient_flat(Targets(targets), sources, seeds, unconnected);
      if (!seeds.empty())
        throw InvalidArgumentError("[DistributedGradientTape.gradient] output_gradients are not supported");
      std::vector<Gradient> grads = distributed_->gradient(Targets(targets), sources);
      if (unconnected == UnconnectedGradients::Zero)
        for (std::size_t i = 0; i < grads.size(); ++i)
          if (!grads[i]) grads[i] = zeros(sources[i].shape(), sources[i].dtype());
      return grads;
    });
  }

  bool persistent() const { return options_.persistent; }

  /// Pauses recording for a `with tape.stop_recording():` block.
  void pause() {
    pauses_.emplace_back(new GradientTape::RecordingPause(tape("stop_recording").stop_recording()));
  }
  void resume() { pauses_.pop_back(); }

  void reset() {
    tape("reset").reset();
    consumed_ = false;
  }

 private:
  TapeOptions options_;
  std::optional<distributed::GradientOptions> reduce_;
  std::unique_ptr<distributed::GradientReducer> reducer_;  // outlives distributed_, which uses it
  std::unique_ptr<distributed::DistributedGradientTape> distributed_;
  std::unique_ptr<GradientTape> tape_;
  std::unique_ptr<GradientTape::RecordingPause> paused_;
  std::vector<std::unique_ptr<GradientTape::RecordingPause>> pauses_;
  bool consumed_ = false;  // a non-persistent tape that gave its gradients records no more
};

std::vector<Source> sources_of(const py::list& items, const char* op) {
  std::vector<Source> out;
  out.reserve(items.size());
  for (py::handle item : items) {
    if (py::isinstance<Variable>(item)) {
      out.emplace_back(item.cast<const Variable&>());
    } else if (py::isinstance<Tensor>(item)) {
      out.emplace_back(item.cast<const Tensor&>());
    } else {
      throw py::type_error(fmt::format("[{}] passed in object of type {}, not tf.Tensor or tf.Variable", op,
                                       py::str(py::type::of(item)).cast<std::string>()));
    }
  }
  return out;
}

std::vector<Tensor> tensors_of(const py::list& items, const char* op) {
  std::vector<Tensor> out;
  out.reserve(items.size());
  for (py::handle item : items) out.push_back(to_tensor(item, op));
  return out;
}

using VariableUpdate = void (Variable::*)(const Tensor&);

/// Binds `v.<name>(value, use_locking=False, name=None, read_value=True)`: a Python value takes the
/// variable's dtype, and the variable itself is returned where read_value asks for it.
template <VariableUpdate update>
void bind_update(py::class_<Variable>& cls, const char* name, const char* argument, const char* op) {
  cls.def(
      name,
      [op](Variable& v, py::handle value, bool /*use_locking*/, py::handle /*name*/,
           bool read_value) -> py::object {
        (v.*update)(to_tensor(value, std::nullopt, v.dtype(), op));
        return read_value ? py::cast(v) : py::none();
      },
      py::arg(argument), py::arg("use_locking") = false, py::arg("name") = py::none(),
      py::arg("read_value") = true);
}

UnconnectedGradients unconnected(bool zero) {
  return zero ? UnconnectedGradients::Zero : UnconnectedGradients::None;
}

}  // namespace

GradientTape& tape_of(py::handle tape, const char* what) { return tape.cast<ScopedTape&>().tape(what); }

void bind_tape(py::module_& m) {
  py::class_<Variable> variable(m, "ResourceVariable",
                                "A mutable tensor whose reads a tape watches (tf.Variable).");
  variable
      .def(py::init([](py::handle initial_value, bool trainable, std::optional<std::string> name,
                       std::optional<DType> dtype) {
             VariableOptions options;
             options.trainable = trainable;
             if (name) options.name = *name;
             return Variable(to_tensor(initial_value, dtype, std::nullopt, "Variable"), options);
           }),
           py::arg("initial_value"), py::arg("trainable") = true, py::arg("name") = py::none(),
           py::arg("dtype") = py::none())
      .def_property_readonly("name", &Variable::name)
      .def_property_readonly("trainable", &Variable::trainable)
      .def_property_readonly("dtype", &Variable::dtype)
      .def_property_readonly("_shape", [](const Variable& v) { return shape_tuple(v.shape()); })
      .def_property_readonly("ndim", [](const Variable& v) { return v.shape().rank(); })
      .def("read_value", &Variable::read_value,
           "The current value, recorded on the tapes that watch this variable.")
      .def("value", &Variable::read_value,
           "The current value, recorded on the tapes that watch this variable.")
      .def("_snapshot", &Variable::value, "The current value, not recorded on any tape.")
      .def(
          "numpy", [](const Variable& v) { return numpy_view(v.value()).attr("copy")(); },
          "A NumPy copy of the current value (a variable changes, so its memory is not shared).")
      .def("__repr__",
           [](const Variable& v) {
             const std::string r = repr(v.value());  // <tf.Tensor: shape=..., numpy=...>
             return fmt::format("<tf.Variable '{}' {}", v.name(), r.substr(r.find("shape=")));
           })
      .def("__hash__", [](const Variable& v) { return v.handle_id(); })
      .def("__eq__", [](const Variable& a, py::handle b) -> py::object {
        // Elementwise, as a tensor's ==; identity decides for another variable in containers.
        if (py::isinstance<Variable>(b))
          return py::cast(equal(a.read_value(), b.cast<const Variable&>().read_value()));
        return py::cast(equal(a.read_value(), operand_like(b, a.value(), "Equal")));
      });

  bind_update<&Variable::assign>(variable, "assign", "value", "AssignVariableOp");
  bind_update<&Variable::assign_add>(variable, "assign_add", "delta", "AssignAddVariableOp");
  bind_update<&Variable::assign_sub>(variable, "assign_sub", "delta", "AssignSubVariableOp");

  py::class_<ScopedTape>(m, "_Tape")
      .def(py::init<bool, bool, std::optional<distributed::GradientOptions>>(), py::arg("persistent"),
           py::arg("watch_accessed_variables"), py::arg("reduce") = py::none())
      .def("enter", &ScopedTape::enter)
      .def("exit", &ScopedTape::exit)
      .def("pause", &ScopedTape::pause)
      .def("resume", &ScopedTape::resume)
      .def("reset", &ScopedTape::reset)
      .def_property_readonly("persistent", &ScopedTape::persistent)
      .def("watch",
           [](ScopedTape& t, const py::list& items) {
             GradientTape& tape = t.tape("watch");
             for (const Source& s : sources_of(items, "GradientTape.watch")) tape.watch(s);
           })
      .def("watched_variables", [](ScopedTape& t) { return t.tape("watched_variables").watched_variables(); })
      .def("gradient",
           [](ScopedTape& t, const py::list& targets, const py::list& sources,
              const py::object& output_gradients, bool zero) {
             const std::vector<Source> flat_targets = sources_of(targets, "GradientTape.gradient");
             const std::vector<Source> flat_sources = sources_of(sources, "GradientTape.gradient");
             const std::vector<Tensor> seeds =
                 output_gradients.is_none() ? std::vector<Tensor>{}
                                            : tensors_of(py::reinterpret_borrow<py::list>(output_gradients),
                                                         "GradientTape.gradient");
             py::gil_scoped_release released;
             return t.gradient(flat_targets, flat_sources, seeds, unconnected(zero));
           })
      .def("jacobian",
           [](ScopedTape& t, const Tensor& target, const py::list& sources, bool zero, bool parallel) {
             const std::vector<Source> flat_sources = sources_of(sources, "GradientTape.jacobian");
             py::gil_scoped_release released;
             return t.use("jacobian", [&](GradientTape& tape) {
               return tape.jacobian_flat(target, flat_sources, unconnected(zero), parallel);
             });
           })
      .def("batch_jacobian", [](ScopedTape& t, const Tensor& target, py::handle source, bool zero) {
        const std::vector<Source> flat =
            sources_of(py::make_tuple(source).cast<py::list>(), "GradientTape.batch_jacobian");
        py::gil_scoped_release released;
        return t.use("batch_jacobian", [&](GradientTape& tape) {
          return tape.batch_jacobian(target, flat[0], unconnected(zero));
        });
      });
}

}  // namespace tapeflow::python
