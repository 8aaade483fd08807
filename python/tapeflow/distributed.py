"""tapeflow.distributed: data-parallel training over MPI, as Horovod's horovod.tensorflow.

    import tapeflow as tf
    import tapeflow.distributed as dist

    dist.init()                                   # rank and size from mpirun
    dist.broadcast_variables(model.variables)     # every rank starts from rank 0's weights
    for x, y in my_shard_of_the_data:
        with dist.DistributedGradientTape() as tape:
            loss = loss_fn(model(x), y)
        grads = tape.gradient(loss, model.trainable_variables)   # averaged over the ranks
        optimizer.apply_gradients(zip(grads, model.trainable_variables))

Run it with `mpirun -np 4 python3 train.py` (as root, OpenMPI also wants --allow-run-as-root).
Without mpirun the same script is one rank of one: the collectives return their input.
"""

from . import _tapeflow
from .tape import GradientTape
from ._tapeflow.distributed import (  # noqa: F401
    init, initialized, is_mpi, rank, size, local_rank, local_size, barrier, allreduce, allgather, broadcast,
    alltoall, broadcast_variables)

__all__ = ["init", "initialized", "is_mpi", "rank", "size", "local_rank", "local_size", "barrier", "allreduce",
           "allgather", "broadcast", "alltoall", "broadcast_variables", "DistributedGradientTape"]


class DistributedGradientTape(GradientTape):
    """A GradientTape whose gradient() averages the gradients over the ranks (op='sum' adds them),
    reducing buckets of them while the backward pass still runs where a core is free for that
    (overlap='auto'; 'always' or 'never' decide). output_gradients are not supported;
    compression='bfloat16' or 'float16' halves the bytes sent."""

    def __init__(self, persistent=False, watch_accessed_variables=True, op="average", compression="none",
                 gradient_predivide_factor=1.0, bucket_bytes=25 << 20, backward_passes_per_step=1,
                 overlap="auto"):
        super().__init__(persistent, watch_accessed_variables)
        options = _tapeflow.distributed.ReduceOptions(op, compression, gradient_predivide_factor, bucket_bytes,
                                                      backward_passes_per_step, overlap)
        self._tape = _tapeflow._Tape(persistent, watch_accessed_variables, options)
