"""Ctrl-C (SIGINT) stops a training loop cleanly: the KeyboardInterrupt reaches Python between
ops, also while backward passes run with the GIL released."""

import os
import signal
import subprocess
import sys

LOOP = """
import numpy as np
import tapeflow as tf
w = tf.Variable(np.full((512, 512), 0.001, dtype=np.float32))
x = tf.constant(np.ones((64, 512), dtype=np.float32))

def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.matmul(tf.matmul(x, w), w))
    w.assign_sub(tape.gradient(loss, w) * 0.001)

try:
    step()
    print("ready", flush=True)
    while True:
        step()
except KeyboardInterrupt:
    print("interrupted cleanly", flush=True)
    raise
"""


def test_sigint_stops_a_training_loop_with_keyboard_interrupt():
    child = subprocess.Popen([sys.executable, "-c", LOOP], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ))
    try:
        assert child.stdout.readline().strip() == "ready"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "interrupted cleanly" in out
    assert "KeyboardInterrupt" in err
    # CPython ends a program stopped by an uncaught KeyboardInterrupt with SIGINT itself, so that
    # its parent sees it stopped by the signal.
    assert child.returncode == -signal.SIGINT
