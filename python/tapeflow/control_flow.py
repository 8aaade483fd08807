"""tf.cond and tf.while_loop: control flow that a tape differentiates and tf.function traces into
its graph (the branches and the body become subgraphs; Python's if and while run once, at trace
time). tf.vectorized_map: a function of one element run as one batched computation."""

from . import _tapeflow
from . import nest

__all__ = ["cond", "vectorized_map", "while_loop"]


def _flat_tensors(structure, what):
    leaves = nest.flatten(structure)
    try:
        return [_tapeflow.convert_to_tensor(leaf) for leaf in leaves]
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what} must return tensors (or nested structures of them): {e}") from e


def cond(pred, true_fn=None, false_fn=None, name=None):
    """true_fn() if pred else false_fn(); both branches return the same structure of tensors with
    the same dtypes."""
    del name
    if not callable(true_fn) or not callable(false_fn):
        raise TypeError("true_fn and false_fn must be callable")
    structure = []

    def branch(fn, what):
        def run():
            result = fn()
            if not structure:
                structure.append(result)
            return _flat_tensors(result, what)
        return run

    flat = _tapeflow.cond_flat(pred, branch(true_fn, "true_fn"), branch(false_fn, "false_fn"))
    return nest.pack_sequence_as(structure[0], flat)


def while_loop(cond, body, loop_vars, shape_invariants=None, parallel_iterations=10, back_prop=True,
               swap_memory=False, maximum_iterations=None, name=None):
    """Repeats `loop_vars = body(*loop_vars)` while `cond(*loop_vars)`; loop_vars is a tuple or
    list (or any nested structure) of tensors, and body returns the same structure."""
    del shape_invariants, parallel_iterations, back_prop, swap_memory, name
    if not callable(cond) or not callable(body):
        raise TypeError("cond and body must be callable")
    packed_as_list = isinstance(loop_vars, (list, tuple))
    structure = loop_vars if packed_as_list else [loop_vars]

    def args_of(flat):
        return nest.pack_sequence_as(structure, flat)

    def run_cond(flat):
        return _tapeflow.convert_to_tensor(cond(*args_of(flat)))

    def run_body(flat):
        result = body(*args_of(flat))
        if not packed_as_list:
            result = [result]
        return _flat_tensors(result, "body")

    flat = _tapeflow.while_loop_flat(run_cond, run_body, _flat_tensors(structure, "loop_vars"), maximum_iterations)
    result = nest.pack_sequence_as(structure, flat)
    return result if packed_as_list else result[0]


def vectorized_map(fn, elems, fallback_to_while_loop=True, warn=True):
    """fn applied to every slice of elems along its first axis (elems: a tensor or a nested
    structure of tensors with one first dimension), computed as one batched computation: fn runs
    once, traced on the first element, and each of its ops runs on the whole batch. An op without a
    batching rule runs per element (a one-time warning names it), or raises UnimplementedError
    with fallback_to_while_loop=False."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    leaves = nest.flatten(elems)
    try:
        flat_elems = [_tapeflow.convert_to_tensor(leaf) for leaf in leaves]
    except (TypeError, ValueError) as e:
        raise TypeError(f"elems must be tensors (or nested structures of them): {e}") from e
    structure = []

    def run(flat):
        result = fn(nest.pack_sequence_as(elems, flat))
        if not structure:
            structure.append(result)
        return _flat_tensors(result, "fn")

    flat = _tapeflow.vectorized_map_flat(run, flat_elems, bool(fallback_to_while_loop), bool(warn))
    return nest.pack_sequence_as(structure[0], flat)
