import tapeflow as tf

a = tf.constant(2.0)
b = tf.constant(3.0)
c = tf.constant(4.0)

with tf.GradientTape(persistent=True) as tape:
    tape.watch([a, b, c])
    y = a ** 2
    z = b * c

dy_da = tape.gradient(y, a)  # Known gradient
dz_da_none = tape.gradient(z, a, unconnected_gradients=tf.UnconnectedGradients.NONE)
dz_da_zero = tape.gradient(z, a, unconnected_gradients=tf.UnconnectedGradients.ZERO)

print("dy/da:", dy_da)
print("dz/da with NONE:", dz_da_none)
print("dz/da with ZERO:", dz_da_zero)
