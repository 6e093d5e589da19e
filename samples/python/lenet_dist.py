#!/usr/bin/env python3
"""LeNet on Fashion-MNIST, data-parallel across processes: every rank reads the same shuffled global
batches and takes its shard of each (rows rank*B/N to (rank+1)*B/N), and gluon.Trainer with
kvstore="dist_sync" averages the gradients over the processes, so N ranks take the steps one process
takes on the global batch. Test accuracy is counted on each rank's shard of the test set and summed.
The model is samples/lenet's (conv 3x3 20, relu, avg-pool, conv 5x5 50, relu, avg-pool, dense 128,
relu, dense 10; weights N(0, 0.01^2)) and so are the defaults (batch 256, SGD with lr 0.2).

    build/bin/braid-run -n 2 python3 samples/python/lenet_dist.py [--epochs 1] [--batches N]
    python3 samples/python/lenet_dist.py            # one process, no group (kvstore "device")

Under mpirun, srun or a torchrun-style launcher it runs unchanged (docs/PYTHON.md, "Several processes").
"""
import argparse
import json
import os
import sys
import time

import braid
from braid import autograd, gluon, init, np, npx
from braid import distributed as dist
from braid.gluon import nn

npx.set_np()

# A world size set by braid-run, mpirun, srun or torchrun: several processes (docs/DISTRIBUTED.md)
_WORLD_VARIABLES = ("BRAID_WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "WORLD_SIZE")


def launched():
    return any(os.environ.get(v) for v in _WORLD_VARIABLES)


def lenet():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(20, kernel_size=3, activation="relu"), nn.AvgPool2D(pool_size=2, strides=2),
            nn.Conv2D(50, kernel_size=5, activation="relu"), nn.AvgPool2D(pool_size=2, strides=2),
            nn.Flatten(), nn.Dense(128, activation="relu"), nn.Dense(10))
    return net


def shard(rows, rank, size):
    """This rank's rows of a batch of `rows`: equal parts, the first ranks one more where it is uneven."""
    return rank * rows // size, (rank + 1) * rows // size


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batches", type=int, default=0, help="global batches per epoch (0: the whole training set)")
    ap.add_argument("--test-batches", type=int, default=0, help="global test batches to evaluate (0: all)")
    ap.add_argument("--batch-size", type=int, default=256, help="the global batch, over every rank (default 256)")
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=0, help="initial weights and shuffling (default 0)")
    ap.add_argument("--init-std", type=float, default=0.01,
                    help="standard deviation of the initial weights (default 0.01, which starts on a loss plateau)")
    ap.add_argument("--hybridize", action="store_true")
    ap.add_argument("--json", action="store_true", help="rank 0 prints one JSON object per epoch")
    args = ap.parse_args()

    group = dist.init_process_group() if launched() else None
    rank, size = (group.rank, group.size) if group else (0, 1)
    if args.batch_size < size:
        ap.error(f"--batch-size {args.batch_size} gives some of the {size} ranks no rows")
    braid.seed(args.seed)  # the same initial values on every rank (the Trainer broadcasts rank 0's anyway)
    net = lenet()
    net.initialize(init=init.Normal(sigma=args.init_std))
    if args.hybridize:
        net.hybridize()
    net(np.zeros((1, 1, 28, 28)))  # the deferred shapes, so that the Trainer broadcasts every parameter now
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": args.lr},
                            kvstore="dist_sync" if group else "device")
    loss = gluon.loss.SoftmaxCrossEntropyLoss()
    # Every rank reads the same global batches (same seed, same shuffle) and keeps its rows.
    train_iter, test_iter = braid.data.load_data_fashion_mnist(args.batch_size, seed=args.seed)

    for epoch in range(args.epochs):
        start, steps, loss_sum, rows = time.perf_counter(), 0, np.zeros(1), 0
        for i, (X, y) in enumerate(train_iter):
            if args.batches and i == args.batches:
                break
            lo, hi = shard(X.shape[0], rank, size)
            with autograd.record():
                l_ = loss(net(X[lo:hi]), y[lo:hi])
            l_.backward()
            # the global batch over the ranks: the same number on every rank, however uneven the shards
            trainer.step(X.shape[0] / size)
            loss_sum += l_.sum()
            steps, rows = steps + 1, rows + X.shape[0]
        npx.waitall()
        seconds = time.perf_counter() - start
        correct_total = np.zeros(2, dtype="float64")
        for i, (X, y) in enumerate(test_iter):
            if args.test_batches and i == args.test_batches:
                break
            lo, hi = shard(X.shape[0], rank, size)
            hits = (net(X[lo:hi]).argmax(axis=1).astype(np.int32) == y[lo:hi]).sum().astype("float64")
            correct_total += np.concatenate([hits.reshape(1), np.array([hi - lo], dtype="float64")])
        totals = np.concatenate([loss_sum.astype("float64"), correct_total])
        slowest = np.array([seconds], dtype="float64")
        if group:
            group.allreduce(totals, "sum")
            group.allreduce(slowest, "max")
        total_loss, correct, tested = totals.asnumpy().tolist()
        seconds = slowest.item()
        result = {"epoch": epoch + 1, "batches": steps, "seconds": seconds, "samples_per_second": rows / seconds,
                  "mean_loss": total_loss / rows, "test_accuracy": correct / tested, "ranks": size,
                  "batch_size": args.batch_size, "lr": args.lr, "seed": args.seed}
        if rank == 0:
            if args.json:
                print(json.dumps(result), flush=True)
            else:
                print(f"epoch {epoch + 1}: {seconds:.1f} s ({result['samples_per_second']:.0f} samples/s), "
                      f"train loss {result['mean_loss']:.4f}, test accuracy {result['test_accuracy']:.4f} "
                      f"({size} rank(s), global batch {args.batch_size})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
