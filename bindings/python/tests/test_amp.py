"""braid.amp against NumPy: autocast rounds matmul and convolution operands to bfloat16 or float16 and
computes in float32, per thread, through Gluon and hybridized blocks; loss scaling divides what it
multiplied and skips a step whose gradients overflowed."""
import threading
import unittest

import numpy

import braid
from braid import amp, autograd, gluon, np
from braid.gluon import nn


def to_bfloat16(a):
    """float32 values rounded to bfloat16 (to nearest, ties to even), as float32."""
    u = numpy.asarray(a, numpy.float32).view(numpy.uint32).astype(numpy.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(numpy.uint32).view(numpy.float32)


ROUND = {"bfloat16": to_bfloat16, "float16": lambda a: numpy.asarray(a, numpy.float32).astype(numpy.float16)
         .astype(numpy.float32)}


class Autocast(unittest.TestCase):
    def setUp(self):
        rng = numpy.random.default_rng(5)
        self.a = rng.uniform(-1, 1, (6, 40)).astype(numpy.float32)
        self.b = rng.uniform(-1, 1, (40, 5)).astype(numpy.float32)

    def test_dot_rounds_its_operands_and_returns_float32(self):
        x, y = np.array(self.a), np.array(self.b)
        full = np.dot(x, y).asnumpy()
        for dtype, rnd in ROUND.items():
            with self.subTest(dtype=dtype):
                with amp.autocast(dtype):
                    self.assertEqual(amp.autocast_dtype(), dtype)
                    got = x @ y
                self.assertEqual(got.dtype, numpy.float32)
                want = rnd(self.a).astype(numpy.float64) @ rnd(self.b).astype(numpy.float64)
                numpy.testing.assert_allclose(got.asnumpy(), want, rtol=1e-5, atol=1e-5)
                self.assertGreater(numpy.abs(got.asnumpy() - full).max(), 1e-5)
        self.assertEqual(amp.autocast_dtype(), "float32")
        numpy.testing.assert_array_equal(np.dot(x, y).asnumpy(), full)  # off again: the same as before

    def test_the_setting_is_per_thread_and_bad_names_are_refused(self):
        seen = []
        with amp.autocast("bfloat16"):
            thread = threading.Thread(target=lambda: seen.append(amp.autocast_dtype()))
            thread.start()
            thread.join()
        self.assertEqual(seen, ["float32"])
        with self.assertRaises(ValueError):
            amp.set_autocast("int8")
        prev = amp.set_autocast("bf16")
        self.assertEqual((prev, amp.set_autocast(None)), ("float32", "bfloat16"))

    def test_a_dense_layer_and_its_gradients_under_autocast(self):
        net = nn.Dense(5, in_units=40)
        net.initialize(init=braid.init.Normal(0.5))
        x = np.array(self.a)
        w = net.weight.data().asnumpy()
        with autograd.record(), amp.autocast("bfloat16"):
            y = net(x)
            y.sum().backward()
        numpy.testing.assert_allclose(y.asnumpy(), to_bfloat16(self.a) @ to_bfloat16(w).T + net.bias.data().asnumpy(),
                                      rtol=1e-5, atol=1e-5)
        g = net.weight.grad().asnumpy()
        numpy.testing.assert_array_equal(g, to_bfloat16(g))  # on bfloat16's grid
        numpy.testing.assert_allclose(g, to_bfloat16(numpy.ones((6, 5), numpy.float32).T @ to_bfloat16(self.a)),
                                      rtol=1e-6)

    def test_a_hybridized_block_keeps_a_graph_per_setting(self):
        net = nn.Dense(5, in_units=40, use_bias=False)
        net.initialize(init=braid.init.Normal(0.5))
        net.hybridize()
        x = np.array(self.a)
        w = net.weight.data().asnumpy()
        for _ in range(2):
            numpy.testing.assert_allclose(net(x).asnumpy(), self.a @ w.T, rtol=1e-5, atol=1e-5)
            with amp.autocast("float16"):
                numpy.testing.assert_allclose(net(x).asnumpy(), ROUND["float16"](self.a) @ ROUND["float16"](w).T,
                                              rtol=1e-5, atol=1e-5)


class LossScaling(unittest.TestCase):
    def make(self, seed):
        braid.seed(seed)
        net = nn.Dense(3, in_units=4)
        net.initialize(init=braid.init.Normal(0.5))
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
        return net, trainer

    def test_a_scaled_step_is_the_plain_step(self):
        x = np.array(numpy.arange(8, dtype=numpy.float32).reshape(2, 4) / 8)
        plain, t1 = self.make(3)
        scaled, t2 = self.make(3)
        amp.init_trainer(t2, "float16", init_scale=1024.0)
        for net, trainer in ((plain, t1), (scaled, t2)):
            with autograd.record():
                loss = (net(x) ** 2).sum()
                with amp.scale_loss(loss, trainer) as l:
                    l.backward()
            trainer.step(2)
        numpy.testing.assert_allclose(scaled.weight.data().asnumpy(), plain.weight.data().asnumpy(), rtol=1e-6)
        self.assertEqual(t2._amp_scaler.skipped_steps, 0)

    def test_an_overflowed_step_is_skipped_and_the_scale_halved(self):
        net, trainer = self.make(4)
        amp.init_trainer(trainer, "float16", init_scale=2.0 ** 16)
        before = net.weight.data().asnumpy()
        x = np.array(numpy.full((2, 4), 1e30, numpy.float32))
        with autograd.record():
            with amp.scale_loss((net(x) ** 2).sum(), trainer) as l:  # inf
                l.backward()
        trainer.step(2)
        numpy.testing.assert_array_equal(net.weight.data().asnumpy(), before)
        self.assertEqual((trainer._amp_scaler.skipped_steps, trainer._amp_scaler.loss_scale), (1, 2.0 ** 15))
        numpy.testing.assert_array_equal(net.weight.grad().asnumpy(), 0.0)  # nothing non-finite left behind

    def test_bfloat16_needs_no_scaler(self):
        _, trainer = self.make(5)
        amp.init_trainer(trainer, "bfloat16")
        self.assertIsNone(getattr(trainer, "_amp_scaler", None))
        with amp.scale_loss(np.array([2.0]), trainer) as l:
            self.assertEqual(float(l), 2.0)


if __name__ == "__main__":
    unittest.main()
