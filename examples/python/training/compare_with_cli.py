"""Checks that fashion_mnist.py reaches the accuracy of `tapeflow train --model mlp` with the
same seed, epochs and hyperparameters: eagerly, under tf.function and with mixed_bfloat16.
Their initial weights come from different generators (Keras's initializers seeded through
tf.random against the CLI's per-layer seeds), so the check is the test accuracy within
`--tolerance`, not equal weights.

    python3 compare_with_cli.py PATH/TO/tapeflow [--epochs 2] [--seed 1] [--tolerance 0.01]
"""

import argparse
import pathlib
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import fashion_mnist  # noqa: E402


def cli_accuracy(cli, epochs, seed):
    with tempfile.TemporaryDirectory() as scratch:
        out = subprocess.run([cli, "train", "--model", "mlp", "--epochs", str(epochs), "--seed", str(seed),
                              "--checkpoint", str(pathlib.Path(scratch) / "mlp.ckpt")],
                             check=True, capture_output=True, text=True).stdout
    found = re.findall(r"test loss [0-9.]+ acc ([0-9.]+)", out)
    if not found:
        sys.exit(f"compare_with_cli: no test accuracy in the CLI's output:\n{out}")
    return float(found[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cli")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args()
    target = cli_accuracy(args.cli, args.epochs, args.seed)
    print(f"tapeflow train --model mlp: test accuracy {target:.4f}")
    failed = False
    for mode in ("eager", "function", "mixed_bfloat16"):
        reached = fashion_mnist.train(args.epochs, args.seed, mode, report=lambda line: None)[-1]
        ok = reached >= target - args.tolerance
        failed |= not ok
        print(f"fashion_mnist.py --mode {mode}: test accuracy {reached:.4f} {'ok' if ok else 'BELOW the CLI'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
