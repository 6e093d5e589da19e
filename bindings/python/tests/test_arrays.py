"""braid arrays against NumPy: creation, operators, broadcasting and promotion, reductions, indexing,
assignment and errors (on cpu(0), which every build has)."""
import math
import unittest

import numpy

import braid
from braid import np


def close(test, got, want, rtol=1e-6, atol=1e-6):
    got = got.asnumpy() if isinstance(got, braid.ndarray) else numpy.asarray(got)
    want = numpy.asarray(want)
    test.assertEqual(got.shape, want.shape)
    numpy.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


class Creation(unittest.TestCase):
    def test_defaults_are_float32_on_cpu0(self):
        for a in (np.array([1, 2, 3]), np.zeros((2, 3)), np.ones(4), np.full((2,), 7), np.arange(5),
                  np.random.uniform(size=(3,)), np.random.normal(size=3)):
            self.assertEqual(a.dtype, numpy.float32)
            self.assertEqual(a.ctx, braid.cpu(0))
        close(self, np.arange(2, 11, 3), numpy.arange(2, 11, 3, dtype=numpy.float32))
        close(self, np.full((2, 2), 7), numpy.full((2, 2), 7, numpy.float32))

    def test_dtypes_round_trip(self):
        for dt in (numpy.float32, numpy.float64, numpy.int32, numpy.int64, numpy.uint8, numpy.float16):
            data = (numpy.arange(6) * 3).reshape(2, 3).astype(dt)
            a = np.array(data, dtype=dt)
            self.assertEqual(a.dtype, numpy.dtype(dt))
            numpy.testing.assert_array_equal(a.asnumpy(), data)
        b = np.array([1.5, -2.25], dtype="bfloat16")
        self.assertEqual(b.dtype, "bfloat16")
        # NumPy has no bfloat16: braid's stand-in dtype object, with NumPy's attributes
        self.assertEqual(b.dtype, np.bfloat16)
        self.assertEqual((b.dtype.name, b.dtype.itemsize, b.dtype.kind), ("bfloat16", 2, "f"))
        self.assertEqual(repr(b.dtype), "dtype('bfloat16')")
        self.assertEqual(np.zeros((2,), dtype=np.bfloat16).dtype, np.bfloat16)
        self.assertEqual(b.astype(np.float32).astype(np.bfloat16).dtype, "bfloat16")
        self.assertNotEqual(b.dtype, numpy.float32)
        numpy.testing.assert_array_equal(b.asnumpy(), numpy.array([1.5, -2.25], numpy.float32))

    def test_zero_d_and_empty(self):
        s = np.array(3.5)
        self.assertEqual(s.shape, ())
        self.assertEqual(s.item(), 3.5)
        self.assertEqual(float(s + 1), 4.5)
        e = np.zeros((0, 3))
        self.assertEqual(e.shape, (0, 3))
        self.assertEqual(e.asnumpy().shape, (0, 3))
        self.assertEqual(np.ones((2, 0)).sum().item(), 0.0)

    def test_like_functions_keep_dtype_and_device(self):
        a = np.array([[1, 2]], dtype=numpy.int32)
        for b, v in ((np.zeros_like(a), 0), (np.ones_like(a), 1), (np.full_like(a, 5), 5)):
            self.assertEqual(b.dtype, numpy.int32)
            numpy.testing.assert_array_equal(b.asnumpy(), numpy.full((1, 2), v, numpy.int32))

    def test_random_is_seeded(self):
        braid.seed(7)
        a = np.random.normal(loc=1.0, scale=2.0, size=(1000,)).asnumpy()
        braid.seed(7)
        b = np.random.normal(loc=1.0, scale=2.0, size=(1000,)).asnumpy()
        numpy.testing.assert_array_equal(a, b)
        self.assertAlmostEqual(float(a.mean()), 1.0, delta=0.3)
        self.assertAlmostEqual(float(a.std()), 2.0, delta=0.3)
        u = np.random.uniform(-1, 3, size=(2000,)).asnumpy()
        self.assertTrue((u >= -1).all() and (u < 3).all())


class Arithmetic(unittest.TestCase):
    def setUp(self):
        self.x = numpy.array([[1.5, -2.0, 0.0, 4.0]], numpy.float32)
        self.y = numpy.array([[2.0], [-0.5], [3.0]], numpy.float32)

    def test_operators_broadcast_as_numpy(self):
        x, y = np.array(self.x), np.array(self.y)
        close(self, x + y, self.x + self.y)
        close(self, x - y, self.x - self.y)
        close(self, x * y, self.x * self.y)
        close(self, x / y, self.x / self.y)
        with numpy.errstate(divide="ignore"):  # 0 ** -0.5 is inf on both sides
            close(self, abs(x) ** y, numpy.abs(self.x) ** self.y)
        close(self, -x, -self.x)
        close(self, np.maximum(x, y), numpy.maximum(self.x, self.y))
        close(self, np.minimum(x, y), numpy.minimum(self.x, self.y))

    def test_python_numbers_on_either_side(self):
        x = np.array(self.x)
        close(self, x + 1, self.x + 1)
        close(self, 1 - x, 1 - self.x)
        close(self, 2 * x, 2 * self.x)
        close(self, 3 / (x + 10), 3 / (self.x + 10))
        close(self, 2 ** x, 2 ** self.x)
        self.assertEqual((x + 1).dtype, numpy.float32)
        close(self, self.x + x, 2 * self.x)  # a NumPy array on the left gives way to braid's operator

    def test_promotion_follows_pytorch(self):
        i = np.array([1, 2], dtype=numpy.int32)
        f = np.array([0.5, 0.25])
        self.assertEqual((i + f).dtype, numpy.float32)
        self.assertEqual((i + i).dtype, numpy.int32)
        self.assertEqual((i / 2).dtype, numpy.float32)
        close(self, i / 2, [0.5, 1.0])
        self.assertEqual((f + np.array([1.0], dtype=numpy.float64)).dtype, numpy.float64)

    def test_comparisons_give_bool_and_nan_compares_false(self):
        a = np.array([1.0, numpy.nan, 3.0])
        b = np.array([1.0, numpy.nan, 2.0])
        for result in (a == b, a != b, a < b, a <= b, a > b, a >= b, a < 2, 2 < a, a == 1):
            self.assertEqual(result.dtype, numpy.bool_)
        close(self, a == b, [1, 0, 0])
        close(self, a != b, [0, 1, 1])
        close(self, a < b, [0, 0, 0])
        close(self, a <= b, [1, 0, 0])
        close(self, a > b, [0, 0, 1])
        close(self, a >= b, [1, 0, 1])

    def test_elementwise_functions(self):
        v = numpy.array([0.25, 1.0, 2.5], numpy.float32)
        a = np.array(v)
        for name, ref in (("exp", numpy.exp), ("log", numpy.log), ("sqrt", numpy.sqrt), ("tanh", numpy.tanh),
                          ("square", numpy.square), ("sign", numpy.sign), ("abs", numpy.abs),
                          ("negative", numpy.negative)):
            close(self, getattr(np, name)(a), ref(v), rtol=1e-5)
        close(self, braid.npx.relu(np.array([-1.0, 2.0])), [0.0, 2.0])
        close(self, braid.npx.sigmoid(np.array([0.0])), [0.5])

    def test_where(self):
        c = np.array([1, 0, 1], dtype=numpy.int32)
        close(self, np.where(c, np.array([1.0, 2, 3]), np.array([-1.0, -2, -3])), [1, -2, 3])
        close(self, np.where(np.array([0.0, 1.0]), 5.0, np.array([7.0, 8.0])), [7, 5])

    def test_where_with_a_fractional_number_beside_integers(self):
        c, i = np.array([1, 0, 1]), np.array([1, 2, 3], dtype=numpy.int32)
        close(self, np.where(c, i, 0.5), [1.0, 0.5, 3.0])
        close(self, np.where(c, 0.5, i), [0.5, 2.0, 0.5])
        self.assertEqual(np.where(c, 7, i).dtype, numpy.int32)

    def test_copies_and_exact_numbers(self):
        import copy
        a = np.arange(3)
        b, c = copy.copy(a), copy.deepcopy(a)
        del a
        close(self, b + c, [0.0, 2.0, 4.0])
        with self.assertRaises(ValueError):
            np.full((1,), 2 ** 53 + 1, dtype=numpy.int64)
        with self.assertRaises(ValueError):
            np.zeros(1, dtype=numpy.int64) + (2 ** 60 + 1)
        self.assertEqual(np.zeros(3, dtype=numpy.float16).sum(axis=()).dtype, numpy.float16)
        with self.assertRaises(IndexError):
            np.arange(3)[np.array(1.0)]  # a float index, as NumPy refuses it

    def test_in_place_operators_write_the_same_storage(self):
        a = np.array([1.0, 2.0])
        alias = a
        a += 1
        a *= np.array([2.0, 3.0])
        self.assertIs(a, alias)
        close(self, alias, [4.0, 9.0])
        with self.assertRaises(TypeError):
            a += np.ones((2, 2))  # would change the shape


class FloorDivisionAndRemainder(unittest.TestCase):
    """// and % are Python's (NumPy's floor_divide and remainder): toward -inf, the remainder with the
    divisor's sign, from an exact fmod."""

    def setUp(self):
        self.a = numpy.array([7.0, -7.0, 7.0, -7.0, 5.5, -0.0, 0.0, 1e30, 7.0, 3.0], numpy.float32)
        self.b = numpy.array([2.0, 2.0, -2.0, -2.0, 0.1, 3.0, -3.0, 7.0, 0.1, numpy.inf], numpy.float32)

    def test_floats_match_numpy_bit_for_bit(self):
        a, b = np.array(self.a), np.array(self.b)
        numpy.testing.assert_array_equal((a // b).asnumpy(), self.a // self.b)
        got, want = (a % b).asnumpy(), self.a % self.b
        numpy.testing.assert_array_equal(got, want)
        numpy.testing.assert_array_equal(numpy.signbit(got), numpy.signbit(want))  # the divisor's sign, zeros too
        q, r = divmod(a, b)
        numpy.testing.assert_array_equal(q.asnumpy(), self.a // self.b)
        numpy.testing.assert_array_equal(r.asnumpy(), want)
        for fn, ref in ((np.floor_divide, numpy.floor_divide), (np.mod, numpy.mod), (np.remainder, numpy.remainder)):
            numpy.testing.assert_array_equal(fn(a, b).asnumpy(), ref(self.a, self.b))
        self.assertEqual(np.divmod(a, b)[1].dtype, numpy.float32)

    def test_scalars_on_either_side_and_zero_divisors(self):
        a = np.array(self.a)
        numpy.testing.assert_array_equal((a // 3).asnumpy(), self.a // numpy.float32(3))
        numpy.testing.assert_array_equal((a % -2.5).asnumpy(), self.a % numpy.float32(-2.5))
        x = np.array([0.5, -1.5, 2.5, 4.0])
        xn = numpy.array([0.5, -1.5, 2.5, 4.0], numpy.float32)
        numpy.testing.assert_array_equal((7 // x).asnumpy(), numpy.float32(7) // xn)
        numpy.testing.assert_array_equal((7 % x).asnumpy(), numpy.float32(7) % xn)
        with numpy.errstate(divide="ignore", invalid="ignore"):
            zero = numpy.zeros(3, numpy.float32)
            n = numpy.array([1.0, -1.0, 0.0], numpy.float32)
            numpy.testing.assert_array_equal((np.array(n) // np.array(zero)).asnumpy(), n // zero)  # inf, -inf, nan
            self.assertTrue(numpy.isnan((np.array(n) % 0).asnumpy()).all())

    def test_integers_stay_integers_and_a_zero_divisor_raises(self):
        a = numpy.array([[7, -7, 0, 13], [-13, 5, -1, 2]], numpy.int32)
        b = numpy.array([2, -3, 4, -5], numpy.int32)
        x, y = np.array(a, dtype="int32"), np.array(b, dtype="int32")
        self.assertEqual((x // y).dtype, numpy.int32)
        numpy.testing.assert_array_equal((x // y).asnumpy(), a // b)
        numpy.testing.assert_array_equal((x % y).asnumpy(), a % b)
        numpy.testing.assert_array_equal((x // -4).asnumpy(), a // -4)
        numpy.testing.assert_array_equal((100 % y.astype("int64")).asnumpy(), 100 % b.astype(numpy.int64))
        self.assertEqual((x // 2.5).dtype, numpy.float32)  # a non-integral scalar computes in float32
        z = x.copy()
        z //= 3
        z %= 2
        numpy.testing.assert_array_equal(z.asnumpy(), (a // 3) % 2)
        low = np.array([-2 ** 31], dtype="int32")
        numpy.testing.assert_array_equal((low // -1).asnumpy(), [-2 ** 31])  # wraps, as NumPy's
        with self.assertRaisesRegex(braid.BraidError, "division by zero"):
            (x // np.array([1, 0, 1, 1], dtype="int32")).asnumpy()
        with self.assertRaises(braid.BraidError):
            braid.waitall()  # the failure is reported once more there, then forgotten
        braid.waitall()

    def test_gradients_of_mod(self):
        from braid import autograd
        a = np.array([5.3, 5.6, 5.9])
        b = np.array([2.2, 2.3, 2.4])
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            loss = (a % b).sum() + (a // 2.0).sum()
        loss.backward()
        numpy.testing.assert_allclose(a.grad.asnumpy(), [1.0, 1.0, 1.0])
        numpy.testing.assert_allclose(b.grad.asnumpy(), -numpy.floor(a.asnumpy() / b.asnumpy()))


class Reductions(unittest.TestCase):
    def test_axes_keepdims_and_whole(self):
        data = numpy.arange(24, dtype=numpy.float32).reshape(2, 3, 4) - 7
        a = np.array(data)
        for name in ("sum", "mean", "max", "min"):
            ref = getattr(numpy, name)
            close(self, getattr(a, name)(), ref(data), rtol=1e-5)
            close(self, getattr(a, name)(axis=1), ref(data, axis=1), rtol=1e-5)
            close(self, getattr(a, name)(axis=-1, keepdims=True), ref(data, axis=-1, keepdims=True), rtol=1e-5)
            close(self, getattr(np, name)(a, axis=(0, 2)), ref(data, axis=(0, 2)), rtol=1e-5)
        close(self, np.linalg.norm(a), numpy.linalg.norm(data), rtol=1e-5)
        close(self, a.sum(axis=()), data)

    def test_integer_sum_is_int64_and_argmax_takes_the_first(self):
        i = np.array([[2 ** 30] * 4], dtype=numpy.int32)
        self.assertEqual(i.sum().dtype, numpy.int64)
        self.assertEqual(i.sum().item(), 2 ** 32)
        a = np.array([[1.0, 5.0, 5.0], [7.0, 0.0, 7.0]])
        numpy.testing.assert_array_equal(a.argmax(axis=1).asnumpy(), [1, 0])
        self.assertEqual(a.argmax().item(), 3)

    def test_empty_reductions(self):
        e = np.zeros((0, 3))
        close(self, e.sum(axis=0), numpy.zeros(3, numpy.float32))
        self.assertTrue(math.isnan(e.mean().item()))


class Indexing(unittest.TestCase):
    def setUp(self):
        self.data = numpy.arange(60, dtype=numpy.float32).reshape(3, 4, 5)
        self.a = np.array(self.data)

    def test_ints_slices_and_ellipsis(self):
        for key in (1, -1, (0, 2), (slice(None), 1), (slice(1, None), slice(None, None, 2)), (Ellipsis, 3),
                    (1, Ellipsis), (slice(-2, 100), slice(-100, 2)), (slice(3, 1),), (2, -1, -2),
                    (slice(None, None, 3), slice(1, 4, 2), slice(0, 5, 4))):
            close(self, self.a[key], self.data[key])
        self.assertEqual(self.a[2, 3, 4].item(), 59.0)
        self.assertEqual([row.shape for row in self.a], [(4, 5)] * 3)

    def test_bad_indices_raise(self):
        with self.assertRaises(IndexError):
            self.a[3]
        with self.assertRaises(IndexError):
            self.a[0, 0, 0, 0]
        close(self, self.a[::-1], self.data[::-1])  # negative steps work (test_indexing.py has the rest)

    def test_whole_array_assignment(self):
        a = np.zeros((2, 3))
        a[:] = 5
        close(self, a, numpy.full((2, 3), 5, numpy.float32))
        a[:] = np.array([1.0, 2.0, 3.0])  # broadcast
        close(self, a, numpy.array([[1, 2, 3]] * 2, numpy.float32))
        a[...] = [[-0.0, 1, 2], [3, 4, 5]]
        self.assertTrue(numpy.signbit(a.asnumpy()[0, 0]))
        a[:] += 1
        close(self, a, numpy.array([[1, 2, 3], [4, 5, 6]], numpy.float32))
        a[0] = 0  # a part (test_indexing.py has every kind of key)
        close(self, a, numpy.array([[0, 0, 0], [4, 5, 6]], numpy.float32))


class Layout(unittest.TestCase):
    def test_reshape_transpose_concatenate_stack_split(self):
        data = numpy.arange(12, dtype=numpy.float32)
        a = np.array(data)
        close(self, a.reshape(3, 4), data.reshape(3, 4))
        close(self, a.reshape((2, -1)).T, data.reshape(2, 6).T)
        close(self, a.reshape(2, 3, 2).transpose(2, 0, 1), data.reshape(2, 3, 2).transpose(2, 0, 1))
        m = data.reshape(3, 4)
        b = np.array(m)
        close(self, np.concatenate([b, b * 2], axis=1), numpy.concatenate([m, m * 2], axis=1))
        close(self, np.stack([b, b], axis=1), numpy.stack([m, m], axis=1))
        for got, want in zip(np.split(b, 2, axis=1), numpy.split(m, 2, axis=1)):
            close(self, got, want)

    def test_dot_and_matmul(self):
        rng = numpy.random.default_rng(1)
        m, n = rng.standard_normal((3, 4)).astype(numpy.float32), rng.standard_normal((4, 2)).astype(numpy.float32)
        v = rng.standard_normal(4).astype(numpy.float32)
        close(self, np.dot(np.array(m), np.array(n)), m @ n, rtol=1e-5, atol=1e-5)
        close(self, np.dot(np.array(m), np.array(v)), m @ v, rtol=1e-5, atol=1e-5)
        close(self, np.dot(np.array(v), np.array(v)), v @ v, rtol=1e-5, atol=1e-5)
        close(self, np.array(v) @ np.array(n), v @ n, rtol=1e-5, atol=1e-5)
        batch = rng.standard_normal((2, 3, 4)).astype(numpy.float32)
        close(self, np.matmul(np.array(batch), np.array(n)), batch @ n, rtol=1e-5, atol=1e-5)
        close(self, np.array(m).dot(np.array(n)), m @ n, rtol=1e-5, atol=1e-5)


class Errors(unittest.TestCase):
    def test_braid_errors_name_the_status_and_the_op(self):
        with self.assertRaises(braid.BraidError) as e:
            np.ones((2, 3)) + np.ones((4,))
        self.assertEqual(e.exception.status, "BRAID_ERR_SHAPE")
        self.assertIn("broadcast", str(e.exception))
        with self.assertRaises(braid.BraidError) as e:
            np.dot(np.ones((2, 3)), np.ones((2, 3)))
        self.assertEqual(e.exception.status, "BRAID_ERR_SHAPE")
        with self.assertRaises(braid.BraidError) as e:
            np.random.normal(scale=-1.0, size=3)
        self.assertEqual(e.exception.status, "BRAID_ERR_INVALID_ARGUMENT")

    def test_shapes_and_axes_must_be_integers(self):
        x = np.arange(6)
        for bad in (lambda: x.reshape(2.5), lambda: np.zeros((2, 3.0)), lambda: x.sum(axis=0.5),
                    lambda: x.reshape(2, 3).transpose(1.0, 0)):
            with self.assertRaises(TypeError):
                bad()
        with self.assertRaises(braid.BraidError) as e:
            np.ones(-1)
        self.assertEqual(e.exception.status, "BRAID_ERR_INVALID_ARGUMENT")
        with self.assertRaises(braid.BraidError):
            np.ones((1,) * 9)  # more than BRAID_MAX_DIMS

    def test_python_misuse_raises_python_errors(self):
        with self.assertRaises(TypeError):
            np.zeros(3, dtype=numpy.complex64)
        with self.assertRaises(ValueError):
            bool(np.ones(2))
        with self.assertRaises(ValueError):
            np.ones(2).item()
        with self.assertRaises(TypeError):
            np.array([1.0]).copyto("cpu:0")
        with self.assertRaises(ValueError):
            braid.Device("tpu", 0)
        with self.assertRaises(TypeError):
            np.ones(2) + "a"
        with self.assertRaises(ValueError):
            braid.gluon.utils.split_and_load(np.array(3.0), [braid.cpu()])


if __name__ == "__main__":
    unittest.main()


class RandomBeyondUniform(unittest.TestCase):
    """np.random's randint, permutation, shuffle and choice: NumPy's signatures and dtypes, braid's seeded
    generator (the same seed gives the same draws), and the frequencies their distributions give."""

    def test_randint(self):
        np.random.seed(3)
        r = np.random.randint(-3, 4, size=(20000,))
        self.assertEqual(r.dtype, numpy.int64)
        counts = numpy.bincount(r.asnumpy() + 3, minlength=7) / 20000
        self.assertEqual(len(counts), 7)
        self.assertTrue((abs(counts - 1 / 7) < 0.02).all(), counts)
        self.assertEqual(np.random.randint(2, 3, size=(2, 2), dtype="int32").asnumpy().tolist(), [[2, 2], [2, 2]])
        self.assertTrue((np.random.randint(5, size=(50,)).asnumpy() < 5).all())
        with self.assertRaises(ValueError):
            np.random.randint(3, 3)

    def test_permutation_and_shuffle(self):
        np.random.seed(5)
        p = np.random.permutation(10)
        self.assertEqual((p.dtype, sorted(p.asnumpy().tolist())), (numpy.int64, list(range(10))))
        np.random.seed(5)
        self.assertEqual(np.random.permutation(10).asnumpy().tolist(), p.asnumpy().tolist())
        x = np.array(numpy.arange(12).reshape(6, 2), dtype="int32")
        self.assertIsNone(np.random.shuffle(x))
        rows = x.asnumpy().tolist()
        self.assertEqual(sorted(rows), numpy.arange(12).reshape(6, 2).tolist())
        self.assertEqual(x.dtype, numpy.int32)
        y = np.random.permutation(np.ones((4, 3)))
        self.assertEqual(y.shape, (4, 3))

    def test_choice(self):
        np.random.seed(7)
        picks = np.random.choice(3, size=30000, p=[0.2, 0.3, 0.5]).asnumpy()
        self.assertEqual(picks.dtype, numpy.int64)
        freq = numpy.bincount(picks, minlength=3) / 30000
        self.assertTrue((abs(freq - [0.2, 0.3, 0.5]) < 0.02).all(), freq)
        self.assertEqual(np.random.choice(numpy.int64(4), size=(2, 3)).shape, (2, 3))
        self.assertIsInstance(np.random.choice(4), int)
        unique = np.random.choice(5, 5, replace=False).asnumpy()
        self.assertEqual(sorted(unique.tolist()), list(range(5)))
        values = np.random.choice(np.array([10.0, 20.0, 30.0]), size=50, p=[0.5, 0.0, 0.5]).asnumpy()
        self.assertTrue(set(values.tolist()) <= {10.0, 30.0})
        for bad in (dict(p=[0.5, 0.6, 0.1]), dict(p=[1.0]), dict(size=6, replace=False)):
            with self.assertRaises(ValueError):
                np.random.choice(3 if "p" in bad else 5, **bad)
