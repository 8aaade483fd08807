"""tf.keras.losses and tf.keras.metrics from Python, against hand-computed values; bad input."""

import math

import numpy as np
import pytest

import tapeflow as tf


def test_mean_squared_error_is_the_mean_of_squared_differences():
    loss = tf.keras.losses.MeanSquaredError()([[1.0, 2.0]], [[2.0, 4.0]])
    assert float(loss) == pytest.approx(2.5)
    assert loss.dtype == tf.float32


def test_sparse_categorical_crossentropy_from_logits_is_minus_log_softmax_of_the_label():
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)([0], [[0.0, math.log(3.0)]])
    assert float(loss) == pytest.approx(math.log(4.0), rel=1e-6)


def test_categorical_crossentropy_of_probabilities():
    loss = tf.keras.losses.CategoricalCrossentropy()([[0.0, 1.0]], [[0.25, 0.75]])
    assert float(loss) == pytest.approx(-math.log(0.75), rel=1e-6)


def test_binary_crossentropy_from_logits_of_a_zero_logit_is_log_two():
    loss = tf.keras.losses.BinaryCrossentropy(from_logits=True)([[1.0]], [[0.0]])
    assert float(loss) == pytest.approx(math.log(2.0), rel=1e-6)


def test_a_loss_is_differentiable_with_respect_to_the_predictions():
    logits = tf.Variable([[0.0, 0.0]])
    with tf.GradientTape() as tape:
        loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)([1], logits)
    # softmax - one_hot
    np.testing.assert_allclose(tape.gradient(loss, logits).numpy(), [[0.5, -0.5]], rtol=1e-6)


def test_losses_have_keras_names_and_from_logits_defaults_to_false():
    loss = tf.keras.losses.SparseCategoricalCrossentropy()
    assert (loss.name, loss.from_logits) == ("sparse_categorical_crossentropy", False)
    assert tf.keras.losses.MeanSquaredError().name == "mean_squared_error"


def test_mismatched_shapes_name_the_loss_and_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"mean_squared_error.*\(2, 3\).*\(2, 2\)|"
                                                             r"mean_squared_error.*\(2, 2\).*\(2, 3\)"):
        tf.keras.losses.MeanSquaredError()(tf.ones((2, 3)), tf.ones((2, 2)))


def test_float_labels_for_sparse_crossentropy_name_the_dtype():
    with pytest.raises(tf.errors.InvalidArgumentError, match="int32 or int64.*float32"):
        tf.keras.losses.SparseCategoricalCrossentropy()(tf.constant([0.0]), [[0.5, 0.5]])


def test_a_string_in_place_of_predictions_is_an_error_naming_the_loss():
    with pytest.raises((TypeError, ValueError), match="CategoricalCrossentropy"):
        tf.keras.losses.CategoricalCrossentropy()([[1.0]], "logits")


def test_mean_accumulates_a_weighted_mean_over_batches():
    mean = tf.keras.metrics.Mean()
    mean.update_state([1.0, 3.0], sample_weight=[1.0, 3.0])
    assert float(mean.result()) == pytest.approx(2.5)
    mean.update_state(6.0)
    assert float(mean(0.0)) == pytest.approx((1 + 9 + 6) / 6)
    mean.reset_state()
    assert float(mean.result()) == 0.0
    assert mean.result().dtype == tf.float32


def test_accuracy_counts_exact_matches():
    assert float(tf.keras.metrics.Accuracy()([1, 2, 3], [1, 2, 4])) == pytest.approx(2 / 3)


def test_sparse_categorical_accuracy_compares_argmax_with_the_label():
    metric = tf.keras.metrics.SparseCategoricalAccuracy()
    metric.update_state([0, 1], [[0.9, 0.1], [0.8, 0.2]])
    assert float(metric.result()) == 0.5
    assert metric.name == "sparse_categorical_accuracy"


def test_categorical_accuracy_compares_argmaxes():
    metric = tf.keras.metrics.CategoricalAccuracy()
    assert float(metric([[0.0, 1.0], [1.0, 0.0]], [[0.2, 0.8], [0.3, 0.7]])) == 0.5


def test_binary_accuracy_thresholds_the_predictions():
    assert float(tf.keras.metrics.BinaryAccuracy()([1.0, 0.0], [0.7, 0.6])) == 0.5
    assert float(tf.keras.metrics.BinaryAccuracy(threshold=0.65)([1.0, 0.0], [0.7, 0.6])) == 1.0


def test_accuracy_of_different_shapes_names_the_metric_and_shapes():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"accuracy.*\(3,\).*\(2,\)|accuracy.*\(2,\).*\(3,\)"):
        tf.keras.metrics.Accuracy().update_state([1, 2, 3], [1, 2])


def test_a_loss_weights_each_example_and_divides_by_the_example_count():
    mse = tf.keras.losses.MeanSquaredError()
    # per-example squared errors 1, 4, 9 weighted 2, 0, 1: (2 + 9) / 3, Keras's sum_over_batch_size
    assert float(mse([0.0, 0.0, 0.0], [1.0, 2.0, 3.0], sample_weight=[2.0, 0.0, 1.0])) == pytest.approx(11 / 3)


def test_a_padding_mask_as_sample_weight_drops_padded_steps():
    loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    labels = np.array([[0, 1], [1, 0]], dtype=np.int32)
    logits = np.zeros((2, 2, 2), dtype=np.float32)
    mask = [[1.0, 1.0], [1.0, 0.0]]
    assert float(loss(labels, logits, sample_weight=mask)) == pytest.approx(3 * math.log(2) / 4, rel=1e-6)


def test_a_sample_weight_that_does_not_broadcast_names_the_loss():
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"binary_crossentropy.*sample_weight of shape \(2,\)"):
        tf.keras.losses.BinaryCrossentropy()([1.0, 0.0, 1.0], [0.5, 0.5, 0.5], sample_weight=[1.0, 2.0])


def test_accuracy_metrics_take_a_sample_weight():
    metric = tf.keras.metrics.SparseCategoricalAccuracy()
    metric.update_state([0, 0, 1], [[0.9, 0.1], [0.2, 0.8], [0.3, 0.7]], sample_weight=[0.5, 2.0, 1.0])
    assert float(metric.result()) == pytest.approx(1.5 / 3.5)
