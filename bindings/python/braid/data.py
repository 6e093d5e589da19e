"""Fashion-MNIST (and MNIST) mini-batches from braid's IDX reader and its prefetching iterator
(docs/DATA.md): d2l's load_data_fashion_mnist for braid."""
import ctypes

from . import device as _device
from ._lib import c_tensor, check, lib
from .ndarray import ndarray, resolve_device

_TRAIN, _TEST = 0, 1


class _DatasetOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("name", ctypes.c_char_p), ("dir", ctypes.c_char_p),
                ("split", ctypes.c_int)]


class _IteratorOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("batch_size", ctypes.c_int64), ("shuffle", ctypes.c_int32),
                ("seed", ctypes.c_uint64), ("drop_last", ctypes.c_int32), ("device", ctypes.c_int32),
                ("prefetch", ctypes.c_int32), ("num_parts", ctypes.c_int32), ("part_index", ctypes.c_int32)]


for _name, _restype, _argtypes in [
        ("braid_dataset_open", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_DatasetOptions),
                                              ctypes.POINTER(ctypes.c_void_p)]),
        ("braid_dataset_release", ctypes.c_int, [ctypes.c_void_p]),
        ("braid_batch_iterator_create", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(_IteratorOptions),
                                                       ctypes.POINTER(ctypes.c_void_p)]),
        ("braid_batch_iterator_release", ctypes.c_int, [ctypes.c_void_p]),
        ("braid_batch_iterator_next", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(c_tensor),
                                                     ctypes.POINTER(c_tensor)]),
        ("braid_batch_iterator_batches", ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)])]:
    getattr(lib, _name).restype, getattr(lib, _name).argtypes = _restype, _argtypes


class BatchIterator:
    """One pass over a dataset per `for X, y in it:` (X float32 (B, 1, 28, 28) in [0, 1], y int32 (B,)),
    prepared ahead by braid's background thread. Leaving a pass early and starting another skips the
    rest of the first: every pass is a whole epoch. With num_parts > 1 it reads part part_index of
    every epoch (MXNet's names; PyTorch's DistributedSampler): every part has the same number of
    batches, padded by repeating the epoch's first examples (docs/DATA.md, "Parts")."""

    def __init__(self, name, split, batch_size, shuffle, seed, device, data_dir, num_parts=1, part_index=0,
                 drop_last=False):
        options = _DatasetOptions(ctypes.sizeof(_DatasetOptions), name.encode(),
                                  None if data_dir is None else str(data_dir).encode(), split)
        dataset = ctypes.c_void_p()
        check(lib.braid_dataset_open(_device.context_handle(), ctypes.byref(options), ctypes.byref(dataset)))
        try:
            it_options = _IteratorOptions(ctypes.sizeof(_IteratorOptions), int(batch_size), int(bool(shuffle)),
                                          int(seed), int(bool(drop_last)), device.index, 2, int(num_parts),
                                          int(part_index))
            self._it = ctypes.c_void_p()
            check(lib.braid_batch_iterator_create(dataset, ctypes.byref(it_options), ctypes.byref(self._it)))
        finally:
            lib.braid_dataset_release(dataset)  # the iterator holds it
        self._midway = False

    def __del__(self):
        it, self._it = getattr(self, "_it", None), None
        if it and lib is not None:
            lib.braid_batch_iterator_release(it)

    def __len__(self):
        count = ctypes.c_int64()
        check(lib.braid_batch_iterator_batches(self._it, ctypes.byref(count)))
        return count.value

    def _next(self):
        images, labels = c_tensor(), c_tensor()
        check(lib.braid_batch_iterator_next(self._it, ctypes.byref(images), ctypes.byref(labels)))
        if not images.value:
            return None
        return ndarray(images), ndarray(labels)

    def __iter__(self):
        while self._midway and self._next() is not None:  # finish the pass left early
            pass
        self._midway = True
        while (batch := self._next()) is not None:
            yield batch
        self._midway = False


def load_data_fashion_mnist(batch_size, ctx=None, device=None, seed=0, data_dir=None, name="fashion-mnist",
                            num_parts=1, part_index=0):
    """(train_iter, test_iter): the training set reshuffled every pass, the test set in order; batches
    placed on ctx (default cpu(0)). data_dir defaults to $BRAID_DATA_DIR, else Debian's
    /usr/share/datasets/fashion-mnist (package dataset-fashion-mnist). num_parts and part_index give
    this process its part of the training set in a data-parallel job (typically the group's size and
    rank): batch_size is then the batch of one process, and every process takes the same number of
    steps. The test set stays whole."""
    dev = resolve_device(ctx, device)
    return (BatchIterator(name, _TRAIN, batch_size, True, seed, dev, data_dir, num_parts, part_index),
            BatchIterator(name, _TEST, batch_size, False, seed, dev, data_dir))
