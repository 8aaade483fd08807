"""The Python front end's costs beside PyTorch's, measured in one process (one run, the same
machine and load for both):

  1. overhead per recorded op on a scalar (a tape recording, autograd on), forward and backward;
  2. an MLP training step (784-512-512-10, batch 128, ReLU, softmax cross-entropy, SGD) from
     Python: tapeflow eager, tapeflow under tf.function, PyTorch eager;
  3. `.numpy()` of a 64 MiB tensor and `tf.constant` of a 64 MiB NumPy array, against np.copy;
  4. `import tapeflow` against a bare interpreter start.

    PYTHONPATH=build/release/python /usr/bin/python3 bench/python/bench_python.py [--threads T] [--cpp PATH]

PyTorch is Debian's python3-torch (scripts/bench_setup.sh installs it). The MLP step is also
compared with the same step written in C++ (bench/python/mlp_step.cpp, built by the `bench`
preset as build/bench/bench/bench_python_mlp_step). Like the C++ benchmarks, the program restarts
itself with OPENBLAS_CORETYPE set where OpenBLAS chose kernels weaker than the CPU's (for both
tapeflow and PyTorch, which load the same OpenBLAS). Each figure is the median of several
repeats; ratios are tapeflow / peer (lower is better for tapeflow).
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import tapeflow as tf

try:
    import torch
except ImportError:  # the tapeflow rows still print
    torch = None


def median_time(fn, repeats=7):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scalar_ops(n):
    c = tf.constant(1.0001)
    x = tf.constant(1.0)

    def forward():
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(n):
                y = y * c
        return tape, y

    fwd = median_time(forward) / n
    backward_times = []
    for _ in range(7):
        tape, y = forward()
        start = time.perf_counter()
        tape.gradient(y, x)
        backward_times.append(time.perf_counter() - start)
    return fwd, statistics.median(backward_times) / n


def torch_scalar_ops(n):
    c = torch.tensor(1.0001)
    x = torch.tensor(1.0, requires_grad=True)

    def forward():
        y = x
        for _ in range(n):
            y = y * c
        return y

    fwd = median_time(forward) / n
    backward_times = []
    for _ in range(7):
        y = forward()
        start = time.perf_counter()
        y.backward()
        backward_times.append(time.perf_counter() - start)
        x.grad = None
    return fwd, statistics.median(backward_times) / n


SIZES, BATCH, LR = [784, 512, 512, 10], 128, 0.01


def mlp_data():
    rng = np.random.default_rng(1)
    weights = []
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        weights.append(rng.normal(0, 0.05, (fan_in, fan_out)).astype(np.float32))
        weights.append(np.zeros(fan_out, dtype=np.float32))
    images = rng.uniform(0, 1, (BATCH, SIZES[0])).astype(np.float32)
    labels = (np.arange(BATCH) % SIZES[-1]).astype(np.int32)
    return weights, images, labels


def tapeflow_mlp_step(traced):
    weights, images, labels = mlp_data()
    variables = [tf.Variable(w) for w in weights]
    x, y = tf.constant(images), tf.constant(labels)

    def step(x, y):
        with tf.GradientTape() as tape:
            h = x
            for i in range(0, len(variables) - 2, 2):
                h = tf.nn.relu(tf.matmul(h, variables[i]) + variables[i + 1])
            logits = tf.matmul(h, variables[-2]) + variables[-1]
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(g * LR)
        return loss

    run = tf.function(step) if traced else step
    run(x, y)  # the trace, or warm-up
    return median_time(lambda: [run(x, y) for _ in range(10)]) / 10


def torch_mlp_step():
    weights, images, labels = mlp_data()
    params = [torch.tensor(w, requires_grad=True) for w in weights]
    x, y = torch.tensor(images), torch.tensor(labels, dtype=torch.int64)

    def step():
        h = x
        for i in range(0, len(params) - 2, 2):
            h = torch.relu(h @ params[i] + params[i + 1])
        logits = h @ params[-2] + params[-1]
        loss = torch.nn.functional.cross_entropy(logits, y)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(g * LR)
        return loss

    step()
    return median_time(lambda: [step() for _ in range(10)]) / 10


def numpy_interop():
    n = 64 * 2**20 // 4
    array = np.random.default_rng(2).uniform(0, 1, n).astype(np.float32)
    tensor = tf.constant(array)
    view_time = median_time(tensor.numpy)
    shared = np.shares_memory(tensor.numpy(), tensor.numpy())
    copy_time = median_time(lambda: np.copy(array))
    constant_time = median_time(lambda: tf.constant(array))
    round_trip_shared = np.shares_memory(tf.constant(tensor.numpy()).numpy(), tensor.numpy())
    return view_time, shared, constant_time, copy_time, round_trip_shared


def import_time():
    def start(code):
        return median_time(lambda: subprocess.run([sys.executable, "-c", code], check=True), repeats=5)
    return start("import tapeflow"), start("pass")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="PyTorch's intra-op threads (default: its own)")
    parser.add_argument("--cpp", default="build/bench/bench/bench_python_mlp_step",
                        help="the C++ twin of the MLP step (skipped if absent)")
    args = parser.parse_args()
    kernels = tf.config.openblas_kernels_to_request()
    if kernels:
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, OPENBLAS_CORETYPE=kernels))
    if torch is not None and args.threads:
        torch.set_num_threads(args.threads)
    print(f"machine: {os.cpu_count()} CPUs, OpenBLAS kernels {tf.config.openblas_kernels()}; tapeflow {tf.__version__}; "
          f"PyTorch {torch.__version__ if torch else 'not installed'} ({torch.get_num_threads() if torch else 0} threads)")
    n = 2000
    tf_fwd, tf_bwd = scalar_ops(n)
    print(f"scalar op, recorded:      tapeflow {tf_fwd * 1e6:6.2f} us", end="")
    if torch:
        t_fwd, t_bwd = torch_scalar_ops(n)
        print(f"   PyTorch {t_fwd * 1e6:6.2f} us   ratio {tf_fwd / t_fwd:.2f}")
        print(f"scalar op, backward:      tapeflow {tf_bwd * 1e6:6.2f} us   PyTorch {t_bwd * 1e6:6.2f} us   "
              f"ratio {tf_bwd / t_bwd:.2f}")
    else:
        print(f"\nscalar op, backward:      tapeflow {tf_bwd * 1e6:6.2f} us")
    eager, traced = tapeflow_mlp_step(False), tapeflow_mlp_step(True)
    line = f"MLP step (batch {BATCH}):    tapeflow eager {eager * 1e3:6.2f} ms, tf.function {traced * 1e3:6.2f} ms"
    if torch:
        t_step = torch_mlp_step()
        line += f"   PyTorch eager {t_step * 1e3:6.2f} ms   ratios {eager / t_step:.2f} / {traced / t_step:.2f}"
    print(line)
    if os.path.exists(args.cpp):
        cpp_eager, cpp_traced = (float(v) / 1e3 for v in
                                 subprocess.run([args.cpp, "--batch", str(BATCH)], check=True, capture_output=True,
                                                text=True).stdout.split())
        print(f"MLP step in C++:          eager {cpp_eager * 1e3:6.2f} ms, tf::function {cpp_traced * 1e3:6.2f} ms   "
              f"Python / C++: eager {eager / cpp_eager:.2f}, traced {traced / cpp_traced:.2f}")
    view, shared, constant, copy, round_trip = numpy_interop()
    print(f"64 MiB .numpy():          {view * 1e6:8.1f} us (memory shared: {shared})")
    print(f"64 MiB tf.constant(array): {constant * 1e3:6.2f} ms   np.copy {copy * 1e3:6.2f} ms   "
          f"ratio {constant / copy:.2f}; tf.constant(t.numpy()) shares memory: {round_trip}")
    with_tapeflow, bare = import_time()
    print(f"import tapeflow:          {(with_tapeflow - bare) * 1e3:6.1f} ms above a bare start "
          f"({bare * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
