"""x[key] against NumPy: basic indexing (ints, slices with any step, None, ...), integer-array and
boolean-mask indexing with NumPy's placement rule, errors, and gradients through every kind."""
import unittest

import numpy

import braid
from braid import autograd, np


class Indexing(unittest.TestCase):
    def setUp(self):
        self.data = numpy.arange(60, dtype=numpy.float32).reshape(3, 4, 5) - 30
        self.x = np.array(self.data)

    def check(self, key):
        want = self.data[key]
        got = self.x[key]
        self.assertIsInstance(got, braid.ndarray, f"x[{key!r}]")
        self.assertEqual(got.shape, want.shape, f"x[{key!r}]")
        numpy.testing.assert_array_equal(got.asnumpy(), want, f"x[{key!r}]")

    def test_basic_indexing_as_numpy(self):
        for key in (1, -1, (1, 2), (2, -1, 3), slice(None, None, -1), (slice(None), slice(None, None, -2)),
                    (slice(3, 0, -1), slice(None), slice(4, None, -3)), slice(5, 1), (Ellipsis, 1), (None, 1),
                    (1, None), (slice(1, 3), None, Ellipsis), (Ellipsis, None), (None, Ellipsis, None), (),
                    Ellipsis, (slice(None, None, 2), 0, slice(-1, None)), (0, slice(2, 2)), True, False):
            with self.subTest(key=key):
                self.check(key)

    def test_integer_arrays_take_numpy_places(self):
        for key in ([0, 2], [[0, 1], [1, 0]], ([0, 1], [1, 2]), (slice(None), [0, 2]), ([0, -1], slice(None), [1, 2]),
                    (0, slice(None), [1, 2]), (slice(None), [3, 0], [4, -5]), (Ellipsis, [4, 4, 0]),
                    ([[0], [2]], slice(1, 3), [0, 1, 2]), (None, [1, 2], 0), ([], ), numpy.array([2, 0]),
                    (slice(None, None, -1), [0, 3]), (None, [1, 2], slice(None), 0)):
            with self.subTest(key=key):
                self.check(key)

    def test_boolean_masks(self):
        mask = self.data > 0
        self.check(mask)
        self.check(mask[:, :, 0])
        self.check((slice(None), numpy.array([True, False, True, False])))
        self.check((numpy.array([True, False, True]), slice(None), 2))
        # braid's comparisons give bool arrays: masks; a float array is no index, 0s and 1s included, as in NumPy.
        self.assertEqual((self.x > 0).dtype, numpy.bool_)
        numpy.testing.assert_array_equal(self.x[self.x > 0].asnumpy(), self.data[mask])
        numpy.testing.assert_array_equal(self.x[:, self.x[0, :, 0] < -20].asnumpy(), self.data[:, self.data[0, :, 0] < -20])
        numpy.testing.assert_array_equal(self.x[(self.x > 0) & (self.x < 20)].asnumpy(),
                                         self.data[(self.data > 0) & (self.data < 20)])
        numpy.testing.assert_array_equal(self.x[~(self.x > 0)].asnumpy(), self.data[~mask])
        for index in (np.array([0.5, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])):
            with self.assertRaises(IndexError):
                self.x[index]

    def test_braid_arrays_as_indices_and_the_chapter_idiom(self):
        rows = np.array([0, 2, 1], dtype="int32")
        numpy.testing.assert_array_equal(self.x[rows].asnumpy(), self.data[[0, 2, 1]])
        y_hat = np.array([[0.1, 0.3, 0.6], [0.3, 0.2, 0.5]])
        y = np.array([0, 2], dtype="int64")
        numpy.testing.assert_allclose(y_hat[range(len(y_hat)), y].asnumpy(), [0.1, 0.5], rtol=1e-6)
        numpy.testing.assert_array_equal(np.take(self.x, [1, -1], axis=2).asnumpy(),
                                         numpy.take(self.data, [1, -1], axis=2))
        numpy.testing.assert_array_equal(np.take(self.x, 7).asnumpy(), numpy.take(self.data, 7))

    def test_contiguous_basic_indices_are_views_and_the_rest_copies(self):
        x, data = np.array(self.data), self.data.copy()
        y = x[1]  # a view, as NumPy's and MXNet's
        y += 100
        data[1] += 100
        numpy.testing.assert_array_equal(x.asnumpy(), data)
        z = x[...]
        z[0, 1:3] = -1  # assignment through a view of the whole
        data[0, 1:3] = -1
        numpy.testing.assert_array_equal(x.asnumpy(), data)
        rows = x[0:2]
        x[0, 0, 0] = 42  # a write to the array is seen through its views
        data[0, 0, 0] = 42
        numpy.testing.assert_array_equal(rows.asnumpy(), data[0:2])
        numpy.testing.assert_array_equal(x[1, 2:4].asnumpy(), data[1, 2:4])
        for key in ((slice(None), 1), (slice(None, None, 2),), (0, slice(None), 0), ([0, 1],), (slice(None, None, -1),)):
            with self.subTest(key=key):  # not contiguous in x, or advanced: copies
                part = x[key]
                part += 1000
                numpy.testing.assert_array_equal(x.asnumpy(), data)

    def test_inside_autograd_record_results_are_differentiable_copies(self):
        x = np.array(self.data)
        x.attach_grad()
        with braid.autograd.record():
            y = x[1]
            loss = (y * y).sum()
        loss.backward()
        want = numpy.zeros_like(self.data)
        want[1] = 2 * self.data[1]
        numpy.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-6)

    def test_errors_are_index_errors(self):
        for key in (3, -4, (0, 4), [5], (slice(None), [0, 9]), (0, 0, 0, 0), (Ellipsis, Ellipsis), 1.5, "a",
                    numpy.array([True, False]), ([0, 1], [0, 1, 2])):
            with self.subTest(key=key):
                with self.assertRaises(IndexError):
                    self.x[key]
        with self.assertRaises(braid.BraidError):  # a braid index is checked when the op runs
            np.take(self.x, np.array([0, 3], dtype="int32"), axis=0).asnumpy()
        with self.assertRaises(braid.BraidError):
            braid.waitall()  # reported once more there, then forgotten
        braid.waitall()

    def test_gradients_add_up_where_an_element_is_picked(self):
        x = np.array(self.data)
        x.attach_grad()
        w = numpy.arange(1, 7, dtype=numpy.float32).reshape(3, 2)
        with autograd.record():
            loss = (x[[0, 0, 2], 1:3, -1] * np.array(w)).sum() + x[x > 25].sum() + x[::-1, 0, 0].sum()
        loss.backward()
        want = numpy.zeros_like(self.data)
        numpy.add.at(want, ([0, 0, 2], slice(1, 3), -1), w)
        want[self.data > 25] += 1
        want[:, 0, 0] += 1
        numpy.testing.assert_array_equal(x.grad.asnumpy(), want)



class InGraphs(unittest.TestCase):
    def test_a_hybridized_block_traces_exports_and_imports_indexing(self):
        import os
        import tempfile
        from braid import gluon
        from braid.gluon import nn

        class Net(nn.HybridBlock):
            def __init__(self):
                super().__init__()
                self.dense = nn.Dense(3, in_units=4)

            def forward(self, x):
                y = self.dense(x)
                return y[:, [0, 2]] + y[::-1, 1:2] + (y[:, :2] % 0.5)

        net = Net()
        net.initialize()
        x = np.array(numpy.random.RandomState(0).rand(5, 4).astype(numpy.float32))
        want = net(x).asnumpy()
        net.hybridize()
        for _ in range(2):  # the trace, then the graph
            numpy.testing.assert_array_equal(net(x).asnumpy(), want)
        with tempfile.TemporaryDirectory() as d:
            net.export(os.path.join(d, "net"))
            back = gluon.SymbolBlock.imports(os.path.join(d, "net-symbol.json"), ["data"],
                                             os.path.join(d, "net-0000.params"))
            numpy.testing.assert_array_equal(back(x).asnumpy(), want)


class Assignment(unittest.TestCase):
    def test_every_key_kind_writes_as_numpy(self):
        base = numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4)
        cases = [((0, 1, 2), -1.0), (1, 7), ((slice(None), 0), numpy.array([10, 20, 30, 40], numpy.float32)),
                 ((Ellipsis, -1), numpy.array([[1, 2, 3]], numpy.float32)),
                 ((slice(None, None, -1), 2, 1), 5.5),
                 (([0, 1, 0], [2, 0, 2]), numpy.array([[1.0], [2.0], [3.0]], numpy.float32)),  # the last wins
                 (base > 10, 0.0), ((slice(1, 2), slice(None), [0, 3]), numpy.zeros((1, 3, 2), numpy.float32)),
                 ((None, 0, 1), 9.0)]
        for key, value in cases:
            with self.subTest(key=key):
                want = base.copy()
                want[key] = value
                x = np.array(base)
                alias = x
                x[key] = np.array(value) if isinstance(value, numpy.ndarray) and value.ndim == 2 else value
                self.assertIs(alias, x)
                numpy.testing.assert_array_equal(alias.asnumpy(), want)

    def test_integers_keep_their_dtype_and_bad_keys_raise(self):
        i = np.array([1, 2, 3], dtype="int32")
        i[0] = 2.7
        i[1:] += 10
        numpy.testing.assert_array_equal(i.asnumpy(), [2, 12, 13])
        self.assertEqual(i.dtype, numpy.int32)
        with self.assertRaises(IndexError):
            i[3] = 1
        with self.assertRaises(ValueError):
            i[:2] = [1, 2, 3]
        with autograd.record():
            with self.assertRaises(RuntimeError):  # not recorded: refused rather than a silently lost gradient
                i[0] = 1


if __name__ == "__main__":
    unittest.main()
