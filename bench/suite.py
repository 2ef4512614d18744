"""The benchmark suite of issue 10: ember against torch (CPU), hand-written NumPy, HIPS autograd, mygrad.

    python bench/suite.py            # full run (about 10 minutes on 2 cores), writes bench/RESULTS.md
    python bench/suite.py --quick    # about 2 minutes: few repeats, short chains
    python bench/suite.py --only mlp,hessian   # a subset (workload keys below), still writes RESULTS.md

Every timed workload runs each library's version of the same computation; the libraries' repeats are
interleaved (round-robin, in a rotating order) so that all of them see the same machine load, and each
cell is the median of the repeats (after one warm-up call each). Python's cyclic GC is off while timing.
Before timing, every library's result (gradients) is compared with the reference (hand-written NumPy
where there is one, else torch) and the max abs error is printed and written to RESULTS.md: a benchmark
of a wrong computation is worthless. A library that cannot express a workload is left out ("-").
torch runs with torch.set_num_threads(n), n = NumPy's BLAS threads (threadpoolctl).
This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for p in (ROOT, os.path.join(ROOT, "bench")):
    if p not in sys.path:
        sys.path.insert(0, p)

import numpy as np  # noqa: E402

import ember  # noqa: E402
from overhead import numpy_blas_threads  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
try:
    import autograd as hips
    import autograd.numpy as anp
    from autograd.scipy.special import logsumexp as alogsumexp
except ImportError:
    hips = None
try:
    import mygrad as mg
except ImportError:
    mg = None

F32 = np.float32


def to_np(t):
    if t is None:
        return None
    if hasattr(t, "detach"):
        t = t.detach()
    if hasattr(t, "numpy"):
        return np.asarray(t.numpy())
    if hasattr(t, "data") and mg is not None and isinstance(t, mg.Tensor):
        return np.asarray(t.data)
    return np.asarray(t)


def maxerr(a, b) -> float:
    if isinstance(a, (list, tuple)):
        return max(maxerr(x, y) for x, y in zip(a, b))
    return float(np.max(np.abs(to_np(a).astype(np.float64) - to_np(b).astype(np.float64))))


def relerr(a, b) -> float:
    """max |a-b| / (max |b| + 1e-12): a scale-free error for large gradients."""
    if isinstance(a, (list, tuple)):
        return max(relerr(x, y) for x, y in zip(a, b))
    b64 = to_np(b).astype(np.float64)
    return float(np.max(np.abs(to_np(a).astype(np.float64) - b64)) / (np.max(np.abs(b64)) + 1e-12))


# Seconds of sleep before each timed call (--pause). OpenBLAS's and torch's OpenMP worker threads busy-wait
# for a while after a parallel region, so on a 2-core machine the next library's threads may compete with
# them (one run measured torch's transformer layer at 114 ms against 25 in the next). Pauses of 0.01-0.2 s
# did not make the figures clearly steadier on the shared machine, so the default is none.
PAUSE = 0.0


def timed_interleaved(fns: dict, repeats: int) -> dict:
    """Median seconds per library; the libraries' repeats alternate in a rotating order."""
    names = list(fns)
    for n in names:  # warm-up
        fns[n]()
    times = {n: [] for n in names}
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                if PAUSE:   # let the previous library's idle BLAS/OpenMP threads stop spinning (see PAUSE)
                    time.sleep(PAUSE)
                t = time.perf_counter()
                fns[n]()
                times[n].append(time.perf_counter() - t)
    finally:
        if was:
            gc.enable()
    return {n: statistics.median(v) for n, v in times.items()}


# ===================================================================================== 1. per-op chain
STEPS = 300


def chain_lib(lib, x0):
    x = lib.tensor(x0, requires_grad=True)
    y = x
    for _ in range(STEPS):
        y = lib.tanh(y * 1.01 + 0.1)
    y.sum().backward()
    return x.grad


def chain_nograd(lib, x0):
    x = lib.tensor(x0, requires_grad=True)
    with lib.no_grad():
        y = x
        for _ in range(STEPS):
            y = lib.tanh(y * 1.01 + 0.1)
    return y


def chain_numpy(x0):
    y, ys = x0, []
    for _ in range(STEPS):
        y = np.tanh(y * F32(1.01) + F32(0.1))
        ys.append(y)
    g = np.ones_like(y)
    for y in reversed(ys):
        g = g * (1 - y * y)
        g = g * F32(1.01)
    return g


def chain_numpy_fwd(x0):
    y = x0
    for _ in range(STEPS):
        y = np.tanh(y * F32(1.01) + F32(0.1))
    return y


def chain_hips(x0):
    def f(x):
        for _ in range(STEPS):
            x = anp.tanh(x * 1.01 + 0.1)
        return anp.sum(x)
    return hips.grad(f)(x0)


def chain_mygrad(x0):
    x = mg.tensor(x0)
    y = x
    for _ in range(STEPS):
        y = mg.tanh(y * 1.01 + 0.1)
    y.sum().backward()
    return x.grad


def chain_mygrad_fwd(x0):
    with mg.no_autodiff:
        y = mg.tensor(x0)
        for _ in range(STEPS):
            y = mg.tanh(y * 1.01 + 0.1)
    return y


def w_chain(quick):
    rng = np.random.default_rng(0)
    rows = []
    for shape in [(1,), (64,), (256, 256)]:
        x0 = rng.standard_normal(shape).astype(F32)
        reps = (5 if quick else 25) if shape != (256, 256) else (3 if quick else 9)
        for mode in ("fwd+bwd", "no_grad fwd"):
            if mode == "fwd+bwd":
                fns = {"ember": lambda: chain_lib(ember, x0), "numpy": lambda: chain_numpy(x0)}
                if torch:
                    fns["torch"] = lambda: chain_lib(torch, x0)
                if hips:
                    fns["autograd"] = lambda: chain_hips(x0)
                if mg:
                    fns["mygrad"] = lambda: chain_mygrad(x0)
            else:
                fns = {"ember": lambda: chain_nograd(ember, x0), "numpy": lambda: chain_numpy_fwd(x0)}
                if torch:
                    fns["torch"] = lambda: chain_nograd(torch, x0)
                if mg:
                    fns["mygrad"] = lambda: chain_mygrad_fwd(x0)
            ref = fns["numpy"]()
            errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "numpy"}
            rows.append((f"1. chain 300x tanh(x*1.01+0.1) {shape} {mode}", timed_interleaved(fns, reps),
                         reps, errs, "numpy"))
    return rows


# ============================================================================ 2. scalar (0-d) MLP graph
SC_SIZES = (16, 48, 48, 1)   # 48*17*2 + 48*49*2 + 49*2 + tanh ~ 6.4k ops; with the loss ~ 10k graph nodes


def scalar_params(rng):
    ws, bs = [], []
    for a, b in zip(SC_SIZES[:-1], SC_SIZES[1:]):
        ws.append(rng.standard_normal((b, a)) / np.sqrt(a))
        bs.append(rng.standard_normal(b) * 0.1)
    return ws, bs


def scalar_loss(W, B, h, tanh):
    """The scalar MLP's loss from per-weight scalars (any library's): tanh layers, a linear last one, squared."""
    for li, (w, b) in enumerate(zip(W, B)):
        out = []
        for row, bj in zip(w, b):
            s = bj
            for wi, xi in zip(row, h):
                s = s + wi * xi
            out.append(tanh(s) if li < len(W) - 1 else s)
        h = out
    return h[0] * h[0]


def scalar_lib(lib, ws, bs, xs):
    """0-d tensors throughout: each weight is its own leaf (micrograd style). Returns the flat gradient."""
    W = [[[lib.tensor(float(v), requires_grad=True) for v in row] for row in w] for w in ws]
    B = [[lib.tensor(float(v), requires_grad=True) for v in b] for b in bs]
    h = [lib.tensor(float(v)) for v in xs]
    scalar_loss(W, B, h, lib.tanh).backward()
    return np.array([to_np(p.grad) for w, b in zip(W, B) for row in w for p in row]
                    + [to_np(p.grad) for b in B for p in b], dtype=np.float64).ravel()


def scalar_mygrad(ws, bs, xs):
    W = [[[mg.tensor(float(v)) for v in row] for row in w] for w in ws]
    B = [[mg.tensor(float(v)) for v in b] for b in bs]
    h = [mg.tensor(float(v), constant=True) for v in xs]
    scalar_loss(W, B, h, mg.tanh).backward()
    return np.array([float(p.grad) for w, b in zip(W, B) for row in w for p in row]
                    + [float(p.grad) for b in B for p in b])


def scalar_hips(ws, bs, xs):
    def f(params):
        return scalar_loss(params[0], params[1], list(xs), anp.tanh)
    Wl = [[[float(v) for v in row] for row in w] for w in ws]
    Bl = [[float(v) for v in b] for b in bs]
    gW, gB = hips.grad(f)((Wl, Bl))
    return np.array([g for w in gW for row in w for g in row] + [g for b in gB for g in b], dtype=np.float64)


def scalar_python(ws, bs, xs):
    """The same scalar graph by hand in plain Python floats (math.tanh), forward and backward."""
    import math
    Wl = [[[float(v) for v in row] for row in w] for w in ws]
    Bl = [[float(v) for v in b] for b in bs]
    h, acts = [float(v) for v in xs], []
    for li, (w, b) in enumerate(zip(Wl, Bl)):
        acts.append(h)
        out = []
        for row, bj in zip(w, b):
            s = bj
            for wi, xi in zip(row, h):
                s += wi * xi
            out.append(math.tanh(s) if li < len(Wl) - 1 else s)
        h = out
    g = [2.0 * h[0]]
    gW, gB = [], []
    for li in range(len(Wl) - 1, -1, -1):
        x, w = acts[li], Wl[li]
        if li < len(Wl) - 1:   # through tanh: its output is the next layer's input
            y = acts[li + 1]
            g = [gj * (1.0 - yj * yj) for gj, yj in zip(g, y)]
        gW.insert(0, [[gj * xi for xi in x] for gj in g])
        gB.insert(0, list(g))
        g = [sum(g[j] * w[j][i] for j in range(len(w))) for i in range(len(x))]
    return np.array([v for w in gW for row in w for v in row] + [v for b in gB for v in b])


def w_scalar(quick):
    rng = np.random.default_rng(1)
    ws, bs = scalar_params(rng)
    xs = rng.standard_normal(SC_SIZES[0])
    fns = {"ember": lambda: scalar_lib(ember, ws, bs, xs), "numpy": lambda: scalar_python(ws, bs, xs)}
    if torch:
        fns["torch"] = lambda: scalar_lib(torch, ws, bs, xs)
    if hips:
        fns["autograd"] = lambda: scalar_hips(ws, bs, xs)
    if mg:
        fns["mygrad"] = lambda: scalar_mygrad(ws, bs, xs)
    ref = fns["numpy"]()
    errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "numpy"}
    reps = 3 if quick else 9
    return [("2. scalar 0-d MLP 16-48-48-1 (~6.4k ops + 3.2k leaves) fwd+bwd [numpy col = plain Python floats]",
             timed_interleaved(fns, reps), reps, errs, "numpy")]


# ======================================================================================= 3. MLP step
MLP = (784, 512, 512, 10)
BATCH = 256
LR = 0.01


def mlp_data(rng):
    params = []
    for a, b in zip(MLP[:-1], MLP[1:]):
        params += [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(F32), (rng.standard_normal(b) * 0.01).astype(F32)]
    x = rng.standard_normal((BATCH, MLP[0])).astype(F32)
    y = rng.integers(0, MLP[-1], BATCH)
    return params, x, y


class LibMLP:
    """ember or torch: nn.Linear layers, F.relu, F.cross_entropy, optim.SGD."""

    def __init__(self, lib, params, x, y):
        self.lib = lib
        layers = []
        for i in range(0, len(params), 2):
            lin = lib.nn.Linear(params[i].shape[1], params[i].shape[0])
            with lib.no_grad():
                lin.weight.copy_(lib.tensor(params[i]))
                lin.bias.copy_(lib.tensor(params[i + 1]))
            layers.append(lin)
        self.layers = layers
        self.opt = lib.optim.SGD([p for l in layers for p in l.parameters()], lr=LR)
        self.x, self.y = lib.tensor(x), lib.tensor(y)

    def loss(self):
        F = self.lib.nn.functional
        h = self.x
        for i, l in enumerate(self.layers):
            h = l(h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return F.cross_entropy(h, self.y)

    def grads(self):
        self.opt.zero_grad()
        self.loss().backward()
        return [to_np(p.grad) for l in self.layers for p in (l.weight, l.bias)]

    def step(self):
        self.opt.zero_grad()
        self.loss().backward()
        self.opt.step()


def mlp_numpy_grads(params, x, y):
    """Forward and backward by hand: linear-relu-linear-relu-linear, softmax cross-entropy (mean)."""
    W1, b1, W2, b2, W3, b3 = params
    z1 = x @ W1.T + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ W2.T + b2
    h2 = np.maximum(z2, 0)
    z3 = h2 @ W3.T + b3
    e = np.exp(z3 - z3.max(1, keepdims=True))
    p = e / e.sum(1, keepdims=True)
    n = x.shape[0]
    g = p
    g[np.arange(n), y] -= 1
    g /= n
    gW3, gb3 = g.T @ h2, g.sum(0)
    g = g @ W3
    g *= z2 > 0
    gW2, gb2 = g.T @ h1, g.sum(0)
    g = g @ W2
    g *= z1 > 0
    gW1, gb1 = g.T @ x, g.sum(0)
    return [gW1, gb1, gW2, gb2, gW3, gb3]


class NumpyMLP:
    def __init__(self, params, x, y):
        self.params = [p.copy() for p in params]
        self.x, self.y = x, y

    def grads(self):
        return mlp_numpy_grads(self.params, self.x, self.y)

    def step(self):
        for p, g in zip(self.params, mlp_numpy_grads(self.params, self.x, self.y)):
            p -= F32(LR) * g


def hips_mlp_loss(params, x, y):
    W1, b1, W2, b2, W3, b3 = params
    h = anp.maximum(anp.dot(x, W1.T) + b1, 0)
    h = anp.maximum(anp.dot(h, W2.T) + b2, 0)
    z = anp.dot(h, W3.T) + b3
    logp = z - alogsumexp(z, axis=1, keepdims=True)
    return -anp.mean(logp[np.arange(x.shape[0]), y])


class HipsMLP:
    def __init__(self, params, x, y):
        self.params = [p.copy() for p in params]
        self.x, self.y = x, y
        self.g = hips.grad(hips_mlp_loss)

    def grads(self):
        return self.g(self.params, self.x, self.y)

    def step(self):
        for p, g in zip(self.params, self.g(self.params, self.x, self.y)):
            p -= F32(LR) * g


class MygradMLP:
    def __init__(self, params, x, y):
        from mygrad.nnet.losses import softmax_crossentropy
        self.ce = softmax_crossentropy
        self.params = [mg.tensor(p.copy()) for p in params]
        self.x, self.y = mg.tensor(x, constant=True), y

    def grads(self):
        W1, b1, W2, b2, W3, b3 = self.params
        h = mg.maximum(mg.matmul(self.x, W1.T) + b1, 0)
        h = mg.maximum(mg.matmul(h, W2.T) + b2, 0)
        z = mg.matmul(h, W3.T) + b3
        self.ce(z, self.y).backward()
        return [p.grad for p in self.params]

    def step(self):
        gs = self.grads()
        for p, g in zip(self.params, gs):
            p.data -= F32(LR) * g


def mlp_impls(params, x, y):
    impls = {"ember": LibMLP(ember, params, x, y), "numpy": NumpyMLP(params, x, y)}
    if torch:
        impls["torch"] = LibMLP(torch, params, x, y)
    if hips:
        impls["autograd"] = HipsMLP(params, x, y)
    if mg:
        impls["mygrad"] = MygradMLP(params, x, y)
    return impls


def w_mlp(quick):
    params, x, y = mlp_data(np.random.default_rng(2))
    ref = NumpyMLP(params, x, y).grads()
    errs = {n: relerr(i.grads(), ref) for n, i in mlp_impls(params, x, y).items() if n != "numpy"}
    impls = mlp_impls(params, x, y)
    reps = 5 if quick else 21
    return [("3. MLP 784-512-512-10 step, batch 256, SGD + cross-entropy",
             timed_interleaved({n: i.step for n, i in impls.items()}, reps), reps, errs, "numpy")]


# ================================================================================ 4. CNN and conv2d
def np_conv(x, w, b=None, pad=0):
    """conv2d (stride 1) as im2col (kh*kw shifted slices stacked) + one batched BLAS product."""
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, hh, ww = x.shape
    o, _, kh, kw = w.shape
    ho, wo = hh - kh + 1, ww - kw + 1
    cols = np.stack([x[:, :, i:i + ho, j:j + wo] for i in range(kh) for j in range(kw)], axis=2)
    cols = cols.reshape(n, c * kh * kw, ho * wo)                      # N, C*kh*kw, Ho*Wo
    out = np.matmul(w.reshape(o, -1), cols).reshape(n, o, ho, wo)
    if b is not None:
        out += b[:, None, None]
    return out, (cols, x.shape)


def np_conv_backward(g, saved, w, pad=0, need_input=True):
    """Gradients of conv2d (stride 1): input (col2im of W^T g) and weight (g cols^T summed over the batch)."""
    cols, xshape = saved
    n, o, ho, wo = g.shape
    _, c, kh, kw = w.shape
    g2 = g.reshape(n, o, ho * wo)
    gw = np.matmul(g2, cols.transpose(0, 2, 1)).sum(0).reshape(w.shape)   # faster here than one tensordot
    if not need_input:
        return None, gw
    gcols = np.matmul(w.reshape(o, -1).T, g2).reshape(n, c, kh * kw, ho, wo)
    gx = np.zeros(xshape, g.dtype)
    for k in range(kh * kw):
        i, j = divmod(k, kw)
        gx[:, :, i:i + ho, j:j + wo] += gcols[:, :, k]
    if pad:
        gx = gx[:, :, pad:-pad, pad:-pad]
    return gx, gw


def np_pool(h):
    """max_pool2d(2) (odd edges dropped) as the max of the four strided quarter views."""
    hh, ww = h.shape[2] // 2 * 2, h.shape[3] // 2 * 2
    q = [h[:, :, i:hh:2, j:ww:2] for i in (0, 1) for j in (0, 1)]
    out = np.maximum(np.maximum(q[0], q[1]), np.maximum(q[2], q[3]))
    return out, (q, out, h.shape)


def np_pool_backward(g, saved):
    q, out, shape = saved
    gh = np.zeros(shape, g.dtype)
    taken = np.zeros(out.shape, bool)
    for k, (i, j) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
        m = (q[k] == out) & ~taken       # the first maximum in window order gets the gradient, as torch
        taken |= m
        gh[:, :, i:q[k].shape[2] * 2:2, j:q[k].shape[3] * 2:2] = g * m
    return gh


def cnn_numpy(params, x, y):
    """bench/cnn.py's CNN step, forward and backward by hand; gradients in sorted key order."""
    P = params
    z1, win1 = np_conv(x, P["w1"], P["b1"])   # win*: what the convolutions' backward needs
    a1 = np.maximum(z1, 0)
    h1, s1 = np_pool(a1)
    z2, win2 = np_conv(h1, P["w2"], P["b2"])
    a2 = np.maximum(z2, 0)
    h2, s2 = np_pool(a2)
    flat = h2.reshape(h2.shape[0], -1)
    logits = flat @ P["w3"].T + P["b3"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    g = e / e.sum(1, keepdims=True)
    n = x.shape[0]
    g[np.arange(n), y] -= 1
    g /= n
    gw3, gb3 = g.T @ flat, g.sum(0)
    g = (g @ P["w3"]).reshape(h2.shape)
    g = np_pool_backward(g, s2) * (z2 > 0)
    gb2 = g.sum((0, 2, 3))
    gh1, gw2 = np_conv_backward(g, win2, P["w2"])
    g = np_pool_backward(gh1, s1) * (z1 > 0)
    gb1 = g.sum((0, 2, 3))
    _, gw1 = np_conv_backward(g, win1, P["w1"], need_input=False)   # x needs no gradient (as in cnn.py)
    return [gb1, gb2, gb3, gw1, gw2, gw3]


def conv_numpy(x, w):
    out, win = np_conv(x, w, pad=1)
    return list(np_conv_backward(np.ones_like(out), win, w, pad=1))


def w_cnn(quick):
    import cnn
    rng = np.random.default_rng(3)
    params = cnn.cnn_params(rng)
    x = rng.standard_normal((64, 1, 28, 28)).astype(F32)
    y = rng.integers(0, 10, 64)
    rows = []
    libs = {"ember": ember}
    if torch:
        libs["torch"] = torch
    data = {n: (l.tensor(x), l.tensor(y)) for n, l in libs.items()}
    fns = {n: (lambda l=l, n=n: cnn.cnn_step(l, params, *data[n])) for n, l in libs.items()}
    fns["numpy"] = lambda: cnn_numpy(params, x, y)
    ref = fns["numpy"]()
    errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "numpy"}
    reps = 3 if quick else 11
    rows.append(("4a. CNN step (2 conv, pool, linear), 64x1x28x28, fwd+bwd", timed_interleaved(fns, reps),
                 reps, errs, "numpy"))
    xc = rng.standard_normal((8 if quick else 32, 64, 56, 56)).astype(F32)
    wc = (rng.standard_normal((64, 64, 3, 3)) / 24).astype(F32)
    fns = {n: (lambda l=l: cnn.conv_step(l, xc, wc)) for n, l in libs.items()}
    fns["numpy"] = lambda: conv_numpy(xc, wc)
    ref = fns["numpy"]()
    errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "numpy"}
    reps = 2 if quick else 5
    rows.append((f"4b. conv2d fwd+bwd {xc.shape[0]}x64x56x56, 64->64 3x3 pad 1", timed_interleaved(fns, reps),
                 reps, errs, "numpy"))
    return rows


# ========================================================================== 5. transformer encoder
def _ln(x, g, b, eps=1e-5):
    mu = x.mean(-1, keepdims=True)
    xc = x - mu
    rstd = 1 / np.sqrt((xc * xc).mean(-1, keepdims=True) + eps)
    xh = xc * rstd
    return xh * g + b, (xh, rstd)


def _ln_backward(gy, g, saved):
    xh, rstd = saved
    gxh = gy * g
    gx = (gxh - gxh.mean(-1, keepdims=True) - xh * (gxh * xh).mean(-1, keepdims=True)) * rstd
    return gx, (gy * xh).sum((0, 1)), gy.sum((0, 1))


def _lin_backward(gy, x, W):
    """y = x @ W.T + b over (B, S, .): input, weight and bias gradients."""
    gy2 = gy.reshape(-1, gy.shape[-1])
    return gy @ W, gy2.T @ x.reshape(-1, x.shape[-1]), gy2.sum(0)


def transformer_numpy(P, x, r, heads=4):
    """A post-norm TransformerEncoderLayer (relu, no dropout), forward and backward of sum(out * r) by hand.
    Returns [dx] + the parameter gradients in named_parameters order."""
    Wi, bi, Wo, bo, W1, b1, W2, b2, g1, be1, g2, be2 = P
    B, S, D = x.shape
    hd = D // heads
    qkv = x @ Wi.T + bi
    split = lambda t: t.reshape(B, S, heads, hd).transpose(0, 2, 1, 3)  # noqa: E731
    q, k, v = (split(qkv[..., i * D:(i + 1) * D]) for i in range(3))
    sc = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hd).astype(x.dtype)
    e = np.exp(sc - sc.max(-1, keepdims=True))
    pa = e / e.sum(-1, keepdims=True)
    ctx = (pa @ v).transpose(0, 2, 1, 3).reshape(B, S, D)
    sa = ctx @ Wo.T + bo
    x1, s1 = _ln(x + sa, g1, be1)
    hpre = x1 @ W1.T + b1
    h = np.maximum(hpre, 0)
    ff = h @ W2.T + b2
    out, s2 = _ln(x1 + ff, g2, be2)
    # backward
    gz2, gg2, gbe2 = _ln_backward(r, g2, s2)
    gh, gW2, gb2 = _lin_backward(gz2, h, W2)
    gx1b, gW1, gb1 = _lin_backward(gh * (hpre > 0), x1, W1)
    gz1, gg1, gbe1 = _ln_backward(gz2 + gx1b, g1, s1)
    gctx, gWo, gbo = _lin_backward(gz1, ctx, Wo)
    gctx = split(gctx)
    gpa = gctx @ v.transpose(0, 1, 3, 2)
    gv = pa.transpose(0, 1, 3, 2) @ gctx
    gsc = pa * (gpa - (gpa * pa).sum(-1, keepdims=True)) / np.sqrt(hd).astype(x.dtype)
    gq = gsc @ k
    gk = gsc.transpose(0, 1, 3, 2) @ q
    merge = lambda t: t.transpose(0, 2, 1, 3).reshape(B, S, D)  # noqa: E731
    gqkv = np.concatenate([merge(gq), merge(gk), merge(gv)], -1)
    gxa, gWi, gbi = _lin_backward(gqkv, x, Wi)
    return [gz1 + gxa, gWi, gbi, gWo, gbo, gW1, gb1, gW2, gb2, gg1, gbe1, gg2, gbe2]


def w_transformer(quick):
    if torch is None:
        return []
    rng = np.random.default_rng(4)
    torch.manual_seed(0)
    tl = torch.nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True)
    el = ember.nn.TransformerEncoderLayer(128, 4, dim_feedforward=512, dropout=0.0, batch_first=True)
    el.load_state_dict({k: ember.tensor(v.detach().numpy()) for k, v in tl.state_dict().items()})
    x = rng.standard_normal((16, 64, 128)).astype(F32)
    # a fixed random weighting: (out * out).mean() would be degenerate (LayerNorm's output has a fixed norm,
    # so its gradients are rounding noise)
    r = rng.standard_normal((16, 64, 128)).astype(F32)
    rs = {"ember": ember.tensor(r), "torch": torch.tensor(r)}

    def run(lib, layer):
        layer.zero_grad()
        xt = lib.tensor(x, requires_grad=True)
        out = layer(xt)
        (out * rs[lib.__name__]).sum().backward()
        return [to_np(xt.grad)] + [to_np(p.grad) for p in layer.parameters()]

    P = [p.detach().numpy().copy() for p in tl.parameters()]
    fns = {"ember": lambda: run(ember, el), "torch": lambda: run(torch, tl),
           "numpy": lambda: transformer_numpy(P, x, r)}
    ref = fns["numpy"]()
    errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "numpy"}
    reps = 3 if quick else 11
    return [("5. TransformerEncoderLayer d128 h4 seq64 batch16 fwd+bwd (loss sum(out*r))",
             timed_interleaved(fns, reps), reps, errs, "numpy")]


# ================================================================================ 6. long chain
CHAIN_CHILD = r"""
import gc, json, resource, sys, time
sys.path.insert(0, sys.argv[3])
lib = sys.argv[1]; n = int(sys.argv[2])
if lib == "ember":
    import ember as L
else:
    import torch as L
    L.set_num_threads(1)
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024
def reset_hwm():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False
x = L.tensor([1.0], dtype=L.float64, requires_grad=True)
gc.collect(); gc.disable()
r0 = rss()
t0 = time.perf_counter()
y = x
for _ in range(n):
    y = y * 1.0001
t1 = time.perf_counter()
r1 = rss(); ok = reset_hwm()
y.backward(L.ones_like(y))
t2 = time.perf_counter()
peak = hwm(); r2 = rss()
g = float(x.grad[0])
del y
gc.enable(); gc.collect()
r3 = rss()
try:   # what the C allocator keeps of freed memory (ember sets glibc's trim threshold: ember/_malloc.py)
    import ctypes
    ctypes.CDLL(None).malloc_trim(0)
    r4 = rss()
except (OSError, AttributeError):
    r4 = None
print(json.dumps(dict(fwd=t1 - t0, bwd=t2 - t1, rss0=r0, rss_fwd=r1, peak_bwd=peak if ok else None,
                      rss_bwd=r2, rss_freed=r3, rss_trimmed=r4, grad=g)))
"""


def w_longchain(quick, out_lines):
    sizes = (100_000, 200_000) if quick else (1_000_000, 2_000_000)
    res = {}
    for lib in ["ember"] + (["torch"] if torch else []):
        for n in sizes:
            r = subprocess.run([sys.executable, "-c", CHAIN_CHILD, lib, str(n), ROOT], capture_output=True, text=True)
            if r.returncode != 0:
                out_lines.append(f"- {lib} n={n}: failed: {r.stderr.strip().splitlines()[-1:]}")
                continue
            res[(lib, n)] = json.loads(r.stdout.strip().splitlines()[-1])
    out_lines.append("Chain `y = y * 1.0001` (float64, shape (1,)), forward then `y.backward(ones)`, one run "
                     "per cell in a fresh interpreter, GC off while building and running backward. Memory is "
                     "the process RSS (/proc/self/statm); peak = VmHWM after resetting it (clear_refs 5) just "
                     "before backward, so it is the highest RSS reached during backward. 'after del' = RSS "
                     "after `del y` and gc.collect(); 'after trim' = RSS after glibc's malloc_trim(0) then, which "
                     "hands the allocator's free heap back to the OS (ember raises glibc's trim threshold to "
                     "128 MiB, ember/_malloc.py, so without it up to that much freed memory stays in the "
                     "process for the next step). grad check: exact value 1.0001**n.")
    out_lines.append("")
    out_lines.append("| lib | nodes | fwd s | bwd s | RSS start MB | after fwd MB | peak in bwd MB | after bwd MB "
                     "| after del MB | after trim MB | grad rel err |")
    out_lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    mb = lambda v: f"{v / 2**20:.0f}" if v is not None else "-"  # noqa: E731
    for (lib, n), d in res.items():
        exact = 1.0001 ** n
        out_lines.append(f"| {lib} | {n:,} | {d['fwd']:.2f} | {d['bwd']:.2f} | {mb(d['rss0'])} | {mb(d['rss_fwd'])} "
                         f"| {mb(d['peak_bwd'])} | {mb(d['rss_bwd'])} | {mb(d['rss_freed'])} | {mb(d.get('rss_trimmed'))} "
                         f"| {abs(d['grad'] - exact) / exact:.1e} |")
    for lib in ("ember", "torch"):
        if (lib, sizes[0]) in res and (lib, sizes[1]) in res:
            a, b = res[(lib, sizes[0])], res[(lib, sizes[1])]
            out_lines.append(f"\n{lib}: {sizes[1]:,} / {sizes[0]:,} nodes: backward time x{b['bwd'] / a['bwd']:.2f}, "
                             f"forward time x{b['fwd'] / a['fwd']:.2f} (linear = x2, target <= x2.2 for backward)")
    return res


# ============================================================================ 7. second order
H_N = 64


def hess_f(lib, A):
    """f(x) = sum(tanh(A x)) for a fixed 64x64 A: a dense Hessian A^T diag(tanh''(Ax)) A."""
    At = lib.tensor(A)
    return lambda x: lib.tanh(At @ x).sum()


def hess_numpy(A, x):
    t = np.tanh(A @ x)
    d2 = -2 * t * (1 - t * t)
    return (A.T * d2) @ A


def w_hessian(quick):
    rng = np.random.default_rng(5)
    A = rng.standard_normal((H_N, H_N)) / 8
    x0 = rng.standard_normal(H_N)
    fns = {"numpy": lambda: hess_numpy(A, x0)}
    for vec in (False, True):
        fns[f"ember{'_vec' if vec else ''}"] = (lambda vec=vec: ember.autograd.functional.hessian(
            hess_f(ember, A), ember.tensor(x0), vectorize=vec))
        if torch:
            fns[f"torch{'_vec' if vec else ''}"] = (lambda vec=vec: torch.autograd.functional.hessian(
                hess_f(torch, A), torch.tensor(x0), vectorize=vec))
    if hips:
        fns["autograd"] = lambda: hips.hessian(lambda x: anp.sum(anp.tanh(anp.dot(A, x))))(x0)
    ref = fns["numpy"]()
    errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "numpy"}
    reps = 3 if quick else 11
    times = timed_interleaved(fns, reps)
    rows = []
    base = {"numpy": times["numpy"]}
    rows.append(("7a. hessian of sum(tanh(A x)), 64 inputs, float64, vectorize=False",
                 {**base, **{k: v for k, v in times.items() if k in ("ember", "torch", "autograd")}}, reps,
                 {k: v for k, v in errs.items() if k in ("ember", "torch", "autograd")}, "numpy"))
    rows.append(("7b. same, vectorize=True (autograd: its own hessian)",
                 {**base, **{k.replace("_vec", ""): v for k, v in times.items() if k.endswith("_vec")},
                  **({"autograd": times["autograd"]} if "autograd" in times else {})}, reps,
                 {**{k.replace("_vec", ""): v for k, v in errs.items() if k.endswith("_vec")},
                  **({"autograd": errs["autograd"]} if "autograd" in errs else {})}, "numpy"))

    # HVP of the MLP loss with respect to its six parameters, v = a fixed random direction.
    params, x, y = mlp_data(np.random.default_rng(6))
    params = [p.astype(np.float64) for p in params]
    x = x.astype(np.float64)
    vs = [np.random.default_rng(7).standard_normal(p.shape) for p in params]

    def lib_hvp(lib):
        F = lib.nn.functional
        xt, yt = lib.tensor(x), lib.tensor(y)

        def loss(*ps):
            h = F.relu(xt @ ps[0].T + ps[1])
            h = F.relu(h @ ps[2].T + ps[3])
            return F.cross_entropy(h @ ps[4].T + ps[5], yt)
        return lambda: [to_np(t) for t in lib.autograd.functional.hvp(
            loss, tuple(lib.tensor(p) for p in params), tuple(lib.tensor(v) for v in vs))[1]]

    fns = {"ember": lib_hvp(ember)}
    if torch:
        fns["torch"] = lib_hvp(torch)
    if hips:
        flat_shapes = [p.shape for p in params]
        sizes = [p.size for p in params]

        def unflat(w):
            out, i = [], 0
            for s, k in zip(flat_shapes, sizes):
                out.append(anp.reshape(w[i:i + k], s))
                i += k
            return out
        hp = hips.hessian_tensor_product(lambda w: hips_mlp_loss(unflat(w), x, y))
        wflat = np.concatenate([p.ravel() for p in params])
        vflat = np.concatenate([v.ravel() for v in vs])

        def hips_hvp():
            r, out, i = hp(wflat, vflat), [], 0
            for s, k in zip(flat_shapes, sizes):
                out.append(r[i:i + k].reshape(s))
                i += k
            return out
        fns["autograd"] = hips_hvp
    errs = {}
    if torch:
        ref = fns["torch"]()
        errs = {n: relerr(f(), ref) for n, f in fns.items() if n != "torch"}
    reps = 3 if quick else 9
    rows.append(("7c. HVP of the MLP loss (784-512-512-10, batch 256, float64) w.r.t. all params",
                 timed_interleaved(fns, reps), reps, errs, "torch"))
    return rows


# ================================================================================= 8. start-up
IMPORT_CHILD = r"""
import resource, sys, time
sys.path.insert(0, sys.argv[2])
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024
h0 = hwm()
t = time.perf_counter()
__import__(sys.argv[1])
dt = time.perf_counter() - t
print(dt, hwm() - h0, h0)
"""


def dir_size(path: str) -> int:
    total = 0
    for dp, dns, fns in os.walk(path):
        dns[:] = [d for d in dns if d != "__pycache__"]
        for f in fns:
            try:
                total += os.lstat(os.path.join(dp, f)).st_size
            except OSError:
                pass
    return total


def w_import(quick, out_lines):
    runs = 3 if quick else 7
    res = {}
    for mod in ["numpy", "ember"] + (["torch"] if torch else []):
        # PYTHONDONTWRITEBYTECODE would leave every run compiling from source: drop it so that the first
        # run writes the bytecode cache (and warms the page cache) for the timed ones
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-c", IMPORT_CHILD, mod, ROOT], capture_output=True, env=env)
        ts, mems = [], []
        for _ in range(runs):
            r = subprocess.run([sys.executable, "-c", IMPORT_CHILD, mod, ROOT], capture_output=True, text=True,
                               env=env)
            dt, dm, base = r.stdout.split()
            ts.append(float(dt))
            mems.append(int(dm))
        m = __import__(mod)
        res[mod] = (statistics.median(ts), statistics.median(mems), dir_size(os.path.dirname(m.__file__)))
    out_lines.append(f"Fresh interpreter per run (bytecode cache warmed by one run first), median of {runs}. "
                     "Peak memory = VmHWM after import minus VmHWM before (the interpreter's own start-up "
                     "excluded). ember's figures include importing NumPy (its `numpy` row shows that part). "
                     "Size = bytes of the package directory without __pycache__ (torch: its "
                     "site-packages dir incl. shared libraries; NumPy, which both need, not counted).")
    out_lines.append("")
    out_lines.append("| package | import s | peak RSS added MB | installed size MB |")
    out_lines.append("|---|---:|---:|---:|")
    for mod, (t, m, s) in res.items():
        out_lines.append(f"| {mod} | {t:.3f} | {m / 2**20:.1f} | {s / 2**20:.1f} |")
    return res


# ============================================================================ 9. MLP-step memory
MEM_CHILD = r"""
import gc, json, sys, tracemalloc
sys.path.insert(0, sys.argv[2]); sys.path.insert(0, sys.argv[2] + "/bench")
import suite
import numpy as np
lib = sys.argv[1]
if suite.torch is not None:
    suite.torch.set_num_threads(1)
params, x, y = suite.mlp_data(np.random.default_rng(2))
impl = suite.mlp_impls(params, x, y)[lib]
gc.collect()
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024
r0 = rss()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
impl.step()
peak_rss = hwm() - r0
gc.collect()
tracemalloc.start()
impl.step()
_, peak_tm = tracemalloc.get_traced_memory()
tracemalloc.stop()
print(json.dumps(dict(rss=peak_rss, tm=peak_tm)))
"""


def w_memory(quick, out_lines):
    libs = ["ember", "numpy"] + (["torch"] if torch else []) + (["autograd"] if hips else []) + (["mygrad"] if mg else [])
    res = {}
    for lib in libs:
        r = subprocess.run([sys.executable, "-c", MEM_CHILD, lib, ROOT], capture_output=True, text=True)
        if r.returncode == 0:
            res[lib] = json.loads(r.stdout.strip().splitlines()[-1])
        else:
            out_lines.append(f"- {lib}: failed: {r.stderr.strip().splitlines()[-1:]}")
    out_lines.append("The first SGD step of the MLP of workload 3 (parameters and data already built), in a fresh "
                     "interpreter per library, torch at 1 thread, run with MALLOC_MMAP_THRESHOLD_=65536 and "
                     "MALLOC_TRIM_THRESHOLD_=0 so that glibc maps every buffer over 64 KB on its own and "
                     "returns it when freed (otherwise freed heap pages are reused invisibly and the "
                     "figure depends on allocator history). Two measures: **peak RSS added** = VmHWM (reset via "
                     "/proc/self/clear_refs just before the step) minus the RSS before it: the most memory the "
                     "step held at once, graph, saved tensors, gradients and temporaries, for every library "
                     "(includes one-off costs of a first step, e.g. lazily imported modules). "
                     "**tracemalloc peak** (a second step) = peak of Python-traced allocations during a "
                     "further step: sees NumPy's buffers and Python objects, not torch's C++ allocations "
                     "(so it is meaningless for torch and shown only for the NumPy-based libraries). The kernel "
                     "updates RSS counters in batches of page faults: differences under about 1 MB are noise. "
                     "For scale: the inputs are 0.8 MB, the parameters 2.6 MB, each 256x512 activation 0.5 MB.")
    out_lines.append("")
    out_lines.append("| lib | peak RSS added MB | tracemalloc peak MB |")
    out_lines.append("|---|---:|---:|")
    for lib, d in res.items():
        tm = f"{d['tm'] / 2**20:.1f}" if lib != "torch" else "(n/a)"
        out_lines.append(f"| {lib} | {d['rss'] / 2**20:.1f} | {tm} |")
    return res


# ===================================================================================== main
LIBS = ["ember", "torch", "numpy", "autograd", "mygrad"]


def _version(mod) -> str:
    if mod is None:
        return "-"
    try:
        from importlib.metadata import version
        return version(mod.__name__)
    except Exception:
        return getattr(mod, "__version__", "?")


def machine() -> list[str]:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return [f"CPU: {cpu}, {os.cpu_count()} logical cores", f"Python {sys.version.split()[0]}, NumPy {np.__version__}, "
            f"torch {_version(torch)}, autograd {_version(hips)}, mygrad {_version(mg)}, ember {ember.__version__}"]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="few repeats, short chains (about 2 minutes)")
    ap.add_argument("--only", default="", help="comma-separated: chain,scalar,mlp,cnn,transformer,longchain,hessian,import,memory")
    ap.add_argument("--pause", type=float, default=0.0,
                    help="seconds of sleep before each timed call, so that idle worker threads stop spinning")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"))
    args = ap.parse_args(argv)
    global PAUSE
    PAUSE = args.pause
    only = set(filter(None, args.only.split(",")))
    want = lambda k: not only or k in only  # noqa: E731

    threads, how = numpy_blas_threads()
    if torch:
        torch.set_num_threads(threads)
    load0 = os.getloadavg()
    start = time.time()
    print("\n".join(machine()))
    print(f"BLAS threads {threads} ({how}); torch.set_num_threads({threads}); load average {load0}")

    rows, extra = [], {}
    for key, fn in [("chain", w_chain), ("scalar", w_scalar), ("mlp", w_mlp), ("cnn", w_cnn),
                    ("transformer", w_transformer), ("hessian", w_hessian)]:
        if want(key):
            t = time.time()
            new = fn(args.quick)
            for r in new:
                print_row(r)
            rows += new
            print(f"  [{key}: {time.time() - t:.0f} s]", flush=True)
    for key, title, fn in [("longchain", "6. Long chain: backward time and memory", w_longchain),
                           ("import", "8. Start-up", w_import),
                           ("memory", "9. Peak memory of one MLP training step", w_memory)]:
        if want(key):
            t = time.time()
            lines = []
            extra.setdefault("_data", {})[key] = fn(args.quick, lines)
            extra[title] = lines
            print(f"\n## {title}\n" + "\n".join(lines))
            print(f"  [{key}: {time.time() - t:.0f} s]", flush=True)
    load1 = os.getloadavg()
    write_results(args, rows, extra, threads, how, load0, load1, time.time() - start)


def targets(rows, data) -> list[str]:
    """Issue 10's targets, checked against this run's figures (met / missed by how much)."""
    out = []

    def ratio(name, times, lib, limit, what):
        if lib not in times:
            return
        r = times["ember"] / times[lib]
        verdict = "met" if r <= limit else f"**missed** (x{r / limit:.2f} over)"
        out.append(f"| {what} | ember/{lib} <= {limit} | {r:.2f} | {verdict} |")
    for name, times, *_ in rows:
        if name.startswith("1.") and ("(1,)" in name or "(64,)" in name):
            ratio(name, times, "torch", 0.5, name[3:])
        if name.startswith("1.") and "(256, 256) fwd+bwd" in name:
            ratio(name, times, "numpy", 1.1, name[3:])
        if name.startswith("2."):
            ratio(name, times, "torch", 0.5, "scalar MLP graph")
            ratio(name, times, "autograd", 1.0, "scalar MLP graph")
            ratio(name, times, "mygrad", 1.0, "scalar MLP graph")
        if name.startswith("3."):
            ratio(name, times, "numpy", 1.05, "MLP step")
            ratio(name, times, "torch", 0.9, "MLP step")
        if name.startswith("4a.") or name.startswith("5."):
            ratio(name, times, "torch", 1.5, re.sub(r"^\S+ ", "", name.split(" (")[0].split(" d128")[0]))
    lc = data.get("longchain") or {}
    ns = sorted({n for (lib, n) in lc if lib == "ember"})
    if len(ns) == 2:
        a, b = lc[("ember", ns[0])], lc[("ember", ns[1])]
        r = b["bwd"] / a["bwd"]
        out.append(f"| chain {ns[0]:,} -> {ns[1]:,} nodes, backward | time ratio <= 2.2 | {r:.2f} | "
                   f"{'met' if r <= 2.2 else '**missed**'} |")
        back = (b.get("rss_trimmed") or b["rss_freed"]) - b["rss0"]
        out.append(f"| chain {ns[1]:,}: memory back to start after backward + del | RSS after del (+ malloc_trim) - at start "
                   f"| {back / 2**20:.1f} MB (graph held {(b['rss_fwd'] - b['rss0']) / 2**20:.0f} MB) | "
                   f"{'met' if back < 0.05 * (b['rss_fwd'] - b['rss0']) + 4 * 2**20 else '**missed**'} |")
    mem = data.get("memory") or {}
    if "ember" in mem and "torch" in mem:
        e, t = mem["ember"]["rss"], mem["torch"]["rss"]
        out.append(f"| MLP step peak memory (RSS added) | ember <= torch | {e / 2**20:.1f} vs {t / 2**20:.1f} MB | "
                   f"{'met' if e <= t else 'within noise (< 1 MB)' if e - t < 2**20 else f'**missed** (x{e / max(t, 1):.2f})'} |")
    imp = data.get("import") or {}
    if "ember" in imp:
        t = imp["ember"][0]
        out.append(f"| `import ember` | < 0.2 s | {t:.3f} s | {'met' if t < 0.2 else '**missed**'} |")
    if not out:
        return []
    return ["", "## Issue 10's targets in this run", "", "| target | criterion | this run | verdict |",
            "|---|---|---|---|"] + out


def fmt_t(t):
    return "-" if t is None else (f"{t * 1e3:.2f}" if t < 0.1 else f"{t * 1e3:.0f}")


def print_row(r):
    name, times, reps, errs, ref = r
    print(f"{name}  (reps {reps})")
    for lib in LIBS:
        if lib in times:
            ratio = times["ember"] / times[lib] if lib != "ember" else 1.0
            err = errs.get(lib, "ref" if lib == ref else "-")
            err = f"{err:.1e}" if isinstance(err, float) else err
            print(f"   {lib:<9}{fmt_t(times[lib]):>10} ms   ember/{lib} {ratio:6.2f}x   err vs {ref}: {err}")


def write_results(args, rows, extra, threads, how, load0, load1, elapsed):
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python bench/suite.py" + (" --quick" if args.quick else "") + (f" --only {args.only}" if args.only else "")
    L = ["# Benchmark results", "", f"Produced by `{cmd}` on {now} in {elapsed:.0f} s. "
         "Regenerate with that command; this file is overwritten.", ""]
    L += [f"- {m}" for m in machine()]
    L.append(f"- BLAS threads: {threads} ({how}); torch.set_num_threads({threads})")
    L.append(f"- load average (1, 5, 15 min) at start {tuple(round(v, 2) for v in load0)}, at end "
             f"{tuple(round(v, 2) for v in load1)}")
    ncpu = os.cpu_count() or 1
    if max(load0[0], load1[0]) > 0.5 * ncpu:
        L.append(f"- **The machine was shared and loaded** (1-minute load up to {max(load0[0], load1[0]):.1f} on "
                 f"{ncpu} cores): absolute times are inflated and noisy; the ratios, measured with the "
                 "libraries' repeats interleaved, are the more trustworthy figures.")
    if args.quick:
        L.append("- **--quick run**: few repeats (see the reps column) and, in 4b, batch 8; in 6, chains of "
                 "100k/200k nodes instead of 1M/2M. Treat ratios as +-30%.")
    L += ["", "## Times", "",
          "Median ms per call over `reps` repeats, after one warm-up call each; the libraries' repeats are "
          "interleaved round-robin (rotating order) so that all see the same load; GC off while timing. "
          "ratio = ember's time / that library's (below 1: ember is faster). `numpy` = the same math with "
          "forward and backward written by hand (workload 2: plain Python floats, the same scalar graph). "
          "`-` = not expressible in / not written for that library. err = max |result - reference| / max "
          "|reference| over all gradients (or Hessian entries), reference = the column named in `ref`.", "",
          "| workload | reps | ember ms | torch ms | numpy ms | autograd ms | mygrad ms | ember/torch | "
          "ember/numpy | ember/autograd | ember/mygrad | ref | max rel err (ember; others) |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for name, times, reps, errs, ref in rows:
        ts = [fmt_t(times.get(lib)) for lib in LIBS]
        ratios = [f"{times['ember'] / times[lib]:.2f}x" if lib in times else "-" for lib in LIBS[1:]]
        e = f"{errs['ember']:.1e}" if "ember" in errs else "-"
        others = ", ".join(f"{k} {v:.0e}" for k, v in errs.items() if k != "ember")
        L.append(f"| {name} | {reps} | " + " | ".join(ts) + " | " + " | ".join(ratios) +
                 f" | {ref} | {e}; {others} |")
    L += targets(rows, extra.get("_data", {}))
    for title, lines in extra.items():
        if title != "_data":
            L += ["", f"## {title}", ""] + lines
    L += ["", "## Not covered", "",
          "- Hand-written NumPy for the MLP HVP (7c): not written; that row compares ember and autograd with "
          "torch (reference).",
          "- HIPS autograd and mygrad for 4 and 5 are not written (autograd has no conv; mygrad's conv/attention "
          "would be a different computation to check); HIPS autograd has no no_grad mode (1, forward only)."]
    with open(args.out, "w") as f:
        f.write("\n".join(L) + "\n")
    print(f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
