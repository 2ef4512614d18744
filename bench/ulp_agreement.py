"""How often ember's float32/float16 elementwise functions differ from PyTorch's (CPU) in the last bit.

    python bench/ulp_agreement.py measure OUT.json [--ember PATH]   # one side: ember from PATH (default: here)
    python bench/ulp_agreement.py table BEFORE.json AFTER.json       # the markdown table of two measurements

For each function, N float32 inputs are drawn over a sensible domain (seeded, so every run sees the same
inputs); float16 takes every finite float16 value in the domain. Two ways of calling:

* short: tensors of 15 elements, one call each (PyTorch's scalar path: the C library, glibc here, for the
  functions its TensorIterator loop computes element by element; MKL's VML for the ones routed there);
* long:  one contiguous tensor of 10^6 elements (the inputs tiled): PyTorch's vectorized kernels (SLEEF or
  its own, or MKL's VML) for the bulk.

"differ" = not the same bits (two NaNs count as equal). Cost: ember's best time of one call on a 15-element
tensor (us) and on 10^6 float32 elements (ms), no grad; ember keeps NumPy's float32 kernels from 32768
elements on (ember/devices/cpu/elementwise.py, _EXACT_MAX), so "10^6 float64 path" is what the exact path would
cost there (and its ratio to NumPy's float32 kernel). "torch vs CR": how far PyTorch itself is from the
correctly rounded value (float64, rounded once): what ember's float64 path gets on long tensors.
This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import time
import timeit

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = 60_000          # float32 inputs per function
SHORT = 15          # elements per short tensor
LONG = 1_000_000


def _pos(lo, hi):
    return ("log", lo, hi)   # log-uniform


# name: (how to call it on a module `m` (torch or ember) and a tensor, domain (lo, hi) or ("log", lo, hi))
FUNCS = {
    "exp": (lambda m, t: m.exp(t), (-80, 80)),
    "exp2": (lambda m, t: m.exp2(t), (-120, 120)),
    "expm1": (lambda m, t: m.expm1(t), (-20, 20)),
    "log": (lambda m, t: m.log(t), _pos(1e-30, 1e30)),
    "log2": (lambda m, t: m.log2(t), _pos(1e-30, 1e30)),
    "log10": (lambda m, t: m.log10(t), _pos(1e-30, 1e30)),
    "log1p": (lambda m, t: m.log1p(t), (-1, 100)),
    "sin": (lambda m, t: m.sin(t), (-100, 100)),
    "cos": (lambda m, t: m.cos(t), (-100, 100)),
    "tan": (lambda m, t: m.tan(t), (-10, 10)),
    "asin": (lambda m, t: m.asin(t), (-1, 1)),
    "acos": (lambda m, t: m.acos(t), (-1, 1)),
    "atan": (lambda m, t: m.atan(t), (-100, 100)),
    "sinh": (lambda m, t: m.sinh(t), (-80, 80)),
    "cosh": (lambda m, t: m.cosh(t), (-80, 80)),
    "tanh": (lambda m, t: m.tanh(t), (-10, 10)),
    "asinh": (lambda m, t: m.asinh(t), (-1e4, 1e4)),
    "acosh": (lambda m, t: m.acosh(t), _pos(1, 1e4)),
    "atanh": (lambda m, t: m.atanh(t), (-1, 1)),
    "sqrt": (lambda m, t: m.sqrt(t), _pos(1e-30, 1e30)),
    "rsqrt": (lambda m, t: m.rsqrt(t), _pos(1e-30, 1e30)),
    "reciprocal": (lambda m, t: m.reciprocal(t), _pos(1e-30, 1e30)),
    "sigmoid": (lambda m, t: m.sigmoid(t), (-20, 20)),
    "erf": (lambda m, t: m.erf(t), (-5, 5)),
    "erfc": (lambda m, t: m.erfc(t), (-5, 10)),
    "erfinv": (lambda m, t: m.erfinv(t), (-1, 1)),
    "lgamma": (lambda m, t: m.lgamma(t), (-20, 40)),
    "digamma": (lambda m, t: m.digamma(t), (0.01, 40)),
    "F.gelu": (lambda m, t: m.nn.functional.gelu(t), (-10, 10)),
    "F.gelu(tanh)": (lambda m, t: m.nn.functional.gelu(t, approximate="tanh"), (-10, 10)),
    "F.silu": (lambda m, t: m.nn.functional.silu(t), (-20, 20)),
    "F.softplus": (lambda m, t: m.nn.functional.softplus(t), (-20, 20)),
    "F.mish": (lambda m, t: m.nn.functional.mish(t), (-20, 20)),
    "F.elu": (lambda m, t: m.nn.functional.elu(t), (-20, 20)),
    "F.selu": (lambda m, t: m.nn.functional.selu(t), (-20, 20)),
    "F.logsigmoid": (lambda m, t: m.nn.functional.logsigmoid(t), (-20, 20)),
    "F.softsign": (lambda m, t: m.nn.functional.softsign(t), (-20, 20)),
    "F.hardswish": (lambda m, t: m.nn.functional.hardswish(t), (-5, 5)),
    # gradients: d/dx of f(x).sum(), through backward (the VJP kernels)
    "tanh'": (lambda m, t: _grad(m, m.tanh, t), (-10, 10)),
    "sigmoid'": (lambda m, t: _grad(m, m.sigmoid, t), (-20, 20)),
    "exp'": (lambda m, t: _grad(m, m.exp, t), (-80, 80)),
    "sin'": (lambda m, t: _grad(m, m.sin, t), (-100, 100)),
    "log'": (lambda m, t: _grad(m, m.log, t), _pos(1e-30, 1e30)),
}


def _grad(m, f, t):
    t = t.detach().requires_grad_(True)
    f(t).sum().backward()
    return t.grad


def inputs(domain, dtype, seed):
    rng = np.random.default_rng(seed)
    if dtype == "float16":   # every finite float16 in the domain
        x = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
        x = x[np.isfinite(x)]
        lo, hi = (domain[1], domain[2]) if domain[0] == "log" else domain
        return x[(x >= lo) & (x <= hi)]
    if domain[0] == "log":
        x = np.exp(rng.uniform(np.log(domain[1]), np.log(domain[2]), N))
    else:
        x = rng.uniform(domain[0], domain[1], N)
    return x.astype(np.float32)


def run(m, call, x, dtype):
    """(short, long) results of ``call`` under module m on the float array x."""
    tdt = getattr(m, dtype)
    short = np.concatenate([call(m, m.tensor(x[i:i + SHORT], dtype=tdt)).detach().numpy()
                            for i in range(0, x.size, SHORT)])
    reps = -(-LONG // x.size)
    big = np.tile(x, reps)[:LONG]
    long_ = call(m, m.tensor(big, dtype=tdt)).detach().numpy()[:x.size]
    return short, long_


def differ(a, b):
    same = (a.view(np.uint16 if a.dtype == np.float16 else np.uint32) ==
            b.view(np.uint16 if b.dtype == np.float16 else np.uint32)) | (np.isnan(a) & np.isnan(b))
    return float(np.mean(~same) * 100)


def cost(m, call, dtype):
    tdt = getattr(m, dtype)
    big = m.tensor(np.linspace(0.1, 0.9, LONG, dtype=np.float32), dtype=tdt)
    small = m.tensor(np.linspace(0.1, 0.9, SHORT, dtype=np.float32), dtype=tdt)
    ts = []
    for _ in range(5):
        t0 = time.perf_counter()
        call(m, big)
        ts.append(time.perf_counter() - t0)
    tl = min(ts) * 1e3
    ts = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(200):
            call(m, small)
        ts.append((time.perf_counter() - t0) / 200)
    return tl, min(ts) * 1e6


# the NumPy ufunc behind each float64-then-round kernel: what that path would cost on a long tensor
UFUNCS = {"exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10",
          "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos",
          "atan": "arctan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh",
          "acosh": "arccosh", "atanh": "arctanh"}


def cost_f64(name):
    """ms for 10^6 float32 elements: NumPy's float32 kernel, and float64 then one rounding."""
    uf = getattr(np, UFUNCS[name])
    x = np.linspace(0.1, 0.9, LONG, dtype=np.float32) + (1 if name == "acosh" else 0)   # in every domain
    f32 = min(timeit.repeat(lambda: uf(x), number=3, repeat=5)) / 3 * 1e3
    f64 = min(timeit.repeat(lambda: uf(x, dtype=np.float64).astype(np.float32), number=3, repeat=5)) / 3 * 1e3
    return f32, f64


def measure(path, out, names):
    sys.path.insert(0, path)
    ember = importlib.import_module("ember")
    import torch
    torch.set_num_threads(1)
    res = {"ember": os.path.dirname(ember.__file__), "rows": {}}
    for dtype in ("float32", "float16"):
        for i, (name, (call, domain)) in enumerate(FUNCS.items()):
            if names and name not in names:
                continue
            x = inputs(domain, dtype, i)
            with np.errstate(all="ignore"):
                ts, tl = run(torch, call, x, dtype)
                es, el = run(ember, call, x, dtype)
                row = {"short": differ(es, ts), "long": differ(el, tl), "torch_short_long": differ(ts, tl)}
                if dtype == "float32" and "'" not in name:   # PyTorch's distance from correctly rounded
                    cr = call(ember, ember.tensor(x.astype(np.float64))).detach().numpy().astype(np.float32)
                    row["torch_vs_cr_short"] = differ(ts, cr)
                    row["torch_vs_cr_long"] = differ(tl, cr)
                row["ms_long"], row["us_short"] = cost(ember, call, dtype)
                if dtype == "float32" and name in UFUNCS:
                    row["ms_np32"], row["ms_f64"] = cost_f64(name)
            res["rows"][f"{name} {dtype}"] = row
            print(f"{name:14s} {dtype}: " + " ".join(f"{k}={v:.3f}" for k, v in row.items()), flush=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)


def table(before, after):
    b = json.load(open(before))["rows"]
    a = json.load(open(after))["rows"]
    lines = ["| function | short % differing before | after | long % before | after | torch vs CR short / long % "
             "| 15 elements before -> after (us) | 10^6 (ms) | 10^6 float64 path (ms) |",
             "|---|---|---|---|---|---|---|---|---|"]

    def f(v):
        return "0" if v == 0 else f"{v:.3f}"
    for k, ra in a.items():
        rb = b.get(k, {})
        cr = (f"{f(ra['torch_vs_cr_short'])} / {f(ra['torch_vs_cr_long'])}" if "torch_vs_cr_short" in ra else "")
        lines.append(f"| {k} | {f(rb.get('short', float('nan')))} | {f(ra['short'])} | "
                     f"{f(rb.get('long', float('nan')))} | {f(ra['long'])} | {cr} | "
                     f"{rb.get('us_short', float('nan')):.1f} -> {ra['us_short']:.1f} | "
                     f"{rb.get('ms_long', float('nan')):.2f} -> {ra['ms_long']:.2f} | "
                     + (f"{ra['ms_f64']:.2f} ({ra['ms_f64'] / ra['ms_np32']:.0f}x) |" if "ms_f64" in ra else " |"))
    print("\n".join(lines))


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pm = sub.add_parser("measure")
    pm.add_argument("out")
    pm.add_argument("--ember", default=ROOT)
    pm.add_argument("--only", nargs="*", default=None)
    pt = sub.add_parser("table")
    pt.add_argument("before")
    pt.add_argument("after")
    args = p.parse_args()
    if args.cmd == "measure":
        measure(os.path.abspath(args.ember), args.out, args.only)
    else:
        table(args.before, args.after)
