"""The bool dtype against NumPy: comparisons give bool arrays, &, |, ^ and ~ are logical, masks index and
assign, reductions count, casts take nonzero as true, and bool crosses DLPack and graph mode as bool."""
import os
import tempfile
import unittest

import numpy

import braid
from braid import gluon, nd, np

try:
    import torch
except ImportError:  # python3-torch is the benchmarks' anchor (scripts/install-deps.sh --bench), not a dependency
    torch = None

SPECIAL = numpy.array([0.0, -0.0, 0.5, -2.0, numpy.inf, -numpy.inf, numpy.nan, 3.0], numpy.float32)
OPS = {"==": numpy.equal, "!=": numpy.not_equal, "<": numpy.less, "<=": numpy.less_equal, ">": numpy.greater,
       ">=": numpy.greater_equal}


def apply(op, a, b):
    return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, "<=": lambda: a <= b,
            ">": lambda: a > b, ">=": lambda: a >= b}[op]()


class Comparisons(unittest.TestCase):
    def check(self, got, want):
        self.assertIsInstance(got, braid.ndarray)
        self.assertEqual(got.dtype, numpy.bool_)
        numpy.testing.assert_array_equal(got.asnumpy(), want)

    def test_every_pair_of_special_values_as_numpy(self):
        b = numpy.roll(SPECIAL, 3)
        x, y = np.array(SPECIAL), np.array(b)
        for op, ref in OPS.items():
            with self.subTest(op=op):
                self.check(apply(op, x, y), ref(SPECIAL, b))
                for s in (0.0, 0.5, -2, numpy.inf, numpy.nan, numpy.float32(3.0)):
                    self.check(apply(op, x, s), ref(SPECIAL, s))
                    self.check(apply(op, s, x), ref(s, SPECIAL))
                self.check(apply(op, x, b), ref(SPECIAL, b))  # a NumPy operand
                self.check(apply(op, x, list(b)), ref(SPECIAL, b))
                self.check(getattr(np, ref.__name__)(x, y), ref(SPECIAL, b))

    def test_integers_compare_exactly_with_any_number(self):
        data = numpy.array([-3, 2, 16777217, 2 ** 31 - 1, -2 ** 31], numpy.int32)
        x = np.array(data, dtype="int32")
        for s in (2.5, -2.5, 16777217.5, 16777216, 2.0 ** 31, -2.0 ** 31 - 1, 1e300, -numpy.inf, numpy.nan, True):
            for op, ref in OPS.items():
                with self.subTest(op=op, scalar=s):
                    self.check(apply(op, x, s), ref(data.astype(numpy.float64), s))

    def test_python_ints_beyond_a_double_compare_exactly(self):
        for dtype in ("int32", "int64", "float32", "uint8"):
            data = numpy.array([1, 2 ** 40 if dtype == "int64" else 3], dtype=dtype)
            x = np.array(data, dtype=dtype)
            for b in (2 ** 60, -2 ** 60, 2 ** 63, 2 ** 70, 9007199254740993):
                for op, ref in OPS.items():
                    with self.subTest(dtype=dtype, b=b, op=op):
                        self.check(apply(op, x, b), ref(data, b))
        big = np.array([9007199254740993, 5], dtype="int64")  # 2**53 + 1: no double holds it
        self.check(big == 9007199254740993, [True, False])

    def test_broadcasting_and_promotion(self):
        i = np.array([[1], [2], [3]], dtype="int32")
        f = np.array([0.5, 2.0, 2.5, 3.0])
        self.check(i >= f, numpy.array([[1], [2], [3]]) >= numpy.array([0.5, 2.0, 2.5, 3.0]))

    def test_mxnet_1x_comparisons_keep_their_dtype(self):
        a = nd.array([1.0, 2.0, 3.0])
        for fn in (nd.equal, nd.not_equal, nd.greater, nd.greater_equal, nd.lesser, nd.lesser_equal):
            with self.subTest(fn=fn.__name__):
                self.assertEqual(fn(a, 2).dtype, numpy.float32)
        numpy.testing.assert_array_equal(nd.greater(a, 2).asnumpy(), [0, 0, 1])


class Logical(unittest.TestCase):
    def setUp(self):
        self.p = numpy.array([True, True, False, False])
        self.q = numpy.array([True, False, True, False])
        self.a, self.b = np.array(self.p), np.array(self.q)

    def test_and_or_xor_not(self):
        self.assertEqual(self.a.dtype, numpy.bool_)
        for got, want in ((self.a & self.b, self.p & self.q), (self.a | self.b, self.p | self.q),
                          (self.a ^ self.b, self.p ^ self.q), (~self.a, ~self.p), (self.a & True, self.p & True),
                          (False | self.a, False | self.p), (self.a & self.q, self.p & self.q),
                          (np.logical_and(self.a, self.b), self.p & self.q),
                          (np.logical_or(np.array([0.0, 2.5, numpy.nan, 0.0]), 0), numpy.array([0, 1, 1, 0], bool)),
                          (np.logical_xor(self.a, 1), ~self.p), (np.logical_not(np.array([0, 3])), [True, False])):
            self.assertEqual(got.dtype, numpy.bool_)
            numpy.testing.assert_array_equal(got.asnumpy(), want)

    def test_bitwise_operations_on_numbers_are_refused(self):
        x = np.array([1, 2], dtype="int32")
        with self.assertRaises(TypeError):
            x & x
        with self.assertRaises(TypeError):
            ~x
        with self.assertRaises(braid.BraidError):
            -self.a  # NumPy refuses it too

    def test_arithmetic_promotes_as_numpy_and_pytorch(self):
        x = np.array([1.5, 2.0, -1.0, 4.0])
        numpy.testing.assert_array_equal((x * self.a).asnumpy(), [1.5, 2.0, -0.0, 0.0])
        self.assertEqual((x * self.a).dtype, numpy.float32)
        self.assertEqual((self.a + 1).dtype, numpy.int64)
        numpy.testing.assert_array_equal((self.a + 1).asnumpy(), self.p + 1)
        self.assertEqual((self.a + self.b).dtype, numpy.bool_)  # logical or, as NumPy's and PyTorch's
        numpy.testing.assert_array_equal((self.a + self.b).asnumpy(), self.p + self.q)
        numpy.testing.assert_array_equal((self.a * self.b).asnumpy(), self.p * self.q)
        self.assertEqual((self.a / 2).dtype, numpy.float32)


class Reductions(unittest.TestCase):
    def test_sum_mean_any_all_count(self):
        m = numpy.array([[True, False, True], [False, False, False]])
        x = np.array(m)
        self.assertEqual(x.sum().dtype, numpy.int64)
        self.assertEqual(int(x.sum()), 2)
        numpy.testing.assert_array_equal(np.sum(x, axis=1).asnumpy(), m.sum(axis=1))
        self.assertEqual(x.mean().dtype, numpy.float32)
        self.assertAlmostEqual(float(x.mean()), 2 / 6, places=6)
        for axis in (None, 0, 1):
            with self.subTest(axis=axis):
                numpy.testing.assert_array_equal(np.any(x, axis=axis).asnumpy(), numpy.any(m, axis=axis))
                numpy.testing.assert_array_equal(np.all(x, axis=axis).asnumpy(), numpy.all(m, axis=axis))
                numpy.testing.assert_array_equal(np.count_nonzero(x, axis=axis).asnumpy(),
                                                 numpy.count_nonzero(m, axis=axis))
        self.assertTrue(bool(np.all(np.zeros((0,)))))
        self.assertFalse(bool(np.any(np.zeros((0,)))))
        self.assertEqual(int(np.argmax(x[0])), 0)
        rows, cols = np.nonzero(x)
        numpy.testing.assert_array_equal(rows.asnumpy(), numpy.nonzero(m)[0])
        numpy.testing.assert_array_equal(cols.asnumpy(), numpy.nonzero(m)[1])
        # the chapter's accuracy: (y_hat.argmax(axis=1) == y).sum()
        y_hat, y = np.array([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]]), np.array([1, 1, 1], dtype="int64")
        self.assertEqual(float((y_hat.argmax(axis=1) == y).sum()), 2.0)
        self.assertAlmostEqual(float((y_hat.argmax(axis=1) == y.astype("float32")).astype("float32").mean()), 2 / 3,
                               places=6)


class Storage(unittest.TestCase):
    def test_creation_casts_and_host_values(self):
        self.assertEqual(np.zeros((2,), dtype=bool).dtype, numpy.bool_)
        numpy.testing.assert_array_equal(np.ones((2,), dtype="bool").asnumpy(), [True, True])
        numpy.testing.assert_array_equal(np.full((2,), 5, dtype=bool).asnumpy(), [True, True])
        numpy.testing.assert_array_equal(np.array(SPECIAL).astype(bool).asnumpy(), SPECIAL.astype(bool))
        numpy.testing.assert_array_equal(np.array([0, 256, -1], dtype="int32").astype(numpy.bool_).asnumpy(),
                                         [False, True, True])
        numpy.testing.assert_array_equal(np.array([True, False]).astype("float32").asnumpy(), [1.0, 0.0])
        numpy.testing.assert_array_equal(np.array([[True, False]]).T.asnumpy(), [[True], [False]])
        self.assertIs(bool(np.array([True])), True)
        self.assertEqual(np.array(True).item(), True)

    def test_masks_index_and_assign(self):
        data = numpy.arange(12, dtype=numpy.float32).reshape(3, 4) - 5
        x = np.array(data)
        numpy.testing.assert_array_equal(x[x > 0].asnumpy(), data[data > 0])
        x[x < 0] = 0
        data[data < 0] = 0
        numpy.testing.assert_array_equal(x.asnumpy(), data)
        m = np.array([True, False, True])
        m[1] = True
        numpy.testing.assert_array_equal(m.asnumpy(), [True, True, True])
        numpy.testing.assert_array_equal(np.where(x > 2, x, -1).asnumpy(), numpy.where(data > 2, data, -1))

    def test_dlpack_with_numpy_and_pytorch(self):
        x = np.array([True, False, True])
        self.assertEqual(x.__dlpack_device__(), (1, 0))
        # kDLBool: NumPy reads it from 1.25 on; 1.24 (Debian 12's) has no bool in its DLPack at all (it
        # neither reads nor exports one), so there the values come through asnumpy().
        if tuple(int(v) for v in numpy.__version__.split(".")[:2]) >= (1, 25):
            view = numpy.from_dlpack(x)
            self.assertEqual(view.dtype, numpy.bool_)
            numpy.testing.assert_array_equal(view, [True, False, True])
        numpy.testing.assert_array_equal(numpy.asarray(x), [True, False, True])
        back = np.from_dlpack(numpy.array([False, True]))
        self.assertEqual(back.dtype, numpy.bool_)
        if torch is not None:
            # PyTorch 1.13 (Debian 12's) knows no kDLBool either ("Unsupported code 6"); 2.x reads it.
            if int(torch.__version__.split(".")[0]) >= 2:
                t = torch.from_dlpack(x)
                self.assertEqual(t.dtype, torch.bool)
                self.assertEqual(t.tolist(), [True, False, True])
            else:
                with self.assertRaisesRegex(RuntimeError, "code 6"):
                    torch.from_dlpack(x)
            # and a PyTorch bool tensor comes in as bool whichever code it exports (1.13: uint8 bits)
            self.assertEqual(np.array(torch.tensor([True, False]).numpy()).dtype, numpy.bool_)


class Autograd(unittest.TestCase):
    def test_masks_carry_gradients_to_what_they_select(self):
        x = np.array([-1.0, 2.0, 3.0])
        x.attach_grad()
        with braid.autograd.record():
            y = ((x > 0) * x * x).sum() + np.where(x < 2.5, x, 0).sum() + x[x != 2].sum()
        y.backward()
        numpy.testing.assert_array_equal(x.grad.asnumpy(), [0 + 1 + 1, 4 + 1 + 0, 6 + 0 + 1])


class GraphMode(unittest.TestCase):
    def test_a_hybridized_block_returns_bool(self):
        class Positive(gluon.HybridBlock):
            def forward(self, x):
                return x > 0, np.where(x > 0, x, 0.0)

        net = Positive()
        net.hybridize()
        data = numpy.array([-1.0, 2.0, 0.0, 3.5], numpy.float32)
        for _ in range(2):  # traced, then replayed
            mask, relu = net(np.array(data))
            self.assertEqual(mask.dtype, numpy.bool_)
            numpy.testing.assert_array_equal(mask.asnumpy(), data > 0)
            numpy.testing.assert_array_equal(relu.asnumpy(), numpy.maximum(data, 0))
        class Masked(gluon.HybridBlock):  # a bool input
            def forward(self, x, mask):
                return np.where(mask, x, -x), mask & (x > 1)

        masked = Masked()
        masked.hybridize()
        keep = numpy.array([True, False, True, True])
        for _ in range(2):
            y, both = masked(np.array(data), np.array(keep))
            numpy.testing.assert_array_equal(y.asnumpy(), numpy.where(keep, data, -data))
            self.assertEqual(both.dtype, numpy.bool_)
            numpy.testing.assert_array_equal(both.asnumpy(), keep & (data > 1))
        with tempfile.TemporaryDirectory() as folder:  # exported and imported: still bool
            symbol, params = net.export(os.path.join(folder, "positive"))
            mask, relu = gluon.SymbolBlock.imports(symbol, ["data"], params)(np.array(data))
            self.assertEqual(mask.dtype, numpy.bool_)
            numpy.testing.assert_array_equal(mask.asnumpy(), data > 0)


if __name__ == "__main__":
    unittest.main()
