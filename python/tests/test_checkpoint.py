"""tf.train.Checkpoint and tf.train.CheckpointManager from Python: round trips of modules,
Python layers, optimizers and variables in pytest's tmp_path, deferred restores, bad files."""

import numpy as np
import pytest

import tapeflow as tf


class Net(tf.Module):
    def __init__(self):
        super().__init__()
        self.dense = tf.keras.layers.Dense(2)
        self.scale = tf.Variable([1.0, 1.0], name="scale")

    def __call__(self, x):
        return self.dense(x) * self.scale


def trained():
    net = Net()
    opt = tf.keras.optimizers.Adam(0.1)
    x = tf.ones((4, 3))
    for _ in range(2):
        opt.minimize(lambda: tf.reduce_sum(net(x) ** 2), net.trainable_variables)
    return net, opt, x


def test_save_then_restore_brings_back_weights_and_optimizer_state(tmp_path):
    net, opt, x = trained()
    ckpt = tf.train.Checkpoint(model=net, optimizer=opt)
    path = ckpt.save(tmp_path / "run" / "ckpt")
    assert path.endswith("ckpt-1")
    saved = [v.numpy().copy() for v in net.variables] + [v.numpy().copy() for v in opt.variables]

    for v in net.variables + tuple(opt.variables):
        v.assign(tf.zeros_like(v))
    ckpt.restore(path).assert_consumed()
    restored = [v.numpy() for v in net.variables] + [v.numpy() for v in opt.variables]
    for before, after in zip(saved, restored):
        np.testing.assert_array_equal(before, after)


def test_file_names_follow_the_keywords_and_attribute_paths(tmp_path):
    net, opt, _ = trained()
    path = tf.train.Checkpoint(model=net, optimizer=opt).write(str(tmp_path / "weights"))
    names = [name for name, _ in tf.train.list_variables(path)]
    # trainable_variables: scale (the module's own), then the Dense layer's kernel and bias
    assert names == ["model/dense/0/kernel", "model/dense/1/bias", "model/scale", "optimizer/iterations",
                     "optimizer/scale/m", "optimizer/scale/v", "optimizer/kernel/m", "optimizer/kernel/v",
                     "optimizer/bias/m", "optimizer/bias/v"]


def test_a_model_restored_before_its_first_call_gets_the_weights_when_built(tmp_path):
    x = tf.ones((1, 3))
    source = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    source(x)
    path = tf.train.Checkpoint(model=source).write(str(tmp_path / "model"))
    fresh = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    status = tf.train.Checkpoint(model=fresh).restore(path)
    fresh(x)  # builds the Dense layer, which takes the saved kernel and bias
    status.assert_consumed()
    np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(), source.layers[0].kernel.numpy())


def test_a_python_layer_s_weights_round_trip(tmp_path):
    class Scale(tf.keras.layers.Layer):
        def build(self, input_shape):
            self.w = self.add_weight(shape=(input_shape[-1],), initializer="random_normal", name="w")

        def call(self, inputs):
            return inputs * self.w

    layer = Scale()
    layer(tf.ones((1, 3)))
    ckpt = tf.train.Checkpoint(layer=layer)
    path = ckpt.write(str(tmp_path / "scale"))
    saved = layer.w.numpy().copy()
    layer.w.assign([0.0, 0.0, 0.0])
    ckpt.read(path).assert_consumed()
    np.testing.assert_array_equal(layer.w.numpy(), saved)


def test_the_manager_numbers_saves_and_keeps_the_newest(tmp_path):
    var = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=var), str(tmp_path), max_to_keep=2)
    for value in (1.0, 2.0, 3.0):
        var.assign(value)
        manager.save()
    assert [p.rsplit("/", 1)[1] for p in manager.checkpoints] == ["ckpt-2", "ckpt-3"]
    assert manager.latest_checkpoint.endswith("ckpt-3")
    assert not (tmp_path / "ckpt-1").exists()


def test_restore_or_initialize_restores_the_latest_or_runs_init_fn(tmp_path):
    var = tf.Variable(5.0)
    initialized = []
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(v=var), str(tmp_path), max_to_keep=3,
                                         init_fn=lambda: initialized.append(True))
    assert manager.restore_or_initialize() is None and initialized == [True]
    manager.save()
    var.assign(0.0)
    again = tf.train.CheckpointManager(tf.train.Checkpoint(v=var), str(tmp_path), max_to_keep=3)
    assert again.restore_or_initialize().endswith("ckpt-1")
    assert float(var) == 5.0


def test_loss_scale_optimizer_state_round_trips(tmp_path):
    var = tf.Variable(1.0)
    opt = tf.keras.mixed_precision.LossScaleOptimizer(tf.keras.optimizers.SGD(0.1), initial_scale=64.0)
    opt.apply_gradients([(tf.constant(np.inf), var)])  # skipped: scale 32
    ckpt = tf.train.Checkpoint(optimizer=opt)
    path = ckpt.write(str(tmp_path / "lso"))
    opt.loss_scale.assign(1.0)
    ckpt.restore(path).assert_consumed()
    assert float(opt.loss_scale) == 32.0 and int(opt.skipped_steps) == 1


def test_restore_of_none_restores_nothing_and_its_asserts_say_so():
    status = tf.train.Checkpoint(v=tf.Variable(1.0)).restore(None)
    assert status.expect_partial() is status
    with pytest.raises(AssertionError, match="nothing is being restored"):
        status.assert_consumed()


def test_an_unmatched_entry_fails_assert_consumed_with_an_assertion_error(tmp_path):
    path = tf.train.Checkpoint(a=tf.Variable(1.0), b=tf.Variable(2.0)).write(str(tmp_path / "two"))
    status = tf.train.Checkpoint(a=tf.Variable(0.0)).restore(path)
    with pytest.raises(AssertionError, match="b"):
        status.assert_consumed()
    status.expect_partial()


def test_a_shape_that_differs_names_the_entry_and_shapes(tmp_path):
    path = tf.train.Checkpoint(v=tf.Variable([1.0, 2.0])).write(str(tmp_path / "v"))
    target = tf.Variable([1.0, 2.0, 3.0])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"v.*\(2,\).*\(3,\)|v.*\(3,\).*\(2,\)"):
        tf.train.Checkpoint(v=target).restore(path)
    assert target.numpy().tolist() == [1.0, 2.0, 3.0]


def test_a_corrupt_file_is_a_data_loss_error(tmp_path):
    path = tmp_path / "corrupt"
    path.write_bytes(b"not a checkpoint at all")
    with pytest.raises(tf.errors.DataLossError, match="corrupt"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(path))


def test_a_missing_file_names_the_path(tmp_path):
    with pytest.raises(tf.errors.InvalidArgumentError, match="missing"):
        tf.train.Checkpoint(v=tf.Variable(1.0)).restore(str(tmp_path / "missing"))


def test_an_object_that_cannot_be_saved_is_a_value_error():
    with pytest.raises(ValueError, match="'data'"):
        tf.train.Checkpoint(data=[1, 2, 3])
