"""PyTorch's per-point Hessians of the Müller-Brown potential (science group, S1), run by compare.

Prints `vmap_ms`: functorch.vmap(functorch.hessian(f)) over --points points of R^2, float64 (torch.func
in PyTorch >= 2.0; Debian 12's PyTorch 1.13 ships it as functorch), the median of --rounds
repetitions after one warm-up call.
"""
import argparse
import statistics
import time

import functorch
import torch

parser = argparse.ArgumentParser()
parser.add_argument("--threads", type=int, default=1)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--points", type=int, default=100000)
parser.add_argument("--clock", default="wall", choices=["wall", "thread-cpu"])
args = parser.parse_args()
torch.set_num_threads(args.threads)
clock = time.thread_time if args.clock == "thread-cpu" else time.perf_counter

A = torch.tensor([-200.0, -100.0, -170.0, 15.0], dtype=torch.float64)
a = torch.tensor([-1.0, -1.0, -6.5, 0.7], dtype=torch.float64)
b = torch.tensor([0.0, 0.0, 11.0, 0.6], dtype=torch.float64)
c = torch.tensor([-10.0, -10.0, -6.5, 0.7], dtype=torch.float64)
x0 = torch.tensor([1.0, 0.0, -0.5, -1.0], dtype=torch.float64)
y0 = torch.tensor([0.0, 0.5, 1.5, 1.0], dtype=torch.float64)


def muller_brown(p):
    dx, dy = p[0] - x0, p[1] - y0
    return (A * torch.exp(a * dx * dx + b * dx * dy + c * dy * dy)).sum()


# The same points as compare's: a grid-free spread over the box the surface is studied in.
i = torch.arange(args.points, dtype=torch.float64)
points = torch.stack([-1.5 + 2.7 * torch.frac(i * 0.618034), -0.3 + 2.3 * torch.frac(i * 0.414214)], dim=1)
per_point = functorch.vmap(functorch.hessian(muller_brown))
samples = []
for _ in range(args.rounds + 1):
    t0 = clock()
    per_point(points)
    samples.append(clock() - t0)
print(f"torch {torch.__version__} threads {torch.get_num_threads()}")
print(f"vmap_ms {statistics.median(samples[1:]) * 1e3:.4f}")
