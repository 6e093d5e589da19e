"""The chapter's listings in samples/python run and do what the chapter says: the asynchronous loop
computes the right values, the products on two devices match NumPy's, and LeNet trained over one or
two devices learns."""
import json
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SAMPLES = os.path.join(ROOT, "samples", "python")
DATA = os.environ.get("BRAID_DATA_DIR", "/usr/share/datasets/fashion-mnist")
RERUN = os.environ.get("BRAID_TEST_RERUN")  # set by scripts/test.sh for its second ctest run
ONCE = unittest.skipIf(RERUN, "the listings run once, in the first ctest run: they pick their own devices")


def run_sample(name, *args, env=None):
    environment = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "bindings", "python"), **(env or {}))
    return subprocess.run([sys.executable, os.path.join(SAMPLES, name), *args], env=environment,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)


@ONCE
class AsyncComputation(unittest.TestCase):
    def test_runs_and_checks_its_values(self):
        proc = run_sample("async_computation.py")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        for label in ("numpy:", "braid.np:", "waitall:", "synchronous:", "asynchronous:"):
            self.assertIn(label, proc.stdout)


@ONCE
class HybridProgramming(unittest.TestCase):
    def test_hybridized_and_exported_mlp_match_the_imperative_one(self):
        proc = run_sample("hybrid_programming.py")
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for label in ("Without hybridization:", "With hybridization:", "loaded back"):
            self.assertIn(label, proc.stdout)


@ONCE
class AutomaticParallelism(unittest.TestCase):
    def test_runs_on_two_devices_and_checks_a_product(self):
        proc = run_sample("automatic_parallelism.py", "--devices", "cpu:0,cpu:1", "--size", "300", "--products", "5",
                          env={"BRAID_CPU_DEVICES": "2"})
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        for label in ("cpu(0) & cpu(1):", "Copy to CPU:", "largest relative error"):
            self.assertIn(label, proc.stdout)


@unittest.skipUnless(os.path.isdir(DATA), "Fashion-MNIST is not installed (package dataset-fashion-mnist)")
@ONCE
class MultiDeviceTraining(unittest.TestCase):
    def learns(self, devices, env=None):
        # 40 batches from N(0, 0.1^2): the chapter's 0.01 sits on a loss plateau for about an epoch
        proc = run_sample("multi_device_training.py", "--devices", devices, "--batches", "40", "--scale=0.1",
                          "--json", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        epoch = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(epoch["batches"], 40)
        self.assertLess(epoch["loss_last"], 0.8 * epoch["loss_first"], epoch)
        self.assertGreater(epoch["test_accuracy"], 0.3, epoch)

    def test_one_device(self):
        self.learns("cpu:0")

    def test_two_cpu_devices(self):
        self.learns("cpu:0,cpu:1", env={"BRAID_CPU_DEVICES": "2"})

    def test_concise_resnet18_keeps_the_replicas_equal(self):
        # Two steps of the chapter's ResNet-18 with gluon.Trainer over two CPU devices (small: about 70
        # samples/s on two cores); the copies of the first layer's weights must stay identical.
        proc = run_sample("concise_multi_device.py", "--devices", "cpu:0,cpu:1", "--batches", "2", "--batch-size",
                          "16", "--test-batches", "1", "--json", env={"BRAID_CPU_DEVICES": "2"})
        self.assertEqual(proc.returncode, 0, proc.stderr)
        epoch = json.loads(proc.stdout.strip().splitlines()[-1])
        self.assertEqual(epoch["batches"], 2)
        self.assertEqual(epoch["replica_spread"], 0.0)
        self.assertTrue(0 < epoch["loss_first"] < 10 and 0 < epoch["loss_last"] < 10, epoch)

    def test_concise_resnet18_with_mixed_precision(self):
        # --amp f16: autocast plus dynamic loss scaling; the step must run (no overflow skips all of it) and the
        # replicas stay equal.
        for mode in ("bf16", "f16"):
            with self.subTest(amp=mode):
                proc = run_sample("concise_multi_device.py", "--devices", "cpu:0,cpu:1", "--batches", "2",
                                  "--batch-size", "16", "--test-batches", "1", "--json", "--amp", mode,
                                  env={"BRAID_CPU_DEVICES": "2"})
                self.assertEqual(proc.returncode, 0, proc.stderr)
                epoch = json.loads(proc.stdout.strip().splitlines()[-1])
                self.assertEqual((epoch["amp"], epoch["replica_spread"]), (mode, 0.0))
                self.assertTrue(0 < epoch["loss_first"] < 10 and 0 < epoch["loss_last"] < 10, epoch)


if __name__ == "__main__":
    unittest.main()
