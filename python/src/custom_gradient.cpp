// Python gradient functions over tapeflow/custom_gradient.h and tapeflow/registry.h:
// tf.custom_gradient, tf.recompute_grad, tf.grad_pass_through, tf.RegisterGradient and
// tf.no_gradient. The Python side (python/tapeflow/custom_gradient.py) adds TensorFlow's calling
// conventions: nested arguments and results, grad_fn(*upstream, variables=...), fn(op, *grads).
//
// NOTE: gradient functions run during a backward pass, which the tape's gradient() runs with the
// GIL released (and a recorded op may keep its Python function until a tape is destroyed, or
// for ever in the registry): every call into Python acquires the GIL, and every Python object C++
// keeps is released under it. A Python exception raised in a gradient function leaves as
// pybind11's error_already_set, which no C++ frame on the way catches, so Python sees the
// original exception.
#include <fmt/format.h>
#include <pybind11/stl.h>

#include "bindings.h"

namespace tapeflow::python {

namespace {

/// A Python callable that C++ keeps past the call that gave it (in a tape's record or the
/// gradient registry) and may call, copy or drop on a thread without the GIL.
class PyCallback {
 public:
  explicit PyCallback(py::object fn) : fn_(keep_alive(std::move(fn))) {}

  /// Calls the function, converting `args` to Python. The caller holds the GIL (the result is a
  /// Python object too).
  template <class... Args>
  py::object operator()(Args&&... args) const {
    return (*fn_)(std::forward<Args>(args)...);
  }

 private:
  std::shared_ptr<py::object> fn_;
};

/// A block (custom_gradient.h) that runs a Python function of a list of tensors returning a list
/// of tensors, as recompute_grad runs it again in the backward pass.
Block block_of(py::object fn) {
  return [callback = PyCallback(std::move(fn))](const std::vector<Tensor>& inputs) {
    py::gil_scoped_acquire gil;
    return callback(inputs).cast<std::vector<Tensor>>();
  };
}

/// What TensorFlow's gradient functions receive as `op`: a view of the recorded op valid while
/// its gradient function runs (GradContext lives only that long). Once that call returns, every
/// access throws FailedPreconditionError.
class GradOp {
 public:
  explicit GradOp(const GradContext& context) : context_(std::make_shared<const GradContext*>(&context)) {}

  /// Forgets the context, whose gradient function has returned.
  void expire() { *context_ = nullptr; }

  const GradContext& context() const {
    if (*context_ == nullptr)
      throw FailedPreconditionError(
          "[RegisterGradient] the op given to a gradient function can be read only while that function runs");
    return **context_;
  }

  /// The op's inputs or outputs, as `op.inputs` / `op.outputs` (shares this op's validity).
  class Tensors {
   public:
    Tensors(std::shared_ptr<const GradContext*> context, bool outputs)
        : context_(std::move(context)), outputs_(outputs) {}

    int size() const { return outputs_ ? op().context().num_outputs() : op().context().num_inputs(); }

    /// Input or output `i` (negative counts from the end), as the op saved it: reading one the
    /// op does not keep for its gradient throws InvalidArgumentError naming what it keeps.
    Tensor at(int i) const {
      const int n = size();
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        throw py::index_error(fmt::format("[{}] {} index {} out of range for {} {}", op().context().op_name(),
                                          kind(), i, n, kind()));
      const GradContext& c = op().context();
      try {
        return outputs_ ? c.output(i) : c.input(i);
      } catch (const InternalError&) {
        throw InvalidArgumentError(fmt::format(
            "[{}] the op does not keep its {} {} for the gradient (tapeflow's ops save only what their "
            "own gradient reads); its shape is {}",
            c.op_name(), outputs_ ? "output" : "input", i,
            (outputs_ ? c.output_shape(i) : c.input_shape(i)).to_string()));
      }
    }

   private:
    GradOp op() const { return GradOp(context_); }
    const char* kind() const { return outputs_ ? "outputs" : "inputs"; }
    std::shared_ptr<const GradContext*> context_;
    bool outputs_;
  };

  Tensors tensors(bool outputs) const { return Tensors(context_, outputs); }

 private:
  explicit GradOp(std::shared_ptr<const GradContext*> context) : context_(std::move(context)) {}
  std::shared_ptr<const GradContext*> context_;
};

/// Runs a Python gradient function `fn(op, [dy...])` registered for an op, where `op` is valid
/// only during the call.
Grads run_registered(const PyCallback& fn, const GradContext& c) {
  py::gil_scoped_acquire gil;
  std::vector<Tensor> dys;
  for (int i = 0; i < c.num_outputs(); ++i) dys.push_back(c.dy(i));
  GradOp op(c);
  struct Expire {
    GradOp& op;
    ~Expire() { op.expire(); }
  } expire{op};
  return fn(py::cast(op), dys).cast<Grads>();
}

}  // namespace

void bind_custom_gradient(py::module_& m) {
  m.def(
      "_custom_gradient",
      [](const std::vector<Tensor>& inputs, const py::function& f) {
        // f(inputs) -> (outputs, grad(dys, variables) -> [gradient or None, ...]), or
        // (outputs, None), which custom_gradient rejects.
        return custom_gradient(inputs, [&f](const std::vector<Tensor>& in) {
          py::tuple result = f(in);
          CustomGradientResult r{result[0].cast<std::vector<Tensor>>(), {}};
          if (!result[1].is_none())
            r.grad = [grad = PyCallback(result[1])](const std::vector<Tensor>& dys,
                                                    const std::vector<Variable>& variables) {
              py::gil_scoped_acquire gil;
              return grad(dys, variables).cast<Grads>();
            };
          return r;
        });
      },
      py::arg("inputs"), py::arg("f"));
  m.def(
      "_recompute_grad",
      [](const std::vector<Tensor>& inputs, py::function f) {
        return recompute_grad(block_of(std::move(f)))(inputs);
      },
      py::arg("inputs"), py::arg("f"));
  m.def(
      "_grad_pass_through",
      [](const std::vector<Tensor>& inputs, py::function f) {
        return grad_pass_through(block_of(std::move(f)))(inputs);
      },
      py::arg("inputs"), py::arg("f"));

  py::class_<GradOp::Tensors>(m, "_OpTensors", "The inputs or outputs of the op a gradient function is for.")
      .def("__len__", &GradOp::Tensors::size)
      .def("__getitem__", &GradOp::Tensors::at);
  py::class_<GradOp>(m, "_GradOp",
                     "The recorded op given to a registered gradient function (op.inputs, ...).")
      .def_property_readonly("type", [](const GradOp& op) { return std::string(op.context().op_name()); })
      .def_property_readonly("name", [](const GradOp& op) { return std::string(op.context().op_name()); })
      .def_property_readonly("inputs", [](const GradOp& op) { return op.tensors(false); })
      .def_property_readonly("outputs", [](const GradOp& op) { return op.tensors(true); });
  m.def(
      "_register_gradient",
      [](const std::string& op_type, py::function fn) {
        register_gradient(op_type, [fn = PyCallback(std::move(fn))](const GradContext& c) {
          return run_registered(fn, c);
        });
      },
      py::arg("op_type"), py::arg("fn"));
  m.def(
      "no_gradient", [](const std::string& op_type) { no_gradient(op_type); }, py::arg("op_type"),
      "Declares the op `op_type` non-differentiable: paths through it give no gradient and no error.");
}

}  // namespace tapeflow::python
