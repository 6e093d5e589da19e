#!/usr/bin/env python3
"""The braid-lenet recipe in PyTorch (the comparison anchor of samples/lenet/compare.py).

conv 3x3 (20) -> relu -> avg-pool 2 -> conv 5x5 (50) -> relu -> avg-pool 2 -> flatten -> dense 800->128
-> relu -> dense 128->10; weights N(0, 0.01^2), zero biases; softmax cross-entropy (mean over the batch);
plain SGD, lr 0.2, batch 256, shuffled every epoch. Prints one JSON object like braid-lenet --json.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--batches", type=int, default=0, help="at most N batches per epoch (0 = all)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--lr", type=float, default=0.2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data-dir", default=os.environ.get("BRAID_DATA_DIR") or "/usr/share/datasets/fashion-mnist")
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
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(net.parameters(), lr=args.lr)
    n = train_x.shape[0]
    per_epoch = (n + args.batch_size - 1) // args.batch_size
    if args.batches:
        per_epoch = min(per_epoch, args.batches)
    epochs = []
    for epoch in range(1, args.epochs + 1):
        t0 = time.perf_counter()
        order = torch.randperm(n)
        total = 0.0
        net.train()
        for b in range(per_epoch):
            idx = order[b * args.batch_size:(b + 1) * args.batch_size]
            loss = loss_fn(net(train_x[idx]), train_y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
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
    print(json.dumps({"device": f"torch {torch.__version__} cpu x{args.threads}", "batch_size": args.batch_size,
                      "lr": args.lr, "epochs": epochs}))


if __name__ == "__main__":
    main()
