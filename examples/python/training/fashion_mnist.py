"""Trains the MLP of `tapeflow train --model mlp` on Fashion-MNIST from Python, as a Keras user
writes a training loop: Flatten, Dense(256, relu), Dense(128, relu), Dense(10); Adam(1e-3);
batches of 64 in the seeded order tapeflow's CLI uses; test accuracy after each epoch.

    PYTHONPATH=build/release/python python3 examples/python/training/fashion_mnist.py \\
        [--epochs 2] [--seed 1] [--mode eager|function|mixed_bfloat16]

--mode function traces the step with tf.function; mixed_bfloat16 also computes the hidden layers
in bfloat16 with float32 variables and float32 logits (Keras's mixed precision).
"""

import argparse

import numpy as np

import tapeflow as tf


def load():
    (x_train, y_train), (x_test, y_test) = tf.keras.datasets.fashion_mnist.load_data()
    images = lambda x: tf.constant((x / 255.0).astype(np.float32)[..., None])  # noqa: E731
    labels = lambda y: tf.constant(y.astype(np.int32))  # noqa: E731
    return images(x_train), labels(y_train), images(x_test), labels(y_test)


def build_model(mode):
    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16" if mode == "mixed_bfloat16" else None)
    return tf.keras.Sequential([
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(256, activation="relu"),
        tf.keras.layers.Dense(128, activation="relu"),
        tf.keras.layers.Dense(10, dtype="float32"),  # logits in float32 under any policy
    ])


def accuracy(model, images, labels, batch_size=1000):
    correct = 0
    for begin in range(0, int(images.shape[0]), batch_size):
        logits = model(images[begin:begin + batch_size], training=False)
        predicted = tf.argmax(logits, axis=1).numpy()
        correct += int(np.sum(predicted == labels[begin:begin + batch_size].numpy()))
    return correct / int(images.shape[0])


def train(epochs=2, seed=1, mode="eager", batch_size=64, report=print):
    """Trains and returns the test accuracy after each epoch."""
    tf.random.set_seed(seed)
    x_train, y_train, x_test, y_test = load()
    model = build_model(mode)
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    if mode != "eager":
        step = tf.function(step)
    n = int(x_train.shape[0])
    accuracies = []
    for epoch in range(epochs):
        order = tf._tapeflow.data.shuffled_indices(n, seed, epoch)
        losses = []
        for begin in range(0, n, batch_size):
            batch = order[begin:begin + batch_size]
            losses.append(float(step(tf.gather(x_train, batch), tf.gather(y_train, batch))))
        accuracies.append(accuracy(model, x_test, y_test))
        report(f"epoch {epoch + 1}: loss {np.mean(losses):.4f}, test accuracy {accuracies[-1]:.4f}")
    return accuracies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--mode", choices=["eager", "function", "mixed_bfloat16"], default="eager")
    args = parser.parse_args()
    train(args.epochs, args.seed, args.mode)


if __name__ == "__main__":
    main()
