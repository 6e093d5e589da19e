"""The two paths of the package's operators: braid._fast (compiled) and ctypes. ctest runs every test of
this folder on each (BRAID_PYTHON_FAST=1 and =0); these cases check that the path asked for is the one
running, and that every kind of operand gives NumPy's answer and braid's errors on it."""
import ctypes
import gc
import os
import sys
import unittest
import weakref

import numpy

import braid
from braid import np
from braid._lib import lib

ndarray_module = sys.modules["braid.ndarray"]


def allocated_bytes():
    braid.waitall()
    return braid.memory_stats()["allocated_bytes"]


class WhichPath(unittest.TestCase):
    def test_the_path_asked_for_runs(self):
        wanted = os.environ.get("BRAID_PYTHON_FAST")
        compiled = ndarray_module.COMPILED
        bases = [t.__name__ for t in type(np.ones(2)).__mro__]
        self.assertEqual(compiled, "Array" in bases and type(np.ones(2)).__mro__[1].__module__ == "braid._fast")
        if wanted == "1":
            self.assertTrue(compiled, "BRAID_PYTHON_FAST=1 but the ctypes path runs")
        elif wanted == "0":
            self.assertFalse(compiled, "BRAID_PYTHON_FAST=0 but the compiled path runs")


class Operands(unittest.TestCase):
    def setUp(self):
        self.data = numpy.array([[1.5, -2.0, 3.0], [0.5, 4.0, -1.0]], numpy.float32)
        self.x = np.array(self.data)

    def check(self, got, want):
        self.assertIsInstance(got, braid.ndarray)
        want = numpy.asarray(want)
        self.assertEqual(got.shape, want.shape)
        numpy.testing.assert_allclose(got.asnumpy(), want, rtol=1e-6)

    def test_every_operator_with_every_operand_kind(self):
        x, d = self.x, self.data
        other_data = numpy.array([2.0, -1.0, 0.5], numpy.float32)
        other = np.array(other_data)
        operands = [(other, other_data), (2.5, 2.5), (3, 3), (numpy.float32(0.5), 0.5), (other_data, other_data),
                    ([1.0, 2.0, 4.0], numpy.array([1.0, 2.0, 4.0], numpy.float32))]
        for b, nb in operands:
            with self.subTest(operand=type(b).__name__):
                self.check(x + b, d + nb)
                self.check(x - b, d - nb)
                self.check(x * b, d * nb)
                self.check(x / b, d / nb)
                self.check(x // b, d // nb)
                self.check(x % b, d % nb)
                self.check(x == b, (d == nb).astype(numpy.float32))
                self.check(x < b, (d < nb).astype(numpy.float32))
                self.check(x > b, (d > nb).astype(numpy.float32))
                self.check(x <= b, (d <= nb).astype(numpy.float32))
                self.check(x >= b, (d >= nb).astype(numpy.float32))
                self.check(x != b, (d != nb).astype(numpy.float32))
                if not isinstance(b, (list, numpy.ndarray)):  # NumPy's own operator would run first
                    self.check(b + x, nb + d)
                    self.check(b - x, nb - d)
                    self.check(b * x, nb * d)
                    self.check(b / x, nb / d)
                    self.check(b // x, nb // d)
                    self.check(b % x, nb % d)
                    self.check(b < x, (nb < d).astype(numpy.float32))
        self.check(abs(x) ** 2, numpy.abs(d) ** 2)
        self.check(2 ** x, 2.0 ** d)
        self.check(-x, -d)
        self.check(+x, d)

    def test_numbers_keep_the_array_dtype_and_bools_and_big_ints_take_the_general_path(self):
        i = np.array([1, 2, 3], dtype="int32")
        self.assertEqual((i + 1).dtype, numpy.int32)
        self.assertEqual((i * 2.5).dtype, numpy.float32)
        self.check(i + True, numpy.array([2, 3, 4]))
        with self.assertRaisesRegex(braid.BraidError, "does not fit int32"):
            i + 2 ** 40
        self.check(i.astype("int64") + 2 ** 40, numpy.array([1, 2, 3]) + 2 ** 40)
        with self.assertRaisesRegex(ValueError, "2\\*\\*53"):
            i + 2 ** 60

    def test_errors_are_braid_errors_with_the_message(self):
        with self.assertRaises(braid.BraidError) as caught:
            np.ones((2, 3)) + np.ones((4, 5))
        self.assertEqual(caught.exception.status, "BRAID_ERR_SHAPE")
        self.assertIn("(2, 3)", str(caught.exception).replace("[", "(").replace("]", ")").replace(",)", ")"))
        with self.assertRaises(TypeError):
            pow(self.x, 2, 3)
        with self.assertRaises(TypeError):
            self.x + "text"
        with self.assertRaises(TypeError):
            hash(self.x)

    def test_results_are_the_package_array_with_weakrefs_and_handles(self):
        y = self.x + 1
        self.assertIs(type(y), braid.ndarray)
        ref = weakref.ref(y)
        self.assertIs(ref(), y)
        self.assertTrue(y.handle)
        out = ctypes.c_int32()
        self.assertEqual(lib.braid_tensor_ndim(y.handle, ctypes.byref(out)), 0)
        self.assertEqual(out.value, 2)
        del y
        gc.collect()
        self.assertIsNone(ref())

    def test_arrays_release_their_memory(self):
        x = np.ones((256, 256))
        y = x + 1
        del y
        before = allocated_bytes()
        for _ in range(50):
            y = x * 2 + 1
            z = -(y - x) / 3
        del y, z
        self.assertEqual(allocated_bytes(), before)

    def test_in_place_operators_write_the_storage(self):
        y = self.x.copy()
        alias = y
        y += 1
        y *= 2
        self.assertIs(y, alias)
        self.check(alias, (self.data + 1) * 2)


if __name__ == "__main__":
    unittest.main()
