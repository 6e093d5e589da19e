"""Fashion-MNIST and MNIST as Gluon datasets: (image, label) samples, the image uint8 (28, 28, 1) as MXNet
gives it and the label int32. The files are braid's IDX reader's (docs/DATA.md): root defaults to
$BRAID_DATA_DIR, else Debian's /usr/share/datasets/fashion-mnist."""
import numpy

from .... import data as _braid_data
from .... import device as _device
from ..dataset import Dataset

__all__ = ["MNIST", "FashionMNIST"]


class _IdxDataset(Dataset):
    name = None

    def __init__(self, root=None, train=True, transform=None):
        self.root, self.train = root, bool(train)
        self.split = 0 if self.train else 1
        # The whole split in one batch, in file order, through braid's reader (which validates the files).
        it = _braid_data.BatchIterator(self.name, self.split, 2 ** 62, False, 0, _device.cpu(), root)
        images, labels = next(iter(it))
        self._data = numpy.rint(images.asnumpy() * 255).astype(numpy.uint8).transpose(0, 2, 3, 1)
        self._label = labels.asnumpy().astype(numpy.int32)
        self._transform = transform

    def __len__(self):
        return len(self._label)

    def __getitem__(self, idx):
        image, label = self._data[idx], self._label[idx]
        if self._transform is not None:
            return self._transform(image, label)
        return image, label


class FashionMNIST(_IdxDataset):
    name = "fashion-mnist"


class MNIST(_IdxDataset):
    name = "mnist"
