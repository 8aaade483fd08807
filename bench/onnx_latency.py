"""Inference latency of the command-line program's models in tapeflow and in ONNX Runtime, from the
files `tapeflow train` writes:

    PYTHONPATH=build/release/python /usr/bin/python3 bench/onnx_latency.py \\
        [--cli build/release/tools/cli/tapeflow] [--batch 64] [--repeat 200] [--threads 1]

For each model (mlp, cnn): one short training run (`--epochs 1 --limit 256`) writes MODEL.tfn
(`--export`) and MODEL.onnx (`--export-onnx`); then the mean wall time of one call on a batch of
test images is measured for the function file loaded in this process (tf.load_function, the
graph tapeflow runs) and for the ONNX model in ONNX Runtime (tests/onnx/run_model.js through
node, the onnxruntime-node that scripts/setup.sh installs; it runs on one thread, so tapeflow does
too unless --threads says otherwise). Results are for comparison, not targets.
"""

import argparse
import json
import pathlib
import subprocess
import tempfile
import time

import numpy as np

import tapeflow as tf

ROOT = pathlib.Path(__file__).resolve().parents[1]


def tapeflow_ms(path, images, repeat):
    f = tf.load_function(path)
    f(images)  # the first call traces
    start = time.perf_counter()
    for _ in range(repeat):
        f(images)
    return (time.perf_counter() - start) * 1e3 / repeat


def onnxruntime_ms(model, images, repeat, work):
    work.mkdir()
    (work / "model.onnx").symlink_to(model)
    images.tofile(work / "input_0.bin")
    (work / "inputs.json").write_text(
        json.dumps([{"name": "images", "dtype": "float32", "dims": list(images.shape), "file": "input_0.bin"}]))
    out = subprocess.run(["node", str(ROOT / "tests" / "onnx" / "run_model.js"), "--repeat", str(repeat), str(work)],
                         check=True, capture_output=True, text=True).stdout
    return float(out.split("latency_ms")[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", default=str(ROOT / "build" / "release" / "tools" / "cli" / "tapeflow"))
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(args.threads)
    images = np.random.default_rng(0).random((args.batch, 28, 28, 1), dtype=np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        print(f"batch {args.batch}, mean of {args.repeat} calls, tapeflow on {args.threads} thread(s), "
              "ONNX Runtime on 1")
        for model in ("mlp", "cnn"):
            tfn, onnx = tmp / f"{model}.tfn", tmp / f"{model}.onnx"
            subprocess.run([args.cli, "train", "--model", model, "--epochs", "1", "--limit", "256", "--export",
                            str(tfn), "--export-onnx", str(onnx)], check=True, capture_output=True)
            ours = tapeflow_ms(tfn, tf.constant(images), args.repeat)
            theirs = onnxruntime_ms(onnx, images, args.repeat, tmp / model)
            print(f"{model}: tapeflow {ours:.3f} ms, ONNX Runtime {theirs:.3f} ms (tapeflow / ORT {ours / theirs:.2f})")


if __name__ == "__main__":
    main()
