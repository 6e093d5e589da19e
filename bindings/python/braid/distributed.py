"""Several processes: braid's process groups (braid_process_group_*, docs/DISTRIBUTED.md) with the
names of torch.distributed and Horovod.

A ProcessGroup joins the ranks of a job (started by braid-run, mpirun, srun or a torchrun-style
launcher, whose variables give each process its rank, the world size and where rank 0 serves the
rendezvous). Its collectives work on braid arrays in place and, like every braid op, return at once:
the data moves when the ops that write the arrays have ended, and reading the result waits for it.
Every rank must make the same collectives in the same order, with the same dtypes and sizes; ranks
that disagree get a BraidError naming both calls, a rank that died or stalls makes the others' calls
fail within the group's timeout (never a hang).

    from braid import distributed as dist, np
    dist.init_process_group()             # rank, size, address: from the launcher
    x = np.ones(4) * (dist.get_rank() + 1)
    dist.allreduce(x, op="avg")           # every rank: (1 + 2 + ... + N) / N

gluon.Trainer(..., kvstore="dist_sync") uses the default group (made on first use), so a training
script needs none of this module unless it exchanges values of its own.
"""
import atexit
import ctypes
import numbers
import operator
import threading

from . import device as _device
from ._lib import EXIT_REJOIN, PROCESS_GROUP_NO_CHECK, ProcessGroupInfo, ProcessGroupOptions, check, lib
from .ndarray import ndarray

# braid_collective_op; "mean" is MXNet's and NumPy's name for "avg"
OPS = {"sum": 0, "prod": 1, "max": 2, "min": 3, "avg": 4, "mean": 4}
_FLOATS = ("float32", "float64")


def _op_code(op):
    if not isinstance(op, str):
        raise TypeError(f"braid: a reduction is one of 'sum', 'avg', 'max', 'min', 'prod', not {op!r}")
    code = OPS.get(op.lower())
    if code is None:
        raise ValueError(f"braid: unknown reduction {op!r}: use 'sum', 'avg', 'max', 'min' or 'prod'")
    return code


def _array(value, what):
    if not isinstance(value, ndarray):
        raise TypeError(f"braid: {what} takes a braid array (braid.np.array(...)), not {type(value).__name__}")
    return value


def _int(value, what):
    if isinstance(value, bool):
        raise TypeError(f"braid: {what} is an int, not {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"braid: {what} is an int, not {value!r}") from None


class ProcessGroup:
    """The processes of a job, joined (blocking until every rank has joined, or the timeout).

    Every argument left None comes from the launcher's variables (BRAID_RANK, BRAID_WORLD_SIZE,
    BRAID_MASTER_ADDR, BRAID_MASTER_PORT, then Open MPI's, Slurm's and torchrun's; docs/DISTRIBUTED.md),
    else rank 0 of 1 at 127.0.0.1:29500. backend: the communication plugin ("gloo"); timeout: seconds
    that joining and each call may take (300); check_calls=False skips the exchange that makes ranks
    calling different collectives an error naming both (one small all-gather per call)."""

    def __init__(self, rank=None, world_size=None, master_addr=None, master_port=None, backend=None,
                 timeout=None, check_calls=True):
        options = ProcessGroupOptions(ctypes.sizeof(ProcessGroupOptions), -1, 0, None, 0, None, 0.0, 0)
        if rank is not None:
            options.rank = _int(rank, "rank")
            if options.rank < 0:
                raise ValueError(f"braid: rank must not be negative, not {rank}")
        if world_size is not None:
            options.world_size = _int(world_size, "world_size")
            if options.world_size < 1:
                raise ValueError(f"braid: world_size must be at least 1, not {world_size}")
        if master_addr is not None:
            if not isinstance(master_addr, str) or not master_addr:
                raise TypeError(f"braid: master_addr is a host name or address, not {master_addr!r}")
            options.master_addr = master_addr.encode()
        if master_port is not None:
            options.master_port = _int(master_port, "master_port")
            if not 0 < options.master_port < 65536:
                raise ValueError(f"braid: master_port must be a TCP port (1 to 65535), not {master_port}")
        if backend is not None:
            if not isinstance(backend, str) or not backend:
                raise TypeError(f"braid: backend is a plugin name such as 'gloo', not {backend!r}")
            options.backend = backend.encode()
        if timeout is not None:
            if not isinstance(timeout, numbers.Real) or isinstance(timeout, bool) or not timeout > 0:
                raise ValueError(f"braid: timeout is a positive number of seconds, not {timeout!r}")
            options.timeout_seconds = float(timeout)
        if not check_calls:
            options.flags |= PROCESS_GROUP_NO_CHECK
        handle = ctypes.c_void_p()
        check(lib.braid_process_group_create(_device.context_handle(), ctypes.byref(options), ctypes.byref(handle)))
        self._handle = handle
        info = ProcessGroupInfo()
        info.struct_size = ctypes.sizeof(ProcessGroupInfo)
        check(lib.braid_process_group_get_info(handle, ctypes.byref(info)))
        self._rank, self._size = info.rank, info.world_size
        self._local_rank, self._local_size = info.local_rank, info.local_size
        self._timeout, self._backend = info.timeout_seconds, info.backend.decode("utf-8", "replace")

    # ---- what it is ----------------------------------------------------------------------------
    @property
    def handle(self):
        """The braid_process_group (for ctypes calls of the C API)."""
        if self._handle is None:
            raise RuntimeError("braid: this process group was closed")
        return self._handle

    @property
    def rank(self):
        """This process's rank, 0 to size - 1."""
        return self._rank

    @property
    def size(self):
        """The number of processes (the world size)."""
        return self._size

    world_size = size

    @property
    def local_rank(self):
        """The rank among this host's processes (from the launcher; else the rank)."""
        return self._local_rank

    @property
    def local_size(self):
        """The processes on this host (from the launcher; else the world size)."""
        return self._local_size

    @property
    def backend(self):
        return self._backend

    @property
    def timeout(self):
        return self._timeout

    def __repr__(self):
        return f"ProcessGroup(rank={self._rank}, size={self._size}, backend={self._backend!r})"

    # ---- collectives ---------------------------------------------------------------------------
    def _peer(self, value, what):
        peer = _int(value, what)
        if not 0 <= peer < self._size:
            raise ValueError(f"braid: {what} {peer} is not a rank of this group (0 to {self._size - 1})")
        return peer

    @staticmethod
    def _reduction(array, op):
        code = _op_code(op)
        if code == OPS["avg"] and str(array.dtype) not in _FLOATS:
            raise TypeError(f"braid: 'avg' reduces float32 and float64 arrays, not {array.dtype}; use 'sum'")
        return code

    def allreduce(self, array, op="sum"):
        """array becomes op over every rank's array (in place); returns it."""
        code = self._reduction(_array(array, "allreduce"), op)
        check(lib.braid_process_group_allreduce(self.handle, array.handle, code))
        return array

    def broadcast(self, array, root=0):
        """array becomes root's array on every rank (in place); returns it."""
        _array(array, "broadcast")
        check(lib.braid_process_group_broadcast(self.handle, array.handle, self._peer(root, "root")))
        return array

    def reduce(self, array, root=0, op="sum"):
        """On root, array becomes op over every rank's array; the other ranks' are left as they were."""
        code = self._reduction(_array(array, "reduce"), op)
        check(lib.braid_process_group_reduce(self.handle, array.handle, self._peer(root, "root"), code))
        return array

    def all_gather(self, array, out=None):
        """Every rank's array, in rank order: out (default a new (size, *array.shape) array on array's
        device; any shape with size times array's elements and array's dtype)."""
        _array(array, "all_gather")
        if out is None:
            from . import np
            out = np.empty((self._size,) + array.shape, dtype=array.dtype, ctx=array.ctx)
        _array(out, "all_gather's out")
        if out.size != self._size * array.size or out.dtype_code != array.dtype_code:
            raise ValueError(f"braid: all_gather's out must hold {self._size} x {array.size} {array.dtype} "
                             f"elements, not {out.size} {out.dtype}")
        check(lib.braid_process_group_all_gather(self.handle, array.handle, out.handle))
        return out

    def reduce_scatter(self, array, out=None, op="sum"):
        """This rank's part (part `rank` of size equal parts, in element order) of op over every rank's
        array: out (default a new array of array.shape[0] / size rows, else of array.size / size
        elements, on array's device)."""
        code = self._reduction(_array(array, "reduce_scatter"), op)
        if array.size % self._size:
            raise ValueError(f"braid: reduce_scatter splits {array.size} elements into {self._size} equal parts")
        if out is None:
            from . import np
            shape = array.shape
            part = ((shape[0] // self._size,) + shape[1:] if shape and shape[0] % self._size == 0
                    else (array.size // self._size,))
            out = np.empty(part, dtype=array.dtype, ctx=array.ctx)
        _array(out, "reduce_scatter's out")
        if out.size * self._size != array.size or out.dtype_code != array.dtype_code:
            raise ValueError(f"braid: reduce_scatter's out must hold {array.size // self._size} {array.dtype} "
                             f"elements, not {out.size} {out.dtype}")
        check(lib.braid_process_group_reduce_scatter(self.handle, array.handle, out.handle, code))
        return out

    def barrier(self):
        """Blocks until every rank is here and this rank's earlier calls of the group have ended."""
        check(lib.braid_process_group_barrier(self.handle))

    def rejoin_pending(self):
        """True, on every rank alike, when braid-run --rejoin has ranks lost earlier ready to come back:
        finish the checkpoint, then sys.exit(distributed.EXIT_REJOIN), and braid-run starts every rank
        again with the larger world. Every rank must call it at the same point."""
        pending = ctypes.c_int32()
        check(lib.braid_process_group_rejoin_pending(self.handle, ctypes.byref(pending)))
        return bool(pending.value)

    def send(self, array, dst, tag=0):
        """array's elements to rank dst, paired with its recv(..., src=this rank, tag=tag)."""
        _array(array, "send")
        dst = self._peer(dst, "dst")
        if dst == self._rank:
            raise ValueError("braid: send to this process's own rank")
        check(lib.braid_process_group_send(self.handle, array.handle, dst, self._tag(tag)))
        return array

    def recv(self, array, src, tag=0):
        """Fills array (in place) with what rank src sends with this tag; returns it."""
        _array(array, "recv")
        src = self._peer(src, "src")
        if src == self._rank:
            raise ValueError("braid: recv from this process's own rank")
        check(lib.braid_process_group_recv(self.handle, array.handle, src, self._tag(tag)))
        return array

    @staticmethod
    def _tag(tag):
        tag = _int(tag, "tag")
        if not 0 <= tag < 2 ** 31:
            raise ValueError(f"braid: tag must be a non-negative int32, not {tag}")
        return tag

    all_reduce = allreduce  # torch.distributed's spellings
    allgather = all_gather  # Horovod's

    # ---- lifetime ------------------------------------------------------------------------------
    def close(self):
        """Waits for the group's calls, then leaves it (also done when the object goes)."""
        handle, self._handle = getattr(self, "_handle", None), None
        if handle is not None:
            check(lib.braid_process_group_release(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            handle, self._handle = self._handle, None
            if handle is not None:
                lib.braid_process_group_release(handle)
        except (AttributeError, TypeError):  # a failed __init__, or the interpreter is shutting down
            pass


# ---- the default group ---------------------------------------------------------------------------
_lock = threading.Lock()
_default = None


def init_process_group(backend=None, rank=None, world_size=None, master_addr=None, master_port=None,
                       timeout=None, check_calls=True):
    """Joins the default group (ProcessGroup's arguments; None: from the launcher) and returns it.
    RuntimeError if it exists already (gluon.Trainer(kvstore="dist_sync") makes it on first use)."""
    with _lock:
        if _default is not None:
            raise RuntimeError("braid: the default process group exists already (distributed.default_group() "
                               "returns it; destroy_process_group() leaves it)")
        return _make_default(ProcessGroup(rank, world_size, master_addr, master_port, backend, timeout, check_calls))


def _make_default(group):
    global _default
    _default = group
    atexit.register(_leave_at_exit)  # after the context's handler, so it runs before it
    return group


def default_group():
    """The default group, joined from the launcher's variables if it does not exist yet."""
    with _lock:
        return _default if _default is not None else _make_default(ProcessGroup())


def is_initialized():
    """Whether the default group exists."""
    return _default is not None


def destroy_process_group():
    """Leaves the default group (after its calls end). Trainers and arrays already handed to it keep
    working: the C group lives while they use it."""
    global _default
    with _lock:
        group, _default = _default, None
    if group is not None:
        group.close()


def _leave_at_exit():
    try:
        destroy_process_group()
    except Exception:  # a failed group: its error was raised where it happened
        pass


def _group(group):
    if group is not None:
        if not isinstance(group, ProcessGroup):
            raise TypeError(f"braid: group is a distributed.ProcessGroup, not {type(group).__name__}")
        return group
    if _default is None:
        raise RuntimeError("braid: no default process group: call braid.distributed.init_process_group() first")
    return _default


def get_rank(group=None):
    """This process's rank in group (default: the default group, which must exist)."""
    return _group(group).rank


def get_world_size(group=None):
    return _group(group).size


def get_local_rank(group=None):
    return _group(group).local_rank


def allreduce(array, op="sum", group=None):
    return _group(group).allreduce(array, op)


def broadcast(array, root=0, group=None):
    return _group(group).broadcast(array, root)


def reduce(array, root=0, op="sum", group=None):
    return _group(group).reduce(array, root, op)


def all_gather(array, out=None, group=None):
    return _group(group).all_gather(array, out)


def reduce_scatter(array, out=None, op="sum", group=None):
    return _group(group).reduce_scatter(array, out, op)


def barrier(group=None):
    _group(group).barrier()


def rejoin_pending(group=None):
    return _group(group).rejoin_pending()


def send(array, dst, tag=0, group=None):
    return _group(group).send(array, dst, tag)


def recv(array, src, tag=0, group=None):
    return _group(group).recv(array, src, tag)


all_reduce = allreduce
allgather = all_gather
__all__ = ["ProcessGroup", "OPS", "init_process_group", "default_group", "is_initialized", "destroy_process_group",
           "get_rank", "get_world_size", "get_local_rank", "allreduce", "all_reduce", "broadcast", "reduce",
           "all_gather", "allgather", "reduce_scatter", "barrier", "rejoin_pending", "EXIT_REJOIN", "send", "recv"]
