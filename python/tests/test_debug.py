"""tf.debug.explain from Python: why a gradient is missing, or the path it takes."""

import pytest

import tapeflow as tf


def test_explain_says_why_a_tensor_the_tape_never_watched_has_no_gradient():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        y = x * x
    why = tf.debug.explain(tape, y, x)
    assert tape.gradient(y, x) is None
    assert (why.cause, why.has_gradient) == ("TensorNotWatched", False)
    assert "watch" in str(why)


def test_explain_names_the_op_where_the_path_breaks():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stop_gradient(x * x)
    why = tf.debug.explain(tape, y, x)
    assert (why.cause, why.op) == ("StopGradient", "StopGradient")
    assert "StopGradient" in repr(why)


def test_explain_shows_the_path_of_a_connected_source():
    w = tf.Variable(2.0, name="w")
    with tf.GradientTape() as tape:
        y = tf.sin(w * w)
    why = tf.debug.explain(tape, y, w)
    assert (why.cause, why.has_gradient, why.source) == ("Connected", True, "w:0")
    assert why.path == ["Sin", "Mul", "ReadVariableOp"]
    assert str(why) == "connected: target <- Sin <- Mul <- ReadVariableOp <- w:0"


def test_explain_runs_python_gradient_functions_it_needs():
    @tf.custom_gradient
    def zero_gradient(x):
        return x * 2.0, lambda upstream: upstream * 0.0

    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = zero_gradient(x)
    assert tf.debug.explain(tape, y, x).cause == "ZeroGradient"


def test_explain_on_a_tape_never_entered_is_a_failed_precondition():
    x = tf.constant(1.0)
    with pytest.raises(tf.errors.FailedPreconditionError,
                       match=r"\[GradientTape.explain\] the tape has recorded nothing"):
        tf.debug.explain(tf.GradientTape(), x, x)


def test_explain_of_a_source_that_is_not_a_tensor_is_a_type_error():
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        y = x * x
    with pytest.raises(TypeError,
                       match=r"\[explain\] the source must be a tf.Tensor or tf.Variable, not <class 'float'>"):
        tf.debug.explain(tape, y, 1.0)


def test_gradient_report_flags_a_missing_gradient_and_prints_a_table():
    used, unused = tf.Variable([1.0, 2.0], name="used"), tf.Variable(3.0, name="unused")
    with tf.GradientTape(persistent=True) as tape:
        loss = tf.reduce_sum(used * used)
    report = tf.debug.gradient_report(tape, loss, [used, unused])
    assert not report.ok()
    by_name = {row.name: row for row in report.rows}
    assert by_name["used:0"].norm == pytest.approx((4 + 16) ** 0.5)
    assert by_name["unused:0"].norm is None and by_name["unused:0"].why is not None
    assert "unused:0" in str(report)


def test_to_svg_draws_the_gradient_path_and_shows_in_a_notebook(tmp_path):
    x = tf.Variable(2.0)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.sin(x) * x
    dot = tf.debug.to_dot(tape, y, x)
    assert dot.startswith("digraph") and "Sin" in dot
    svg = tf.debug.to_svg(tape, y, x)
    assert svg._repr_svg_().lstrip().startswith(("<?xml", "<svg"))
    svg.save(tmp_path / "flow.svg")
    assert (tmp_path / "flow.svg").read_text() == svg


def test_memory_report_lists_what_the_tape_keeps():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.exp(x)
    assert "Exp" in tf.debug.memory_report(tape)
