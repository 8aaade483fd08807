"""tapeflow.distributed: one process is one rank of one; under mpirun (started by the test) the
gradients of a DistributedGradientTape are averaged over the ranks."""

import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

import tapeflow as tf
import tapeflow.distributed as dist


def test_one_process_is_one_rank_whose_collectives_return_their_input():
    dist.init()
    assert dist.size() == 1 and dist.rank() == 0 and not dist.is_mpi()
    t = tf.constant([1.0, 2.0])
    np.testing.assert_array_equal(dist.allreduce(t).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(dist.allgather(t).numpy(), [1.0, 2.0])
    np.testing.assert_array_equal(dist.broadcast(t).numpy(), [1.0, 2.0])


def test_a_distributed_tape_of_one_rank_gives_the_plain_gradient():
    dist.init()
    w = tf.Variable([1.0, 2.0])
    with dist.DistributedGradientTape() as tape:
        loss = tf.reduce_sum(w * w)
    np.testing.assert_array_equal(tape.gradient(loss, w).numpy(), [2.0, 4.0])
    u = tf.Variable(3.0)
    with dist.DistributedGradientTape() as tape:
        loss = w[0] * 2.0
    grads = tape.gradient(loss, [w, u], unconnected_gradients="zero")
    assert float(grads[1]) == 0.0


def test_bad_options_name_what_is_allowed():
    with pytest.raises(ValueError, match="unknown reduce op 'median'"):
        dist.DistributedGradientTape(op="median")
    with pytest.raises(ValueError, match="unknown compression"):
        dist.DistributedGradientTape(compression="int4")
    with pytest.raises(ValueError, match="unknown overlap 'sometimes': use 'auto', 'always' or 'never'"):
        dist.DistributedGradientTape(overlap="sometimes")


@pytest.mark.parametrize("overlap", ["auto", "always", "never"])
def test_every_overlap_gives_the_plain_gradient(overlap):
    dist.init()
    w = tf.Variable([1.0, 2.0])
    with dist.DistributedGradientTape(overlap=overlap, bucket_bytes=4) as tape:
        loss = tf.reduce_sum(w * w * w)
    np.testing.assert_array_equal(tape.gradient(loss, w).numpy(), [3.0, 12.0])


RANKS = """
import numpy as np
import tapeflow as tf
import tapeflow.distributed as dist
dist.init()
rank, size = dist.rank(), dist.size()
w = tf.Variable(np.full(3, float(rank), dtype=np.float32))
dist.broadcast_variables([w])                      # every rank starts from rank 0's zeros
assert np.array_equal(w.numpy(), np.zeros(3)), w.numpy()
x = tf.constant(np.full(3, float(rank + 1), dtype=np.float32))   # rank r's data: r + 1
for overlap in ["auto", "always", "never"]:
    with dist.DistributedGradientTape(overlap=overlap) as tape:
        loss = tf.reduce_sum((w - x) ** 2)
    grad = tape.gradient(loss, w).numpy()          # mean over ranks of 2 (w - x) = -(size + 1)
    assert np.allclose(grad, -(size + 1)), (overlap, grad)
# Keras's fit trains data-parallel under mpirun: rank 0's weights, per-rank batches of each global
# batch, averaged gradients, so every rank ends with the same weights after 24 / (4 * size) steps.
model = tf.keras.Sequential([tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
xs = np.arange(48, dtype=np.float32).reshape(24, 2) / 48
model.fit(xs, xs.sum(axis=1, keepdims=True), batch_size=4, epochs=2, verbose=0)
flat = np.concatenate([w.numpy().ravel() for w in model.weights])
for op in ["max", "min"]:
    assert np.array_equal(dist.allreduce(tf.constant(flat), op=op).numpy(), flat), (op, flat)
assert int(model.optimizer.iterations.numpy()) == 2 * (24 // (4 * size)), model.optimizer.iterations
total = dist.allreduce(tf.constant(float(rank)), op="sum")
assert float(total) == size * (size - 1) / 2, float(total)
print(f"rank {rank} of {size} ok", flush=True)
"""


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="OpenMPI's mpirun is not installed")
def test_two_ranks_average_their_gradients_and_fit_as_one(tmp_path):
    script = tmp_path / "ranks.py"
    script.write_text(RANKS)
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", "2"]
    result = subprocess.run(mpirun + [sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ))
    assert result.returncode == 0, result.stdout + result.stderr
    # mpirun forwards each rank's output as it comes, so two ranks' lines may interleave.
    assert sorted(re.findall(r"rank (\d) of 2 ok", result.stdout)) == ["0", "1"], result.stdout
