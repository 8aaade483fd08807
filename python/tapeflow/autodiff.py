"""tf.autodiff: forward-mode differentiation (ForwardAccumulator) beside the tape."""

from . import _tapeflow
from . import nest
from .tape import GradientTape, UnconnectedGradients, _zero_for_unconnected

__all__ = ["ForwardAccumulator", "GradientTape"]


class ForwardAccumulator:
    """Computes Jacobian-vector products alongside the forward pass, for the operations run inside
    `with tf.autodiff.ForwardAccumulator(primals, tangents) as acc:`.

        x = tf.constant([1.0, 2.0])
        with tf.autodiff.ForwardAccumulator(primals=x, tangents=tf.constant([1.0, 0.0])) as acc:
            y = tf.sin(x) * x
        acc.jvp(y)   # J v, with y's shape

    primals: a tensor, variable or nested structure of them; tangents: the same structure, each of
    its primal's shape (converted to its dtype). Operations outside the block get no tangents; jvp()
    answers after the block too. Accumulators and tapes nest: a tape entered outside records the
    accumulator's computations (reverse over forward), an accumulator entered outside a tape
    differentiates the tape's gradient computation (forward over reverse)."""

    def __init__(self, primals, tangents):
        nest.map_structure(lambda primal, tangent: None, primals, tangents)  # the same structure
        self._primals = nest.flatten(primals)
        self._tangents = nest.flatten(tangents)
        self._accumulator = None
        self._recording = False

    def __enter__(self):
        if self._recording:
            raise ValueError("Accumulator is already recording.")
        if self._accumulator is None:
            self._accumulator = _tapeflow._ForwardAccumulator(self._primals, self._tangents)
            self._primals = self._tangents = None
        else:
            self._accumulator.set_recording(True)
        self._recording = True
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self._recording:
            self._accumulator.set_recording(False)
            self._recording = False
        return False

    def jvp(self, primals, unconnected_gradients=UnconnectedGradients.NONE):
        """The tangent of each tensor (or variable) of the nested structure `primals`, packed as it:
        None (or zeros with unconnected_gradients=ZERO) where it does not depend on a watched primal."""
        zero = _zero_for_unconnected(unconnected_gradients)
        if self._accumulator is None:
            raise ValueError("Called jvp() without first tracing anything.")
        return nest.map_structure(lambda primal: self._accumulator.jvp(primal, zero), primals)
