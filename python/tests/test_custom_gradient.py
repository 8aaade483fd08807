"""tf.custom_gradient, tf.recompute_grad and tf.grad_pass_through from Python: gradient functions
written in Python, run by the C++ backward pass."""

import gc
import subprocess
import sys
import textwrap
import threading
import weakref

import numpy as np
import pytest

import tapeflow as tf


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(x)

    def grad(upstream):
        return upstream * (1 - 1 / (1 + e))

    return tf.math.log(1 + e), grad


def gradient_at(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return tape.gradient(y, x)


def test_the_gradient_is_the_one_the_function_returns():
    # The ops' own gradient of log(1 + e^x) is inf / inf = NaN at x = 100; grad_fn's is 1.
    naive = gradient_at(lambda x: tf.math.log(1 + tf.exp(x)), 100.0)
    assert np.isnan(naive.numpy())
    assert float(gradient_at(log1pexp, 100.0)) == 1.0


def test_each_input_gets_the_gradient_grad_fn_returns_for_it():
    @tf.custom_gradient
    def product(x, y):
        return x * y, lambda upstream: (upstream * 10.0, upstream * 100.0)

    x, y = tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = product(x, y)
    assert float(z) == 6.0
    assert [float(g) for g in tape.gradient(z, [x, y])] == [10.0, 100.0]


def test_grad_fn_gets_one_upstream_gradient_per_output_and_the_outputs_keep_their_structure():
    @tf.custom_gradient
    def two_outputs(x):
        def grad(upstream_first, upstream_second):
            return upstream_first + 10.0 * upstream_second

        return (x * 2.0, [x * 3.0]), grad

    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        first, [second] = two_outputs(x)
        loss = first + 2.0 * second  # upstream gradients 1 and 2
    assert (float(first), float(second)) == (2.0, 3.0)
    assert float(tape.gradient(loss, x)) == 21.0


def test_variables_read_inside_get_the_gradients_grad_fn_returns_for_them():
    w = tf.Variable(3.0, name="w")

    @tf.custom_gradient
    def scale(x):
        def grad(upstream, variables=None):
            assert [v.name for v in variables] == [w.name]
            return upstream * 10.0, [upstream * 100.0]

        return x * w, grad

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scale(x)
    assert [float(g) for g in tape.gradient(y, [x, w])] == [10.0, 100.0]


def test_grad_fn_without_the_variables_keyword_is_a_type_error_when_variables_are_read():
    w = tf.Variable(3.0, name="w")

    @tf.custom_gradient
    def scale(x):
        return x * w, lambda upstream: upstream

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scale(x)
    with pytest.raises(TypeError,
                       match=r"grad_fn must accept keyword argument 'variables'.*scale' uses variables: \['w:0'\]"):
        tape.gradient(y, x)


def test_grad_fn_returning_too_many_gradients_is_an_invalid_argument_naming_the_function():
    @tf.custom_gradient
    def double(x):
        return x * 2.0, lambda upstream: (upstream, upstream)

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="function 'test_.*double' expected to return 1 gradients, but returned 2"):
        gradient_at(double, 1.0)


def test_grad_fn_returning_a_gradient_per_input_but_none_per_variable_is_an_invalid_argument():
    # Without the check, [dx] + [] would be one gradient short, and [dx, dx] + [] would give the
    # variable the second input gradient.
    w = tf.Variable(3.0, name="w")

    @tf.custom_gradient
    def scale(x):
        return x * w, lambda upstream, variables: (upstream, [])

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="Must return gradient for each variable.*'test_.*scale' expected to return 1 "
                             "variable gradients, but returned 0"):
        gradient_at(scale, 1.0)


def test_grad_fn_returning_a_gradient_of_the_wrong_shape_is_an_invalid_argument_naming_both_shapes():
    @tf.custom_gradient
    def widen(x):
        return x * 2.0, lambda upstream: tf.zeros([3])

    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"gradient of shape \(3,\) and dtype float32 for input 0, which has shape \(\)"):
        gradient_at(widen, 1.0)


def test_an_exception_in_grad_fn_reaches_the_caller_with_its_class_and_message():
    @tf.custom_gradient
    def lookup(x):
        def grad(upstream):
            raise KeyError("no gradient table entry")

        return x * 2.0, grad

    with pytest.raises(KeyError, match="no gradient table entry") as caught:
        gradient_at(lookup, 1.0)
    assert any("'test_an_exception_in_grad_fn" in note and "lookup'" in note for note in caught.value.__notes__)


def test_an_exception_in_the_function_itself_reaches_the_caller_unchanged():
    @tf.custom_gradient
    def broken(x):
        raise ZeroDivisionError("forward failed")

    with pytest.raises(ZeroDivisionError, match="forward failed"):
        broken(tf.constant(1.0))


def test_a_grad_fn_that_is_not_callable_is_a_type_error_naming_the_function():
    @tf.custom_gradient
    def no_function(x):
        return x, 42

    with pytest.raises(TypeError, match="'test_.*no_function' must return .*callable grad_fn, not int"):
        no_function(tf.constant(1.0))


def test_a_missing_grad_fn_is_an_invalid_argument():
    @tf.custom_gradient
    def no_function(x):
        return x, None

    with pytest.raises(tf.errors.InvalidArgumentError, match="returned no gradient function"):
        no_function(tf.constant(1.0))


def test_grad_fn_is_differentiated_again_by_an_outer_tape():
    @tf.custom_gradient
    def cube(x):
        return x * x * x, lambda upstream: upstream * 5.0 * x * x  # deliberately not 3x^2

    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    assert float(dy) == 20.0
    assert float(outer.gradient(dy, x)) == 20.0  # d(5x^2)/dx = 10x


def test_inside_tf_function_the_gradient_is_still_grad_fns():
    @tf.custom_gradient
    def triple(x):
        return x * 3.0, lambda upstream: upstream * 100.0

    traced = tf.function(lambda x: triple(x) * 2.0)
    x = tf.constant([1.0, 2.0])
    for _ in range(2):  # the tracing call, then a call of the traced function
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = traced(x)
        np.testing.assert_array_equal(y.numpy(), [6.0, 12.0])
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [200.0, 200.0])


def test_a_gradient_taken_inside_tf_function_runs_grad_fn_only_while_tracing():
    calls = []

    @tf.custom_gradient
    def triple(x):
        def grad(upstream):
            calls.append(upstream)
            return upstream * 100.0

        return x * 3.0, grad

    @tf.function
    def gradient_inside(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = triple(x)
        return tape.gradient(y, x)

    x = tf.constant([1.0, 2.0])
    for _ in range(2):
        np.testing.assert_array_equal(gradient_inside(x).numpy(), [100.0, 100.0])
    assert len(calls) == 1  # the second call ran the graph, which holds grad_fn's ops


def test_the_tape_releases_grad_fn_when_it_is_deleted():
    released = []

    @tf.custom_gradient
    def double(x):
        def grad(upstream):
            return upstream * 2.0

        weakref.finalize(grad, released.append, "grad_fn")
        return x * 2.0, grad

    x = tf.constant(1.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = double(x)
    assert float(tape.gradient(y, x)) == 2.0
    assert released == []  # the persistent tape may be asked again
    del tape
    gc.collect()
    assert released == ["grad_fn"]


def test_gradients_on_several_threads_at_once_each_call_back_into_python():
    # Every thread's backward pass runs without the GIL and takes it for each grad_fn call.
    results, errors = [], []

    def work(value):
        try:
            for _ in range(20):
                results.append(float(gradient_at(log1pexp, value)))
        except Exception as error:  # reported below, not lost in the thread
            errors.append(error)

    threads = [threading.Thread(target=work, args=(100.0,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert results == [1.0] * 80


def test_recompute_grad_gives_the_gradients_of_the_function_itself():
    w = tf.Variable([0.5, -1.0], name="w")

    def block(x):
        return tf.reduce_sum(tf.sin(x * w) * x)

    x = tf.constant([1.0, 2.0])
    gradients = []
    for f in (block, tf.recompute_grad(block)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        gradients.append([g.numpy() for g in tape.gradient(y, [x, w])])
    for plain, recomputed in zip(*gradients):
        np.testing.assert_allclose(recomputed, plain, rtol=1e-6)


def test_recompute_grad_runs_the_function_again_in_the_backward_pass():
    calls = []

    @tf.recompute_grad
    def block(x):
        calls.append(x)
        return x * x

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = block(x)
    assert len(calls) == 1
    assert float(tape.gradient(y, x)) == 6.0
    assert len(calls) == 2


def test_an_exception_in_a_recomputed_block_reaches_the_caller_with_its_class():
    runs = []

    @tf.recompute_grad
    def block(x):
        runs.append(x)
        if len(runs) > 1:
            raise KeyError("not in the backward pass")
        return x * x

    with pytest.raises(KeyError, match="not in the backward pass"):
        gradient_at(block, 3.0)


def test_grad_pass_through_gives_the_identity_gradient_through_a_step_without_one():
    def truncate(x):
        return tf.cast(tf.cast(x, tf.int32), tf.float32)

    assert gradient_at(truncate, 2.7) is None
    straight_through = tf.grad_pass_through(truncate)
    assert float(straight_through(tf.constant(2.7))) == 2.0
    assert float(gradient_at(straight_through, 2.7)) == 1.0


def test_grad_pass_through_needs_one_output_like_each_input():
    halve = tf.grad_pass_through(lambda x: x[:1])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"output 0 has shape \(1,\).*input 0 has shape \(2,\)"):
        halve(tf.constant([1.0, 2.0]))


def run_in_a_fresh_interpreter(*parts):
    """Runs the program `parts` (each indented as it likes) after `import tapeflow as tf` in a new
    interpreter, since a registered gradient stays registered for the life of the process; returns
    what it printed."""
    program = "\n".join(["import tapeflow as tf"] + [textwrap.dedent(part) for part in parts])
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout


SIN_AT_HALF = """
    x = tf.constant(0.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sin(x)
"""


def test_a_registered_gradient_replaces_the_ops_own():
    printed = run_in_a_fresh_interpreter("""
        @tf.RegisterGradient("Sin")
        def _sin_grad(op, grad):
            return grad * 100.0 * tf.cos(op.inputs[0])
    """, SIN_AT_HALF, """
        print(float(tape.gradient(y, x)))
    """)
    assert float(printed) == pytest.approx(100.0 * np.cos(0.5), rel=1e-6)


def test_the_op_shows_its_type_and_the_tensors_it_keeps_for_its_gradient():
    printed = run_in_a_fresh_interpreter("""
        seen = {}

        @tf.RegisterGradient("Exp")
        def _exp_grad(op, grad):
            seen.update(type=op.type, inputs=len(op.inputs), output=float(op.outputs[0]))
            try:
                op.inputs[0]  # Exp keeps only its output
            except tf.errors.InvalidArgumentError as error:
                seen["input"] = str(error)
            return grad * op.outputs[0]

        x = tf.constant(0.0)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.exp(x)
        tape.gradient(y, x)
        print(seen)
    """)
    seen = eval(printed)
    assert (seen["type"], seen["inputs"], seen["output"]) == ("Exp", 1, 1.0)
    assert "[Exp] the op does not keep its input 0 for the gradient" in seen["input"]


def test_the_op_cannot_be_read_after_the_gradient_function_returns():
    printed = run_in_a_fresh_interpreter("""
        kept = []

        @tf.RegisterGradient("Sin")
        def _sin_grad(op, grad):
            kept.append(op)
            return grad
    """, SIN_AT_HALF, """
        tape.gradient(y, x)
        try:
            kept[0].inputs[0]
        except tf.errors.FailedPreconditionError as error:
            print(error)
    """)
    assert "can be read only while that function runs" in printed


def test_a_registered_gradient_raising_key_error_surfaces_as_key_error_naming_the_function():
    printed = run_in_a_fresh_interpreter("""
        @tf.RegisterGradient("Sin")
        def _sin_grad(op, grad):
            raise KeyError("no such entry")
    """, SIN_AT_HALF, """
        try:
            tape.gradient(y, x)
        except KeyError as error:
            print(repr(error), error.__notes__)
    """)
    assert "KeyError('no such entry')" in printed
    assert "gradient function '_sin_grad' registered for Sin" in printed


def test_a_registered_gradient_returning_the_wrong_number_is_an_invalid_argument_naming_the_function():
    printed = run_in_a_fresh_interpreter("""
        @tf.RegisterGradient("Sin")
        def _sin_grad(op, grad):
            return grad, grad
    """, SIN_AT_HALF, """
        try:
            tape.gradient(y, x)
        except tf.errors.InvalidArgumentError as error:
            print(error)
    """)
    assert "[Sin] Num gradients 2 generated for op Sin do not match num inputs 1" in printed
    assert "'_sin_grad'" in printed


def test_no_gradient_makes_paths_through_the_op_give_none():
    printed = run_in_a_fresh_interpreter("""
        tf.no_gradient("Sin")
    """, SIN_AT_HALF, """
        print(tape.gradient(y, x))
    """)
    assert printed.strip() == "None"


def test_register_gradient_needs_an_op_name_string():
    with pytest.raises(TypeError, match="op_type must be a string"):
        tf.RegisterGradient(42)
