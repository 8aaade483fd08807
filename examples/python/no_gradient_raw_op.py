import tapeflow as tf

# Example operation
@tf.function
def non_differentiable_op(x):
    return tf.raw_ops.no_gradient(input=x, T=tf.float32)

# Attempting to compute the gradient
x = tf.Variable(3.0)
with tf.GradientTape() as tape:
    y = non_differentiable_op(x)
grad = tape.gradient(y, x)
print("Gradient:", grad)
