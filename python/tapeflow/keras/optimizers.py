"""tf.keras.optimizers: tapeflow's C++ optimizers with Keras's names, arguments and defaults.

    opt = tf.keras.optimizers.Adam(learning_rate=1e-3)
    opt.apply_gradients(zip(grads, model.trainable_variables))
    opt.minimize(lambda: loss_fn(model(x), y), model.trainable_variables)

`learning_rate` is a number or a schedule (tf.keras.optimizers.schedules). The updates run in C++
with the GIL released.
"""

from .._tapeflow.optimizers import Optimizer, SGD, Adam, AdamW, RMSprop  # noqa: F401
from .._tapeflow.optimizers import Adagrad, Adamax, Nadam, Lion  # noqa: F401
from .._tapeflow.optimizers import schedules  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adamax", "Nadam", "Lion", "schedules"]
