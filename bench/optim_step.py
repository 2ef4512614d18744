"""The optimizer step alone, and the floor of its exact float32 fused multiply-add in NumPy.

    python bench/optim_step.py            # MLP 784-512-512-10 steps (SGD, momentum, Adam, AdamW) vs NumPy by hand,
                                          # nanoGPT 4x128's AdamW step vs torch, the fma floor
    python bench/optim_step.py --repeats 101

One thread; CPU time of the calling thread; columns interleaved call by call; median and minimum of the repeats.
The gradients stay fixed (no forward or backward): only ``optimizer.step()`` is timed. The floor: NumPy's
``p -= lr*g`` (two passes, not a fused multiply-add), the float64 computation alone (cast, multiply, cast, add,
cast: rounded twice, not exact), then with the float32-midpoint test and the z test (the cheapest exact
emulation found), and ember's kernel (devices/cpu/optim.py ``fma``). This is a benchmark: it never asserts.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_var] = "1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import ember  # noqa: E402
from ember.devices.cpu import optim as K  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:
    torch = None

F32 = np.float32
MLP = [(512, 784), (512,), (512, 512), (512,), (10, 512), (10,)]
GPT = [(65, 128), (64, 128)] + [(128,), (128,), (384, 128), (384,), (128, 128), (128,), (128,), (128,), (512, 128),
                                (512,), (128, 512), (128,)] * 4 + [(128,), (128,)]


def timed(cols: dict, repeats: int) -> dict:
    for f in cols.values():
        for _ in range(3):
            f()
    ts = {k: [] for k in cols}
    for _ in range(repeats):
        for k, f in cols.items():
            t = time.thread_time()
            f()
            ts[k].append(time.thread_time() - t)
    return {k: (sorted(v)[len(v) // 2] * 1e3, min(v) * 1e3) for k, v in ts.items()}


def lib_params(lib, shapes, rng):
    ps = [lib.nn.Parameter(lib.tensor((rng.standard_normal(s) * 0.05).astype(F32))) for s in shapes]
    for p in ps:
        p.grad = lib.tensor((rng.standard_normal(tuple(p.shape)) * 0.01).astype(F32))
    return ps


def numpy_step(kind, shapes, rng):
    """``p -= lr*g``, or Adam's update by hand (bench/compile.py's NumpyStep), in place, float32."""
    P = [(rng.standard_normal(s) * 0.05).astype(F32) for s in shapes]
    G = [(rng.standard_normal(s) * 0.01).astype(F32) for s in shapes]
    M, V, T = [np.zeros_like(p) for p in P], [np.zeros_like(p) for p in P], [0]

    def sgd():
        for p, g in zip(P, G):
            p -= F32(0.01) * g

    def adam():
        T[0] += 1
        b1, b2, eps = F32(0.9), F32(0.999), F32(1e-8)
        bc1, bc2 = 1 - 0.9 ** T[0], 1 - 0.999 ** T[0]
        for p, g, m, v in zip(P, G, M, V):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            denom = np.sqrt(v)
            denom /= F32(np.sqrt(bc2))
            denom += eps
            p -= F32(1e-3 / bc1) * m / denom
    return adam if kind.startswith("adam") else sgd


def mlp_steps(repeats: int) -> None:
    print("| MLP 784-512-512-10 step alone | ember ms (median / min) | NumPy by hand |")
    print("|---|---:|---:|")
    for kind in ("sgd", "momentum", "adam", "adamw"):
        rng = np.random.default_rng(0)
        ps = lib_params(ember, MLP, rng)
        opt = {"sgd": lambda: ember.optim.SGD(ps, lr=0.01),
               "momentum": lambda: ember.optim.SGD(ps, lr=0.01, momentum=0.9),
               "adam": lambda: ember.optim.Adam(ps, lr=1e-3), "adamw": lambda: ember.optim.AdamW(ps, lr=1e-3)}[kind]()
        r = timed({"ember": opt.step, "numpy": numpy_step(kind, MLP, rng)}, repeats)
        print(f"| {kind} | {r['ember'][0]:.3f} / {r['ember'][1]:.3f} | {r['numpy'][0]:.3f} / {r['numpy'][1]:.3f} |")


def gpt_adamw(repeats: int) -> None:
    cols = {}
    for lib in (ember, torch):
        if lib is None:
            continue
        ps = lib_params(lib, GPT, np.random.default_rng(0))
        decay, other = [p for p in ps if p.dim() >= 2], [p for p in ps if p.dim() < 2]
        opt = lib.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": other, "weight_decay": 0.0}],
                              lr=6e-4, betas=(0.9, 0.95))
        cols[lib.__name__] = opt.step
    r = timed(cols, repeats)
    print("\nnanoGPT 4x128 AdamW step alone (configure_optimizers' two groups, 809,856 float32): "
          + ", ".join(f"{k} {med:.3f} / {mn:.3f} ms" for k, (med, mn) in r.items()))


def floor(repeats: int) -> None:
    rng = np.random.default_rng(0)
    P = [(rng.standard_normal(s) * 0.05).astype(F32).reshape(-1) for s in MLP]
    G = [(rng.standard_normal(s) * 0.01).astype(F32).reshape(-1) for s in MLP]
    C = K._CHUNK
    t_, w_ = np.empty(C), np.empty(C)

    def numpy_sgd():
        for p, g in zip(P, G):
            p -= F32(0.01) * g

    def pipe(level):
        def f():
            for p, g in zip(P, G):
                for i in range(0, p.size, C):
                    j = min(i + C, p.size)
                    t, w = t_[:j - i], w_[:j - i]
                    np.copyto(t, g[i:j])
                    np.multiply(t, -0.01, out=t)
                    np.copyto(w, p[i:j])
                    np.add(t, w, out=t)
                    if level >= 1:
                        wu = w.view(np.uint64)
                        np.left_shift(t.view(np.uint64), 35, out=wu)
                        np.minimum.reduce(wu.view(np.int64))
                    if level >= 2:
                        zb = p[i:j].view(np.uint32)
                        np.minimum.reduce(zb)
                        np.minimum.reduce(zb.view(np.int32))
                    np.copyto(p[i:j], t, casting="unsafe")
        return f

    def kernel():
        for p, g in zip(P, G):
            K.fma(-0.01, g, p, out=p)
    r = timed({"NumPy p -= lr*g": numpy_sgd, "float64, rounded twice (not exact)": pipe(0),
               "+ midpoint test": pipe(1), "+ z test (exact floor)": pipe(2), "ember fma": kernel}, repeats)
    print("\n| fma floor, 669,706 float32 (the MLP's SGD update) | ms (median / min) |\n|---|---:|")
    for k, (med, mn) in r.items():
        print(f"| {k} | {med:.3f} / {mn:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=61)
    args = ap.parse_args()
    print(f"numpy {np.__version__}, ember {ember.__file__}, torch {torch.__version__ if torch else 'absent'}; "
          f"load average {os.getloadavg()[0]:.1f}\n")
    mlp_steps(args.repeats)
    gpt_adamw(args.repeats)
    floor(args.repeats)


if __name__ == "__main__":
    main()
