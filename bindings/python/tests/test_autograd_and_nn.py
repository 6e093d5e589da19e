"""autograd's scopes and gradients, npx's network operators, gluon's loss and split, and devices."""
import os
import unittest

import numpy

import braid
from braid import autograd, gluon, np, npx

from test_arrays import close


class Autograd(unittest.TestCase):
    def test_gradient_of_a_composition(self):
        w0 = numpy.array([[0.5, -1.0], [2.0, 0.25]], numpy.float32)
        x0 = numpy.array([[1.0, 2.0]], numpy.float32)
        w, x = np.array(w0), np.array(x0)
        w.attach_grad()
        with autograd.record():
            self.assertTrue(autograd.is_recording())
            loss = (npx.sigmoid(np.dot(x, w)) * 3).sum()
        self.assertFalse(autograd.is_recording())
        loss.backward()
        s = 1 / (1 + numpy.exp(-(x0 @ w0)))
        close(self, w.grad, x0.T @ (3 * s * (1 - s)), rtol=1e-5)

    def test_grad_req_add_accumulates_and_write_overwrites(self):
        w = np.array([1.0, 2.0])
        w.attach_grad("add")
        for _ in range(3):
            with autograd.record():
                y = (w * w).sum()
            y.backward()
        close(self, w.grad, [6.0, 12.0])
        w.attach_grad("write")
        with autograd.record():
            y = (w * w).sum()
        y.backward()
        close(self, w.grad, [2.0, 4.0])
        self.assertIsNone(np.ones(2).grad)

    def test_head_gradients_pause_and_training_flag(self):
        x = np.array([1.0, -2.0, 3.0])
        x.attach_grad()
        with autograd.record():
            self.assertTrue(autograd.is_training())
            y = x * x
            with autograd.pause():
                self.assertFalse(autograd.is_recording())
                z = x * 10  # not recorded
            self.assertTrue(autograd.is_recording())
        self.assertFalse(autograd.is_training())
        y.backward(np.array([1.0, 0.5, 2.0]))
        close(self, x.grad, [2.0, -2.0, 12.0])
        close(self, z, [10.0, -20.0, 30.0])
        with self.assertRaises(braid.BraidError):
            y.backward()  # the tape was freed (and y has three elements)

    def test_two_heads_on_two_arrays(self):
        a, b = np.array([2.0]), np.array([3.0])
        a.attach_grad()
        b.attach_grad()
        with autograd.record():
            p, q = a * b, a + b
        autograd.backward([p, q])
        close(self, a.grad, [4.0])
        close(self, b.grad, [3.0])

    def test_detach_cuts_the_history(self):
        a = np.array([2.0])
        a.attach_grad()
        with autograd.record():
            y = a.detach() * a
        y.backward()
        close(self, a.grad, [2.0])


class NetworkOps(unittest.TestCase):
    def test_convolution_against_a_direct_sum(self):
        rng = numpy.random.default_rng(2)
        x0 = rng.standard_normal((2, 3, 6, 5)).astype(numpy.float32)
        w0 = rng.standard_normal((4, 3, 3, 2)).astype(numpy.float32)
        b0 = rng.standard_normal(4).astype(numpy.float32)
        y = npx.convolution(np.array(x0), np.array(w0), np.array(b0), kernel=(3, 2), num_filter=4, stride=(2, 1),
                            pad=(1, 0))
        xp = numpy.pad(x0, ((0, 0), (0, 0), (1, 1), (0, 0)))
        want = numpy.zeros((2, 4, 3, 4), numpy.float32)
        for p in range(3):
            for q in range(4):
                patch = xp[:, :, 2 * p:2 * p + 3, q:q + 2]
                want[:, :, p, q] = numpy.einsum("ncrs,kcrs->nk", patch, w0) + b0
        close(self, y, want, rtol=1e-4, atol=1e-4)
        with self.assertRaises(ValueError):
            npx.convolution(np.array(x0), np.array(w0), kernel=(3, 3))

    def test_pooling_and_softmax(self):
        data = numpy.arange(32, dtype=numpy.float32).reshape(1, 2, 4, 4)
        x = np.array(data)
        close(self, npx.pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max"),
              data.reshape(1, 2, 2, 2, 2, 2).max(axis=(3, 5)))
        close(self, npx.pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="avg"),
              data.reshape(1, 2, 2, 2, 2, 2).mean(axis=(3, 5)))
        self.assertEqual(npx.pooling(x, kernel=(3, 3)).shape, (1, 2, 2, 2))  # MXNet's stride 1
        close(self, npx.pooling(x, pool_type="avg", global_pool=True), data.mean(axis=(2, 3), keepdims=True))
        with self.assertRaises(ValueError):
            npx.pooling(x, kernel=(2, 2), pool_type="avg", pad=(1, 1))
        logits = numpy.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0]], numpy.float32)
        e = numpy.exp(logits - logits.max(axis=1, keepdims=True))
        close(self, npx.softmax(np.array(logits)), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
        close(self, npx.log_softmax(np.array(logits)), numpy.log(e / e.sum(axis=1, keepdims=True)), rtol=1e-5)

    def test_dropout_only_while_training(self):
        x = np.ones((1000,))
        self.assertIs(npx.dropout(x, 0.5), x)
        with autograd.train_mode():
            kept = npx.dropout(x, 0.5).asnumpy()
        self.assertTrue(set(numpy.unique(kept)) <= {0.0, 2.0})
        self.assertTrue(300 < (kept == 2.0).sum() < 700)

    def test_softmax_cross_entropy_loss(self):
        logits = numpy.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0]], numpy.float32)
        labels = numpy.array([2, 0])
        loss = gluon.loss.SoftmaxCrossEntropyLoss()
        m = logits.max(axis=1, keepdims=True)
        lse = (numpy.log(numpy.exp(logits - m).sum(axis=1, keepdims=True)) + m)[:, 0]
        want = lse - logits[numpy.arange(2), labels]
        close(self, loss(np.array(logits), np.array(labels)), want, rtol=1e-5)
        close(self, loss(np.array(logits), np.array(labels, dtype=numpy.int32)), want, rtol=1e-5)


class Devices(unittest.TestCase):
    def test_devices_and_split_and_load(self):
        found = braid.devices()
        self.assertIn(braid.cpu(0), found)
        self.assertEqual(braid.cpu(0).info()["id"], "cpu:0")
        with self.assertRaises(braid.BraidError) as e:
            np.ones(2, ctx=braid.gpu(99))
        self.assertEqual(e.exception.status, "BRAID_ERR_NOT_FOUND")
        x = np.arange(10).reshape(5, 2)
        parts = gluon.utils.split_and_load(x, [braid.cpu(0), braid.cpu(0)], even_split=False)
        self.assertEqual([p.shape for p in parts], [(3, 2), (2, 2)])
        close(self, np.concatenate(parts), x.asnumpy())
        with self.assertRaises(ValueError):
            gluon.utils.split_and_load(x, [braid.cpu(0), braid.cpu(0)])

    @unittest.skipUnless(braid.vulkan(0) in braid.devices(), "no vulkan:0 device")
    def test_copies_between_devices(self):
        a = np.arange(6, ctx=braid.cpu(0)).reshape(2, 3)
        b = a.copyto(braid.vulkan(0))
        self.assertEqual(b.ctx, braid.vulkan(0))
        c = np.zeros((2, 3), ctx=braid.vulkan(0))
        a.copyto(c)
        close(self, (b + c).as_in_ctx(braid.cpu(0)), 2 * a.asnumpy())
        self.assertIs(a.as_in_ctx(braid.cpu(0)), a)
        with self.assertRaises(braid.BraidError) as e:
            a + b  # two devices
        self.assertEqual(e.exception.status, "BRAID_ERR_DEVICE")


@unittest.skipUnless(os.path.isdir(os.environ.get("BRAID_DATA_DIR", "/usr/share/datasets/fashion-mnist")),
                     "Fashion-MNIST is not installed (package dataset-fashion-mnist)")
class Data(unittest.TestCase):
    def test_fashion_mnist_batches(self):
        train, test = braid.data.load_data_fashion_mnist(1000)
        self.assertEqual((len(train), len(test)), (60, 10))
        for i, (X, y) in enumerate(test):
            self.assertEqual((X.shape, X.dtype, y.dtype), ((1000, 1, 28, 28), numpy.float32, numpy.int32))
            if i == 2:
                break
        self.assertEqual(sum(y.shape[0] for _, y in test), 10000)  # a new pass is a whole epoch
        X, _ = next(iter(test))
        self.assertTrue(0.0 <= X.min().item() and X.max().item() <= 1.0)

    def test_fashion_mnist_parts(self):
        # 60000 examples in 7 parts of 8572 (padded by 4): 34 batches of 256 on every part, the last
        # of 124; together every example, each batch b the rows of one batch of 7 * 256.
        whole, _ = braid.data.load_data_fashion_mnist(7 * 256, seed=3)
        parts = [braid.data.load_data_fashion_mnist(256, seed=3, num_parts=7, part_index=p)[0] for p in range(7)]
        self.assertEqual({len(p) for p in parts}, {34})
        firsts = [next(iter(p)) for p in parts]
        X, y = next(iter(whole))
        rows = sorted(x.tobytes() for part_X, _ in firsts for x in part_X.asnumpy())
        self.assertEqual(rows, sorted(x.tobytes() for x in X.asnumpy()))
        self.assertEqual(sorted(l for _, part_y in firsts for l in part_y.asnumpy().tolist()),
                         sorted(y.asnumpy().tolist()))
        with self.assertRaisesRegex(braid.BraidError, "part_index 7 must be in"):
            braid.data.load_data_fashion_mnist(256, num_parts=7, part_index=7)


if __name__ == "__main__":
    unittest.main()
