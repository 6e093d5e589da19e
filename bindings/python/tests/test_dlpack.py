"""DLPack: NumPy (and PyTorch, where python3-torch is installed) read braid's CPU arrays without a copy,
the memory stays valid while either side holds it, and np.from_dlpack takes their arrays back."""
import gc
import unittest

import numpy

import braid
from braid import np

try:
    import torch
except ImportError:  # python3-torch is the benchmarks' anchor (scripts/install-deps.sh --bench), not a dependency
    torch = None


def allocated_bytes():
    braid.waitall()
    gc.collect()
    return braid.memory_stats()["allocated_bytes"]


class ToNumPy(unittest.TestCase):
    def test_numpy_shares_the_memory(self):
        x = np.arange(12).reshape(3, 4)
        view = numpy.from_dlpack(x)
        numpy.testing.assert_array_equal(view, numpy.arange(12, dtype=numpy.float32).reshape(3, 4))
        x += 1  # braid writes: the view sees it once the op has run
        x.wait_to_read()
        self.assertEqual(view[0, 0], 1.0)
        self.assertFalse(view.flags.writeable)  # NumPy marks what it imports read-only (PyTorch writes, below)
        self.assertEqual(x.__dlpack_device__(), (1, 0))

    def test_every_dtype_numpy_has(self):
        for dtype in ("float32", "float64", "int32", "int64", "uint8", "float16"):
            with self.subTest(dtype=dtype):
                data = (numpy.arange(6) * 3).reshape(2, 3).astype(dtype)
                view = numpy.from_dlpack(np.array(data, dtype=dtype))
                self.assertEqual(view.dtype, numpy.dtype(dtype))
                numpy.testing.assert_array_equal(view, data)
        for shape in ((), (0, 3)):
            with self.subTest(shape=shape):
                self.assertEqual(numpy.from_dlpack(np.zeros(shape)).shape, shape)

    def test_the_memory_outlives_the_array_and_is_freed_after_the_view(self):
        x = np.ones((512, 512))
        x.wait_to_read()
        before = allocated_bytes()
        y = x * 3
        view = numpy.from_dlpack(y)
        del y
        self.assertEqual(float(view.sum()), 3.0 * 512 * 512)  # valid: the capsule holds the tensor
        self.assertGreater(allocated_bytes(), before)
        del view
        self.assertEqual(allocated_bytes(), before)
        unused = x.__dlpack__()  # a capsule nobody consumes frees its reference too
        del unused
        self.assertEqual(allocated_bytes(), before)

    def test_other_devices_and_streams_are_refused(self):
        with self.assertRaises(BufferError):
            np.ones(3).__dlpack__(stream=1)
        if braid.vulkan(0) not in braid.devices():
            self.skipTest("no vulkan:0 device here")
        with self.assertRaises(BufferError):
            numpy.from_dlpack(np.ones(3, ctx=braid.vulkan(0)))


class FromDLPack(unittest.TestCase):
    def test_numpy_arrays_are_shared_without_a_copy(self):
        data = numpy.arange(6, dtype=numpy.int64).reshape(2, 3)
        x = np.from_dlpack(data)
        self.assertEqual(x.dtype, numpy.int64)
        data[0, 0] = 100  # the same memory: braid sees NumPy's write ...
        numpy.testing.assert_array_equal(x.asnumpy(), data)
        x += 1  # ... and NumPy braid's, once the op has run
        x.wait_to_read()
        self.assertEqual(data[1, 2], 6)
        numpy.testing.assert_array_equal((x * 2).asnumpy(), data * 2)

    def test_the_producer_lives_until_braid_lets_go(self):
        data = numpy.full(100000, 2.0, numpy.float32)
        x = np.from_dlpack(data)
        del data  # braid holds NumPy's array through the capsule it consumed
        gc.collect()
        y = x * 3
        del x
        gc.collect()
        self.assertEqual(float(y.sum()), 600000.0)

    def test_what_cannot_be_shared_is_copied(self):
        data = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
        strided = np.from_dlpack(data[:, ::2])  # not C-contiguous
        numpy.testing.assert_array_equal(strided.asnumpy(), data[:, ::2])
        data[0, 0] = -1
        self.assertEqual(strided.asnumpy()[0, 0], 0.0)
        readonly = data.copy()
        readonly.flags.writeable = False  # NumPy does not export it through DLPack
        numpy.testing.assert_array_equal(np.from_dlpack(readonly).asnumpy(), readonly)
        numpy.testing.assert_array_equal(np.from_dlpack(numpy.array([True, False])).asnumpy(), [True, False])
        raw = numpy.zeros(17, numpy.uint8)
        unaligned = numpy.ndarray((4,), numpy.float32, buffer=raw, offset=1)  # floats one byte off
        unaligned[:] = [1, 2, 3, 4]
        numpy.testing.assert_array_equal(np.from_dlpack(unaligned).asnumpy(), [1, 2, 3, 4])
        with self.assertRaises(TypeError):
            np.from_dlpack([1, 2, 3])

    def test_a_braid_array_gives_a_view_of_itself(self):
        x = np.arange(4)
        y = np.from_dlpack(x)
        y += 1
        numpy.testing.assert_array_equal(x.asnumpy(), [1, 2, 3, 4])


@unittest.skipIf(torch is None, "python3-torch is not installed (scripts/install-deps.sh --bench installs it)")
class WithPyTorch(unittest.TestCase):
    def test_pytorch_shares_braid_memory_and_gives_tensors_back(self):
        x = np.arange(6).reshape(2, 3)
        t = torch.from_dlpack(x)
        self.assertEqual(t.dtype, torch.float32)
        t[1, 2] = 42.0
        self.assertEqual(x.asnumpy()[1, 2], 42.0)
        b = np.array([1.5, -2.0], dtype="bfloat16")
        tb = torch.from_dlpack(b)
        self.assertEqual(tb.dtype, torch.bfloat16)
        self.assertEqual(tb.float().tolist(), [1.5, -2.0])
        source = torch.arange(4, dtype=torch.int32)
        back = np.from_dlpack(source)
        self.assertEqual(back.dtype, numpy.int32)
        numpy.testing.assert_array_equal(back.asnumpy(), [0, 1, 2, 3])
        source[0] = 9  # shared: no copy on the way in either
        self.assertEqual(int(back[0]), 9)


if __name__ == "__main__":
    unittest.main()
