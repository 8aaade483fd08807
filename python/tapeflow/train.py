"""tf.train: checkpoints over tapeflow's C++ tf::Checkpoint and tf::CheckpointManager.

    ckpt = tf.train.Checkpoint(model=model, optimizer=optimizer)
    manager = tf.train.CheckpointManager(ckpt, "run", max_to_keep=3)
    ckpt.restore(manager.latest_checkpoint)      # nothing to restore on the first run
    ...
    manager.save()                               # run/ckpt-1, run/ckpt-2, ...

What a Checkpoint saves is found when it saves or restores, under names built from the keyword
it was given and the attribute path: a C++ layer, Sequential's C++ part or optimizer is tracked
whole (its variables created later are restored when they are created: a model restored before
its first call gets its weights when that call builds it); a tf.Module subclass is walked as
`variables` walks it, each variable it holds then saved under "<keyword>/<attribute path>".
Variables that a Python layer creates after the restore are not restored: call the model once
before restoring. The file is one tapeflow checkpoint (docs/CHECKPOINT_FORMAT.md).
"""

import os

from . import _tapeflow
from .errors import InvalidArgumentError
from .module import _is_python_module, _is_variable

__all__ = ["Checkpoint", "CheckpointManager", "list_variables"]


def _path_name(prefix, path):
    return "/".join([prefix] + [str(part) for part in path])


def _new_save_counter():
    return _tapeflow.ResourceVariable(0, trainable=False, name="save_counter", dtype=_tapeflow.int64)


def _is_checkpointed_whole_or_variable(leaf):
    """What a walk of a Python module tracks: variables, and C++ modules (whole)."""
    return _is_variable(leaf) or (isinstance(leaf, _tapeflow._Module) and not _is_python_module(leaf))


class CheckpointLoadStatus:
    """What a restore matched (tf.train.Checkpoint.restore's status). The asserts raise
    AssertionError listing what is unmatched, as TensorFlow's do, and return the status."""

    def __init__(self, status):
        self._status = status

    def _check(self, assertion):
        try:
            assertion()
        except InvalidArgumentError as error:
            raise AssertionError(str(error)) from error
        return self

    def assert_consumed(self):
        """Every entry of the file and every tracked variable existing now were matched."""
        return self._check(self._status.assert_consumed)

    def assert_existing_objects_matched(self):
        """Every tracked variable existing now was restored."""
        return self._check(self._status.assert_existing_objects_matched)

    def assert_nontrivial_match(self):
        """At least one variable was restored."""
        return self._check(self._status.assert_nontrivial_match)

    def expect_partial(self):
        """No warning about entries of the file never matched."""
        self._status.expect_partial()
        return self


class _NothingRestored:
    """The status of restore(None): nothing is restored, and the asserts say so."""

    def _fail(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    assert_consumed = assert_existing_objects_matched = assert_nontrivial_match = _fail

    def expect_partial(self):
        return self


class Checkpoint:
    """Modules, optimizers and variables saved and restored together under the keywords given
    (tf.train.Checkpoint(model=model, optimizer=optimizer))."""

    def __init__(self, root=None, **kwargs):
        if root is not None:
            kwargs["root"] = root
        for key, value in kwargs.items():
            if not (_is_variable(value) or isinstance(value, (_tapeflow._Module, _tapeflow.optimizers.Optimizer,
                                                              _tapeflow.mixed_precision.LossScaleOptimizer))
                    or _is_python_module(value)):
                raise ValueError(f"`Checkpoint` was expecting a trackable object (an object derived from "
                                 f"`Trackable`), got {value!r} of type {type(value)} for '{key}'.")
        self._objects = dict(kwargs)
        self._native = _tapeflow._Checkpoint()
        self._tracked = set()  # names tracked in self._native
        self.save_counter = None

    def _track(self, name, value):
        if name in self._tracked:
            return
        if _is_variable(value):
            self._native.track_variable(name, value)
        elif isinstance(value, _tapeflow.optimizers.Optimizer):
            self._native.track_optimizer(name, value)
        elif isinstance(value, _tapeflow.mixed_precision.LossScaleOptimizer):
            self._native.track_optimizer(name, value.inner_optimizer)
            for variable in (value.loss_scale, value.dynamic_counter, value.skipped_steps):
                self._track(f"{name}/{variable.name}", variable)
        else:
            self._native.track_module(name, value)
        self._tracked.add(name)

    def _track_all(self):
        """Tracks what the objects hold now (a Python module may have gained variables)."""
        for key, value in self._objects.items():
            if not _is_python_module(value):
                self._track(key, value)
                continue
            # C++ modules below a Python one are tracked whole; its own variables one by one.
            for path, leaf in value._flatten(predicate=_is_checkpointed_whole_or_variable, with_path=True,
                                             into_native=False):
                self._track(_path_name(key, path), leaf)
        if self.save_counter is not None:
            self._track("save_counter", self.save_counter)

    def write(self, file_prefix):
        """Writes the tracked variables to the file `file_prefix`; returns its path."""
        self._track_all()
        path = os.fspath(file_prefix)
        self._native.write(path)
        return path

    def save(self, file_prefix):
        """Writes "<file_prefix>-<n>", n counting the saves (save_counter), creating the directory
        if missing; returns the path."""
        directory = os.path.dirname(os.fspath(file_prefix))
        if directory:
            os.makedirs(directory, exist_ok=True)
        if self.save_counter is None:
            self.save_counter = _new_save_counter()
        self.save_counter.assign_add(1)
        return self.write(f"{os.fspath(file_prefix)}-{int(self.save_counter.numpy())}")

    def restore(self, save_path):
        """Restores `save_path` (None: nothing); returns the status, whose asserts check the match."""
        if save_path is None:
            return _NothingRestored()
        save_path = os.fspath(save_path)
        if self.save_counter is None and any(name == "save_counter" for name, _ in list_variables(save_path)):
            self.save_counter = _new_save_counter()
        self._track_all()
        return CheckpointLoadStatus(self._native.restore(save_path))

    def read(self, save_path):
        """Restores `save_path`, a file written by write()."""
        return self.restore(save_path)


class CheckpointManager:
    """Numbered checkpoints of one Checkpoint in `directory`, the newest `max_to_keep` kept
    (tf.train.CheckpointManager; max_to_keep None keeps all)."""

    def __init__(self, checkpoint, directory, max_to_keep, checkpoint_name="ckpt", init_fn=None):
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError(f"checkpoint must be a tf.train.Checkpoint, got {type(checkpoint)}")
        self._checkpoint = checkpoint
        self._init_fn = init_fn
        self._native = _tapeflow._CheckpointManager(checkpoint._native, os.fspath(directory), max_to_keep,
                                                    checkpoint_name)

    @property
    def directory(self):
        """The directory, as given."""
        return self._native.directory

    @property
    def latest_checkpoint(self):
        """The path of the newest checkpoint kept, or None."""
        return self._native.latest_checkpoint

    @property
    def checkpoints(self):
        """The paths of the kept checkpoints, oldest first."""
        return self._native.checkpoints

    def save(self, checkpoint_number=None):
        """Writes the next checkpoint, deletes the oldest beyond max_to_keep; returns its path."""
        self._checkpoint._track_all()
        return self._native.save(checkpoint_number)

    def restore_or_initialize(self):
        """Restores the latest checkpoint and returns its path; without one, runs init_fn and
        returns None."""
        self._checkpoint._track_all()
        if self._native.restore_or_initialize() is not None:
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None


def list_variables(ckpt_dir_or_file):
    """(name, shape) of every tensor in a checkpoint file (tf.train.list_variables)."""
    return _tapeflow._list_checkpoint(os.fspath(ckpt_dir_or_file))
