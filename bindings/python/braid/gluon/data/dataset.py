"""Datasets: anything with __getitem__ and __len__; transform and transform_first make lazily transformed
views. Samples are kept on the host (NumPy) and become braid arrays a batch at a time (DataLoader)."""
import numpy

from ...ndarray import ndarray

__all__ = ["Dataset", "SimpleDataset", "ArrayDataset"]


def host(x):
    """x as a NumPy array (a braid array is copied to the host once)."""
    return x.asnumpy() if isinstance(x, ndarray) else numpy.asarray(x)


class Dataset:
    def __getitem__(self, idx):
        raise NotImplementedError

    def __len__(self):
        raise NotImplementedError

    def transform(self, fn, lazy=True):
        """A dataset of fn(*sample) (fn(sample) for samples that are not tuples)."""
        view = _Transformed(self, fn)
        return view if lazy else SimpleDataset([view[i] for i in range(len(view))])

    def transform_first(self, fn, lazy=True):
        """A dataset whose samples have fn applied to their first element (the image) only."""
        def first(*sample):
            return (fn(sample[0]),) + tuple(sample[1:]) if len(sample) > 1 else fn(sample[0])
        view = self.transform(first, lazy)
        if lazy:
            view.first = fn
        return view


class SimpleDataset(Dataset):
    """A list (or anything indexable with a length) as a dataset."""

    def __init__(self, data):
        self._data = data

    def __len__(self):
        return len(self._data)

    def __getitem__(self, idx):
        return self._data[idx]


class ArrayDataset(Dataset):
    """Samples i of several arrays of one length, as a tuple (or alone for one array). Arrays are held
    on the host."""

    def __init__(self, *args):
        if not args:
            raise ValueError("braid: ArrayDataset needs at least one array")
        self._arrays = [host(a) if isinstance(a, ndarray) else a for a in args]
        lengths = {len(a) for a in self._arrays}
        if len(lengths) != 1:
            raise ValueError(f"braid: ArrayDataset's arrays differ in length: {[len(a) for a in self._arrays]}")
        self._length = lengths.pop()

    def __len__(self):
        return self._length

    def __getitem__(self, idx):
        if len(self._arrays) == 1:
            return self._arrays[0][idx]
        return tuple(a[idx] for a in self._arrays)


class _Transformed(Dataset):
    def __init__(self, base, fn):
        self.base, self.fn, self.first = base, fn, None

    def __len__(self):
        return len(self.base)

    def __getitem__(self, idx):
        sample = self.base[idx]
        return self.fn(*sample) if isinstance(sample, tuple) else self.fn(sample)
