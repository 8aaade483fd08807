"""tf.GradientTape and tf.UnconnectedGradients."""

import contextlib
import enum

from . import _tapeflow
from . import nest

__all__ = ["GradientTape", "UnconnectedGradients"]


class UnconnectedGradients(enum.Enum):
    """What gradient() returns for a source the targets do not depend on."""
    NONE = "none"
    ZERO = "zero"


def _zero_for_unconnected(unconnected_gradients):
    try:
        return UnconnectedGradients(unconnected_gradients) is UnconnectedGradients.ZERO
    except ValueError:
        raise ValueError(f"Unknown value for unconnected_gradients: {unconnected_gradients!r}") from None


class GradientTape:
    """Records the operations run inside `with tf.GradientTape() as tape:` and computes
    gradients of recorded targets with respect to sources (reverse-mode differentiation).

    persistent: allow gradient() more than once (resources are kept until the tape is deleted).
    watch_accessed_variables: watch every trainable variable read while recording.
    """

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._tape = _tapeflow._Tape(persistent, watch_accessed_variables)
        self._recording = False

    def __enter__(self):
        self._tape.enter()
        self._recording = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        self._recording = False
        self._tape.exit()
        return False

    def watch(self, tensor):
        """Watches a tensor, a variable, or a nested structure of them."""
        self._tape.watch(nest.flatten(tensor))

    @contextlib.contextmanager
    def stop_recording(self):
        """A block inside `with tape:` whose operations the tape does not record."""
        if not self._recording:
            raise ValueError("Tape must be recording when stop_recording is called: use it inside "
                             "`with tape:`")
        self._tape.pause()
        try:
            yield
        finally:
            self._tape.resume()

    def reset(self):
        """Clears what the tape recorded, as if it had just been entered."""
        self._tape.reset()

    def watched_variables(self):
        """The variables the tape watches, in the order it first watched them."""
        return tuple(self._tape.watched_variables())

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """The gradient of the sum of `target` (a tensor or nested structure of tensors) with
        respect to each of `sources` (any nested structure), packed as `sources`; None (or zeros
        with unconnected_gradients=ZERO) for a source the targets do not depend on."""
        zero = _zero_for_unconnected(unconnected_gradients)
        seeds = None if output_gradients is None else nest.flatten(output_gradients)
        grads = self._tape.gradient(nest.flatten(target), nest.flatten(sources), seeds, zero)
        return nest.pack_sequence_as(sources, grads)

    def jacobian(self, target, sources, unconnected_gradients=UnconnectedGradients.NONE,
                 parallel_iterations=None, experimental_use_pfor=True):
        """d target[i...] / d source[j...] for each source, of shape target.shape + source.shape."""
        del parallel_iterations
        zero = _zero_for_unconnected(unconnected_gradients)
        jacobians = self._tape.jacobian(target, nest.flatten(sources), zero, experimental_use_pfor)
        return nest.pack_sequence_as(sources, jacobians)

    def batch_jacobian(self, target, source, unconnected_gradients=UnconnectedGradients.NONE,
                       parallel_iterations=None, experimental_use_pfor=True):
        """The jacobian of each example of a batch: shape (batch,) + target.shape[1:] +
        source.shape[1:], where target[i] depends only on source[i]."""
        del parallel_iterations, experimental_use_pfor
        return self._tape.batch_jacobian(target, source, _zero_for_unconnected(unconnected_gradients))
