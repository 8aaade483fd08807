"""tf.Module: a named container whose variables and sub-modules are found, as TensorFlow finds
them, by walking its attributes.

    class Linear(tf.Module):
        def __init__(self):
            super().__init__()
            self.w = tf.Variable([[1.0], [2.0]], name="w")
            self.b = tf.Variable([0.0], name="b")
            self.layers = [tf.keras.layers.Dense(3)]

    Linear().trainable_variables   # b, w (attributes sorted by name), then each sub-module's

The walk is TensorFlow's: the attributes in sorted order, each flattened as tf.nest flattens
(lists and tuples in order, dicts by sorted key); this module's variables first, then those of
each sub-module in the order met, each variable once. A layer of tapeflow's C++ library
(tf.keras.layers.Dense, ...) is a tf.Module whose variables are the C++ layer's.
"""

import re

from . import _tapeflow

__all__ = ["Module"]

_VALID_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _camel_to_snake(name):
    return re.sub(r"((?<=[a-z0-9])[A-Z]|(?!^)[A-Z](?=[a-z]))", r"_\1", name).lower()


class _ModuleMeta(type):
    """Makes the C++ library's modules instances of the Python classes that stand for them
    (`isinstance(tf.keras.layers.Dense(2), tf.Module)`): a class naming its C++ counterpart in
    `_native_class` claims that class's instances."""

    def __instancecheck__(cls, instance):
        native = cls.__dict__.get("_native_class")
        if native is not None and isinstance(instance, native):
            return True
        return super().__instancecheck__(instance)


def _is_variable(value):
    return isinstance(value, _tapeflow.ResourceVariable)


def _is_module(value):
    return isinstance(value, (Module, _tapeflow._Module))


def _is_python_module(value):
    """A module whose attributes are walked (a tf.Module subclass), not a C++ one."""
    return issubclass(type(value), Module)


def _leaves(value, path):
    """(path, leaf) for each leaf of `value`, flattened as tf.nest flattens it."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _leaves(value[key], path + (key,))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _leaves(item, path + (index,))
    else:
        yield path, value


def _walk(module, predicate, path, seen, into_native):
    """(path, leaf) for each leaf below `module` that satisfies `predicate`, in TensorFlow's
    order. `seen` holds the ids of modules and the handles of variables already met. With
    `into_native`, the variables of C++ modules are leaves too (path: the module's, then the
    variable's name)."""
    submodules = []
    ignored = getattr(module, "_TF_MODULE_IGNORED_PROPERTIES", ())
    attributes = vars(module)
    for key in sorted(attributes):
        if key in ignored:
            continue
        for leaf_path, leaf in _leaves(attributes[key], path + (key,)):
            # A variable's Python object may differ between reads of the same C++ variable: its
            # handle (hash) identifies it.
            identity = ("variable", hash(leaf)) if _is_variable(leaf) else ("object", id(leaf))
            if identity in seen:
                continue
            seen.add(identity)
            if predicate(leaf):
                yield leaf_path, leaf
            if _is_module(leaf):
                submodules.append((leaf_path, leaf))
    for sub_path, submodule in submodules:
        if _is_python_module(submodule):
            yield from submodule._walk_own(predicate, sub_path, seen, into_native)
        elif into_native:
            # A C++ layer: its variables are those the C++ module tracks.
            for variable in submodule.variables:
                identity = ("variable", hash(variable))
                if identity not in seen:
                    seen.add(identity)
                    if predicate(variable):
                        yield sub_path + (variable.name,), variable


class Module(metaclass=_ModuleMeta):
    """A named container of variables and sub-modules (tf.Module); subclass it and set them as
    attributes. `name` defaults to the class name in snake_case and must be a Python identifier
    (ValueError otherwise)."""

    _native_class = _tapeflow._Module
    _TF_MODULE_IGNORED_PROPERTIES = frozenset()

    def __init__(self, name=None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_NAME.match(name):
            raise ValueError(f"'{name}' is not a valid module name. Module names must be valid Python 3 "
                             "identifiers.")
        self._name = name

    @property
    def name(self):
        """The module's name."""
        return self._name

    def _walk_own(self, predicate, path, seen, into_native):
        """The walk below this module (see _walk); a subclass adds what it holds outside its
        attributes."""
        seen.add(("object", id(self)))
        return _walk(self, predicate, path, seen, into_native)

    def _flatten(self, predicate=None, with_path=False, into_native=True):
        """Every leaf below this module satisfying `predicate` (all by default), in the order of
        `variables`; with `with_path`, (path, leaf) pairs, the path a tuple of attribute names,
        list indices and dict keys. Without `into_native`, the variables of C++ modules (the
        built-in layers) are not visited, only the modules."""
        predicate = predicate or (lambda leaf: True)
        for path, leaf in self._walk_own(predicate, (), set(), into_native):
            yield (path, leaf) if with_path else leaf

    @property
    def variables(self):
        """Every tf.Variable of this module and its sub-modules, each once (a tuple)."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self):
        """The trainable ones among `variables`."""
        return tuple(v for v in self.variables if v.trainable)

    @property
    def non_trainable_variables(self):
        """The ones among `variables` that are not trainable."""
        return tuple(v for v in self.variables if not v.trainable)

    @property
    def submodules(self):
        """Every module below this one (not this one), each once (a tuple)."""
        return tuple(self._flatten(predicate=_is_module))

    def __repr__(self):
        return f"<{type(self).__module__}.{type(self).__name__} object named '{self._name}'>"
