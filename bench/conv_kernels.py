"""The demo CNN's convolution and max-pool kernels (ember/devices/cpu/nn_conv.py, nn_pool.py) called directly at
its shapes (batch 64, float32: conv 1->16 on 8x8 and 16->32 on 4x4, 3x3, padding 1; max_pool 2 after each), in
CPU time of the calling thread, one BLAS thread, for one tree or several alternating call by call (old and new
side by side on a shared machine); with several trees it first checks that every kernel gives the same bytes.

    python bench/conv_kernels.py                       # this tree
    python bench/conv_kernels.py /tmp/base-tree .      # two trees alternating (median and best per kernel)
    python bench/conv_kernels.py --only conv2 --calls 1000 /tmp/base-tree .

This is a benchmark, not a test: it never asserts beyond the identity check.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402


def load(tree):
    """The tree's nn_conv and nn_pool modules (any ember imported before is dropped first)."""
    for k in [k for k in sys.modules if k == "ember" or k.startswith("ember.")]:
        del sys.modules[k]
    sys.path.insert(0, os.path.abspath(tree))
    try:
        return (importlib.import_module("ember.devices.cpu.nn_conv"),
                importlib.import_module("ember.devices.cpu.nn_pool"))
    finally:
        sys.path.pop(0)


def kernels(conv, pool, N=64, seed=0):
    rng = np.random.default_rng(seed)
    f32 = np.float32
    x1 = rng.random((N, 1, 8, 8), dtype=f32)
    w1, b1 = rng.standard_normal((16, 1, 3, 3)).astype(f32), rng.standard_normal(16).astype(f32)
    x2 = np.maximum(rng.standard_normal((N, 16, 4, 4)).astype(f32), 0)
    w2, b2 = rng.standard_normal((32, 16, 3, 3)).astype(f32), rng.standard_normal(32).astype(f32)
    g1, g2 = rng.standard_normal((N, 16, 8, 8)).astype(f32), rng.standard_normal((N, 32, 4, 4)).astype(f32)
    p1, p2 = np.maximum(g1, 0), np.maximum(g2, 0)
    gp1, gp2 = rng.standard_normal((N, 16, 4, 4)).astype(f32), rng.standard_normal((N, 32, 2, 2)).astype(f32)
    one, pad, nopad = (1, 1), ((1, 1), (1, 1)), ((0, 0), (0, 0))
    i1 = pool.max_pool_indices(p1, (2, 2), (2, 2), nopad, one, (4, 4))
    i2 = pool.max_pool_indices(p2, (2, 2), (2, 2), nopad, one, (2, 2))
    return {
        "conv1 forward": lambda: conv.conv_nd(x1, w1, b1, one, pad, one, 1),
        "conv1 weight grad": lambda: conv.conv_weight_nd(x1, g1, w1.shape, one, pad, one, 1),
        "conv2 forward": lambda: conv.conv_nd(x2, w2, b2, one, pad, one, 1),
        "conv2 input grad": lambda: conv.conv_transpose_nd(g2, w2, None, one, pad, one, 1, (4, 4)),
        "conv2 weight grad": lambda: conv.conv_weight_nd(x2, g2, w2.shape, one, pad, one, 1),
        "pool1 indices": lambda: pool.max_pool_indices(p1, (2, 2), (2, 2), nopad, one, (4, 4)),
        "pool1 gather": lambda: pool.pool_gather(p1, i1, 2),
        "pool1 scatter": lambda: pool.pool_scatter(gp1, i1, p1.shape, 2, True),
        "pool2 indices": lambda: pool.max_pool_indices(p2, (2, 2), (2, 2), nopad, one, (2, 2)),
        "pool2 gather": lambda: pool.pool_gather(p2, i2, 2),
        "pool2 scatter": lambda: pool.pool_scatter(gp2, i2, p2.shape, 2, True),
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trees", nargs="*", default=["."])
    ap.add_argument("--calls", type=int, default=600)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    sets = [kernels(*load(t)) for t in a.trees]
    names = [k for k in sets[0] if a.only in k]
    for k in names:
        outs = [np.asarray(s[k]()) for s in sets]
        if any(o.dtype != outs[0].dtype or o.shape != outs[0].shape or o.tobytes() != outs[0].tobytes()
               for o in outs[1:]):
            print(f"{k}: the trees' results differ")
    print(f"{'kernel':18s} " + "  ".join(f"{os.path.basename(os.path.abspath(t)):>22s}" for t in a.trees)
          + "   (us: median, best)")
    for k in names:
        fns = [s[k] for s in sets]
        ts = [[] for _ in fns]
        for f in fns:
            for _ in range(5):
                f()
        for _ in range(a.calls):
            for i, f in enumerate(fns):   # alternating call by call: every tree sees the same load
                t0 = time.thread_time()
                f()
                ts[i].append(time.thread_time() - t0)
        print(f"{k:18s} " + "  ".join(f"{statistics.median(t) * 1e6:12.1f} ({min(t) * 1e6:6.1f})" for t in ts))


if __name__ == "__main__":
    main()
