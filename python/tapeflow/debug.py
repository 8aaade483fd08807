"""tf.debug: tapeflow's diagnostics of a tape."""

from . import _tapeflow
from . import nest
from ._tapeflow import GradientDiagnosis, GradientReport

__all__ = ["explain", "GradientDiagnosis", "gradient_report", "GradientReport", "to_dot", "to_svg", "Svg",
           "memory_report"]


def explain(tape, target, source):
    """Why `tape.gradient(target, source)` is None (or zero), or the path the gradient takes: a
    GradientDiagnosis whose `cause` names the reason ("TensorNotWatched", "StopGradient", ...) and
    whose str() is one readable line saying what happened and how to fix it. It agrees with
    gradient(), changes nothing on the tape and may be called before gradient() on a
    non-persistent tape."""
    return _tapeflow._explain(tape._tape, target, source)


def gradient_report(tape, target, variables, relative_vanishing=1e-7, absolute_vanishing=1e-12, exploding=1e3):
    """Each variable's gradient norm beside its own norm, flagging missing, vanishing and exploding
    gradients (with explain()'s reason for a missing one). `variables` is a list of variables or a
    tf.Module (its trainable_variables). Call it before gradient() on a non-persistent tape."""
    if hasattr(variables, "trainable_variables"):
        variables = variables.trainable_variables
    return _tapeflow._gradient_report(tape._tape, target, list(variables), relative_vanishing, absolute_vanishing,
                                      exploding)


def to_dot(tape, targets, sources, gradient_norms=True, show_variable_reads=False, show_constants=True, title=""):
    """The recorded graph from `sources` to `targets` in Graphviz's dot language, the gradient's
    path drawn in colour and each edge labelled with its gradient's norm."""
    return _tapeflow._to_dot(tape._tape, nest.flatten(targets), nest.flatten(sources), gradient_norms,
                             show_variable_reads, show_constants, title)


class Svg(str):
    """An SVG picture (a str of its text) that a notebook shows as the picture."""

    def _repr_svg_(self):
        return str(self)

    def save(self, path):
        """Writes the picture to `path`."""
        with open(path, "w", encoding="utf-8") as f:
            f.write(self)


def to_svg(tape, targets, sources, **options):
    """to_dot()'s graph drawn by Graphviz as an Svg (shown as a picture in a notebook)."""
    return Svg(_tapeflow._render_svg(to_dot(tape, targets, sources, **options)))


def memory_report(tape):
    """A table of the tensors the tape keeps for its backward pass, and their total bytes."""
    return _tapeflow._memory_report(tape._tape)
