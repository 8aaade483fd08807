"""tf.data.Dataset: TensorFlow's input pipeline over tapeflow's C++ one."""

import numpy as np
import pytest

import tapeflow as tf


def values(ds):
    """One iteration, each element as NumPy values (a tuple of them for a tuple element)."""
    out = []
    for e in ds:
        if isinstance(e, tuple):
            out.append(tuple(c.numpy().tolist() for c in e))
        else:
            out.append(e.numpy().tolist())
    return out


def test_from_tensor_slices_of_a_tuple_yields_tuples_and_of_an_array_tensors():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    y = np.array([7, 8, 9], dtype=np.int32)
    assert values(tf.data.Dataset.from_tensor_slices((x, y))) == [([0, 1], 7), ([2, 3], 8), ([4, 5], 9)]
    assert values(tf.data.Dataset.from_tensor_slices(y)) == [7, 8, 9]
    assert values(tf.data.Dataset.from_tensor_slices([1, 2])) == [1, 2]


def test_map_unpacks_the_tuple_into_the_functions_arguments():
    ds = tf.data.Dataset.from_tensor_slices((np.array([1.0, 2.0], np.float32), np.array([3, 4], np.int32)))
    assert values(ds.map(lambda x, y: (x * 2, y + 1))) == [(2.0, 4), (4.0, 5)]
    assert values(ds.map(lambda x, y: x + tf.cast(y, tf.float32))) == [4.0, 6.0]
    chained = tf.data.Dataset.range(3).map(lambda i: i * 10).map(lambda i: (i, i))
    assert values(chained) == [(0, 0), (10, 10), (20, 20)]


def test_parallel_map_of_a_python_function_keeps_the_order():
    def f(i):
        return i * i

    for calls in (2, tf.data.AUTOTUNE):
        squares = tf.data.Dataset.range(20).map(f, num_parallel_calls=calls)
        assert values(squares) == [i * i for i in range(20)]


def test_a_python_exception_in_map_reaches_the_loop_as_itself():
    def f(i):
        if int(i) == 2:
            raise KeyError("two")
        return i

    for calls in (None, 3):
        it = iter(tf.data.Dataset.range(4).map(f, num_parallel_calls=calls).prefetch(2))
        assert int(next(it)) == 0 and int(next(it)) == 1
        with pytest.raises(KeyError, match="two"):
            next(it)
        assert int(next(it)) == 3


def test_shuffle_is_a_seeded_permutation_reshuffled_each_epoch():
    ds = tf.data.Dataset.range(30).shuffle(30, seed=4)
    first, second = values(ds), values(ds)
    assert sorted(first) == list(range(30)) and first != second
    again = tf.data.Dataset.range(30).shuffle(30, seed=4)
    assert values(again) == first
    assert values(tf.data.Dataset.range(10).shuffle(1, seed=4)) == list(range(10))
    fixed = tf.data.Dataset.range(10).shuffle(10, seed=4, reshuffle_each_iteration=False)
    assert values(fixed) == values(fixed)


def test_batch_padded_batch_and_counts():
    assert values(tf.data.Dataset.range(5).batch(2)) == [[0, 1], [2, 3], [4]]
    assert values(tf.data.Dataset.range(5).batch(2, drop_remainder=True)) == [[0, 1], [2, 3]]
    seqs = tf.data.Dataset.range(1, 4).map(lambda n: tf.fill([int(n)], int(n)))
    assert values(seqs.padded_batch(3, padding_values=-1)) == [[[1, -1, -1], [2, 2, -1], [3, 3, 3]]]
    fixed = seqs.padded_batch(2, padded_shapes=[4])
    assert values(fixed) == [[[1, 0, 0, 0], [2, 2, 0, 0]], [[3, 3, 3, 0]]]
    pairs = seqs.map(lambda s: (s, tf.constant(1)))
    padded_pairs = values(pairs.padded_batch(3, padded_shapes=([None], [])))
    assert padded_pairs == [([[1, 0, 0], [2, 2, 0], [3, 3, 3]], [1, 1, 1])]
    r = tf.data.Dataset.range(3)
    assert values(r.repeat(2)) == [0, 1, 2, 0, 1, 2]
    assert values(r.repeat().take(4)) == [0, 1, 2, 0]
    assert values(r.skip(1)) == [1, 2]
    assert values(tf.data.Dataset.range(10).shard(3, 1)) == [1, 4, 7]


def test_cardinality_and_len():
    assert int(tf.data.Dataset.range(10).batch(3).cardinality()) == 4
    assert len(tf.data.Dataset.range(10).batch(3, drop_remainder=True)) == 3
    assert int(tf.data.Dataset.range(3).repeat().cardinality()) == tf.data.INFINITE_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(tf.data.Dataset.range(3).repeat())


def test_bad_arguments_are_typed_errors_naming_the_op():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"\[Dataset.batch\] batch_size must be >= 1"):
        tf.data.Dataset.range(3).batch(0)
    with pytest.raises(tf.errors.InvalidArgumentError, match="first dimensions must agree"):
        tf.data.Dataset.from_tensor_slices((np.zeros(3), np.zeros(4)))
    ragged = tf.data.Dataset.range(1, 3).map(lambda n: tf.zeros([int(n)]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="padded_batch"):
        values(ragged.batch(2))


def test_the_iterator_position_resumes_exactly():
    def pipeline():
        return tf.data.Dataset.range(20).shuffle(8, seed=1).map(lambda i: i * 3).batch(3)

    it = iter(pipeline())
    for _ in range(3):
        next(it)
    state = it.save_state()
    rest = [b.numpy().tolist() for b in it]
    resumed = iter(pipeline())
    resumed.restore_state(state)
    assert [b.numpy().tolist() for b in resumed] == rest


def test_text_lines_are_code_points(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("hé\n\nok\n".encode())
    assert values(tf.data.TextLineDataset(path)) == [[104, 233], [], [111, 107]]
    path.write_bytes(b"ok\n\xff\n")
    it = iter(tf.data.TextLineDataset(path))
    next(it)
    with pytest.raises(tf.errors.DataLossError, match="byte offset 3"):
        next(it)


def test_csv_columns(tmp_path):
    path = tmp_path / "a.csv"
    path.write_text("a,b\n1,0.5\n2,1.5\n")
    assert values(tf.data.Dataset.from_csv(path, header=True)) == [(1, 0.5), (2, 1.5)]


def test_an_iterator_dropped_midway_stops_its_threads_without_a_hang():
    ds = tf.data.Dataset.range(1000).map(lambda i: i + 1, num_parallel_calls=4).prefetch(3).repeat()
    for _ in range(5):
        it = iter(ds)
        assert int(next(it)) == 1
        del it  # joins map's workers and prefetch's producer, which may be waiting for the GIL
