"""DLPack: tensors to and from NumPy and PyTorch without a copy."""

import ctypes

import numpy as np
import pytest

import tapeflow as tf


def test_numpy_reads_a_tensor_through_dlpack_without_a_copy():
    t = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    a = np.from_dlpack(t)
    np.testing.assert_array_equal(a, [[1.0, 2.0], [3.0, 4.0]])
    assert np.shares_memory(a, t.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_a_numpy_array_becomes_a_tensor_sharing_its_memory(dtype):
    a = np.arange(6, dtype=dtype).reshape(2, 3)
    t = tf.experimental.dlpack.from_dlpack(a)
    assert t.shape == (2, 3) and t.dtype == tf.DType(dtype)
    np.testing.assert_array_equal(t.numpy(), a)
    assert np.shares_memory(t.numpy(), a)


def test_a_capsule_round_trips_and_can_be_consumed_once():
    t = tf.constant([1.0, 2.0, 3.0])
    capsule = tf.experimental.dlpack.to_dlpack(t)
    back = tf.experimental.dlpack.from_dlpack(capsule)
    np.testing.assert_array_equal(back.numpy(), [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="unused 'dltensor' capsule"):
        tf.experimental.dlpack.from_dlpack(capsule)


def test_the_source_outlives_its_python_object():
    t = tf.experimental.dlpack.from_dlpack(np.full(1000, 7.0, dtype=np.float32))
    assert float(tf.reduce_sum(t)) == 7000.0


def test_non_contiguous_and_unsupported_arrays_are_refused():
    with pytest.raises(tf.errors.InvalidArgumentError, match="not contiguous"):
        tf.experimental.dlpack.from_dlpack(np.ones((4, 4), dtype=np.float32)[:, ::2])
    with pytest.raises(TypeError, match="no dtype for DLPack"):
        tf.experimental.dlpack.from_dlpack(np.ones(3, dtype=np.uint8))
    with pytest.raises(TypeError, match="__dlpack__"):
        tf.experimental.dlpack.from_dlpack([1.0, 2.0])


def dl_dtype_address(capsule):
    """Where an unused DLPack capsule's DLTensor holds its dtype (type code, bits, lanes)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    # DLTensor: data pointer, device (two int32), ndim (int32), then dtype (uint8, uint8, uint16).
    return get(capsule, b"dltensor") + 20


def dl_dtype(capsule):
    at = dl_dtype_address(capsule)
    return (ctypes.c_uint8.from_address(at).value, ctypes.c_uint8.from_address(at + 1).value,
            ctypes.c_uint16.from_address(at + 2).value)


def test_a_bool_tensor_travels_as_dlpack_bool_and_back():
    t = tf.constant([[True, False, True]])
    capsule = tf.experimental.dlpack.to_dlpack(t)
    assert dl_dtype(capsule) == (6, 8, 1)  # DLPack 0.8's kDLBool, as TensorFlow and PyTorch 2 send it
    back = tf.experimental.dlpack.from_dlpack(capsule)
    assert back.dtype == tf.bool and back.shape == (1, 3)
    assert back.numpy().tolist() == [[True, False, True]]
    assert back.numpy().ctypes.data == t.numpy().ctypes.data


def test_a_dlpack_bool_byte_other_than_0_or_1_is_refused():
    a = np.array([0, 1, 2], dtype=np.uint8)
    capsule = a.__dlpack__()
    ctypes.c_uint8.from_address(dl_dtype_address(capsule)).value = 6  # relabelled as bool
    with pytest.raises(tf.errors.InvalidArgumentError, match="from_dlpack.* holds byte 2 at element 2"):
        tf.experimental.dlpack.from_dlpack(capsule)


def test_gradients_flow_through_a_dlpack_tensor():
    x = tf.experimental.dlpack.from_dlpack(np.array([1.0, 2.0], dtype=np.float32))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [2.0, 4.0])


def test_pytorch_and_tapeflow_share_memory_both_ways():
    torch = pytest.importorskip("torch")
    t = tf.constant([1.0, 2.0])
    shared = torch.from_dlpack(t)
    assert shared.tolist() == [1.0, 2.0]
    source = torch.arange(4, dtype=torch.float32)
    back = tf.experimental.dlpack.from_dlpack(source)
    assert back.numpy().ctypes.data == source.data_ptr()
