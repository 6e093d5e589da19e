"""DataLoader: a dataset's samples in mini-batches of braid arrays. A Fashion-MNIST or MNIST dataset,
as it is or with transforms.ToTensor() on its images, is read by braid's own prefetching iterator
(docs/DATA.md): its background thread assembles the next batches while the caller computes. Any other
dataset is batched here: samples stacked on the host (NumPy), one upload a batch, and with
num_workers > 0 a background thread prepares the next batches."""
import queue
import threading

import numpy

from ... import data as _braid_data
from ... import device as _device
from ... import np as _np
from .dataset import host
from .vision import datasets as _vision, transforms as _transforms

__all__ = ["DataLoader", "default_batchify_fn"]


def default_batchify_fn(samples):
    """A list of samples to one batch: tuples element by element, arrays stacked on a new first axis."""
    if isinstance(samples[0], tuple):
        return tuple(default_batchify_fn([s[k] for s in samples]) for k in range(len(samples[0])))
    batch = numpy.stack([host(s) for s in samples])
    if batch.dtype == numpy.float64:
        batch = batch.astype(numpy.float32)  # MXNet's default dtype
    return _np.array(batch, dtype=batch.dtype)


class DataLoader:
    """Iterates a dataset in batches of batch_size: shuffle reorders the samples every pass (from
    NumPy's global RNG, as MXNet's RandomSampler), last_batch is 'keep' (a smaller last batch),
    'discard' or 'rollover' (the rest opens the next pass)."""

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None, batch_sampler=None,
                 batchify_fn=None, num_workers=0, pin_memory=False, prefetch=None, thread_pool=False, timeout=120):
        if batch_size is None or int(batch_size) <= 0:
            raise ValueError(f"braid: DataLoader needs a positive batch_size, not {batch_size!r}")
        if sampler is not None or batch_sampler is not None:
            raise ValueError("braid: DataLoader takes batch_size, shuffle and last_batch (no samplers)")
        last_batch = last_batch or "keep"
        if last_batch not in ("keep", "discard", "rollover"):
            raise ValueError(f"braid: last_batch {last_batch!r} is none of 'keep', 'discard', 'rollover'")
        if int(num_workers) < 0:
            raise ValueError(f"braid: num_workers must not be negative, not {num_workers!r}")
        self._dataset, self._batch_size, self._shuffle = dataset, int(batch_size), bool(shuffle)
        self._last_batch, self._batchify = last_batch, batchify_fn or default_batchify_fn
        self._workers, self._rolled = int(num_workers), []
        self._native = self._native_source()

    def _native_source(self):
        """(name, split, dir) when braid's iterator gives exactly this dataset's batches."""
        ds, to_tensor = self._dataset, False
        if getattr(ds, "first", None) is not None and isinstance(ds.first, _transforms.ToTensor):
            ds, to_tensor = ds.base, True
        if (not isinstance(ds, _vision._IdxDataset) or ds._transform is not None or not to_tensor
                or self._last_batch == "rollover"):
            return None
        return ds

    def __len__(self):
        n = len(self._dataset)
        if self._last_batch == "discard":
            return n // self._batch_size
        return (n + self._batch_size - 1) // self._batch_size

    def __iter__(self):
        if self._native is not None:
            ds = self._native
            seed = int(numpy.random.randint(0, 2 ** 31)) if self._shuffle else 0
            it = _braid_data.BatchIterator(ds.name, ds.split, self._batch_size, self._shuffle, seed,
                                           _device.cpu(), ds.root, drop_last=self._last_batch == "discard")
            for images, labels in it:
                yield images, labels
            return
        batches = self._index_batches()
        if self._workers == 0:
            for idx in batches:
                yield self._batchify([self._dataset[i] for i in idx])
            return
        yield from self._prefetched(batches)

    def _index_batches(self):
        order = numpy.arange(len(self._dataset))
        if self._shuffle:
            numpy.random.shuffle(order)
        order = numpy.concatenate([numpy.asarray(self._rolled, dtype=order.dtype), order])
        self._rolled = []
        full = len(order) // self._batch_size * self._batch_size
        batches = [order[i:i + self._batch_size] for i in range(0, full, self._batch_size)]
        rest = order[full:]
        if len(rest):
            if self._last_batch == "keep":
                batches.append(rest)
            elif self._last_batch == "rollover":
                self._rolled = list(rest)
        return batches

    def _prefetched(self, batches):
        """The batches prepared by one background thread, up to 2 * num_workers ahead."""
        ready = queue.Queue(maxsize=2 * self._workers)
        stop = threading.Event()

        def work():
            try:
                for idx in batches:
                    if stop.is_set():
                        return
                    ready.put((True, self._batchify([self._dataset[i] for i in idx])))
            except BaseException as e:  # handed to the consumer, raised there
                ready.put((False, e))
            ready.put(None)

        thread = threading.Thread(target=work, daemon=True)
        thread.start()
        try:
            while (item := ready.get()) is not None:
                ok, value = item
                if not ok:
                    raise value
                yield value
        finally:
            stop.set()
            while thread.is_alive():
                try:
                    ready.get_nowait()
                except queue.Empty:
                    thread.join(0.01)
