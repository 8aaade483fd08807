// tapeflow's C++ exceptions as Python exceptions of TensorFlow's classes (tf.errors.*), each also
// the built-in class a TensorFlow user catches for it: an InvalidArgumentError is a ValueError,
// a FailedPreconditionError (a misused tape) a RuntimeError, an UnimplementedError a
// NotImplementedError; a missing registry entry is Python's LookupError, as TensorFlow raises it.
#include "bindings.h"

namespace tapeflow::python {

namespace {

PyObject* new_error(py::module_& m, const char* name, PyObject* bases) {
  const std::string qualified = std::string("tapeflow.errors.") + name;
  PyObject* type = PyErr_NewException(qualified.c_str(), bases, nullptr);
  if (!type) throw py::error_already_set();
  m.add_object(name, py::handle(type));
  return type;
}

}  // namespace

void bind_errors(py::module_& m) {
  py::module_ errors = m.def_submodule("errors", "TensorFlow's exception classes (tf.errors)");
  static PyObject* op_error = new_error(errors, "OpError", PyExc_Exception);
  auto derived = [&](const char* name, PyObject* builtin) {
    py::tuple bases = builtin ? py::make_tuple(py::handle(op_error), py::handle(builtin))
                              : py::make_tuple(py::handle(op_error));
    return new_error(errors, name, bases.ptr());
  };
  static PyObject* invalid_argument = derived("InvalidArgumentError", PyExc_ValueError);
  static PyObject* failed_precondition = derived("FailedPreconditionError", PyExc_RuntimeError);
  static PyObject* resource_exhausted = derived("ResourceExhaustedError", nullptr);
  static PyObject* out_of_range = derived("OutOfRangeError", nullptr);
  static PyObject* unimplemented = derived("UnimplementedError", PyExc_NotImplementedError);
  static PyObject* data_loss = derived("DataLossError", nullptr);
  static PyObject* unavailable = derived("UnavailableError", nullptr);
  static PyObject* internal = derived("InternalError", nullptr);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgumentError& e) {
      PyErr_SetString(invalid_argument, e.what());
    } catch (const LookupError& e) {
      PyErr_SetString(PyExc_LookupError, e.what());
    } catch (const FailedPreconditionError& e) {
      PyErr_SetString(failed_precondition, e.what());
    } catch (const ResourceExhaustedError& e) {
      PyErr_SetString(resource_exhausted, e.what());
    } catch (const OutOfRangeError& e) {
      PyErr_SetString(out_of_range, e.what());
    } catch (const UnimplementedError& e) {
      PyErr_SetString(unimplemented, e.what());
    } catch (const DataLossError& e) {
      PyErr_SetString(data_loss, e.what());
    } catch (const UnavailableError& e) {
      PyErr_SetString(unavailable, e.what());
    } catch (const InternalError& e) {
      PyErr_SetString(internal, e.what());
    } catch (const Error& e) {
      PyErr_SetString(op_error, e.what());
    }
  });
}

}  // namespace tapeflow::python
