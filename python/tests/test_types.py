"""The package's type stubs: a type checker (mypy) accepts correct tapeflow code and reports a
misspelt method or a wrong argument type."""

import os
import pathlib
import subprocess
import sys

import pytest

pytest.importorskip("mypy")

GOOD = """
import tapeflow as tf
x = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = x * x
g = tape.gradient(y, x)
t: tf.Tensor = tf.constant([1.0, 2.0])
n: int = t.ndim
d: tf.DType = t.dtype
"""


def run_mypy(tmp_path, source):
    program = tmp_path / "program.py"
    program.write_text(source)
    package_dir = pathlib.Path(__import__("tapeflow").__file__).parent.parent
    env = dict(os.environ, MYPYPATH=str(package_dir))
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
                           "--follow-imports=silent", str(program)], capture_output=True, text=True, env=env)


def test_correct_code_type_checks(tmp_path):
    result = run_mypy(tmp_path, GOOD)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_misspelt_method_and_a_wrong_argument_are_reported(tmp_path):
    result = run_mypy(tmp_path, GOOD + "t.numpyy()\nn2: str = t.ndim\n")
    assert result.returncode == 1
    assert 'has no attribute "numpyy"' in result.stdout
    assert "Incompatible types in assignment" in result.stdout
