"""PyTorch's Jacobian of tanh(W x + b), x in R^256 (the Jacobian workload), run by compare.

Prints `vectorized_ms` (torch.autograd.functional.jacobian(vectorize=True), the vmap-based
Jacobian; torch.func.jacrev does the same in PyTorch >= 2.0) and `loop_ms` (the same call with
vectorize=False: one backward pass per row), medians over --rounds repetitions.
"""
import argparse
import statistics
import time

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--rounds", type=int, default=15)
parser.add_argument("--clock", default="wall", choices=["wall", "thread-cpu"])
args = parser.parse_args()
torch.set_num_threads(args.threads)
clock = time.thread_time if args.clock == "thread-cpu" else time.perf_counter
torch.manual_seed(0)

n = 256
w = torch.randn(n, n) * 0.1
b = torch.randn(n, 1) * 0.1
x = torch.randn(n, 1)


def f(v):
    return torch.tanh(w @ v + b)


def timed(vectorize):
    samples = []
    for _ in range(args.rounds + 1):
        t0 = clock()
        torch.autograd.functional.jacobian(f, x, vectorize=vectorize)
        samples.append(clock() - t0)
    return statistics.median(samples[1:]) * 1e3


# Alternate the two, as the C++ side does.
vec, loop = [], []
for _ in range(3):
    vec.append(timed(True))
    loop.append(timed(False))
print(f"torch {torch.__version__} threads {torch.get_num_threads()}")
print(f"vectorized_ms {statistics.median(vec):.4f}")
print(f"loop_ms {statistics.median(loop):.4f}")
