"""DataLoader throughput: one epoch of ``DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)`` over
60000x784 float32 / int64 (MNIST's shape), ember against torch with the same seed.

    PYTHONPATH=$PWD python bench/dataloader.py [--reps 5] [--which ember|torch|both] [--subset]

Prints per-epoch wall and CPU (thread) time, medians over ``--reps`` epochs (each a fresh iterator), and checks
that the two libraries gave the same batches and left their generators in the same state.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def epoch(lib, X, Y, seed, subset):
    data = __import__(lib.__name__ + ".utils.data", fromlist=["x"])
    ds = data.TensorDataset(X, Y)
    if subset:
        ds = data.Subset(ds, list(range(0, len(ds), 2)))
    lib.manual_seed(seed)
    loader = data.DataLoader(ds, batch_size=64, shuffle=True)
    w0, c0 = time.perf_counter(), time.thread_time()
    n = 0
    chk = 0.0
    for xb, yb in loader:
        n += 1
        chk += float(yb[0])
    return time.perf_counter() - w0, time.thread_time() - c0, n, chk, lib.initial_seed(), lib.rand(1).item()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--which", default="both")
    ap.add_argument("--subset", action="store_true")
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    Xn = rng.standard_normal((60000, 784), dtype=np.float32)
    Yn = rng.integers(0, 10, 60000).astype(np.int64)
    libs = []
    if a.which in ("ember", "both"):
        import ember
        libs.append(ember)
    if a.which in ("torch", "both"):
        import torch
        torch.set_num_threads(1)
        libs.append(torch)
    res = {lib.__name__: [] for lib in libs}
    outs = {}
    for r in range(a.reps):
        for lib in libs:   # alternate
            X, Y = lib.from_numpy(Xn.copy()), lib.from_numpy(Yn.copy())
            w, c, n, chk, s, after = epoch(lib, X, Y, 1234 + r, a.subset)
            res[lib.__name__].append((w, c))
            outs.setdefault(r, []).append((n, chk, after))
    for name, v in res.items():
        wall, cpu = [x[0] * 1e3 for x in v], [x[1] * 1e3 for x in v]
        print(f"{name:6s} epoch wall median {statistics.median(wall):8.1f} ms  "
              f"cpu median {statistics.median(cpu):8.1f} ms  best wall {min(wall):8.1f} ms")
    if len(libs) == 2:
        same = all(o[0] == o[1] for o in outs.values())
        print("same batches/labels and generator state after:", same)


if __name__ == "__main__":
    main()
