"""tf.keras.optimizers from Python: one step of each optimizer against hand-computed numbers,
apply_gradients(zip(...)), minimize, schedules, mixed precision and loss scaling, bad input."""

import math
import threading

import numpy as np
import pytest

import tapeflow as tf


def step(optimizer, value, grad):
    var = tf.Variable(value)
    optimizer.apply_gradients(zip([tf.constant(grad)], [var]))
    return var


def test_sgd_subtracts_learning_rate_times_gradient():
    var = step(tf.keras.optimizers.SGD(learning_rate=0.1), [1.0, 2.0], [0.5, -1.0])
    np.testing.assert_allclose(var.numpy(), [0.95, 2.1], rtol=1e-6)


def test_sgd_momentum_accumulates_velocity():
    opt = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
    var = tf.Variable([1.0])
    for _ in range(2):
        opt.apply_gradients([(tf.constant([1.0]), var)])
    # velocity -0.1, then 0.9 * -0.1 - 0.1 = -0.19: 1 - 0.1 - 0.19
    np.testing.assert_allclose(var.numpy(), [0.71], rtol=1e-6)
    np.testing.assert_allclose(opt.get_slot(var, "momentum").numpy(), [-0.19], rtol=1e-6)


def test_sgd_nesterov_looks_ahead():
    var = step(tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9, nesterov=True), [1.0], [1.0])
    # velocity = -0.1; w += 0.9 * velocity - 0.1 * g = -0.19
    np.testing.assert_allclose(var.numpy(), [0.81], rtol=1e-6)


def test_adam_first_step_moves_each_weight_by_the_learning_rate():
    opt = tf.keras.optimizers.Adam(learning_rate=0.1)
    var = step(opt, [1.0, 2.0], [0.3, -4.0])
    # m = 0.1 g, v = 0.001 g^2, lr_t = 0.1 * sqrt(0.001) / 0.1: the step is lr * sign(g) (up to epsilon)
    np.testing.assert_allclose(var.numpy(), [0.9, 2.1], rtol=1e-5)
    np.testing.assert_allclose(opt.get_slot(var, "m").numpy(), [0.03, -0.4], rtol=1e-5)
    assert int(opt.iterations) == 1


def test_rmsprop_divides_by_the_root_of_the_squared_gradient_average():
    var = step(tf.keras.optimizers.RMSprop(learning_rate=0.01, rho=0.9), [1.0], [2.0])
    # velocity = 0.1 * 4 = 0.4; w -= 0.01 * 2 / sqrt(0.4 + 1e-7)
    np.testing.assert_allclose(var.numpy(), [1.0 - 0.02 / math.sqrt(0.4 + 1e-7)], rtol=1e-6)


def test_adamw_decays_the_weight_before_the_adam_step():
    var = step(tf.keras.optimizers.AdamW(learning_rate=0.1, weight_decay=0.5), [2.0], [1.0])
    # 2 - 0.1 * 0.5 * 2 = 1.9, then the Adam step of 0.1
    np.testing.assert_allclose(var.numpy(), [1.8], rtol=1e-5)


def test_adagrad_accumulates_from_its_initial_value():
    var = step(tf.keras.optimizers.Adagrad(learning_rate=0.1), [1.0], [1.0])
    # accumulator = 0.1 + 1; w -= 0.1 * 1 / sqrt(1.1 + 1e-7)
    np.testing.assert_allclose(var.numpy(), [1.0 - 0.1 / math.sqrt(1.1 + 1e-7)], rtol=1e-6)


def test_adamax_nadam_and_lion_take_kerass_arguments_and_step():
    # Adamax's first step: m = 0.1 g, u = |g|, w -= lr * m / (0.1 * (u + eps)) = lr * sign(g)
    np.testing.assert_allclose(step(tf.keras.optimizers.Adamax(learning_rate=0.1), [1.0], [2.0]).numpy(), [0.9],
                               rtol=1e-5)
    # Lion moves by the learning rate along the sign
    np.testing.assert_allclose(step(tf.keras.optimizers.Lion(learning_rate=0.1, beta_1=0.5, beta_2=0.9),
                                    [1.0, 1.0], [3.0, -0.5]).numpy(), [0.9, 1.1], rtol=1e-6)
    nadam = tf.keras.optimizers.Nadam(learning_rate=0.01)
    var = tf.Variable([1.0], name="w")
    nadam.apply_gradients([(tf.constant([1.0]), var)])
    assert float(var.numpy()[0]) < 1.0
    assert [v.name for v in nadam.variables] == ["iterations", "w/m", "w/v"]


def test_weight_decay_is_a_keyword_of_every_optimizer():
    opt = tf.keras.optimizers.SGD(learning_rate=0.1, weight_decay=0.5)
    assert opt.weight_decay == 0.5
    assert tf.keras.optimizers.Adam().weight_decay is None
    kernel = tf.Variable([2.0], name="kernel")
    bias = tf.Variable([2.0], name="bias")
    opt.exclude_from_weight_decay(var_names=["bias"])
    opt.apply_gradients(zip([tf.constant([0.0]), tf.constant([0.0])], [kernel, bias]))
    np.testing.assert_allclose(kernel.numpy(), [1.9], rtol=1e-6)
    np.testing.assert_allclose(bias.numpy(), [2.0])
    with pytest.raises(tf.errors.FailedPreconditionError, match="before the optimizer is built"):
        opt.exclude_from_weight_decay(var_list=[kernel])


def test_polynomial_and_inverse_time_decay_follow_kerass_formulas():
    schedules = tf.keras.optimizers.schedules
    poly = schedules.PolynomialDecay(0.1, 100, end_learning_rate=0.0, power=2.0)
    assert float(poly(50)) == pytest.approx(0.1 * 0.25)
    assert float(poly(500)) == 0.0
    inverse = schedules.InverseTimeDecay(0.1, 10, 0.5, staircase=True)
    assert float(inverse(35)) == pytest.approx(0.1 / 2.5)


def test_a_missing_gradient_skips_its_variable():
    a, b = tf.Variable(1.0), tf.Variable(1.0)
    tf.keras.optimizers.SGD(1.0).apply_gradients(zip([None, tf.constant(1.0)], [a, b]))
    assert float(a) == 1.0 and float(b) == 0.0


def test_minimize_takes_a_loss_callable_and_updates_var_list():
    var = tf.Variable(3.0)
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)
    iterations = opt.minimize(lambda: var * var, [var])
    assert float(var) == pytest.approx(3.0 - 0.1 * 6.0)
    assert int(iterations) == 1


def test_minimize_with_a_tape_differentiates_the_recorded_loss():
    var = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        loss = var * var
    tf.keras.optimizers.SGD(learning_rate=0.1).minimize(loss, [var], tape=tape)
    assert float(var) == pytest.approx(2.4)


def test_minimize_lowers_a_quadratic_loss_over_steps():
    var = tf.Variable([4.0, -3.0])
    opt = tf.keras.optimizers.Adam(0.2)
    losses = []
    for _ in range(30):
        losses.append(float(tf.reduce_sum(var * var)))
        opt.minimize(lambda: tf.reduce_sum(var * var), lambda: [var])
    assert losses[-1] < 0.1 * losses[0]


def test_the_learning_rate_is_a_settable_variable():
    opt = tf.keras.optimizers.SGD(learning_rate=0.1)
    opt.learning_rate = 0.5
    assert float(opt.learning_rate) == 0.5
    np.testing.assert_allclose(step(opt, [1.0], [1.0]).numpy(), [0.5])


def test_a_schedule_sets_the_rate_of_each_step():
    schedule = tf.keras.optimizers.schedules.ExponentialDecay(1.0, decay_steps=1, decay_rate=0.5)
    opt = tf.keras.optimizers.SGD(learning_rate=schedule)
    var = tf.Variable(0.0)
    for _ in range(3):
        opt.apply_gradients([(tf.constant(-1.0), var)])
    assert float(var) == pytest.approx(1.0 + 0.5 + 0.25)
    assert float(schedule(3)) == pytest.approx(0.125)
    assert float(opt.learning_rate) == pytest.approx(0.125)


def test_piecewise_constant_and_cosine_decay_follow_keras_formulas():
    piecewise = tf.keras.optimizers.schedules.PiecewiseConstantDecay([10], [1.0, 0.1])
    assert float(piecewise(10)) == 1.0 and float(piecewise(11)) == pytest.approx(0.1)
    cosine = tf.keras.optimizers.schedules.CosineDecay(1.0, decay_steps=10)
    assert float(cosine(5)) == pytest.approx(0.5)


def test_the_optimizer_state_lists_iterations_then_slots():
    opt = tf.keras.optimizers.Adam()
    var = tf.Variable([1.0], name="w")
    opt.build([var])
    assert [v.name for v in opt.variables] == ["iterations", "w/m", "w/v"]


def test_apply_gradients_of_a_wrong_shape_names_the_variable_and_shapes():
    var = tf.Variable([1.0, 2.0], name="w")
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"w.*\(3,\).*\(2,\)|w.*\(2,\).*\(3,\)"):
        tf.keras.optimizers.SGD().apply_gradients(zip([tf.constant([1.0, 2.0, 3.0])], [var]))
    assert var.numpy().tolist() == [1.0, 2.0]


def test_apply_gradients_without_any_gradient_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="No gradients provided for any variable"):
        tf.keras.optimizers.SGD().apply_gradients(zip([None], [tf.Variable(1.0)]))


def test_a_tensor_in_place_of_a_variable_is_a_type_error():
    with pytest.raises(TypeError, match=r"\[SGD.apply_gradients\].*tf.Variable.*EagerTensor"):
        tf.keras.optimizers.SGD().apply_gradients(zip([tf.constant(1.0)], [tf.constant(1.0)]))


def test_a_learning_rate_that_is_not_a_number_is_a_type_error():
    with pytest.raises(TypeError, match=r"\[Adam\] learning_rate must be a number"):
        tf.keras.optimizers.Adam(learning_rate="fast")


def test_a_negative_learning_rate_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="SGD"):
        tf.keras.optimizers.SGD(learning_rate=-1.0)


def test_minimize_of_a_tensor_without_a_tape_is_a_type_error():
    var = tf.Variable(1.0)
    with pytest.raises(TypeError, match="without a tape, loss must be a callable"):
        tf.keras.optimizers.SGD().minimize(var * 2.0, [var])


def test_one_optimizer_updates_the_variables_of_several_threads():
    # apply_gradients runs with the GIL released; each thread's steps reach its own variable.
    opt = tf.keras.optimizers.SGD(0.1)
    variables = [tf.Variable(tf.zeros((256, 256))) for _ in range(4)]
    grad = tf.ones((256, 256))

    def train(var):
        for _ in range(20):
            opt.apply_gradients([(grad, var)])

    threads = [threading.Thread(target=train, args=(v,)) for v in variables]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for var in variables:
        np.testing.assert_allclose(var.numpy(), -2.0, rtol=1e-5)
    assert int(opt.iterations) == 80


def test_the_global_policy_makes_new_layers_mixed_bfloat16():
    try:
        tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
        policy = tf.keras.mixed_precision.global_policy()
        assert (policy.name, policy.compute_dtype, policy.variable_dtype) == ("mixed_bfloat16", "bfloat16", "float32")
        layer = tf.keras.layers.Dense(2)
        assert layer(tf.ones((1, 3))).dtype == tf.bfloat16
    finally:
        tf.keras.mixed_precision.set_global_policy(None)
    assert tf.keras.mixed_precision.global_policy() is None


def test_an_unknown_policy_is_an_invalid_argument_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="mixed_float16"):
        tf.keras.mixed_precision.set_global_policy("mixed_float16")


def test_loss_scaling_scales_the_loss_and_unscales_the_gradients():
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(1.0), initial_scale=8.0)
    assert float(opt.get_scaled_loss(tf.constant(2.0))) == 16.0
    assert float(opt.get_unscaled_gradients([tf.constant(16.0)])[0]) == 2.0


def test_loss_scale_minimize_applies_the_unscaled_step():
    var = tf.Variable(3.0)
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1))
    opt.minimize(lambda: var * var, [var])
    assert float(var) == pytest.approx(2.4)
    assert int(opt.dynamic_counter) == 1


def test_a_step_with_an_infinite_gradient_is_skipped_and_the_scale_halved():
    var = tf.Variable(1.0)
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), initial_scale=1024.0)
    opt.apply_gradients([(tf.constant(np.inf), var)])
    assert float(var) == 1.0
    assert float(opt.loss_scale) == 512.0 and int(opt.skipped_steps) == 1
    assert int(opt.iterations) == 0


def test_clipnorm_rescales_the_gradient_before_the_step():
    var = step(tf.keras.optimizers.SGD(learning_rate=1.0, clipnorm=1.0), [0.0, 0.0], [3.0, 4.0])
    np.testing.assert_allclose(var.numpy(), [-0.6, -0.8], rtol=1e-6)


def test_an_unknown_keyword_argument_is_a_type_error_naming_the_optimizer():
    with pytest.raises(TypeError, match=r"\[Adam\] unexpected keyword argument 'beta1'"):
        tf.keras.optimizers.Adam(beta1=0.5)


def test_a_training_step_under_tf_function_matches_the_eager_one():
    x = tf.constant(np.linspace(-1, 1, 16, dtype=np.float32).reshape(16, 1))
    y = x * x
    models = [tf.keras.Sequential([tf.keras.layers.Dense(4, activation="tanh"), tf.keras.layers.Dense(1)])
              for _ in range(2)]
    for model in models:
        model(x)
    for source, target in zip(models[0].variables, models[1].variables):
        target.assign(source)
    optimizers = [tf.keras.optimizers.Adam(0.05) for _ in models]
    mse = tf.keras.losses.MeanSquaredError()

    def step(model, opt):
        with tf.GradientTape() as tape:
            loss = mse(y, model(x, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    traced = tf.function(lambda: step(models[1], optimizers[1]))
    eager_losses = [float(step(models[0], optimizers[0])) for _ in range(5)]
    traced_losses = [float(traced()) for _ in range(5)]
    np.testing.assert_allclose(traced_losses, eager_losses, rtol=1e-5)
    assert int(optimizers[1].iterations) == 5
