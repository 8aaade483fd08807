"""tf.function over Python functions: the body is traced once per signature into tapeflow's
graph, and later calls with that signature run the graph without entering Python."""

import functools

import numpy as np

from . import _tapeflow
from . import nest

__all__ = ["function", "Function", "save_function", "load_function", "export_onnx"]


def _is_tensor_argument(leaf):
    return isinstance(leaf, (_tapeflow.EagerTensor, np.ndarray, _tapeflow.TensorSpec))


def _key_of(leaf, variables):
    """How a non-tensor argument enters the signature: a variable by dtype, shape and trainability
    (another variable of that kind runs the same graph, reading the variable passed; `variables`
    collects them in order, and one passed twice says which it repeats), a Python value by type
    and value (a new value traces again, as in TensorFlow)."""
    if _is_tensor_argument(leaf):
        return "T"
    if isinstance(leaf, _tapeflow.ResourceVariable):
        handle = hash(leaf)  # the variable's handle: every Python object of one variable shares it
        repeats = next((k for k, v in enumerate(variables) if hash(v) == handle), None)
        variables.append(leaf)
        return ("V", str(leaf.dtype), leaf._shape, leaf.trainable, repeats)
    return (type(leaf).__qualname__, repr(leaf))


def _signature_key(call):
    """The signature key of a call's (args, kwargs), and its variable arguments in order."""
    variables = []
    return repr(nest.map_structure(lambda leaf: _key_of(leaf, variables), call)), variables


class Function:
    """A Python function compiled by tracing (what `@tf.function` returns)."""

    def __init__(self, python_function, input_signature=None, name=None):
        self._python_function = python_function
        self._input_signature = None if input_signature is None else list(input_signature)
        self._core = _tapeflow._Function(name or getattr(python_function, "__name__", "function"),
                                         self._input_signature)
        functools.update_wrapper(self, python_function)

    def __get__(self, instance, owner):
        # A decorated method: bind the instance as a non-tensor argument.
        if instance is None:
            return self
        return functools.partial(self.__call__, instance)

    def __call__(self, *args, **kwargs):
        call = (args, kwargs)
        leaves = nest.flatten(call)
        tensors = [_tapeflow.convert_to_tensor(leaf) for leaf in leaves if _is_tensor_argument(leaf)]
        key, variables = _signature_key(call)

        def trace(fresh):
            fresh = iter(fresh)
            rebuilt = [next(fresh) if _is_tensor_argument(leaf) else leaf for leaf in leaves]
            traced_args, traced_kwargs = nest.pack_sequence_as(call, rebuilt)
            result = self._python_function(*traced_args, **traced_kwargs)
            flat = nest.flatten(result)
            is_tensor = [isinstance(leaf, (_tapeflow.EagerTensor, _tapeflow.ResourceVariable)) for leaf in flat]
            outputs = [_tapeflow.convert_to_tensor(leaf) for leaf, t in zip(flat, is_tensor) if t]
            kept = [None if t else leaf for leaf, t in zip(flat, is_tensor)]  # no traced tensor kept alive
            return outputs, (result, kept, is_tensor)

        outputs, (structure, flat, is_tensor) = self._core.call(tensors, key, trace, variables)
        outputs = iter(outputs)
        return nest.pack_sequence_as(structure, [next(outputs) if t else leaf for leaf, t in zip(flat, is_tensor)])

    @property
    def python_function(self):
        return self._python_function

    def experimental_get_tracing_count(self):
        """How many times the body was traced."""
        return self._core.traces

    def graph_text(self):
        """The latest graph, one node per line."""
        return self._core.graph_text()


def function(func=None, input_signature=None, autograph=True, jit_compile=None, reduce_retracing=False,
             experimental_implements=None, experimental_autograph_options=None, experimental_attributes=None,
             experimental_relax_shapes=None, experimental_compile=None, experimental_follow_type_hints=None,
             name=None):
    """Compiles a Python function into a graph (usable as `@tf.function` or
    `@tf.function(input_signature=[...])`)."""
    del autograph, jit_compile, reduce_retracing, experimental_implements, experimental_autograph_options
    del experimental_attributes, experimental_relax_shapes, experimental_compile, experimental_follow_type_hints
    if func is None:
        return lambda f: Function(f, input_signature=input_signature, name=name)
    return Function(func, input_signature=input_signature, name=name)


def save_function(function, path, *args, **kwargs):
    """Writes the graph `function` (a tf.function) traced for a call with these arguments to the
    function file `path`; tensor arguments may be tf.TensorSpec. Without arguments, the trace for
    the function's input_signature is written. Saving does not run the body: call the function
    first. Load the file with tf.load_function."""
    if not isinstance(function, Function):
        raise TypeError(f"save_function takes a tf.function, got {type(function).__name__}")
    if not args and not kwargs:
        if function._input_signature is None:
            raise TypeError("save_function needs the call whose trace to write: pass its arguments (a "
                            "tf.TensorSpec for each tensor), or give the function an input_signature")
        args = tuple(function._input_signature)
    call = (args, kwargs)
    leaves = nest.flatten(call)
    specs = [leaf if isinstance(leaf, _tapeflow.TensorSpec) else _spec_of(leaf) for leaf in leaves
             if _is_tensor_argument(leaf)]
    key, variables = _signature_key(call)
    function._core.save(specs, str(path), key, variables)


def export_onnx(function, input_signature, path):
    """Writes the graph `function` (a tf.function) traced for `input_signature` (a list of
    tf.TensorSpec, one per tensor argument; None: the function's own) to `path` as an ONNX model
    (opset 17), for ONNX Runtime. A dimension left None is a symbolic one ("batch" when it leads).
    Exporting does not run the body: call the function first. Raises what save_function raises,
    and tf.errors.UnimplementedError naming an op that ONNX has no equivalent of."""
    if not isinstance(function, Function):
        raise TypeError(f"export_onnx takes a tf.function, got {type(function).__name__}")
    if input_signature is None:
        if function._input_signature is None:
            raise TypeError("export_onnx needs the signature whose trace to write: pass a list of "
                            "tf.TensorSpec, or give the function an input_signature")
        input_signature = function._input_signature
    function._core.export_onnx(list(input_signature), str(path))


def _spec_of(value):
    t = _tapeflow.convert_to_tensor(value)
    return _tapeflow.TensorSpec(list(t._shape), t.dtype)


class _Loaded:
    """A function loaded from a file: call it with the tensors of its signature."""

    def __init__(self, native):
        self._native = native

    def __call__(self, *args):
        outputs = self._native([_tapeflow.convert_to_tensor(a) for a in args])
        return outputs[0] if len(outputs) == 1 else outputs

    @property
    def input_signature(self):
        return self._native.input_signature

    @property
    def variables(self):
        return self._native.variables


def load_function(path):
    """Loads a function file written by tf.save_function; it runs without the Python that built it."""
    return _Loaded(_tapeflow.load_function(str(path)))
