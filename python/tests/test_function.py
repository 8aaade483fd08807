"""tf.function over Python functions: traced once per signature, then run as a graph."""

import numpy as np
import pytest

import tapeflow as tf


def test_the_body_runs_once_per_signature():
    calls = []

    @tf.function
    def f(x):
        calls.append(1)
        return x * x + 1.0

    for value in (1.0, 2.0, 3.0):
        assert float(f(tf.constant(value))) == value * value + 1.0
    assert len(calls) == 1
    assert f.experimental_get_tracing_count() == 1


def test_a_new_python_argument_value_traces_again():
    @tf.function
    def scale(x, k):
        return x * k

    assert float(scale(tf.constant(2.0), 3.0)) == 6.0
    assert float(scale(tf.constant(2.0), 5.0)) == 10.0
    assert scale.experimental_get_tracing_count() == 2


def test_results_keep_their_structure():
    @tf.function
    def parts(x):
        return {"square": x * x, "pair": (x + 1.0, "label")}

    out = parts(tf.constant(3.0))
    assert float(out["square"]) == 9.0
    assert float(out["pair"][0]) == 4.0 and out["pair"][1] == "label"


def test_a_tape_differentiates_through_a_function():
    w = tf.Variable(2.0)

    @tf.function
    def f(x):
        return w * x * x

    x = tf.constant(3.0)
    for _ in range(2):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        dx, dw = tape.gradient(y, [x, w])
        assert float(dx) == 12.0 and float(dw) == 9.0


def test_variables_are_read_at_call_time():
    v = tf.Variable(1.0)

    @tf.function
    def read():
        return v * 2.0

    assert float(read()) == 2.0
    v.assign(5.0)
    assert float(read()) == 10.0


def test_another_variable_of_the_same_kind_does_not_retrace():
    # TensorFlow keys a variable argument by dtype and shape: the graph reads the one passed.
    @tf.function
    def bump(v, x):
        v.assign_add(x)
        return v * 2.0

    a, b = tf.Variable([1.0, 2.0]), tf.Variable([10.0, 20.0])
    assert bump(a, tf.constant([1.0, 1.0])).numpy().tolist() == [4.0, 6.0]
    assert bump(b, tf.constant([1.0, 1.0])).numpy().tolist() == [22.0, 42.0]
    assert bump.experimental_get_tracing_count() == 1
    assert a.numpy().tolist() == [2.0, 3.0] and b.numpy().tolist() == [11.0, 21.0]
    bump(tf.Variable([1.0, 2.0, 3.0]), tf.constant([0.0, 0.0, 0.0]))  # another shape
    assert bump.experimental_get_tracing_count() == 2


def test_a_variable_argument_gets_its_gradient_through_the_graph():
    @tf.function
    def scaled(v, x):
        return tf.reduce_sum(v * x)

    a, b = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])
    for passed in (a, b, a):
        with tf.GradientTape() as tape:
            y = scaled(passed, tf.constant([5.0, 6.0]))
        da, db = tape.gradient(y, [a, b])
        got, other = (da, db) if passed is a else (db, da)
        assert got.numpy().tolist() == [5.0, 6.0] and other is None


def test_one_variable_passed_twice_is_another_signature_than_two():
    @tf.function
    def add(p, q):
        p.assign_add(1.0)
        q.assign_add(10.0)
        return p + q

    a, b, c = tf.Variable(0.0), tf.Variable(0.0), tf.Variable(0.0)
    assert float(add(a, a)) == 22.0
    assert float(add(b, c)) == 11.0
    assert add.experimental_get_tracing_count() == 2


def test_an_exception_in_the_body_propagates_with_its_type():
    @tf.function
    def broken(x):
        raise KeyError("from the body")

    with pytest.raises(KeyError, match="from the body"):
        broken(tf.constant(1.0))


def test_reading_a_traced_tensor_into_python_is_refused():
    # float(x) would fix this call's value into the graph for every later call.
    @tf.function
    def branchy(x):
        return x if float(x) > 0 else -x

    with pytest.raises(tf.errors.FailedPreconditionError, match="tf::function traced its body"):
        branchy(tf.constant(1.0))


@pytest.mark.parametrize("read", [lambda t: t.numpy(), np.asarray, lambda t: np.sum(t), lambda t: t.__reduce__()])
def test_reading_a_traced_tensors_elements_into_numpy_is_refused(read):
    # As float(x): the array would hold this call's values for every later call.
    @tf.function
    def f(x):
        y = x * 2.0
        read(y)
        return y

    with pytest.raises(tf.errors.FailedPreconditionError, match="read the value of a traced tensor"):
        f(tf.constant([1.0, 2.0]))


def test_a_captured_constant_still_reads_into_numpy_while_tracing():
    c = tf.constant([3.0, 4.0])

    @tf.function
    def f(x):
        return x * float(np.sum(c.numpy()))

    assert f(tf.constant([1.0, 2.0])).numpy().tolist() == [7.0, 14.0]


def test_numpy_arguments_are_tensors():
    @tf.function
    def total(x):
        return tf.reduce_sum(x)

    assert float(total(np.array([1.0, 2.0], dtype=np.float32))) == 3.0


def test_retrace_counts_are_tensorflows():
    # TensorFlow's tracing rules (its guide's "Rules of tracing"), each as a sequence of calls and
    # the trace count TensorFlow reaches after it.
    def count(calls):
        @tf.function
        def f(*args):
            return args

        for args in calls:
            f(*args)
        return f.experimental_get_tracing_count()

    a, b = tf.Variable([1.0, 2.0]), tf.Variable([3.0, 4.0])
    cases = {
        "tensors of one dtype and shape": ([tf.constant([1.0, 2.0])], [tf.constant([3.0, 4.0])]),
        "a tensor of another shape": ([tf.constant([1.0])], [tf.constant([1.0, 2.0])]),
        "a tensor of another dtype": ([tf.constant(1.0)], [tf.constant(1)]),
        "Python scalars, each value its own": ([1], [2], [1]),
        "variables of one dtype and shape": ([a], [b], [a]),
        "a variable of another shape": ([a], [tf.Variable([1.0])]),
        "lists of tensors of one length": ([[tf.constant(1.0), tf.constant(2.0)]], [[tf.constant(3.0), tf.constant(4.0)]]),
        "lists of another length": ([[tf.constant(1.0)]], [[tf.constant(1.0), tf.constant(2.0)]]),
        "dicts with the same keys": ([{"x": tf.constant(1.0)}], [{"x": tf.constant(2.0)}]),
        "dicts with other keys": ([{"x": tf.constant(1.0)}], [{"y": tf.constant(1.0)}]),
    }
    tensorflow = {
        "tensors of one dtype and shape": 1,
        "a tensor of another shape": 2,
        "a tensor of another dtype": 2,
        "Python scalars, each value its own": 2,
        "variables of one dtype and shape": 1,
        "a variable of another shape": 2,
        "lists of tensors of one length": 1,
        "lists of another length": 2,
        "dicts with the same keys": 1,
        "dicts with other keys": 2,
    }
    assert {name: count(calls) for name, calls in cases.items()} == tensorflow
