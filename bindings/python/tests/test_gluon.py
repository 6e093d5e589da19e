"""Gluon over braid: layers against NumPy, deferred initialisation, hybridize (graphs traced once, the
same results and gradients as imperative), export and import, and the Trainer on one and two devices."""
import os
import tempfile
import unittest

import numpy

import braid
from braid import autograd, gluon, init, np, npx
from braid.gluon import nn

from test_arrays import close


class Layers(unittest.TestCase):
    def test_dense_infers_its_input_and_computes_x_wt_plus_b(self):
        layer = nn.Dense(3, in_units=0)
        layer.initialize(init=init.Normal(0.5))
        with self.assertRaises(gluon.DeferredInitializationError):
            layer.weight.data()
        x0 = numpy.arange(8, dtype=numpy.float32).reshape(2, 4) / 8
        y = layer(np.array(x0))
        self.assertEqual(layer.weight.shape, (3, 4))
        w, b = layer.weight.data().asnumpy(), layer.bias.data().asnumpy()
        numpy.testing.assert_array_equal(b, numpy.zeros(3, numpy.float32))  # bias_initializer 'zeros' wins
        close(self, y, x0 @ w.T + b, rtol=1e-5)
        self.assertEqual(list(layer.collect_params()), ["weight", "bias"])

    def test_sequential_names_and_shapes(self):
        net = nn.HybridSequential()
        net.add(nn.Conv2D(4, kernel_size=3, padding=1, activation="relu"), nn.MaxPool2D(), nn.Flatten(),
                nn.Dense(5))
        net.initialize()
        y = net(np.ones((2, 1, 6, 6)))
        self.assertEqual(y.shape, (2, 5))
        self.assertEqual(list(net.collect_params()), ["0.weight", "0.bias", "3.weight", "3.bias"])
        self.assertEqual(net.collect_params()["3.weight"].shape, (5, 36))
        self.assertEqual(len(net), 4)

    def test_batch_norm_training_and_inference(self):
        rng = numpy.random.default_rng(3)
        x0 = rng.standard_normal((8, 3, 2, 2)).astype(numpy.float32) * 2 + 1
        bn = nn.BatchNorm(momentum=0.9, epsilon=1e-5)
        bn.initialize()
        with autograd.record():
            y = bn(np.array(x0))
        mean, var = x0.mean(axis=(0, 2, 3)), x0.var(axis=(0, 2, 3))
        want = (x0 - mean[None, :, None, None]) / numpy.sqrt(var[None, :, None, None] + 1e-5)
        close(self, y, want, rtol=1e-4, atol=1e-4)
        unbiased = x0.var(axis=(0, 2, 3), ddof=1)
        close(self, bn.running_mean.data(), 0.1 * mean, rtol=1e-4, atol=1e-5)
        close(self, bn.running_var.data(), 0.9 + 0.1 * unbiased, rtol=1e-4, atol=1e-5)
        y_inference = bn(np.array(x0))  # outside record(): the running statistics
        rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
        close(self, y_inference, (x0 - rm[None, :, None, None]) / numpy.sqrt(rv[None, :, None, None] + 1e-5),
              rtol=1e-4, atol=1e-4)

    def test_dropout_layer_and_activation(self):
        layer = nn.Dropout(0.5)
        x = np.ones((100,))
        self.assertIs(layer(x), x)
        close(self, nn.Activation("relu")(np.array([-1.0, 2.0])), [0.0, 2.0])
        with self.assertRaises(ValueError):
            nn.Activation("swish")


class Counting(nn.HybridBlock):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.dense = nn.Dense(2, in_units=3)

    def forward(self, x):
        self.calls += 1
        return npx.relu(self.dense(x)) * 2


class Hybridize(unittest.TestCase):
    def test_forward_is_traced_once_per_signature_and_mode(self):
        block = Counting()
        block.initialize(init=init.Normal(1.0))
        x = np.array([[1.0, -2.0, 0.5]])
        imperative = block(x).asnumpy()
        block.hybridize()
        results = [block(x).asnumpy() for _ in range(4)]
        self.assertEqual(block.calls, 3)  # 1 imperative + 1 call that settles outputs + 1 trace, then graphs
        for r in results:
            numpy.testing.assert_array_equal(r, imperative)
        block(np.ones((5, 3)))  # a new shape: traced again
        self.assertEqual(block.calls, 4)
        with autograd.record():
            block(x)  # training mode: a graph of its own
        self.assertEqual(block.calls, 5)
        block.hybridize(False)
        block(x)
        self.assertEqual(block.calls, 6)

    def test_gradients_through_the_graph_match_imperative(self):
        def grads(hybrid):
            braid.seed(11)
            net = nn.HybridSequential()
            net.add(nn.Dense(4, activation="tanh"), nn.Dense(1))
            net.initialize(init=init.Normal(0.5))
            x = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
            net(x)
            if hybrid:
                net.hybridize()
                net(x)
            with autograd.record():
                loss = net(x).sum()
            loss.backward()
            return [p.grad().asnumpy() for p in net.collect_params().values()]
        for a, b in zip(grads(False), grads(True)):
            numpy.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)

    def test_an_error_inside_forward_reaches_the_caller(self):
        class Failing(nn.HybridBlock):
            def forward(self, x):
                if x.shape[0] == 3:
                    raise ValueError("three rows")
                return x + 1
        block = Failing()
        block.hybridize()
        block(np.ones((2, 2)))
        close(self, block(np.ones((2, 2))), numpy.full((2, 2), 2, numpy.float32))
        with self.assertRaises(ValueError):
            block(np.ones((3, 2)))

    def test_export_and_import(self):
        net = nn.HybridSequential()
        net.add(nn.Dense(8, activation="relu"), nn.Dense(3))
        net.initialize()
        x = np.random.uniform(size=(2, 5))
        net.hybridize()
        net(x)
        want = net(x).asnumpy()
        with tempfile.TemporaryDirectory() as folder:
            symbol, params = net.export(os.path.join(folder, "mlp"), epoch=3)
            self.assertTrue(symbol.endswith("mlp-symbol.json") and params.endswith("mlp-0003.params"))
            loaded = gluon.SymbolBlock.imports(symbol, ["data"], params)
            close(self, loaded(x), want)


class ReviewFindings(unittest.TestCase):
    """Each case once gave a wrong answer silently (a review of the package)."""

    def test_a_hybridized_call_with_another_number_of_inputs_is_traced_for_it(self):
        class Two(nn.HybridBlock):
            def forward(self, x, y=None):
                return x * 2 if y is None else x + y
        b = Two()
        b.hybridize()
        x, y = np.ones(2), np.full((2,), 10.0)
        b(x)
        b(x)
        close(self, b(x, y), [11.0, 11.0])
        close(self, b(x), [2.0, 2.0])

    def test_force_reinit_reaches_graphs_and_trainers(self):
        layer = nn.Dense(1, in_units=2, use_bias=False)
        layer.initialize(init=init.Constant(1.0))
        layer.hybridize()
        x = np.ones((1, 2))
        layer(x)
        close(self, layer(x), [[2.0]])
        trainer = gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.5})
        layer.initialize(init=init.Constant(2.0), force_reinit=True)
        close(self, layer(x), [[4.0]])
        with autograd.record():
            loss = layer(x).sum()
        loss.backward()
        trainer.step(1)
        close(self, layer.weight.data(), [[1.5, 1.5]])
        with self.assertRaises(ValueError):
            trainer.step(1, ignore_stale_grad=True)  # a new trainer would lose the optimizer's state

    def test_a_shared_parameter_is_trained_once(self):
        class Shared(nn.Block):
            def __init__(self):
                super().__init__()
                self.d = nn.Dense(2, in_units=2, use_bias=False)
                self.e = self.d

            def forward(self, x):
                return self.e(self.d(x))
        net = Shared()
        net.initialize(init=init.Constant(0.5))
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        with autograd.record():
            loss = net(np.ones((1, 2))).sum()
        loss.backward()
        trainer.step(1)  # refused before: two entries for one parameter

    def test_export_takes_the_inference_graph(self):
        net = nn.HybridSequential()
        net.add(nn.Dense(4, in_units=3), nn.Dropout(0.5))
        net.initialize(init=init.Constant(1.0))
        net.hybridize()
        x = np.ones((1, 3))
        net(x)
        want = net(x).asnumpy()
        with autograd.record():
            net(x)
        with tempfile.TemporaryDirectory() as folder:
            symbol, params = net.export(os.path.join(folder, "m"))
            close(self, gluon.SymbolBlock.imports(symbol, ["data"], params)(x), want)
        net.hybridize(False)
        with self.assertRaises(RuntimeError):
            net.export("unused")

    def test_in_place_writes_are_refused_while_recording(self):
        x = np.ones(2)
        x.attach_grad()
        with autograd.record():
            y = x * 2
            with self.assertRaises(RuntimeError):
                y += x
            with self.assertRaises(RuntimeError):
                y[:] = 0

    def test_batch_norm_momentum_one_freezes_the_running_statistics(self):
        bn = nn.BatchNorm(momentum=1.0, in_channels=2)
        bn.initialize()
        with autograd.record():
            bn(np.random.normal(loc=5.0, size=(4, 2)))
        close(self, bn.running_mean.data(), [0.0, 0.0])
        close(self, bn.running_var.data(), [1.0, 1.0])


class Training(unittest.TestCase):
    def test_sgd_step_is_w_minus_lr_grad_over_batch(self):
        layer = nn.Dense(2, in_units=3)
        layer.initialize(init=init.Constant(0.5))
        trainer = gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.1})
        x = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]])
        with autograd.record():
            loss = layer(x).sum()
        loss.backward()
        grad = layer.weight.grad().asnumpy()
        close(self, grad, numpy.tile(numpy.array([1.0, 1.0, 4.0], numpy.float32), (2, 1)))
        trainer.step(2)
        close(self, layer.weight.data(), 0.5 - 0.1 * grad / 2)
        close(self, layer.bias.data(), numpy.full(2, -0.1 * 2 / 2, numpy.float32))
        self.assertEqual(trainer.learning_rate, 0.1)
        with self.assertRaises(ValueError):
            gluon.Trainer(layer.collect_params(), "rmsprop")

    def test_save_states_and_load_states_resume_bit_for_bit(self):
        X = numpy.random.RandomState(3).normal(size=(6, 8, 4)).astype(numpy.float32)
        y = numpy.random.RandomState(4).randint(0, 3, size=(6, 8)).astype(numpy.int32)
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()

        def net_and_trainer(optimizer, params):
            braid.seed(9)
            net = nn.Sequential()
            net.add(nn.Dense(6, activation="relu", in_units=4), nn.Dense(3, in_units=6))
            net.initialize(init=init.Normal(0.3))
            return net, gluon.Trainer(net.collect_params(), optimizer, params)

        def steps(net, trainer, first, last):
            for s in range(first, last):
                with autograd.record():
                    loss = loss_fn(net(np.array(X[s])), np.array(y[s])).mean()
                loss.backward()
                trainer.step(1)
            return [p.data().asnumpy() for p in net.collect_params().values()]

        with tempfile.TemporaryDirectory() as d:
            for optimizer, params in (("sgd", {"learning_rate": 0.3, "momentum": 0.9}), ("adam", {"learning_rate": 0.05})):
                whole = steps(*net_and_trainer(optimizer, params), 0, 6)
                net, trainer = net_and_trainer(optimizer, params)
                steps(net, trainer, 0, 3)
                net.save_parameters(os.path.join(d, "p"))
                trainer.save_states(os.path.join(d, "s"))
                net, trainer = net_and_trainer(optimizer, params)
                net.load_parameters(os.path.join(d, "p"))
                trainer.load_states(os.path.join(d, "s"))
                for got, want in zip(steps(net, trainer, 3, 6), whole):
                    numpy.testing.assert_array_equal(got, want, err_msg=optimizer)  # bit for bit
            net, trainer = net_and_trainer("sgd", {"learning_rate": 0.3})
            with self.assertRaises(ValueError):
                trainer.load_states(os.path.join(d, "s"))  # Adam's states, before the first step
            steps(net, trainer, 0, 1)
            with self.assertRaises(braid.BraidError) as e:
                trainer.load_states(os.path.join(d, "s"))  # and after it
            self.assertEqual(e.exception.status, "BRAID_ERR_INVALID_ARGUMENT")
            # Loaded before the first step, the states wait for it: the step still chooses ignore_stale_grad.
            net, trainer = net_and_trainer("adam", {"learning_rate": 0.05})
            trainer.load_states(os.path.join(d, "s"))
            with autograd.record():
                loss = loss_fn(net(np.array(X[0])), np.array(y[0])).mean()
            loss.backward()
            trainer.step(1, ignore_stale_grad=True)

    @unittest.skipUnless(braid.cpu(1) in braid.devices(), "one CPU device (BRAID_CPU_DEVICES=2 makes two)")
    def test_two_devices_match_one(self):
        def train(devices):
            braid.seed(5)
            net = nn.Sequential()
            net.add(nn.Dense(6, activation="relu", in_units=4), nn.Dense(3, in_units=6))
            net.initialize(init=init.Normal(0.3), ctx=devices)
            trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5, "momentum": 0.9})
            loss = gluon.loss.SoftmaxCrossEntropyLoss()
            X = np.random.normal(size=(8, 4))
            y = np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype=numpy.int32)
            for _ in range(3):
                xs = gluon.utils.split_and_load(X, devices)
                ys = gluon.utils.split_and_load(y, devices)
                with autograd.record():
                    ls = [loss(net(a), b) for a, b in zip(xs, ys)]
                for l in ls:
                    l.backward()
                trainer.step(8)
            return net
        one, two = train([braid.cpu(0)]), train([braid.cpu(0), braid.cpu(1)])
        for p1, p2 in zip(one.collect_params().values(), two.collect_params().values()):
            replicas = p2.list_data()
            self.assertEqual(len(replicas), 2)
            numpy.testing.assert_array_equal(replicas[0].asnumpy(), replicas[1].asnumpy())
            numpy.testing.assert_allclose(p1.data().asnumpy(), replicas[0].asnumpy(), rtol=1e-5, atol=1e-6)


class Checkpoints(unittest.TestCase):
    def test_save_and_load_arrays_and_parameters(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "arrays")
            npx.save(path, [np.arange(3), np.array([[1, 2]], dtype=numpy.int32)])
            a, b = npx.load(path)
            close(self, a, numpy.arange(3, dtype=numpy.float32))
            self.assertEqual(b.dtype, numpy.int32)
            npx.save(path, {"w": np.ones(2)})
            self.assertEqual(list(npx.load(path)), ["w"])
            net = nn.HybridSequential()
            net.add(nn.Dense(4, activation="relu"), nn.Dense(2))
            net.initialize(init=init.Normal(1.0))
            x = np.random.uniform(size=(3, 5))
            want = net(x).asnumpy()
            net.save_parameters(os.path.join(folder, "mlp.params"))
            fresh = nn.HybridSequential()
            fresh.add(nn.Dense(4, activation="relu"), nn.Dense(2))
            fresh.load_parameters(os.path.join(folder, "mlp.params"))
            close(self, fresh(x), want)
            other = nn.HybridSequential()
            other.add(nn.Dense(4))
            with self.assertRaises(RuntimeError):
                other.load_parameters(os.path.join(folder, "mlp.params"))  # extra parameters in the file
            with self.assertRaises(braid.BraidError) as e:
                npx.load(os.path.join(folder, "missing"))
            self.assertEqual(e.exception.status, "BRAID_ERR_NOT_FOUND")


class KVStore(unittest.TestCase):
    def test_push_sums_pull_copies_and_the_optimizer_updates(self):
        devices = [d for d in braid.devices() if d.device_type == "cpu"][:2]
        kv = braid.kv.create("local")
        self.assertEqual(kv.type, "local")
        kv.init(3, np.ones((2, 3)))
        kv.push(3, [np.full((2, 3), 2.0, ctx=d) for d in devices] + [np.full((2, 3), 3.0)])
        outs = [np.zeros((2, 3), ctx=d) for d in devices]
        kv.pull(3, out=outs)
        total = 2.0 * len(devices) + 3.0
        for o in outs:
            close(self, o, numpy.full((2, 3), total, numpy.float32))
        kv.set_optimizer("sgd", learning_rate=0.1)
        kv.pushpull(3, np.ones((2, 3)), out=outs[0])
        close(self, outs[0], numpy.full((2, 3), total - 0.1, numpy.float32))
        with self.assertRaises(braid.BraidError) as e:
            kv.init(3, np.ones(1))  # the key exists
        self.assertEqual(e.exception.status, "BRAID_ERR_INVALID_ARGUMENT")
        self.assertEqual((kv.rank, kv.num_workers), (0, 1))
        with self.assertRaises(braid.BraidError) as e:
            braid.kv.create("dist_async")  # no server processes in this job (braid-run --servers)
        self.assertEqual(e.exception.status, "BRAID_ERR_INVALID_STATE")
        with self.assertRaises(ValueError):
            braid.kv.create("dist")
        with self.assertRaises(TypeError):
            kv.push("w", np.ones(1))


if __name__ == "__main__":
    unittest.main()
