"""tf.data: input pipelines (tapeflow/data/dataset.h).

    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000, seed=1).batch(32)
    ds = ds.map(lambda x, y: (x / 255.0, y), num_parallel_calls=tf.data.AUTOTUNE).prefetch(2)
    for x_batch, y_batch in ds:        # each loop is a new epoch (reshuffled)
        ...

An element is a tuple of tensors, or a lone tensor when the dataset was made from one: iteration
yields it in that form and `map` passes its components as the function's arguments (dicts and
nested tuples are not supported; a list is one tensor, as in TensorFlow's sources). The pipeline
runs in C++; a Python map function runs with the GIL (on map's worker threads when
num_parallel_calls > 1, one at a time), and the elements keep their order.
"""

from . import _tapeflow
from ._tapeflow import convert_to_tensor, constant, int64

_data = _tapeflow.data
AUTOTUNE = _data.AUTOTUNE
INFINITE_CARDINALITY = _data.INFINITE_CARDINALITY
UNKNOWN_CARDINALITY = _data.UNKNOWN_CARDINALITY


class _Structure:
    """Whether elements are tuples or lone tensors, shared by a dataset and those built on it
    without a map. A map learns it from its function's first result."""

    __slots__ = ("is_tuple",)

    def __init__(self, is_tuple):
        self.is_tuple = is_tuple

    def pack(self, components):
        return tuple(components) if self.is_tuple else components[0]


def _components(value, structures=(tuple,)):
    """A tuple (what `structures` names) as its components and True; anything else, a list of
    numbers say, as one component and False."""
    return (list(value), True) if isinstance(value, structures) else ([value], False)


def _count(count):
    return -1 if count is None else count


class Dataset:
    """A pipeline of elements (tf.data.Dataset); every method returns a new Dataset."""

    def __init__(self, impl, structure):
        self._impl = impl
        self._structure = structure

    def _derived(self, impl):
        return Dataset(impl, self._structure)

    @staticmethod
    def from_tensor_slices(tensors):
        """The slices along the first dimension of a tensor, or of each tensor of a tuple (their
        first dimensions must agree)."""
        components, is_tuple = _components(tensors)
        return Dataset(_data._Dataset.from_tensor_slices(components), _Structure(is_tuple))

    @staticmethod
    def from_tensors(tensors):
        """One element: the tensor, or the tuple of tensors."""
        components, is_tuple = _components(tensors)
        return Dataset(_data._Dataset.from_tensors(components), _Structure(is_tuple))

    @staticmethod
    def range(*args):
        """int64 scalars as Python's range(stop), range(start, stop) or range(start, stop, step)."""
        start, stop, step = (0, args[0], 1) if len(args) == 1 else (*args, 1)[:3]
        return Dataset(_data._Dataset.range(start, stop, step), _Structure(False))

    @staticmethod
    def from_csv(path, header=False, field_delim=",", column_types=None):
        """tapeflow's numeric CSV reader: a tuple of scalars per line, one per column (int32 when
        every field of the column is an integer, else float32, unless column_types says)."""
        impl = _data._Dataset.from_csv(str(path), header, field_delim, list(column_types or []))
        return Dataset(impl, _Structure(True))

    def map(self, map_func, num_parallel_calls=None, deterministic=None):
        """map_func applied to every element: its components are the arguments. The output keeps
        the input's order whatever num_parallel_calls (deterministic=False is accepted and
        changes nothing)."""
        del deterministic
        structure, inputs = _Structure(None), self._structure

        def call(components):
            # The input's structure is known by now: its own map (if any) has run.
            out = map_func(*components) if inputs.is_tuple else map_func(components[0])
            outputs, structure.is_tuple = _components(out, (tuple, list))
            return [convert_to_tensor(o) for o in outputs]

        calls = 1 if num_parallel_calls is None else num_parallel_calls
        return Dataset(self._impl.map(call, calls), structure)

    def shuffle(self, buffer_size, seed=None, reshuffle_each_iteration=None):
        """A random order through a buffer of buffer_size elements, new for each iteration unless
        reshuffle_each_iteration=False; the same for the same seed."""
        reshuffle = True if reshuffle_each_iteration is None else reshuffle_each_iteration
        return self._derived(self._impl.shuffle(buffer_size, seed, reshuffle))

    def batch(self, batch_size, drop_remainder=False, num_parallel_calls=None, deterministic=None):
        """Consecutive elements stacked along a new first dimension."""
        del num_parallel_calls, deterministic
        return self._derived(self._impl.batch(batch_size, drop_remainder))

    def padded_batch(self, batch_size, padded_shapes=None, padding_values=None, drop_remainder=False):
        """batch() padding each component to padded_shapes (None or -1 dimensions: the longest in
        the batch) with padding_values (0 by default)."""
        shapes = values = None
        if padded_shapes is not None:
            # One shape is a list of dimensions; a tuple of them has lists (or tuples) inside.
            nested = len(padded_shapes) > 0 and isinstance(padded_shapes[0], (tuple, list))
            shapes = padded_shapes if nested else [padded_shapes]
            shapes = [[-1 if d is None else int(d) for d in shape] for shape in shapes]
        if padding_values is not None:
            values = padding_values if isinstance(padding_values, tuple) else [padding_values]
            values = [float(convert_to_tensor(v).numpy()) for v in values]
        return self._derived(self._impl.padded_batch(batch_size, shapes, values, drop_remainder))

    def prefetch(self, buffer_size):
        """Up to buffer_size elements produced ahead on a background thread."""
        return self._derived(self._impl.prefetch(buffer_size))

    def repeat(self, count=None):
        """The dataset count times, forever when count is None or -1."""
        return self._derived(self._impl.repeat(_count(count)))

    def take(self, count):
        """The first count elements (-1: all)."""
        return self._derived(self._impl.take(count))

    def skip(self, count):
        """All but the first count elements (-1: none)."""
        return self._derived(self._impl.skip(count))

    def shard(self, num_shards, index):
        """Every num_shards-th element, starting at index."""
        return self._derived(self._impl.shard(num_shards, index))

    def cardinality(self):
        """The number of elements as an int64 scalar tensor, or INFINITE_CARDINALITY or
        UNKNOWN_CARDINALITY."""
        return constant(self._impl.cardinality(), dtype=int64)

    def __len__(self):
        n = self._impl.cardinality()
        if n == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if n == UNKNOWN_CARDINALITY:
            raise TypeError("The dataset length is unknown.")
        return n

    def __iter__(self):
        return Iterator(self._impl.make_iterator(), self._structure)


class Iterator:
    """One iteration over a Dataset; each is a new epoch. Its position can be saved (a tensor) and
    restored into an iterator over the same pipeline, built again after a restart."""

    def __init__(self, impl, structure):
        self._impl = impl
        self._structure = structure

    def __iter__(self):
        return self

    def __next__(self):
        element = self._impl.next()
        if element is None:
            raise StopIteration
        return self._structure.pack(element)

    def get_next(self):
        """The next element; raises tf.errors.OutOfRangeError at the end, as TensorFlow does."""
        try:
            return next(self)
        except StopIteration:
            raise _tapeflow.errors.OutOfRangeError("End of sequence") from None

    def save_state(self):
        """The position, an int64 tensor [epoch, elements produced] to keep in a checkpoint."""
        return self._impl.save_state()

    def restore_state(self, state):
        """Moves to a position save_state() gave."""
        self._impl.restore_state(convert_to_tensor(state))


def TextLineDataset(filenames):  # noqa: N802 (TensorFlow's name)
    """The lines of a text file, each as an int32 tensor of its Unicode code points (tapeflow has
    no string dtype)."""
    return Dataset(_data._Dataset.text_line_dataset(str(filenames)), _Structure(False))
