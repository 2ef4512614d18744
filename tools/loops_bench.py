"""Measure the real loops of issue 23 in CPU time of the calling thread (``time.thread_time``).

* ``demo``: ember.demo.train.fit's epochs (the main job's MLP and CNN on the digits), per-epoch CPU time,
  median over epochs and repeats; ``--torch`` runs PyTorch's side the same way.
* ``mlp``: one MLP step (784-512-512-10, batch 256, float32: nn.Linear + F.relu + F.cross_entropy +
  optim.SGD(lr=0.01), zero_grad/forward/backward/step) against the same maths written by hand in NumPy: ``numpy``
  with NumPy's update ``p -= lr * g`` (two roundings), ``numpy_exact`` with the update rounded once as PyTorch's
  fused multiply-add (and ember's) rounds it.

Run from a tree's root with that tree on PYTHONPATH, BLAS at one thread:
  OPENBLAS_NUM_THREADS=1 PYTHONPATH=$PWD python tools/loops_bench.py demo|mlp [--torch] [--reps N]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import time
import types

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

LR = 0.01


def exact_sgd_update(q, gq, lr):
    """``q += -lr * gq`` rounded once (PyTorch's fused multiply-add), by hand: the product is exact in float64, the
    sum rounded there; where that sum is a float32 rounding midpoint (or float32-subnormal) it is redone rounded
    to odd (TwoSum), so that the final rounding to float32 is the single rounding."""
    a = float(np.float32(-lr))
    t = gq.astype(np.float64)
    t *= a
    t += q
    bits = t.view(np.uint64)
    risky = ((bits & np.uint64(0x1FFFFFFF)) == np.uint64(0x10000000)) | ((np.abs(t) < 2.0 ** -126) & (t != 0))
    idx = np.flatnonzero(risky)
    if idx.size:
        z, pr, s = q.reshape(-1)[idx].astype(np.float64), a * gq.reshape(-1)[idx].astype(np.float64), t.reshape(-1)[idx]
        bb = s - z
        err = (z - (s - bb)) + (pr - bb)
        sb = s.view(np.uint64)
        move = (err != 0) & ((sb & np.uint64(1)) == 0)
        up = (err > 0) == (s > 0)
        sb[move & up] += np.uint64(1)
        sb[move & ~up] -= np.uint64(1)
        t.reshape(-1)[idx] = s
    q[...] = t


def numpy_step(params, x, y, exact=False):
    """The MLP step by hand: the same layers, loss (mean softmax cross-entropy) and SGD update (``exact``: the update
    rounded once, as PyTorch's and ember's)."""
    W1, b1, W2, b2, W3, b3 = params
    z1 = x @ W1.T
    z1 += b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ W2.T
    z2 += b2
    h2 = np.maximum(z2, 0)
    z3 = h2 @ W3.T
    z3 += b3
    e = np.exp(z3 - z3.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    n = x.shape[0]
    g = p
    g[np.arange(n), y] -= 1
    g /= n
    grads = [None] * 6
    grads[4], grads[5] = g.T @ h2, g.sum(0)
    g = g @ W3
    g *= z2 > 0
    grads[2], grads[3] = g.T @ h1, g.sum(0)
    g = g @ W2
    g *= z1 > 0
    grads[0], grads[1] = g.T @ x, g.sum(0)
    for q, gq in zip(params, grads):
        if exact:
            exact_sgd_update(q, gq, LR)
        else:
            q -= np.float32(LR) * gq


def _median_time(fn, n, warm=3):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(n):
        t0 = time.thread_time()
        fn()
        ts.append(time.thread_time() - t0)
    return statistics.median(ts) * 1e3


def mlp(args):
    rng = np.random.default_rng(0)
    sizes = [784, 512, 512, 10]
    params = []
    for i, o in zip(sizes[:-1], sizes[1:]):
        params += [(rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32),
                   (rng.standard_normal(o) * 0.01).astype(np.float32)]
    x = rng.standard_normal((256, 784)).astype(np.float32)
    y = rng.integers(0, 10, 256)
    libs = ["ember"] + (["torch"] if args.torch else [])
    res = {}
    for name in libs:
        lib = __import__(name)
        if name == "torch":
            lib.set_num_threads(1)
        F = lib.nn.functional
        layers = []
        for i in range(0, 6, 2):
            lin = lib.nn.Linear(params[i].shape[1], params[i].shape[0])
            with lib.no_grad():
                lin.weight.copy_(lib.tensor(params[i]))
                lin.bias.copy_(lib.tensor(params[i + 1]))
            layers.append(lin)
        opt = lib.optim.SGD([p for l in layers for p in l.parameters()], lr=LR)
        xt, yt = lib.tensor(x), lib.tensor(y)

        def step():
            opt.zero_grad()
            h = xt
            for i, l in enumerate(layers):
                h = l(h)
                if i < 2:
                    h = F.relu(h)
            F.cross_entropy(h, yt).backward()
            opt.step()
        res[name] = step
    ps = [p.copy() for p in params]
    res["numpy"] = lambda: numpy_step(ps, x, y)
    ps_exact = [p.copy() for p in params]
    res["numpy_exact"] = lambda: numpy_step(ps_exact, x, y, exact=True)
    out = {k: [] for k in res}
    for _ in range(args.rounds):
        for k, fn in res.items():
            out[k].append(_median_time(fn, args.reps))
    for k, v in out.items():
        print(f"mlp step {k:6s} " + " ".join(f"{t:6.2f}" for t in v) + f"  median {statistics.median(v):.2f} ms")
    med = {k: statistics.median(v) for k, v in out.items()}
    print(f"ember/numpy {med['ember'] / med['numpy']:.3f}, ember/numpy_exact {med['ember'] / med['numpy_exact']:.3f}")


def demo(args):
    libs = ["torch"] if args.torch else ["ember"]
    for name in libs:
        lib = __import__(name)
        if name == "torch":
            lib.set_num_threads(1)
        from ember.demo import train
        train.time = types.SimpleNamespace(perf_counter=time.thread_time)
        for kind in args.kinds.split(","):
            secs, losses = [], None
            for _ in range(args.reps):
                model, hist, _ = train.fit(lib, kind, epochs=args.epochs, seed=0, progress=False)
                secs += hist.seconds
                losses = hist.loss
            digest = hashlib.sha1(b"".join(v.detach().numpy().tobytes()
                                           for v in model.state_dict().values())).hexdigest()[:12]
            print(f"demo {name} {kind}: median {statistics.median(secs) * 1e3:.1f} ms/epoch "
                  f"(min {min(secs) * 1e3:.1f}); losses {' '.join(f'{v:.6f}' for v in losses)}; weights {digest}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("demo", "mlp"))
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--kinds", default="mlp,cnn")
    a = ap.parse_args()
    {"demo": demo, "mlp": mlp}[a.what](a)
