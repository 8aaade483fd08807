"""tf.keras.mixed_precision: dtype policies and loss scaling over tapeflow's C++ ones.

    tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")   # layers built after it
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.Adam())

global_policy() is None while no policy is set: layers then compute in their first input's dtype.
"""

from .._tapeflow.mixed_precision import Policy, set_global_policy, global_policy, LossScaleOptimizer  # noqa: F401

__all__ = ["Policy", "set_global_policy", "global_policy", "LossScaleOptimizer"]
