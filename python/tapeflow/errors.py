"""tf.errors: TensorFlow's exception classes. Each is also the built-in class a TensorFlow user
catches for it: InvalidArgumentError is a ValueError, FailedPreconditionError a RuntimeError,
UnimplementedError a NotImplementedError."""

from ._tapeflow.errors import (  # noqa: F401
    OpError, InvalidArgumentError, FailedPreconditionError, ResourceExhaustedError, OutOfRangeError,
    UnimplementedError, DataLossError, UnavailableError, InternalError)
