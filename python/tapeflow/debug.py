"""tf.debug: tapeflow's diagnostics of a tape."""

from . import _tapeflow
from ._tapeflow import GradientDiagnosis

__all__ = ["explain", "GradientDiagnosis"]


def explain(tape, target, source):
    """Why `tape.gradient(target, source)` is None (or zero), or the path the gradient takes: a
    GradientDiagnosis whose `cause` names the reason ("TensorNotWatched", "StopGradient", ...) and
    whose str() is one readable line saying what happened and how to fix it. It agrees with
    gradient(), changes nothing on the tape and may be called before gradient() on a
    non-persistent tape."""
    return _tapeflow._explain(tape._tape, target, source)
