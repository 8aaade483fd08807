"""tf.keras.layers: the layers tapeflow has, with Keras's names and defaults, and `Layer` to
subclass in Python.

The built-in layers (Dense, Embedding, MultiHeadAttention, Conv1D, Conv2D, MaxPooling2D,
AveragePooling2D, Flatten, Dropout, BatchNormalization, LayerNormalization,
GlobalAveragePooling1D/2D, Softmax, LSTM, GRU) are tapeflow's C++ layers: their weights have Keras's
layouts (Dense's kernel (in, units), Embedding's (input_dim, output_dim), Conv1D's (kernel_size, in,
filters), Conv2D's (kh, kw, in, filters), LSTM's kernel (in, 4 units) and recurrent_kernel (units,
4 units)) and they are built by their first call. LSTM and GRU created with return_state=True
return [output, h, c] / [output, h] and take `initial_state=[...]` when called;
MultiHeadAttention is called as mha(query, value, ...) as in Keras. A `Layer`
subclass defines `build(input_shape)` and `call(inputs)`, creates its weights with `add_weight`,
and is built by its first `__call__`; it goes into a `Sequential` like the built-in ones.

The functional API: `Input(shape)` makes a KerasTensor; calling a layer on KerasTensors (a merge
layer, such as Add or Concatenate, on a list of them) adds a node to a graph, and
`tf.keras.Model(inputs, outputs)` is the model of that graph (tapeflow's C++ Functional), with
compile, fit, evaluate, predict and summary.
"""

import inspect

import numpy as _np

from .. import _tapeflow
from .. import nest as _nest
from ..module import Module, _ModuleMeta, _is_variable
from . import initializers
from .training import Training

from .._tapeflow import (  # noqa: F401
    Dense, Embedding, MultiHeadAttention, Conv1D, Conv2D, MaxPooling2D, AveragePooling2D, Flatten, Dropout,
    BatchNormalization, LayerNormalization, GlobalAveragePooling1D, GlobalAveragePooling2D, Softmax, LSTM, GRU,
    KerasTensor, Add, Subtract, Multiply, Average, Maximum, Minimum, Concatenate)

MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D
GlobalAvgPool1D = GlobalAveragePooling1D
GlobalAvgPool2D = GlobalAveragePooling2D

__all__ = ["Layer", "Model", "Functional", "Sequential", "Dense", "Embedding", "MultiHeadAttention", "Conv1D", "Conv2D",
           "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D", "Flatten", "Dropout",
           "BatchNormalization", "LayerNormalization", "GlobalAveragePooling1D", "GlobalAvgPool1D",
           "GlobalAveragePooling2D", "GlobalAvgPool2D", "Softmax", "LSTM", "GRU", "Input", "InputLayer", "KerasTensor",
           "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate", "add", "subtract",
           "multiply", "average", "maximum", "minimum", "concatenate"]


def Input(shape=None, batch_size=None, name=None, dtype=None):  # noqa: N802 (Keras's name)
    """A symbolic input of `shape` (a tuple without the batch dimension; None for a dimension of
    any size), the start of a functional model (keras.Input). `dtype`: a tf.DType or its name,
    default the global policy's compute dtype or float32."""
    if shape is None:
        raise ValueError("Input: please provide the `shape` argument (the shape of one example)")
    if isinstance(shape, int):
        shape = (shape,)
    if dtype is None:
        policy = _tapeflow.mixed_precision.global_policy()
        dtype = getattr(_tapeflow, policy.compute_dtype) if policy is not None else _tapeflow.float32
    elif isinstance(dtype, str):
        dtype = _policy_dtypes(dtype, "Input")[1]
    return _tapeflow._Input(list(shape), batch_size, name, dtype)


InputLayer = Input


def _merge_function(layer_class):
    def merge(inputs, **kwargs):
        return layer_class(**kwargs)(inputs)
    merge.__name__ = layer_class.__name__.lower()
    merge.__doc__ = (f"The functional form of {layer_class.__name__}: {layer_class.__name__}(**kwargs)(inputs), "
                     f"on tensors or KerasTensors.")
    return merge


add, subtract, multiply, average, maximum, minimum = (
    _merge_function(c) for c in (Add, Subtract, Multiply, Average, Maximum, Minimum))


def concatenate(inputs, axis=-1, **kwargs):
    """The functional form of Concatenate: Concatenate(axis=axis, **kwargs)(inputs)."""
    return Concatenate(axis=axis, **kwargs)(inputs)


class _LayerMeta(_ModuleMeta, type(_tapeflow._Layer)):
    """The metaclass of Python layers: a pybind11 class (the C++ Layer) that is also a tf.Module."""


def _policy_dtypes(dtype, layer):
    """The (variable, compute) dtypes of a layer for Keras's dtype argument: a tf.DType or a dtype
    name (both that dtype), a policy name or a Policy (its variable and compute dtypes)."""
    if isinstance(dtype, _tapeflow.DType):
        return dtype, dtype
    if isinstance(dtype, str):
        named = getattr(_tapeflow, dtype, None)
        if isinstance(named, _tapeflow.DType):
            return named, named
        dtype = _tapeflow.mixed_precision.Policy(dtype)  # InvalidArgumentError listing the names
    if isinstance(dtype, _tapeflow.mixed_precision.Policy):
        return getattr(_tapeflow, dtype.variable_dtype), getattr(_tapeflow, dtype.compute_dtype)
    raise TypeError(f"[{layer}] dtype must be a tf.DType, a dtype or policy name, or a Policy, got an object "
                    f"of type {type(dtype).__name__}")


def _variable_dtype(dtype, layer):
    """The dtype of a layer's variables for Keras's dtype argument (_policy_dtypes)."""
    return _policy_dtypes(dtype, layer)[0]


_FLOATING = (_tapeflow.float32, _tapeflow.float64, _tapeflow.bfloat16)


def _is_layer(leaf):
    return isinstance(leaf, _tapeflow._Layer)


def _is_own(leaf, own_weights):
    return isinstance(leaf, _tapeflow.ResourceVariable) and hash(leaf) in own_weights


class _KerasLayer(Module):
    """What Layer and Sequential share above their C++ part (each derives from one C++ class:
    pybind11 would construct a C++ object per C++ base)."""

    _TF_MODULE_IGNORED_PROPERTIES = frozenset({"_own_weights"})

    def __init__(self, trainable=True, name=None, dtype=None, **kwargs):
        if kwargs:
            raise TypeError(f"Unrecognized keyword arguments passed to {type(self).__name__}: {kwargs}")
        Module.__init__(self, name=name)
        self._init_native(self._name)
        if dtype is None:
            dtype = _tapeflow.mixed_precision.global_policy() or _tapeflow.float32
        self._variable_dtype, self._compute_dtype = _policy_dtypes(dtype, type(self).__name__)
        self._own_weights = []
        self.trainable = trainable
        self.built = False
        self._call_takes_training = "training" in inspect.signature(self.call).parameters

    def build(self, input_shape):
        """Creates the layer's weights for inputs of `input_shape`; the first call runs it."""
        del input_shape
        self.built = True

    def call(self, inputs, *args, **kwargs):
        """The layer's computation; subclasses define it."""
        raise NotImplementedError(f"Layer {type(self).__name__} does not have a `call()` method implemented.")

    def __call__(self, inputs, *args, **kwargs):
        if isinstance(inputs, KerasTensor):  # the functional API: a node of the graph
            if args or set(kwargs) - {"training"}:
                raise TypeError(f"{type(self).__name__} called on a KerasTensor takes no other arguments in "
                                f"tapeflow's functional API, got {len(args)} positional and {sorted(kwargs)}")
            return _tapeflow._Layer.__call__(self, inputs)
        if isinstance(inputs, (_np.ndarray, int, float)):
            inputs = _tapeflow.convert_to_tensor(inputs)
        inputs = self._autocast(inputs)
        if not self.built:
            self.build(getattr(inputs, "shape", None))
            self.built = True
        if not self._call_takes_training:
            kwargs.pop("training", None)
        return self.call(inputs, *args, **kwargs)

    def _call_from_sequential(self, inputs, training):
        # What the C++ Sequential calls (the C++ Layer's call()).
        return self(inputs, training=training)

    def _autocast(self, inputs):
        # Keras's autocast: the floating tensors of the inputs (a tensor or a nest of them) in the
        # compute dtype, so that a layer under "mixed_bfloat16" computes in bfloat16.
        def cast(leaf):
            floating = isinstance(leaf, _tapeflow.EagerTensor) and leaf.dtype in _FLOATING
            return _tapeflow.cast(leaf, self._compute_dtype) if floating and leaf.dtype != self._compute_dtype else leaf
        return cast(inputs) if isinstance(inputs, _tapeflow.EagerTensor) else _nest.map_structure(cast, inputs)

    @property
    def dtype(self):
        """The dtype of the layer's weights, by name (Keras's layer.dtype)."""
        return self._variable_dtype.name

    @property
    def compute_dtype(self):
        """The dtype the layer computes in, by name (Keras's layer.compute_dtype): floating inputs
        are cast to it when the layer is called. Weights keep their own dtype: under
        "mixed_bfloat16" a call reads float32 weights, which `tf.cast(w, self.compute_dtype)`
        brings to the inputs' bfloat16."""
        return self._compute_dtype.name

    def add_weight(self, shape=None, initializer=None, dtype=None, trainable=True, name=None):
        """A new tf.Variable of `shape` (default ()) and `dtype` (default the layer's: its `dtype`
        argument, a dtype or policy name, or the global policy's variable dtype, else float32),
        initialised by `initializer` (a name such as "zeros" or "glorot_uniform", or a
        callable(shape, dtype); default "glorot_uniform" for floats, "zeros" otherwise), owned by
        the layer."""
        shape = tuple(shape or ())
        dtype = self._variable_dtype if dtype is None else _variable_dtype(dtype, type(self).__name__)
        if initializer is None:
            initializer = "glorot_uniform" if dtype in (_tapeflow.float32, _tapeflow.float64) else "zeros"
        value = initializers.get(initializer)(shape, dtype)
        variable = _tapeflow.ResourceVariable(value, trainable=trainable, name=name, dtype=dtype)
        self._own_weights.append(variable)
        return variable

    def _walk_own(self, predicate, path, seen, into_native):
        # Keras's order: the layer's own weights in creation order (each under the attribute
        # path that holds it, or "_own_weights/<i>"), then the rest of the walk.
        own = {hash(v) for v in self._own_weights}
        own_paths, rest = {}, []
        for leaf_path, leaf in super()._walk_own(lambda leaf: predicate(leaf) or _is_own(leaf, own), path, seen,
                                                 into_native):
            if _is_own(leaf, own):
                own_paths[hash(leaf)] = leaf_path
            else:
                rest.append((leaf_path, leaf))
        for index, variable in enumerate(self._own_weights):
            identity = ("variable", hash(variable))
            if hash(variable) in own_paths or identity not in seen:
                seen.add(identity)
                if predicate(variable):
                    yield own_paths.get(hash(variable), path + ("_own_weights", index)), variable
        yield from rest

    @property
    def variables(self):
        """Every variable of the layer (a list): its own weights in creation order, then those of
        its sub-layers and attributes."""
        return list(super().variables)

    @property
    def trainable(self):
        """Whether the layer's weights train (Keras's layer.trainable). Setting it sets every layer
        below this one too: freezing a model freezes its layers, unfreezing it unfreezes them. A
        frozen layer has no trainable weights, so fit and an optimizer given them leave it as it
        is; a frozen BatchNormalization runs in inference mode."""
        return _tapeflow._Layer.trainable.fget(self)

    @trainable.setter
    def trainable(self, value):
        value = bool(value)
        _tapeflow._Layer.trainable.fset(self, value)  # this layer and the C++ layers it tracks
        for layer in self._flatten(predicate=_is_layer):
            layer.trainable = value

    @property
    def trainable_variables(self):
        """The trainable variables (a list): none when the layer's `trainable` is False, and none
        that a layer below this one holds back (a frozen layer's)."""
        if not self.trainable:
            return []
        # One walk gives the variables and the layers below; a frozen one holds back all its
        # variables. (The walk reaches every layer Python can freeze: the sub-layers of a built-in
        # C++ layer are reached only through it, and freezing it freezes them.)
        leaves = list(self._flatten(predicate=lambda leaf: _is_variable(leaf) or _is_layer(leaf)))
        held_back = set()
        for layer in leaves:
            if _is_layer(layer) and not layer.trainable:
                held_back.update(hash(v) for v in layer.variables)
        return [v for v in leaves if _is_variable(v) and v.trainable and hash(v) not in held_back]

    @property
    def non_trainable_variables(self):
        """The other variables, all of them when `trainable` is False (a list)."""
        trainable = {hash(v) for v in self.trainable_variables}
        return [v for v in self.variables if hash(v) not in trainable]

    weights = variables
    trainable_weights = trainable_variables
    non_trainable_weights = non_trainable_variables


class Layer(_KerasLayer, _tapeflow._Layer, metaclass=_LayerMeta):
    """The base of Keras layers (tf.keras.layers.Layer). Subclass it: create weights in
    `build(input_shape)` (or `__init__`) with `add_weight`, compute in `call(inputs)`, and call
    the layer; the first call builds it. Variables are the layer's own weights in creation order,
    then those of the layers and variables it holds as attributes. The built-in layers are
    instances of it too."""

    _native_class = _tapeflow._Layer

    def _init_native(self, name):
        _tapeflow._Layer.__init__(self, name)


class _ModelMeta(_LayerMeta):
    """Model's metaclass: Sequential and the functional model are Models, as in Keras (each
    derives from its own C++ class, so not from Model itself)."""

    def __instancecheck__(cls, instance):
        if cls is Model and isinstance(instance, (Sequential, Functional)):
            return True
        return super().__instancecheck__(instance)

    def __subclasscheck__(cls, subclass):
        if cls is Model and isinstance(subclass, type) and issubclass(subclass, (Sequential, Functional)):
            return True
        return super().__subclasscheck__(subclass)


class Model(Training, _KerasLayer, _tapeflow._Model, metaclass=_ModelMeta):
    """tf.keras.Model. Called with inputs and outputs, Model(inputs, outputs, name=None) is the
    functional model of the layers between them (a `Functional`). Subclassed, it is a model
    written in Python: create its layers in __init__ and the forward pass in call(inputs,
    training=None). compile, fit, evaluate and predict run Keras's loop in C++, which calls
    call() back (once per trace: the step runs as a tf.function graph unless compile's
    run_eagerly)."""

    _native_class = _tapeflow._Model

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            return Functional(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise TypeError(f"{type(self).__name__}: a subclassed model defines call(); inputs and outputs make "
                            f"a functional model, tf.keras.Model(inputs, outputs)")
        super().__init__(**kwargs)

    def _init_native(self, name):
        _tapeflow._Model.__init__(self, name)


def _as_list(tensors):
    return list(tensors) if isinstance(tensors, (list, tuple)) else [tensors]


def _print_summary(text, print_fn):
    for line in text.splitlines():
        (print_fn or print)(line)


class Functional(Training, _KerasLayer, _tapeflow._Functional, metaclass=_LayerMeta):
    """The model of the layers between `inputs` and `outputs` (KerasTensors, or lists of them),
    made by tf.keras.Model(inputs, outputs): tapeflow's C++ Functional, which runs each layer's
    node in order. Called on a tensor (a list for several inputs), it returns a tensor (a list for
    several outputs); on a KerasTensor, it is a node of another model."""

    _TF_MODULE_IGNORED_PROPERTIES = _KerasLayer._TF_MODULE_IGNORED_PROPERTIES | {"_graph_ends", "_native_layers"}

    def __init__(self, inputs, outputs, name=None, trainable=True):
        self._graph_ends = (_as_list(inputs), _as_list(outputs), isinstance(outputs, (list, tuple)))
        for tensor in self._graph_ends[0] + self._graph_ends[1]:
            if not isinstance(tensor, KerasTensor):
                raise TypeError(f"Model(inputs, outputs) takes KerasTensors (from tf.keras.Input and layers called "
                                f"on them), got an object of type {type(tensor).__name__}")
        super().__init__(trainable=trainable, name=name or "model")
        # An attribute, so the module walk (variables, checkpoints) finds the layers in Keras's order.
        self._layers = list(self._native_layers)
        self.built = True

    def _init_native(self, name):
        inputs, outputs, _ = self._graph_ends
        _tapeflow._Functional.__init__(self, inputs, outputs, name)

    @property
    def layers(self):
        """The layers, deepest first as Keras orders them (the Inputs are not layers here)."""
        return list(self._layers)

    def call(self, inputs, training=None):
        """The outputs for `inputs`: a tensor for a model of one input and one output, else lists."""
        if isinstance(inputs, KerasTensor):
            return _tapeflow._Layer.__call__(self, inputs)
        several_inputs = isinstance(inputs, (list, tuple))
        outputs = self._call_list(_as_list(inputs) if several_inputs else [inputs], bool(training))
        return outputs if self._graph_ends[2] else outputs[0]

    def __call__(self, inputs, training=None):
        return self.call(inputs, training)

    def summary(self, print_fn=None):
        """Prints Keras 2's table of the inputs and layers (with what each is connected to unless
        the model is a chain) and the totals, a line at a time through `print_fn` (default: print)."""
        _print_summary(self._summary(), print_fn)


class Sequential(Training, _KerasLayer, _tapeflow._Sequential, metaclass=_LayerMeta):
    """A stack of layers called in order (tf.keras.Sequential), run by tapeflow's C++
    Sequential. Layers are C++ layers or Layer subclasses; variables are listed layer by layer."""

    def __init__(self, layers=None, trainable=True, name=None):
        self._layers = []
        super().__init__(trainable=trainable, name=name)
        self.built = True
        for layer in layers or ():
            self.add(layer)

    def _init_native(self, name):
        _tapeflow._Sequential.__init__(self, name)

    def add(self, layer):
        """Appends `layer` (a Layer; TypeError otherwise)."""
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. Received: layer={layer!r} "
                            f"of type {type(layer)}.")
        self._add(layer)
        self._layers.append(layer)

    @property
    def layers(self):
        """The layers, in call order (a list)."""
        return list(self._layers)

    def call(self, inputs, training=None):
        """The layers applied in order to `inputs`."""
        return _tapeflow._Layer.__call__(self, inputs, bool(training))

    def summary(self, print_fn=None):
        """Prints Keras's table of the layers (name and type, output shape, parameters) and the
        totals, one line at a time through `print_fn` (default: print). The model must have been
        called on data; ValueError otherwise, as in Keras."""
        try:
            text = self._summary()
        except _tapeflow.errors.FailedPreconditionError as error:
            raise ValueError(str(error)) from None
        _print_summary(text, print_fn)

    def __call__(self, inputs, training=None):
        return self.call(inputs, training)
