"""gluon.data: datasets, DataLoader (braid's iterator for Fashion-MNIST, host batching for the rest) and
the vision transforms, against NumPy."""
import os
import unittest

import numpy

from braid import gluon
from braid.gluon.data.vision import transforms

from test_arrays import close

DATA = os.environ.get("BRAID_DATA_DIR", "/usr/share/datasets/fashion-mnist")


class Datasets(unittest.TestCase):
    def test_array_dataset(self):
        ds = gluon.data.ArrayDataset(numpy.arange(10).reshape(5, 2), [0, 1, 2, 3, 4])
        self.assertEqual(len(ds), 5)
        x, y = ds[3]
        self.assertEqual((x.tolist(), y), ([6, 7], 3))
        with self.assertRaises(ValueError):
            gluon.data.ArrayDataset(numpy.zeros(3), numpy.zeros(4))
        doubled = ds.transform_first(lambda v: v * 2)
        self.assertEqual(doubled[1][0].tolist(), [4, 6])
        self.assertEqual(ds.transform(lambda a, b: b)[4], 4)


class Loader(unittest.TestCase):
    def setUp(self):
        self.ds = gluon.data.ArrayDataset(numpy.arange(14, dtype=numpy.float64).reshape(7, 2), numpy.arange(7))

    def batches(self, **kwargs):
        return [(x.asnumpy(), y.asnumpy()) for x, y in gluon.data.DataLoader(self.ds, 3, **kwargs)]

    def test_last_batch_keep_discard_rollover(self):
        keep = self.batches()
        self.assertEqual([len(y) for _, y in keep], [3, 3, 1])
        self.assertEqual(keep[0][0].dtype, numpy.float32)  # float64 samples batch as float32
        self.assertEqual([len(y) for _, y in self.batches(last_batch="discard")], [3, 3])
        loader = gluon.data.DataLoader(self.ds, 3, last_batch="rollover")
        first = [y.asnumpy().tolist() for _, y in loader]
        second = [y.asnumpy().tolist() for _, y in loader]
        self.assertEqual(first, [[0, 1, 2], [3, 4, 5]])
        self.assertEqual(second[0], [6, 0, 1])  # the rest opens the next pass
        self.assertEqual(len(gluon.data.DataLoader(self.ds, 3, last_batch="discard")), 2)
        with self.assertRaises(ValueError):
            gluon.data.DataLoader(self.ds, 3, last_batch="drop")

    def test_shuffle_is_a_permutation_and_workers_give_the_same_batches(self):
        numpy.random.seed(1)
        labels = numpy.concatenate([y for _, y in self.batches(shuffle=True)])
        self.assertEqual(sorted(labels.tolist()), list(range(7)))
        self.assertNotEqual(labels.tolist(), list(range(7)))
        plain, threaded = self.batches(), self.batches(num_workers=2)
        for (a, b), (c, d) in zip(plain, threaded):
            close(self, c, a)
            close(self, d, b)

    def test_a_failing_sample_raises_in_the_loop(self):
        bad = gluon.data.SimpleDataset([numpy.zeros(2), numpy.zeros(3)])
        for workers in (0, 2):
            with self.assertRaises(ValueError):
                for _ in gluon.data.DataLoader(bad, 2, num_workers=workers):
                    pass


class Transforms(unittest.TestCase):
    def test_to_tensor_and_normalize(self):
        image = numpy.arange(24, dtype=numpy.uint8).reshape(2, 4, 3)
        t = transforms.ToTensor()(image)
        self.assertEqual((t.shape, t.dtype), ((3, 2, 4), numpy.float32))
        close(self, t, image.transpose(2, 0, 1) / 255.0)
        n = transforms.Normalize(mean=(0.1, 0.2, 0.3), std=(1, 2, 4))(t)
        close(self, n, (t - numpy.array([0.1, 0.2, 0.3]).reshape(3, 1, 1)) / numpy.array([1, 2, 4]).reshape(3, 1, 1))

    def test_resize_is_bilinear_with_half_pixel_centres(self):
        image = numpy.array([[0, 1], [2, 3]], dtype=numpy.float32).reshape(2, 2, 1)
        out = transforms.Resize(4)(image)[:, :, 0]
        close(self, out[0], [0, 0.25, 0.75, 1])
        close(self, out[:, 0], [0, 0.5, 1.5, 2])
        flat = numpy.full((28, 28, 1), 200, numpy.uint8)
        self.assertTrue((transforms.Resize(14)(flat) == 200).all())
        self.assertEqual(transforms.Resize((10, 6))(flat).shape, (6, 10, 1))


@unittest.skipUnless(os.path.isdir(DATA), "Fashion-MNIST is not installed (package dataset-fashion-mnist)")
class FashionMNIST(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.test = gluon.data.vision.FashionMNIST(train=False)

    def test_samples_as_mxnet_gives_them(self):
        self.assertEqual(len(self.test), 10000)
        image, label = self.test[0]
        self.assertEqual((image.shape, image.dtype, type(label)), ((28, 28, 1), numpy.uint8, numpy.int32))

    def test_braids_iterator_and_host_batching_give_the_same_batches(self):
        native = gluon.data.DataLoader(self.test.transform_first(transforms.ToTensor()), 500)
        hosted = gluon.data.DataLoader(self.test.transform_first(transforms.Compose([transforms.ToTensor()])), 500)
        self.assertIsNotNone(native._native)
        self.assertIsNone(hosted._native)
        for k, ((a, b), (c, d)) in enumerate(zip(native, hosted)):
            close(self, a, c.asnumpy())
            close(self, b, d.asnumpy())
            if k == 2:
                break
        self.assertEqual(len(native), 20)
        # A dataset with a transform of its own is batched here, so that the transform runs.
        relabelled = gluon.data.vision.FashionMNIST(train=False, transform=lambda x, y: (x, y + 100))
        loader = gluon.data.DataLoader(relabelled.transform_first(transforms.ToTensor()), 500)
        self.assertIsNone(loader._native)
        _, labels = next(iter(loader))
        self.assertTrue((labels.asnumpy() >= 100).all())
