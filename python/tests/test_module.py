"""tf.Module subclassed in Python: variables, trainable_variables and submodules found by walking
the attributes in TensorFlow's order, with the C++ layers as modules among them."""

import pytest

import tapeflow as tf


class Affine(tf.Module):
    def __init__(self, name=None):
        super().__init__(name=name)
        self.w = tf.Variable([[1.0, 2.0]], name="w")
        self.b = tf.Variable([0.0], name="b")

    def __call__(self, x):
        return tf.matmul(x, self.w, transpose_b=True) + self.b


def names(variables):
    return [v.name for v in variables]


def test_variables_are_listed_by_sorted_attribute_name():
    assert names(Affine().variables) == ["b:0", "w:0"]


def test_the_name_defaults_to_the_class_name_in_snake_case():
    class TwoLayerNet(tf.Module):
        pass

    assert TwoLayerNet().name == "two_layer_net"
    assert Affine(name="head").name == "head"


def test_a_name_that_is_not_an_identifier_is_a_value_error():
    with pytest.raises(ValueError, match="not a valid module name"):
        Affine(name="my head")


def test_non_trainable_variables_are_left_out_of_trainable_variables():
    module = Affine()
    module.steps = tf.Variable(0, trainable=False, name="steps")
    assert names(module.variables) == ["b:0", "steps:0", "w:0"]
    assert names(module.trainable_variables) == ["b:0", "w:0"]
    assert names(module.non_trainable_variables) == ["steps:0"]


def test_lists_and_dicts_are_walked_in_order_and_by_sorted_key():
    module = tf.Module()
    module.params = {"z": tf.Variable(1.0, name="z"), "a": [tf.Variable(2.0, name="a0"), tf.Variable(3.0, name="a1")]}
    assert names(module.variables) == ["a0:0", "a1:0", "z:0"]


def test_a_module_s_own_variables_come_before_its_submodules():
    outer = tf.Module(name="outer")
    outer.a_child = Affine(name="child")
    outer.z = tf.Variable(5.0, name="z")
    assert names(outer.variables) == ["z:0", "b:0", "w:0"]
    assert outer.submodules == (outer.a_child,)


def test_a_variable_reachable_twice_is_listed_once():
    module = Affine()
    module.alias = module.w  # "alias" sorts first: w is met there, and not again under "w"
    assert names(module.variables) == ["w:0", "b:0"]


def test_a_cycle_between_modules_is_walked_once():
    first, second = tf.Module(name="first"), tf.Module(name="second")
    first.other, second.other = second, first
    second.v = tf.Variable(1.0, name="v")
    assert names(first.variables) == ["v:0"]
    assert first.submodules == (second,)


def test_a_cpp_layer_is_a_module_whose_variables_are_its_weights():
    module = tf.Module()
    module.dense = tf.keras.layers.Dense(2)
    module.dense(tf.ones((1, 3)))
    assert isinstance(module.dense, tf.Module)
    assert names(module.variables) == ["kernel", "bias"]
    assert module.submodules == (module.dense,)


def test_gradients_reach_every_trainable_variable():
    module = Affine()
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(module(tf.constant([[3.0, 4.0]])))
    grad_b, grad_w = tape.gradient(y, module.trainable_variables)
    assert grad_b.numpy().tolist() == [1.0]
    assert grad_w.numpy().tolist() == [[3.0, 4.0]]
