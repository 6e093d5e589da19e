"""One rank of test_distributed.py, started by braid-run -n N:

    braid-run -n 2 python3 dist_worker.py OUT_DIR
    braid-run -n 2 --servers 1 python3 dist_worker.py --kv

checks every collective of braid.distributed against its exact result, the errors of bad input, then trains a small model a few steps with gluon.Trainer(kvstore="dist_sync") on
this rank's shard of every global batch and writes OUT_DIR/rank{R}.npz: the parameters when the
Trainer was made (rank 0's, broadcast) and after training. The test compares the ranks' files with
each other and with one process trained on the global batches (model, data and training below are
shared with it)."""
import os
import sys

import numpy

import braid
from braid import autograd, gluon, init, np
from braid import distributed as dist
from braid.gluon import nn

STEPS, ROWS_PER_RANK, FEATURES, CLASSES = 6, 4, 5, 3
LR, MOMENTUM = 0.2, 0.9


def model(devices):
    net = nn.HybridSequential()
    net.add(nn.Dense(8, in_units=FEATURES, activation="relu"), nn.Dense(CLASSES, in_units=8))
    net.initialize(init=init.Normal(0.5), ctx=devices)
    return net


def global_batches(world_size):
    """The same global batches on every rank: (X, y) per step, world_size * ROWS_PER_RANK rows each."""
    rng = numpy.random.default_rng(1234)
    rows = world_size * ROWS_PER_RANK
    return [(rng.standard_normal((rows, FEATURES)).astype(numpy.float32),
             rng.integers(0, CLASSES, rows).astype(numpy.int32)) for _ in range(STEPS)]


def train(net, trainer, batches, devices, per_step_batch):
    """Forward and backward on each device's part of each batch, then trainer.step(per_step_batch)."""
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    for X, y in batches:
        X_parts = gluon.utils.split_and_load(np.array(X), devices, even_split=False)
        y_parts = gluon.utils.split_and_load(np.array(y, dtype="int32"), devices, even_split=False)
        with autograd.record():
            losses = [loss(net(x), t) for x, t in zip(X_parts, y_parts)]
        for l_ in losses:
            l_.backward()
        trainer.step(per_step_batch)


def values(net):
    return {name: p.data().asnumpy() for name, p in net.collect_params().items()}


def expect(condition, what):
    if not condition:
        raise AssertionError(what)


def raises(kind, fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as e:
        return str(e)
    raise AssertionError(f"{fn.__name__}{args} did not raise {kind.__name__}")


def check_collectives(group):
    rank, size = group.rank, group.size
    ranks = numpy.arange(size)
    base = numpy.arange(6, dtype=numpy.float32)

    x = np.array(base + rank)
    expect(group.allreduce(x) is x, "allreduce returns its array")
    numpy.testing.assert_array_equal(x.asnumpy(), size * base + ranks.sum())
    x = np.array(base * (rank + 1), dtype="float64")
    numpy.testing.assert_array_equal(dist.allreduce(x, op="avg").asnumpy(), base * (ranks + 1).mean())
    i = np.array([rank, -rank, rank + 1], dtype="int32")
    numpy.testing.assert_array_equal(dist.allreduce(i.copy(), op="max").asnumpy(), [size - 1, 0, size])
    numpy.testing.assert_array_equal(dist.allreduce(i.copy(), op="min").asnumpy(), [0, 1 - size, 1])
    numpy.testing.assert_array_equal(dist.allreduce(i.copy(), op="prod").asnumpy(),
                                     [0, 0, numpy.prod(ranks + 1)])
    b = np.array(base + 10 * rank)
    numpy.testing.assert_array_equal(group.broadcast(b, root=size - 1).asnumpy(), base + 10 * (size - 1))
    r = np.array(base + rank)
    group.reduce(r, root=0, op="sum")
    numpy.testing.assert_array_equal(r.asnumpy(), size * base + ranks.sum() if rank == 0 else base + rank)
    g = group.all_gather(np.array([rank, rank * 2, 7], dtype="int64"))
    expect(g.shape == (size, 3), f"all_gather's shape {g.shape}")
    numpy.testing.assert_array_equal(g.asnumpy(), numpy.stack([ranks, ranks * 2, numpy.full(size, 7)], axis=1))
    s = group.reduce_scatter(np.array(numpy.arange(2 * size * 3, dtype=numpy.float32).reshape(2 * size, 3)))
    expect(s.shape == (2, 3), f"reduce_scatter's shape {s.shape}")
    whole = size * numpy.arange(2 * size * 3, dtype=numpy.float32).reshape(2 * size, 3)
    numpy.testing.assert_array_equal(s.asnumpy(), whole[2 * rank:2 * rank + 2])
    if size % 2 == 0:  # pairs swap a message: the even rank sends first, its partner receives first
        partner, mine = rank ^ 1, np.array([rank * 1.5, 2.0])
        got = np.zeros(2)
        if rank % 2 == 0:
            group.send(mine, partner, tag=5)
            group.recv(got, partner, tag=5)
        else:
            group.recv(got, partner, tag=5)
            group.send(mine, partner, tag=5)
        numpy.testing.assert_array_equal(got.asnumpy(), [partner * 1.5, 2.0])
    group.barrier()

    # bad input: refused in Python, before any collective (so the ranks stay in step)
    raises(ValueError, group.allreduce, x, op="median")
    raises(TypeError, group.allreduce, x, op=0)
    raises(TypeError, group.allreduce, base)
    raises(TypeError, group.allreduce, i, op="avg")
    raises(ValueError, group.broadcast, x, root=size)
    raises(TypeError, group.broadcast, x, root=0.5)
    raises(ValueError, group.send, x, rank, tag=0)
    raises(ValueError, group.reduce_scatter, np.ones(size * 2 + 1))
    raises(ValueError, group.all_gather, x, out=np.ones(1))
    raises(RuntimeError, dist.init_process_group)  # the default group exists
    message = raises(braid.BraidError, gluon.Trainer, [], "sgd", kvstore="dist_async")  # no --servers here
    expect("--servers" in message, message)
    raises(ValueError, gluon.Trainer, [], "sgd", kvstore="dist_bogus")
    raises(ValueError, braid.kv.create, "dist_bogus")

    # A dist KVStore keeps its keys in server processes: this job has none (no --servers).
    message = raises(braid.BraidError, braid.kv.create, "dist_sync")
    expect("--servers" in message, message)
    expect((braid.kv.create("device").rank, braid.kv.create("local").num_workers) == (0, 1), "local stores")


def check_unequal_batch_sizes(group, devices):
    """Ranks that pass different batch sizes get a ValueError at the next step, on every rank."""
    net = model(devices)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="dist_sync")
    batches = global_batches(group.size)[:2]
    shard = [(X[group.rank::group.size], y[group.rank::group.size]) for X, y in batches]
    train(net, trainer, shard[:1], devices, ROWS_PER_RANK + group.rank)
    message = raises(ValueError, train, net, trainer, shard[1:], devices, ROWS_PER_RANK)
    expect("different batch sizes" in message, message)


def kv_main():
    """braid-run -n N --servers S python3 dist_worker.py --kv: MXNet's dist_sync KVStore from Python."""
    kv = braid.kv.create("dist_sync")
    rank, size = kv.rank, kv.num_workers
    expect(size == int(os.environ["BRAID_WORLD_SIZE"]) and kv.num_servers == int(os.environ["BRAID_NUM_SERVERS"]),
           "the store's worker and server counts are the launcher's")
    expect(kv.type == "dist_sync", kv.type)
    kv.init(3, np.array([rank + 5.0, 1.0]))
    out = np.zeros(2)
    kv.pull(3, out)
    numpy.testing.assert_array_equal(out.asnumpy(), [5.0, 1.0])  # rank 0's
    kv.push(3, np.array([rank + 1.0, 1.0]))
    kv.pull(3, out)
    ranks = numpy.arange(size, dtype=numpy.float32)
    numpy.testing.assert_array_equal(out.asnumpy(), [(ranks + 1).sum(), size])  # summed over the workers
    kv.set_optimizer("sgd", learning_rate=0.5)
    kv.init(4, np.zeros(3))
    w = np.zeros(3)
    kv.pushpull(4, np.ones(3), out=w)  # every worker's gradient of 1: w = -0.5 * size
    numpy.testing.assert_allclose(w.asnumpy(), numpy.full(3, -0.5 * size))
    message = raises(braid.BraidError, kv.pull, 99, out)
    expect("not initialised" in message, message)
    kv.barrier()
    print(f"rank {rank} of {size}: kv ok over {kv.num_servers} server(s)")
    return 0


def async_main():
    """braid-run -n N --servers S python3 dist_worker.py --async: gluon.Trainer(kvstore="dist_async")."""
    braid.seed(7)  # the same model everywhere; rank 0's values are stored anyway
    devices = [d for d in braid.devices() if d.device_type == "cpu"]
    net = model(devices)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}, kvstore="dist_async")
    rank, size = trainer.rank, trainer.num_workers
    expect(size == int(os.environ["BRAID_WORLD_SIZE"]), "the trainer's worker count is the launcher's")
    before = values(net)
    batches = global_batches(size)
    for X, y in batches:
        train(net, trainer, [(X[rank::size], y[rank::size])], devices, ROWS_PER_RANK)
    after = values(net)
    expect(all((before[k] != after[k]).any() for k in before), "every parameter was updated")
    raises(NotImplementedError, trainer.save_states, "/nonexistent")
    # Every worker's pushes are in once all have reached the barrier: a last pull gives every rank the
    # same weights, whose checksum the test compares across ranks.
    trainer._async.barrier()
    for i, p in enumerate(trainer._params):
        trainer._async.pull(i, p.list_data())
    final = numpy.concatenate([v.ravel() for v in values(net).values()]).astype(numpy.float64)
    print(f"rank {rank} of {size}: async ok, {len(batches)} steps, checksum {final.sum()!r}")
    return 0


def main():
    if sys.argv[1] == "--kv":
        return kv_main()
    if sys.argv[1] == "--async":
        return async_main()
    out_dir = sys.argv[1]
    group = dist.init_process_group(timeout=60)
    rank, size = group.rank, group.size
    expect((dist.get_rank(), dist.get_world_size()) == (rank, size), "the module's rank and size")
    expect(size == int(os.environ["BRAID_WORLD_SIZE"]), "the size is the launcher's")
    check_collectives(group)

    devices = [d for d in braid.devices() if d.device_type == "cpu"]
    braid.seed(100 + rank)  # different initial values on every rank: the Trainer broadcasts rank 0's
    net = model(devices)
    own = values(net)
    statistic = gluon.Parameter("statistic", shape=(3,), grad_req="null")  # as BatchNorm's running mean
    statistic.initialize(init=init.Constant(rank + 1.0), ctx=devices)
    trainer = gluon.Trainer(list(net.collect_params().values()) + [statistic], "sgd",
                            {"learning_rate": LR, "momentum": MOMENTUM}, kvstore="dist_sync")
    expect((trainer.rank, trainer.num_workers) == (rank, size), "the trainer's rank and size")
    for copy in statistic.list_data():
        numpy.testing.assert_array_equal(copy.asnumpy(), [1.0, 1.0, 1.0])  # rank 0's, on every device
    initial = values(net)
    if rank:
        expect(any((own[k] != initial[k]).any() for k in own), "rank 0's values replaced this rank's")
    shard = [(X[rank * ROWS_PER_RANK:(rank + 1) * ROWS_PER_RANK], y[rank * ROWS_PER_RANK:(rank + 1) * ROWS_PER_RANK])
             for X, y in global_batches(size)]
    train(net, trainer, shard, devices, ROWS_PER_RANK)
    final = values(net)
    numpy.savez(os.path.join(out_dir, f"rank{rank}.npz"), **{f"initial/{k}": v for k, v in initial.items()},
                **{f"final/{k}": v for k, v in final.items()})

    check_unequal_batch_sizes(group, devices)
    group.barrier()
    print(f"rank {rank} of {size}: ok on {len(devices)} device(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
