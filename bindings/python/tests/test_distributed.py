"""Several processes: braid.distributed's collectives and gluon.Trainer(kvstore="dist_sync"), run as
2 and 4 ranks of dist_worker.py under braid-run. Every rank's parameters after training must be
bit-identical, and equal (within float tolerance) one process trained on the global batches; and
samples/python/lenet_dist.py on 2 ranks must follow one process's loss for a few batches. Skipped
where braid-run or the Gloo plugin is not built next to the libbraid under test."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import numpy

import braid
from braid import distributed as dist
from braid import gluon

import dist_worker

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("BRAID_DATA_DIR", "/usr/share/datasets/fashion-mnist")


def _build_dirs():
    """Where libbraid's build keeps its plugins (lib) and tools (bin): next to BRAID_LIBRARY (ctest
    sets it), else this checkout's build/."""
    library = os.environ.get("BRAID_LIBRARY")
    lib_dir = (os.path.dirname(os.path.realpath(library)) if library
               else os.path.join(HERE, "..", "..", "..", "build", "lib"))
    return os.path.normpath(lib_dir), os.path.normpath(os.path.join(lib_dir, "..", "bin"))


LIB_DIR, BIN_DIR = _build_dirs()
BRAID_RUN = os.path.join(BIN_DIR, "braid-run")
GLOO = os.path.join(LIB_DIR, "libbraid-comm-gloo.so")
MISSING = ("the Gloo plugin is not built (no {})".format(GLOO) if not os.path.exists(GLOO)
           else "braid-run is not built (no {})".format(BRAID_RUN) if not os.path.exists(BRAID_RUN) else None)


class WithoutProcesses(unittest.TestCase):
    """What needs no group, or a group of one."""

    def test_kvstore_strings(self):
        with self.assertRaises(braid.BraidError) as caught:  # no server processes here
            gluon.Trainer([], "sgd", kvstore="dist_async")
        self.assertIn("--servers", str(caught.exception))
        with self.assertRaises(braid.BraidError):  # no server processes here
            braid.kv.create("dist_async")
        for bad in ("dist", "dist_sync_async", "Device", "horovod"):
            with self.assertRaises(ValueError):
                gluon.Trainer([], "sgd", kvstore=bad)
        with self.assertRaises(TypeError):
            braid.kv.create(3)
        trainer = gluon.Trainer([], "sgd", kvstore="device")
        self.assertEqual((trainer.rank, trainer.num_workers, trainer.process_group), (0, 1, None))
        store = braid.kv.create("local")
        self.assertEqual((store.rank, store.num_workers), (0, 1))

    def test_the_module_needs_a_group(self):
        if not dist.is_initialized():
            with self.assertRaises(RuntimeError):
                dist.get_rank()
        with self.assertRaises(TypeError):
            dist.get_rank(group="world")

    def test_bad_options_are_refused_before_joining(self):
        for kwargs, error in [({"rank": -1}, ValueError), ({"world_size": 0}, ValueError),
                              ({"rank": 0.5}, TypeError), ({"master_port": 70000}, ValueError),
                              ({"timeout": -1}, ValueError), ({"master_addr": 3}, TypeError),
                              ({"backend": ""}, TypeError)]:
            with self.assertRaises(error, msg=str(kwargs)):
                dist.ProcessGroup(**kwargs)

    @unittest.skipIf(MISSING, MISSING)
    def test_a_group_of_one(self):
        with dist.ProcessGroup(rank=0, world_size=1, master_port=_free_port(), timeout=30) as group:
            self.assertEqual((group.rank, group.size, group.backend), (0, 1, "gloo"))
            x = braid.np.array([1.0, 2.0])
            self.assertIs(group.allreduce(x, op="max"), x)
            numpy.testing.assert_array_equal(x.asnumpy(), [1.0, 2.0])
            with self.assertRaises(ValueError):
                group.allreduce(x, op="median")
            with self.assertRaises(TypeError):
                group.allreduce(x, op=None)
            with self.assertRaises(TypeError):
                group.allreduce([1.0, 2.0])
            with self.assertRaises(ValueError):
                group.broadcast(x, root=1)
        with self.assertRaises(RuntimeError):
            group.barrier()  # closed

    @unittest.skipIf(MISSING, MISSING)
    def test_rejoin_pending_reads_braid_runs_file(self):
        # Outside braid-run --rejoin: never pending. With BRAID_REJOIN_FILE naming a file (braid-run makes
        # it when lost ranks may come back): pending while it exists.
        with tempfile.TemporaryDirectory() as folder:
            flag = os.path.join(folder, "rejoin")
            old = os.environ.get("BRAID_REJOIN_FILE")
            os.environ["BRAID_REJOIN_FILE"] = flag
            try:
                with dist.ProcessGroup(rank=0, world_size=1, master_port=_free_port(), timeout=30) as group:
                    self.assertFalse(group.rejoin_pending())
                    open(flag, "w").close()
                    self.assertTrue(group.rejoin_pending())
                    os.remove(flag)
                    self.assertFalse(group.rejoin_pending())
            finally:
                if old is None:
                    del os.environ["BRAID_REJOIN_FILE"]
                else:
                    os.environ["BRAID_REJOIN_FILE"] = old
        self.assertEqual(dist.EXIT_REJOIN, 75)


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def reference(world_size, initial):
    """One process on the global batches, from the ranks' initial values."""
    devices = [braid.cpu(0)]
    net = dist_worker.model(devices)
    for name, p in net.collect_params().items():
        p.set_data(braid.np.array(initial[name]))
    trainer = gluon.Trainer(net.collect_params(), "sgd",
                            {"learning_rate": dist_worker.LR, "momentum": dist_worker.MOMENTUM})
    dist_worker.train(net, trainer, dist_worker.global_batches(world_size), devices,
                      world_size * dist_worker.ROWS_PER_RANK)
    return dist_worker.values(net)


def run_job(launcher_args, worker_args):
    """braid-run LAUNCHER_ARGS python3 dist_worker.py WORKER_ARGS, with this package on the path; the
    finished process (its output in stdout)."""
    env = dict(os.environ, BRAID_DIST_TIMEOUT="60")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [os.path.join(HERE, "..", ""), env.get("PYTHONPATH")]))
    return subprocess.run([BRAID_RUN, *launcher_args, sys.executable, os.path.join(HERE, "dist_worker.py"),
                           *worker_args], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=240)


@unittest.skipIf(MISSING, MISSING)
class SeveralProcesses(unittest.TestCase):
    def run_ranks(self, n):
        with tempfile.TemporaryDirectory() as out:
            done = run_job(["-n", str(n)], [out])
            self.assertEqual(done.returncode, 0, done.stdout)
            for r in range(n):
                self.assertIn(f"[{r}] rank {r} of {n}: ok", done.stdout)
            ranks = []
            for r in range(n):
                with numpy.load(os.path.join(out, f"rank{r}.npz")) as f:
                    ranks.append({k: f[k] for k in f.files})
        for r in range(1, n):
            for key, value in ranks[0].items():
                numpy.testing.assert_array_equal(ranks[r][key], value, err_msg=f"rank {r}'s {key}")  # bit for bit
        initial = {k.split("/", 1)[1]: v for k, v in ranks[0].items() if k.startswith("initial/")}
        want = reference(n, initial)
        for name, value in want.items():
            self.assertFalse(numpy.array_equal(ranks[0][f"final/{name}"], initial[name]), f"{name} was trained")
            numpy.testing.assert_allclose(ranks[0][f"final/{name}"], value, rtol=1e-4, atol=1e-5, err_msg=name)

    def test_two_ranks(self):
        self.run_ranks(2)

    def test_a_dist_async_trainer_with_servers(self):
        done = run_job(["-n", "2", "--servers", "1"], ["--async"])
        self.assertEqual(done.returncode, 0, done.stdout)
        sums = [line.split("checksum ")[1] for line in done.stdout.splitlines() if "async ok" in line]
        self.assertEqual(len(sums), 2, done.stdout)
        self.assertEqual(sums[0], sums[1], "every rank pulled the same weights")

    def test_mxnet_launch_variables(self):
        """DMLC_ROLE scheduler, server and worker processes running one script, as MXNet's launcher
        starts them: importing braid serves in the scheduler and the server; the workers are numbered
        as they arrive."""
        script = ("import braid\nfrom braid import np\nkv = braid.kv.create('dist_sync')\n"
                  "kv.init(0, np.array([kv.rank + 10.0]))\nkv.push(0, np.array([kv.rank + 1.0]))\n"
                  "out = np.zeros(1)\nkv.pull(0, out)\n"
                  "print('worker', kv.rank, kv.num_workers, kv.num_servers, float(out.asnumpy()[0]))\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("BRAID_RANK", "BRAID_WORLD", "OMPI_", "SLURM_"))}
        env.update(PYTHONPATH=os.path.join(HERE, ".."), DMLC_NUM_WORKER="2", DMLC_NUM_SERVER="1",
                   DMLC_PS_ROOT_URI="127.0.0.1", DMLC_PS_ROOT_PORT=str(_free_port()), BRAID_DIST_TIMEOUT="60")
        procs = [subprocess.Popen([sys.executable, "-c", script], env=dict(env, DMLC_ROLE=role), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
                 for role in ("scheduler", "server", "worker", "worker")]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        self.assertEqual([p.returncode for p in procs], [0, 0, 0, 0], outs)
        self.assertEqual(outs[0] + outs[1], "", "the scheduler and the server print nothing")
        workers = sorted(line.split()[1:] for out in outs[2:] for line in out.splitlines() if line.startswith("worker"))
        self.assertEqual(workers, [["0", "2", "1", "3.0"], ["1", "2", "1", "3.0"]])  # 10 (rank 0's) replaced by 1 + 2

    def test_a_dist_sync_kvstore_with_servers(self):
        done = run_job(["-n", "2", "--servers", "2"], ["--kv"])
        self.assertEqual(done.returncode, 0, done.stdout)
        for r in range(2):
            self.assertIn(f"[{r}] rank {r} of 2: kv ok over 2 server(s)", done.stdout)

    def test_four_ranks(self):
        self.run_ranks(4)

    @unittest.skipIf(not os.path.exists(os.path.join(DATA, "train-images-idx3-ubyte.gz")),
                     f"no Fashion-MNIST in {DATA}")
    def test_the_lenet_sample_on_two_ranks_trains_as_one_process(self):
        sample = os.path.join(HERE, "..", "..", "..", "samples", "python", "lenet_dist.py")
        args = [sample, "--batches", "8", "--test-batches", "1", "--batch-size", "64", "--init-std", "0.1",
                "--lr", "0.2", "--json"]
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
        results = []
        for command in ([BRAID_RUN, "-n", "2", sys.executable] + args, [sys.executable] + args):
            done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  timeout=240)
            self.assertEqual(done.returncode, 0, done.stdout)
            line = next(t for t in done.stdout.splitlines() if "{" in t)
            results.append(json.loads(line[line.index("{"):]))
        two, one = results
        self.assertEqual((two["ranks"], one["ranks"], two["batches"]), (2, 1, 8))
        self.assertAlmostEqual(two["mean_loss"], one["mean_loss"], places=4)
        self.assertAlmostEqual(two["test_accuracy"], one["test_accuracy"], delta=0.05)


if __name__ == "__main__":
    unittest.main()
