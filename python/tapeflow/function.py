"""tf.function over Python functions: the body is traced once per signature into tapeflow's
graph, and later calls with that signature run the graph without entering Python."""

import functools

import numpy as np

from . import _tapeflow
from . import nest

__all__ = ["function", "Function"]


def _is_tensor_argument(leaf):
    return isinstance(leaf, (_tapeflow.EagerTensor, np.ndarray))


def _key_of(leaf):
    """How a non-tensor argument enters the signature: a variable by identity, a Python value by
    type and value (a new value traces again, as in TensorFlow)."""
    if _is_tensor_argument(leaf):
        return "T"
    if isinstance(leaf, _tapeflow.ResourceVariable):
        return ("V", leaf.__hash__())
    return (type(leaf).__qualname__, repr(leaf))


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
        key = repr(nest.map_structure(_key_of, call))

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

        outputs, (structure, flat, is_tensor) = self._core.call(tensors, key, trace)
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
