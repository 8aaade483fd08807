"""Python gradient functions: tf.custom_gradient, tf.recompute_grad, tf.grad_pass_through,
tf.RegisterGradient and tf.no_gradient, with TensorFlow's calling conventions over tapeflow's C++
custom_gradient, recompute_grad, grad_pass_through and gradient registry.

The gradient functions run during the C++ backward pass; an exception they raise reaches the
caller of tape.gradient() as it was raised (its class, message and traceback)."""

import functools
import inspect

from . import _tapeflow
from . import nest
from .errors import InvalidArgumentError

__all__ = ["custom_gradient", "recompute_grad", "grad_pass_through", "RegisterGradient", "no_gradient"]

no_gradient = _tapeflow.no_gradient


def _name_of(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


def _flat_tensors(structure):
    return [_tapeflow.convert_to_tensor(leaf) for leaf in nest.flatten(structure)]


def _flat_gradients(grads):
    """A gradient function's result as one tensor or None per input."""
    return [None if g is None else _tapeflow.convert_to_tensor(g) for g in nest.flatten(grads)]


def _accepts_variables(grad_fn):
    try:
        parameters = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return True
    return any(p.name == "variables" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _require_count(what, expected, grads, kind):
    if len(grads) != expected:
        raise InvalidArgumentError(
            f"[CustomGradient] {what} expected to return {expected} {kind}, but returned {len(grads)} instead.")


def _call_noting(what, fn, *args):
    """fn(*args); an exception it raises goes on unchanged, with a note naming `what`."""
    try:
        return fn(*args)
    except Exception as error:
        error.add_note(f"(raised in the {what})")
        raise


def _gradient_of(f, grad_fn, num_inputs):
    """The C++ gradient function of one call: (output cotangents, variables f read) -> one gradient
    per input, then one per variable, from TensorFlow's grad_fn(*upstream[, variables=...])."""
    what = f"custom_gradient function {_name_of(f)!r}"

    def gradient(upstream, variables):
        if variables and not _accepts_variables(grad_fn):
            raise TypeError(f"@tf.custom_gradient grad_fn must accept keyword argument 'variables', since function "
                            f"{_name_of(f)!r} uses variables: {[v.name for v in variables]}")

        def call():
            if not variables:
                return _flat_gradients(grad_fn(*upstream)), []
            input_grads, variable_grads = grad_fn(*upstream, variables=list(variables))
            return _flat_gradients(input_grads), _flat_gradients(list(variable_grads))

        input_grads, variable_grads = _call_noting(f"gradient function of {what}", call)
        _require_count(what, num_inputs, input_grads, "gradients")
        _require_count(f"Must return gradient for each variable from @custom_gradient grad_fn: {what}",
                       len(variables), variable_grads, "variable gradients")
        return input_grads + variable_grads

    return gradient


def custom_gradient(f=None):
    """Decorates `f` so that its gradient is the one `f` returns: `f(*x)` returns `(y, grad_fn)`,
    where `grad_fn(*upstream)` returns the gradients of the inputs `x` (one per input) given one
    upstream gradient per output of `y`. If `f` reads trainable variables, `grad_fn` takes them as
    a `variables=` keyword and returns `(input_gradients, variable_gradients)`.

        @tf.custom_gradient
        def clip_gradients(x):      # the identity, whose gradient is clipped to [-1, 1]
            def grad(upstream):
                return tf.clip_by_value(upstream, -1.0, 1.0)
            return tf.identity(x), grad

    The call is recorded as one op whose gradient is `grad_fn`; the ops inside `f` and `grad_fn`
    are recorded too, so nested tapes differentiate `grad_fn` again. Keyword arguments are passed
    to `f` but get no gradient. Works inside tf.function."""
    if f is None:
        return lambda f: custom_gradient(f)

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        inputs = _flat_tensors(args)
        structure = []

        def forward(tensors):
            result, grad_fn = f(*nest.pack_sequence_as(args, tensors), **kwargs)
            if grad_fn is not None and not callable(grad_fn):
                raise TypeError(f"@tf.custom_gradient function {_name_of(f)!r} must return (outputs, grad_fn) "
                                f"with a callable grad_fn, not {type(grad_fn).__name__}")
            structure.append(result)
            return _flat_tensors(result), (None if grad_fn is None else _gradient_of(f, grad_fn, len(inputs)))

        outputs = _tapeflow._custom_gradient(inputs, forward)
        return nest.pack_sequence_as(structure[0], outputs)

    return decorated


def _block(wrap, f):
    """`f` run by tapeflow's block wrapper `wrap` (recompute_grad, grad_pass_through) on the flat
    tensors of its positional arguments, its result packed as `f` returned it."""

    @functools.wraps(f)
    def decorated(*args, **kwargs):
        structure = []

        def block(tensors):
            result = f(*nest.pack_sequence_as(args, tensors), **kwargs)
            structure[:] = [result]
            return _flat_tensors(result)

        outputs = wrap(_flat_tensors(args), block)
        return nest.pack_sequence_as(structure[0], outputs)

    return decorated


def recompute_grad(f):
    """Decorates `f` so that the tape keeps only its inputs: its forward runs unrecorded and is run
    again during the backward pass (gradient checkpointing). Gradients are the same, variables
    `f` reads included; the memory kept between forward and backward drops to the inputs."""
    return _block(_tapeflow._recompute_grad, f)


def grad_pass_through(f):
    """Wraps `f` so that its gradient is the identity (the straight-through estimator): the forward
    pass runs `f`, the backward pass passes output i's gradient to input i unchanged, so gradients
    flow through steps that have none (rounding, casts, assignments). `f` must return one output
    per input, of that input's shape and dtype; variables `f` reads get no gradient."""
    return _block(_tapeflow._grad_pass_through, f)


class RegisterGradient:
    """Decorator registering a Python gradient function for an op name: `fn(op, *grads)` receives
    the recorded op (`op.type`, `op.inputs`, `op.outputs`: the ones the op keeps for its gradient)
    and one upstream gradient per output, and returns one gradient (or None) per input.

        @tf.RegisterGradient("Sin")
        def _sin_grad(op, grad):
            return grad * tf.cos(op.inputs[0])

    As in tapeflow's C++ register_gradient, it replaces the op's gradient (tapeflow's own
    included) for every later gradient computation."""

    def __init__(self, op_type):
        if not isinstance(op_type, str):
            raise TypeError(f"op_type must be a string, not {type(op_type).__name__}")
        self._op_type = op_type

    def __call__(self, f):
        op_type = self._op_type
        what = f"gradient function {_name_of(f)!r} registered for {op_type}"

        def gradient(op, upstream):
            grads = _call_noting(what, f, op, *upstream)
            grads = _flat_gradients(grads if isinstance(grads, (list, tuple)) else [grads])
            if len(grads) != len(op.inputs):
                raise InvalidArgumentError(f"[{op_type}] Num gradients {len(grads)} generated for op {op_type} do "
                                           f"not match num inputs {len(op.inputs)} ({what})")
            return grads

        _tapeflow._register_gradient(op_type, gradient)
        return f
