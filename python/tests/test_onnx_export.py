"""tf.export_onnx: a traced Python function written as an ONNX model, checked by onnx.checker
(Debian's python3-onnx) and run in ONNX Runtime through node (tests/onnx/run_model.js, with the
onnxruntime-node that scripts/setup.sh installs)."""

import json
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import tapeflow as tf

onnx = pytest.importorskip("onnx")

ONNX_TEST_DIR = pathlib.Path(__file__).resolve().parents[2] / "tests" / "onnx"


def _onnx_function():
    w = tf.Variable([[2.0, -1.0], [3.0, 0.5]])

    @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32, name="x")])
    def predict(x):
        return tf.nn.softmax(tf.nn.relu(tf.matmul(x, w) + 1.0))

    for rows in (2, 3):  # two sizes: the graph serves any batch size
        predict(tf.ones((rows, 2)))
    return predict


def test_an_exported_function_is_a_valid_onnx_model_with_a_symbolic_batch(tmp_path):
    path = tmp_path / "predict.onnx"
    tf.export_onnx(_onnx_function(), None, path)
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import] == [17]
    (x,) = model.graph.input
    assert x.name == "x"
    assert [d.dim_param or d.dim_value for d in x.type.tensor_type.shape.dim] == ["batch", 2]
    assert {n.op_type for n in model.graph.node} >= {"MatMul", "Relu", "Softmax"}


@pytest.mark.skipif(shutil.which("node") is None or not (ONNX_TEST_DIR / "node_modules" / "onnxruntime-node").exists(),
                    reason="node with onnxruntime-node (scripts/setup.sh installs it) is not here")
def test_onnx_runtime_computes_what_tapeflow_does(tmp_path):
    predict = _onnx_function()
    tf.export_onnx(predict, [tf.TensorSpec([None, 2], tf.float32, name="x")], tmp_path / "model.onnx")
    x = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.5], [-2.0, 1.0]], dtype=np.float32)
    x.tofile(tmp_path / "input_0.bin")
    (tmp_path / "inputs.json").write_text(
        json.dumps([{"name": "x", "dtype": "float32", "dims": list(x.shape), "file": "input_0.bin"}]))
    subprocess.run(["node", str(ONNX_TEST_DIR / "run_model.js"), str(tmp_path)], check=True)
    name, dtype, dims, file = (tmp_path / "outputs.txt").read_text().split()
    got = np.fromfile(tmp_path / file, dtype=np.float32).reshape([int(d) for d in dims.split(",")])
    np.testing.assert_allclose(got, predict(x).numpy(), rtol=1e-5)


def test_bad_input_raises_typed_errors_naming_the_function(tmp_path):
    @tf.function
    def grows(x):
        return tf.math.expm1(x)

    with pytest.raises(tf.errors.FailedPreconditionError, match="grows"):
        tf.export_onnx(grows, [tf.TensorSpec([2], tf.float32)], tmp_path / "untraced.onnx")
    grows(tf.zeros((2,)))
    with pytest.raises(tf.errors.UnimplementedError, match="Expm1 with input float32 \\(2,\\) in function 'grows'"):
        tf.export_onnx(grows, [tf.TensorSpec([2], tf.float32)], tmp_path / "expm1.onnx")
    with pytest.raises(TypeError, match="input_signature"):
        tf.export_onnx(grows, None, tmp_path / "none.onnx")
    with pytest.raises(TypeError, match="tf.function"):
        tf.export_onnx(lambda x: x, [tf.TensorSpec([2], tf.float32)], tmp_path / "lambda.onnx")
