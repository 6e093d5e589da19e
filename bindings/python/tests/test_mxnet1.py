"""MXNet 1.x's API over braid (nd, sym, hybrid_forward, context, metric, the 1.x losses) against NumPy, and
the MXNet 1.x edition's listings in samples/python/mxnet1 (8.1-8.5) on one and two devices."""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

import numpy

import braid
import braid as mx
from braid import autograd, init, nd, sym
from braid.gluon import loss as gloss, nn, utils as gutils

from test_arrays import close

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
LISTINGS = os.path.join(ROOT, "samples", "python", "mxnet1")
DATA = os.environ.get("BRAID_DATA_DIR", "/usr/share/datasets/fashion-mnist")
RERUN = os.environ.get("BRAID_TEST_RERUN")  # set by scripts/test.sh for its second ctest run
ONCE = unittest.skipIf(RERUN, "the listings run once, in the first ctest run: they pick their own devices")


class Creation(unittest.TestCase):
    def test_float32_unless_the_source_has_a_dtype(self):
        self.assertEqual(nd.array([1, 2, 3]).dtype, numpy.float32)
        self.assertEqual(nd.array(numpy.arange(3, dtype=numpy.int64)).dtype, numpy.int64)
        self.assertEqual(nd.array([1, 2], dtype="int32").dtype, numpy.int32)
        self.assertEqual(nd.arange(24).dtype, numpy.float32)
        close(self, nd.arange(24).reshape((6, 4)), numpy.arange(24, dtype=numpy.float32).reshape(6, 4))
        close(self, nd.arange(0, 3, repeat=2), [0, 0, 1, 1, 2, 2])
        for fn, value in ((nd.zeros, 0), (nd.ones, 1)):
            a = fn((2, 3))
            self.assertEqual((a.shape, a.dtype), ((2, 3), numpy.float32))
            close(self, a, numpy.full((2, 3), value, numpy.float32))
        self.assertEqual(nd.zeros(shape=20).shape, (20,))
        close(self, nd.full((2,), 7), [7, 7])

    def test_random_takes_shape_and_ctx(self):
        x = nd.random.normal(shape=(1, 512))
        u = nd.random.uniform(low=2, high=3, shape=(1000,), ctx=mx.cpu(0))
        self.assertEqual((x.shape, x.dtype, u.context), ((1, 512), numpy.float32, mx.cpu(0)))
        host = u.asnumpy()
        self.assertTrue(((host >= 2) & (host < 3)).all())
        w = nd.random.normal(scale=0.01, shape=(20, 1, 3, 3))
        self.assertLess(float(w.abs().max().asscalar()), 0.1)


class Operators(unittest.TestCase):
    def setUp(self):
        rng = numpy.random.default_rng(7)
        self.a = rng.standard_normal((3, 4)).astype(numpy.float32)
        self.b = rng.standard_normal((4, 5)).astype(numpy.float32)

    def test_dot_with_transposes(self):
        a, b = nd.array(self.a), nd.array(self.b)
        close(self, nd.dot(a, b), self.a @ self.b, rtol=1e-5)
        close(self, nd.dot(nd.array(self.a.T), b, transpose_a=True), self.a @ self.b, rtol=1e-5)
        close(self, nd.dot(a, nd.array(self.b.T), transpose_b=True), self.a @ self.b, rtol=1e-5)
        close(self, nd.batch_dot(nd.array(self.a[None]), nd.array(self.b[None])), (self.a @ self.b)[None], rtol=1e-5)

    def test_reductions_argmax_and_comparisons_as_1x_gives_them(self):
        a = nd.array(self.a)
        close(self, nd.sum(a, axis=1), self.a.sum(axis=1), rtol=1e-5)
        close(self, nd.sum(a, axis=1, exclude=True), self.a.sum(axis=0), rtol=1e-5)
        close(self, nd.mean(a, axis=0, keepdims=True), self.a.mean(axis=0, keepdims=True), rtol=1e-5)
        m = nd.argmax(a, axis=1)
        self.assertEqual(m.dtype, numpy.float32)  # 1.x's argmax gives float32 indices
        close(self, m, self.a.argmax(axis=1).astype(numpy.float32))
        self.assertEqual(nd.argmax(a, axis=1, keepdims=True).shape, (3, 1))
        eq = nd.equal(nd.array([1, 2]), nd.array([1, 3]))
        self.assertEqual(eq.dtype, numpy.float32)
        close(self, eq, [1, 0])
        close(self, nd.lesser_equal(nd.array([1, 2]), 1.5), [1, 0])
        close(self, a.norm(), numpy.linalg.norm(self.a), rtol=1e-5)
        self.assertAlmostEqual(float(nd.norm(a).asscalar()), float(numpy.linalg.norm(self.a)), places=4)

    def test_one_hot_pick_and_clip(self):
        close(self, nd.one_hot(nd.array([0, 2, 5]), 3), [[1, 0, 0], [0, 0, 1], [0, 0, 0]])
        close(self, nd.one_hot(nd.array([1]), 2, on_value=5, off_value=-1), [[-1, 5]])
        x = nd.array(self.a)
        idx = nd.array([0, 3, 1])
        close(self, nd.pick(x, idx), self.a[numpy.arange(3), [0, 3, 1]])
        close(self, nd.pick(x, nd.array([2, 0, 1, 2]), axis=0), self.a[[2, 0, 1, 2], numpy.arange(4)])
        x.attach_grad()
        with autograd.record():
            y = nd.pick(x, idx).sum()
        y.backward()
        want = numpy.zeros_like(self.a)
        want[numpy.arange(3), [0, 3, 1]] = 1
        close(self, x.grad, want)
        close(self, nd.clip(nd.array([-2.0, 0.5, 3.0]), -1, 1), [-1, 0.5, 1])

    def test_take_clips_by_default_as_mxnet(self):
        x = nd.array(self.a)  # 3 x 4
        close(self, nd.take(x, nd.array([0, 2, 5, -1])), self.a[[0, 2, 2, 0]])  # float indices, clipped
        close(self, nd.take(x, [1, -1, 6], axis=1, mode="wrap"), self.a[:, [1, 3, 2]])
        close(self, nd.take(x, [[2], [0]], mode="raise"), self.a[[[2], [0]]])
        with self.assertRaises(braid.BraidError):
            nd.take(x, [3], mode="raise").asnumpy()
        with self.assertRaises(braid.BraidError):
            nd.waitall()
        x.attach_grad()
        with autograd.record():
            y = nd.take(x, nd.array([1, 1, 9])).sum()
        y.backward()
        want = numpy.zeros_like(self.a)
        want[1] = 2
        want[2] = 1
        close(self, x.grad, want)

    def test_shapes(self):
        a, b = nd.ones((2, 1)), nd.zeros((2, 3))
        self.assertEqual(nd.concat(a, b).shape, (2, 4))  # dim=1 by default
        self.assertEqual(nd.concat(a, a, dim=0).shape, (4, 1))
        self.assertEqual(nd.stack(b, b).shape, (2, 2, 3))
        self.assertEqual(nd.flatten(nd.ones((2, 3, 4))).shape, (2, 12))
        self.assertEqual(nd.expand_dims(b, 1).shape, (2, 1, 3))
        parts = nd.split(nd.ones((2, 6)), 3)
        self.assertEqual([p.shape for p in parts], [(2, 2)] * 3)
        self.assertEqual(nd.split(nd.ones((2, 3)), 3, squeeze_axis=True)[0].shape, (2,))

    def test_network_operators_under_their_1x_names(self):
        x = nd.array(self.a)
        w, bias = nd.array(self.b.T), nd.array(numpy.arange(5, dtype=numpy.float32))
        close(self, nd.FullyConnected(x, w, bias, num_hidden=5), self.a @ self.b + numpy.arange(5), rtol=1e-5)
        close(self, nd.FullyConnected(x, w, no_bias=True, num_hidden=5), self.a @ self.b, rtol=1e-5)
        with self.assertRaises(ValueError):
            nd.FullyConnected(x, w, bias, num_hidden=4)
        close(self, nd.Activation(x, act_type="relu"), numpy.maximum(self.a, 0))
        close(self, nd.Activation(x, act_type="sigmoid"), 1 / (1 + numpy.exp(-self.a)), rtol=1e-5)
        img = nd.random.normal(shape=(2, 1, 6, 6))
        conv = nd.Convolution(data=img, weight=nd.ones((3, 1, 3, 3)), bias=nd.zeros(3), kernel=(3, 3), num_filter=3)
        self.assertEqual(conv.shape, (2, 3, 4, 4))
        host = img.asnumpy()[:, 0]
        windows = numpy.array([[[host[n, i:i + 3, j:j + 3].sum() for j in range(4)] for i in range(4)]
                               for n in range(2)])
        close(self, conv[:, 0], windows, rtol=1e-4, atol=1e-5)
        pooled = nd.Pooling(data=img, pool_type="avg", kernel=(2, 2), stride=(2, 2))
        close(self, pooled, img.asnumpy().reshape(2, 1, 3, 2, 3, 2).mean(axis=(3, 5)), rtol=1e-5)
        self.assertIs(nd.Dropout(img, p=0.5), img)  # not training: the data itself

    def test_batch_norm_uses_batch_statistics_while_training_and_moves_the_moving_ones(self):
        x = nd.random.normal(loc=3.0, shape=(8, 2, 4, 4))
        gamma, beta = nd.ones(2), nd.zeros(2)
        moving_mean, moving_var = nd.zeros(2), nd.ones(2)
        with autograd.record():
            y = nd.BatchNorm(x, gamma, beta, moving_mean, moving_var, eps=1e-5)
        host = y.asnumpy()
        close(self, host.mean(axis=(0, 2, 3)), [0, 0], atol=1e-4)
        batch_mean = x.asnumpy().mean(axis=(0, 2, 3))
        close(self, moving_mean, 0.1 * batch_mean, rtol=1e-4)  # 0.9 * 0 + 0.1 * batch
        inference = nd.BatchNorm(x, gamma, beta, moving_mean, moving_var, eps=1e-5)
        want = (x.asnumpy() - moving_mean.asnumpy().reshape(1, 2, 1, 1)) / numpy.sqrt(
            moving_var.asnumpy().reshape(1, 2, 1, 1) + 1e-5)
        close(self, inference, want, rtol=1e-4, atol=1e-4)
        # fix_gamma (1.x's default) ignores gamma; fix_gamma=False scales by it
        twice = nd.BatchNorm(x, gamma * 2, beta, moving_mean, moving_var, eps=1e-5)
        close(self, twice, inference, rtol=1e-5, atol=1e-5)
        scaled = nd.BatchNorm(x, gamma * 2, beta, moving_mean, moving_var, eps=1e-5, fix_gamma=False)
        close(self, scaled, 2 * inference.asnumpy(), rtol=1e-4, atol=1e-4)

    def test_ndarray_methods_of_1x(self):
        a = nd.array([[1.5]])
        self.assertIsInstance(a.asscalar(), numpy.float32)
        self.assertEqual(a.asscalar(), 1.5)
        with self.assertRaises(ValueError):
            nd.ones(2).asscalar()
        self.assertEqual(a.context, mx.cpu(0))
        self.assertEqual(a.as_in_context(mx.cpu(0)).context, mx.cpu(0))
        b = nd.zeros((1, 1))
        a.copyto(b)
        close(self, b, [[1.5]])
        self.assertEqual(nd.ones((2, 3)).T.shape, (3, 2))

    def test_save_and_load_lists_and_dicts(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "arrays")
            nd.save(path, [nd.ones(2), nd.arange(3)])
            got = nd.load(path)
            self.assertIsInstance(got, list)
            close(self, got[1], [0, 1, 2])
            nd.save(path, {"w": nd.full((2,), 4)})
            close(self, nd.load(path)["w"], [4, 4])


class ContextAndMetric(unittest.TestCase):
    def test_context_names(self):
        self.assertIs(mx.Context, braid.Device)
        self.assertEqual(mx.context.num_gpus(), braid.num_gpus())
        self.assertEqual(mx.context.current_context(), mx.cpu())
        self.assertIsInstance(mx.cpu(0), mx.Context)

    def test_accuracy(self):
        m = mx.metric.Accuracy()
        self.assertTrue(math.isnan(m.get()[1]))
        m.update([nd.array([1, 0, 1])], [nd.array([[0.1, 0.9], [0.8, 0.2], [0.7, 0.3]])])
        self.assertEqual(m.get(), ("accuracy", 2 / 3))
        m.update(nd.array([0]), nd.array([0]))  # class indices as predictions
        self.assertEqual(m.get()[1], 3 / 4)
        m.reset()
        self.assertEqual(m.num_inst, 0)
        with self.assertRaises(ValueError):
            m.update([nd.array([1])], [])


class Losses(unittest.TestCase):
    def setUp(self):
        rng = numpy.random.default_rng(3)
        self.pred = rng.standard_normal((4, 3)).astype(numpy.float32)
        self.label = (rng.random((4, 3)) > 0.5).astype(numpy.float32)

    def test_against_their_formulas(self):
        p, y = nd.array(self.pred), nd.array(self.label)
        close(self, gloss.L2Loss()(p, y), (0.5 * (self.pred - self.label) ** 2).mean(axis=1), rtol=1e-5)
        close(self, gloss.L1Loss()(p, y), numpy.abs(self.pred - self.label).mean(axis=1), rtol=1e-5)
        x = self.pred.astype(numpy.float64)
        sig = 1 / (1 + numpy.exp(-x))
        bce = -(self.label * numpy.log(sig) + (1 - self.label) * numpy.log(1 - sig))
        close(self, gloss.SigmoidBinaryCrossEntropyLoss()(p, y), bce.mean(axis=1), rtol=1e-5)
        close(self, gloss.SigmoidBCELoss(from_sigmoid=True)(nd.array(sig.astype(numpy.float32)), y),
              bce.mean(axis=1), rtol=1e-4)
        # weight, sample_weight, and a label of another shape with the same size
        close(self, gloss.L2Loss(weight=4.0)(p, y, nd.full((4, 1), 0.5)),
              (0.5 * 4 * 0.5 * (self.pred - self.label) ** 2).mean(axis=1), rtol=1e-5)
        close(self, gloss.L2Loss()(nd.array(self.pred[:, :1]), nd.array(self.label[:, 0])),
              0.5 * (self.pred[:, 0] - self.label[:, 0]) ** 2, rtol=1e-5)
        with self.assertRaises(ValueError):
            gloss.L1Loss()(p, nd.ones(5))

    def test_l2_loss_gradient(self):
        p, y = nd.array(self.pred), nd.array(self.label)
        p.attach_grad()
        with autograd.record():
            loss = gloss.L2Loss()(p, y)
        loss.backward()
        close(self, p.grad, (self.pred - self.label) / 3, rtol=1e-5)

    def test_clip_global_norm(self):
        arrays = [nd.ones((2, 2)) * 3, nd.ones((1,)) * 4]
        total = gutils.clip_global_norm(arrays, 1.0)
        self.assertAlmostEqual(total, math.sqrt(4 * 9 + 16), places=4)
        after = math.sqrt(sum(float(a.norm().asscalar()) ** 2 for a in arrays))
        self.assertAlmostEqual(after, 1.0, places=4)
        small = [nd.ones(2) * 0.1]
        gutils.clip_global_norm(small, 1.0)
        close(self, small[0], [0.1, 0.1])


class Scale(nn.HybridBlock):
    """MXNet 1.x style: a parameter made by params.get, passed to hybrid_forward by name."""

    def __init__(self, **kwargs):
        super(Scale, self).__init__(**kwargs)
        with self.name_scope():
            self.weight = self.params.get("weight", shape=(3,), init=init.Constant(2.0))
            self.dense = nn.Dense(2, in_units=3)

    def hybrid_forward(self, F, x, weight):
        return self.dense(F.relu(F.broadcast_mul(x, weight)))


class HybridForward(unittest.TestCase):
    def test_parameters_by_name_and_the_same_result_and_gradient_hybridized(self):
        net = Scale()
        net.initialize(init=init.Normal(0.5))
        self.assertEqual(sorted(net.collect_params()), ["dense.bias", "dense.weight", "weight"])
        self.assertIs(net.params.get("weight"), net.weight)
        x = nd.random.normal(shape=(4, 3))

        def run():
            x.attach_grad()
            with autograd.record():
                y = net(x).sum()
            y.backward()
            return net(x).asnumpy(), x.grad.asnumpy(), net.weight.grad().asnumpy()
        imperative = run()
        net.hybridize()
        run()
        hybrid = run()
        for a, b in zip(imperative, hybrid):
            close(self, b, a, rtol=1e-5, atol=1e-6)

    def test_a_block_with_neither_forward_is_refused(self):
        with self.assertRaises(NotImplementedError):
            nn.HybridBlock()(nd.ones(2))

    def test_a_traced_value_prints_without_reading(self):
        seen = []

        class Show(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                seen.append(str(x))
                return x * 2
        b = Show()
        b.hybridize()
        for _ in range(3):
            close(self, b(nd.ones(2)), [2, 2])
        self.assertIn("[1. 1.]", seen[0])
        self.assertTrue(any("traced ndarray (2,) float32" in s for s in seen), seen)


class FIsSymWhileTraced(unittest.TestCase):
    def test_f_is_nd_imperatively_and_sym_in_the_graph_with_the_same_results(self):
        seen = []

        class Net(nn.HybridBlock):
            def hybrid_forward(self, F, x):
                seen.append(F)
                return F.broadcast_add(F.relu(x), F.ones_like(x)) * 2

        net = Net()
        x = nd.array([[-1.0, 2.0], [3.0, -4.0]])
        imperative = net(x).asnumpy()
        self.assertIs(seen[-1], nd)
        net.hybridize()
        for _ in range(2):
            close(self, net(x), imperative)
        self.assertIs(seen[-1], sym)  # the call that traced the graph


class Symbols(unittest.TestCase):
    def mlp(self):
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.BatchNorm(), nn.Dense(2))
        net.initialize()
        return net

    def test_a_block_called_with_a_variable_gives_a_symbol(self):
        net = self.mlp()
        x = sym.var("data")
        self.assertEqual(repr(x), "<Symbol data>")
        y = net(x)
        self.assertIsInstance(y, sym.Symbol)
        self.assertIn("fwd", repr(y))
        self.assertEqual(y.list_arguments(), ["data", "0.weight", "0.bias", "1.gamma", "1.beta", "2.weight",
                                              "2.bias"])
        self.assertEqual(y.list_auxiliary_states(), ["1.running_mean", "1.running_var"])
        self.assertEqual(y.list_outputs(), [y.name + "_output"])

    def test_symbol_arithmetic_and_sym_operators_compose(self):
        data = sym.var("data")
        net = nn.Dense(3, in_units=2)
        net.initialize(init=init.Constant(0.5))
        y = sym.relu(net(data) * 2 - 1) + sym.sum(data, axis=1, keepdims=True) / 4
        self.assertIsInstance(y, sym.Symbol)
        self.assertEqual(y.list_arguments(), ["data", "weight", "bias"])
        self.assertEqual(y.infer_shape(data=(5, 2))[1], [(5, 3)])
        x = numpy.array([[1.0, -2.0], [0.5, 0.5]], numpy.float32)
        # weight 0.5 everywhere; the bias keeps its own initializer (zeros), as in MXNet
        want = numpy.maximum(x.sum(axis=1, keepdims=True) * 0.5 * 2 - 1, 0) + x.sum(axis=1, keepdims=True) / 4
        close(self, y._evaluate({"data": nd.array(x)}), numpy.broadcast_to(want, (2, 3)), rtol=1e-6)
        self.assertEqual(json.loads(y.tojson(data=(2, 2)))["format"], "braid.graph")
        self.assertIsInstance(-data, sym.Symbol)
        self.assertIsInstance(sym.split(data, num_outputs=2)[0], sym.Symbol)
        with self.assertRaises(TypeError):
            list(data)  # indexable, not iterable (no length)
        close(self, sym.relu(nd.array([-1.0, 1.0])), [0.0, 1.0])  # arrays in: computed as nd

    def test_infer_shape_and_tojson(self):
        net = self.mlp()
        y = net(sym.var("data"))
        with self.assertRaises(ValueError):
            y.infer_shape()
        arg_shapes, out_shapes, aux_shapes = y.infer_shape(data=(5, 4))
        self.assertEqual(arg_shapes, [(5, 4), (8, 4), (8,), (8,), (8,), (2, 8), (2,)])
        self.assertEqual((out_shapes, aux_shapes), ([(5, 2)], [(8,), (8,)]))
        graph = json.loads(y.tojson(data=(5, 4)))
        self.assertEqual(graph["format"], "braid.graph")
        inputs = [v for v in graph["values"] if v["kind"] == "input"]
        self.assertEqual([v["shape"] for v in inputs], [[5, 4]])
        self.assertEqual(net(sym.var("data", shape=(3, 4))).infer_shape()[1], [(3, 2)])
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "mlp-symbol.json")
            y.save(path, data=(1, 4))
            self.assertEqual(sym.load(path)["format"], "braid.graph")


def run_listing(name, *args, env=None):
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "bindings", "python"), LISTINGS]),
                       **(env or {}))
    return subprocess.run([sys.executable, os.path.join(LISTINGS, name), *args], env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)


@ONCE
class Listings(unittest.TestCase):
    """The MXNet 1.x edition's 8.1-8.5, their import lines changed to braid's."""

    def test_8_1_hybrid_programming(self):
        proc = run_listing("hybrid_programming.py", "--calls", "100")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for text in ("before hybridizing:", "after hybridizing:", "<Symbol", "F: ", "traced ndarray",
                     "loaded back: largest difference 0", "my_mlp-symbol.json"):
            self.assertIn(text, proc.stdout)

    def test_8_2_async_computation(self):
        proc = run_listing("async_computation.py", "--size", "200", "--steps", "100", "--batches", "4")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for text in ("Workloads are queued.", "sum =", "synchronous.", "asynchronous.", "mean loss:"):
            self.assertIn(text, proc.stdout)

    def test_8_3_automatic_parallelism_on_two_devices(self):
        proc = run_listing("automatic_parallelism.py", "--size", "200", "--products", "3",
                           env={"BRAID_CPU_DEVICES": "2"})
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("Run on both cpu(0) and cpu(1) in parallel.", proc.stdout)
        self.assertIn("largest relative error", proc.stdout)

    @unittest.skipUnless(os.path.isdir(DATA), "Fashion-MNIST is not installed (package dataset-fashion-mnist)")
    def test_8_4_multi_gpu_from_scratch_learns_on_one_and_two_devices(self):
        for devices in ("1", "2"):
            proc = run_listing("multi_gpu_scratch.py", "--num-gpus", devices, "--epochs", "1", "--batches", "40",
                               "--scale", "0.1", "--json", env={"BRAID_CPU_DEVICES": "2"})
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
            epoch = json.loads(proc.stdout.strip().splitlines()[-1])
            self.assertEqual((len(epoch["devices"]), epoch["batches"]), (int(devices), 40))
            self.assertLess(epoch["loss_last"], 0.8 * epoch["loss_first"], epoch)
            self.assertGreater(epoch["test_accuracy"], 0.3, epoch)
            self.assertEqual(epoch["replica_spread"], 0.0)

    @unittest.skipUnless(os.path.isdir(DATA), "Fashion-MNIST is not installed (package dataset-fashion-mnist)")
    def test_8_5_concise_resnet18_on_two_devices(self):
        proc = run_listing("multi_gpu_concise.py", "--epochs", "1", "--batches", "2", "--batch-size", "16",
                           "--test-batches", "1", "--json", env={"BRAID_CPU_DEVICES": "2"})
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        epoch = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual((len(epoch["devices"]), epoch["batches"], epoch["replica_spread"]), (2, 2, 0.0))
        self.assertTrue(math.isfinite(epoch["loss_first"]) and math.isfinite(epoch["loss_last"]), epoch)


if __name__ == "__main__":
    unittest.main()
