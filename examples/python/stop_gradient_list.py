import tapeflow as tf

# Create variables
x = tf.Variable([2.0, 3.0], trainable=True)
y = tf.Variable([1.0, 1.0], trainable=True)

# Compute a simple function
z = x * y + 3

# Prevent backpropagation beyond this point
z_no_grad = tf.stop_gradient(z)

# Compute the gradients
with tf.GradientTape() as tape:
    loss = tf.reduce_sum((z_no_grad - 5) ** 2)

# Calculate the gradients of loss with respect to x and y
gradients = tape.gradient(loss, [x, y])
print(gradients)
