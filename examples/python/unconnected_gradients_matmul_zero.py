import tapeflow as tf

# Define a simple graph
x = tf.constant([[1.0, 2.0]])
y = tf.constant([[2.0], [3.0]])
z = tf.linalg.matmul(x, y)

# We will compute gradient for an unconnected variable
w = tf.Variable([[1.0], [1.0]])

# Calculate the gradient
with tf.GradientTape() as tape:
    tape.watch(w)
    loss = tf.reduce_sum(z)

# Attempt to calculate derivative w.r.t an unconnected variable
gradients = tape.gradient(loss, w, unconnected_gradients=tf.UnconnectedGradients.ZERO)
print("Gradient:", gradients.numpy())
