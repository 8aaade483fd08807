import tapeflow as tf

# %%
x = tf.Variable(3.0)

with tf.GradientTape() as tape:
  y = x**2

# %%
# dy = 2x * dx
dy_dx = tape.gradient(y, x)
dy_dx.numpy()
