#!/usr/bin/env python3
"""The braid-lenet recipe in PyTorch (the comparison anchor of samples/lenet/compare.py).

conv 3x3 (20) -> relu -> avg-pool 2 -> conv 5x5 (50) -> relu -> avg-pool 2 -> flatten -> dense 800->128
-> relu -> dense 128->10; weights N(0, 0.01^2), zero biases; softmax cross-entropy (mean over the batch);
plain SGD, lr 0.2, batch 256, shuffled every epoch. Prints one JSON object like braid-lenet --json.

For a run from braid's starting point (compare.py --same-start): --init-from takes the parameters
braid-lenet --save-init wrote, and --braid-order SEED draws each epoch's order with braid's batch
iterator permutation (runtime/data/shuffle.h) instead of torch.randperm.
"""
import argparse
import gzip
import json
import os
import struct
import sys
import time

import numpy as np
import torch
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(data_dir, prefix):
    def find(name):
        for candidate in (name + ".gz", name):
            p = os.path.join(data_dir, candidate)
            if os.path.exists(p):
                return p
        sys.exit(f"lenet_torch.py: {name} not found in {data_dir} (Debian package dataset-fashion-mnist)")
    images = read_idx(find(f"{prefix}-images-idx3-ubyte")).astype(np.float32) / 255.0
    labels = read_idx(find(f"{prefix}-labels-idx1-ubyte")).astype(np.int64)
    return torch.from_numpy(images).reshape(-1, 1, 28, 28), torch.from_numpy(labels)


# braid's epoch permutation (runtime/data/shuffle.h): Fisher-Yates from n-1 down to 1, swapping i with
# j = floor(u * (i + 1) / 2^64), u = mix64(key + i * golden), key = mix64(seed ^ mix64(epoch + 1)).
MASK = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & MASK
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & MASK
    return z ^ (z >> 31)


def braid_permutation(n, seed, epoch):
    order = list(range(n))
    key = mix64(seed ^ mix64(epoch + 1))
    for i in range(n - 1, 0, -1):
        u = mix64((key + i * 0x9e3779b97f4a7c15) & MASK)
        j = (u * (i + 1)) >> 64
        order[i], order[j] = order[j], order[i]
    return torch.tensor(order, dtype=torch.int64)


# braid-lenet's parameters in its order and shapes (samples/lenet/lenet.h): dense weights are
# [in, out] there (x @ w) and [out, in] in torch.nn.Linear.
BRAID_SHAPES = [(20, 1, 3, 3), (20,), (50, 20, 5, 5), (50,), (800, 128), (128,), (128, 10), (10,)]


def load_braid_init(net, path):
    flat = np.fromfile(path, dtype="<f4")
    want = sum(int(np.prod(s)) for s in BRAID_SHAPES)
    if flat.size != want:
        sys.exit(f"lenet_torch.py: {path} holds {flat.size} floats, braid-lenet's parameters are {want}")
    layers = [m for m in net if isinstance(m, (nn.Conv2d, nn.Linear))]
    targets = [t for m in layers for t in (m.weight, m.bias)]
    offset = 0
    with torch.no_grad():
        for target, shape in zip(targets, BRAID_SHAPES):
            n = int(np.prod(shape))
            value = torch.from_numpy(flat[offset:offset + n].copy()).reshape(shape)
            target.copy_(value.t() if len(shape) == 2 else value)
            offset += n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batches", type=int, default=0, help="at most N batches per epoch (0 = all)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default=os.environ.get("BRAID_DATA_DIR") or "/usr/share/datasets/fashion-mnist")
    ap.add_argument("--init-from", help="start from the parameters braid-lenet --save-init wrote")
    ap.add_argument("--braid-order", type=int, metavar="SEED", help="shuffle with braid's permutation for SEED")
    ap.add_argument("--step-losses", type=int, default=0, help="also report the loss of the first N steps")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    train_x, train_y = load(args.data_dir, "train")
    test_x, test_y = load(args.data_dir, "t10k")

    net = nn.Sequential(nn.Conv2d(1, 20, 3), nn.ReLU(), nn.AvgPool2d(2), nn.Conv2d(20, 50, 5), nn.ReLU(),
                        nn.AvgPool2d(2), nn.Flatten(), nn.Linear(800, 128), nn.ReLU(), nn.Linear(128, 10))
    for m in net:
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            nn.init.normal_(m.weight, 0.0, 0.01)
            nn.init.zeros_(m.bias)
    if args.init_from:
        load_braid_init(net, args.init_from)
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    n = train_x.shape[0]
    per_epoch = (n + args.batch_size - 1) // args.batch_size
    if args.batches:
        per_epoch = min(per_epoch, args.batches)
    epochs = []
    step_losses = []
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        order = braid_permutation(n, args.braid_order, epoch - 1) if args.braid_order is not None else torch.randperm(n)
        total = 0.0
        net.train()
        for b in range(per_epoch):
            idx = order[b * args.batch_size:(b + 1) * args.batch_size]
            loss = loss_fn(net(train_x[idx]), train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            if len(step_losses) < args.step_losses:
                step_losses.append(loss.item())
        seconds = time.perf_counter() - t0
        net.eval()
        with torch.no_grad():
            hits = sum((net(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum().item()
                       for i in range(0, test_x.shape[0], 1000))
        acc = hits / test_x.shape[0]
        epochs.append({"epoch": epoch, "batches": per_epoch, "seconds": seconds, "train_loss": total / per_epoch,
                       "test_accuracy": acc})
        print(f"epoch {epoch}: {seconds:.2f} s, train loss {total / per_epoch:.4f}, test accuracy {acc:.4f}",
              file=sys.stderr)
    result = {"device": f"torch {torch.__version__} cpu x{args.threads}", "batch_size": args.batch_size,
              "lr": args.lr, "epochs": epochs}
    if args.step_losses:
        result["step_losses"] = step_losses
    print(json.dumps(result))


if __name__ == "__main__":
    main()
