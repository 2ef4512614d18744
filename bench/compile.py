"""The speed targets of ember.compile, side by side in one run: ember eager, ember compiled, torch eager, NumPy.

    python bench/compile.py                 # every workload, 1 thread (about 2 minutes on the shared 2-core VM)
    python bench/compile.py --quick         # fewer repeats
    python bench/compile.py --only chain1 mlp --repeats 31

Workloads (one timed call each):

* chain1 / chain64: 300 steps ``x = tanh(x * 1.01 + 0.1)`` on a float32 leaf of shape (1,) / (64,), then
  ``.sum().backward()`` (bench/overhead.py's chain).  Compiled: the function from the leaf to the sum goes
  through ``ember.compile``; ``backward`` runs after it as a user would call it.
* scalar: a micrograd-style MLP 2-16-16-1 (ReLU hidden layers, linear output) whose every weight is a 0-d
  ``nn.Parameter``, run the way micrograd's demo does it, neuron by neuron (``b + w0*x0 + w1*x1 + ...``) on
  0-d tensors: for each of 16 points (two moons), the hinge loss ``relu(1 - y * score)``, forward and backward
  (the gradients accumulate over the points).  Compiled: the module goes through ``ember.compile``, its
  inputs are the point's two coordinates and label as 0-d tensors.  The NumPy column is the same maths by hand
  in plain Python floats (faster than NumPy on scalars: the floor).
* mlp / mlp_adam: 784-512-512-10, ReLU, cross-entropy, batch 256, float32: ``zero_grad``, forward, backward,
  SGD step (lr 0.01) / Adam step (lr 1e-3, PyTorch's defaults otherwise).  Compiled: the module computing the
  loss goes through ``ember.compile``; backward and the step as eager.  NumPy: forward and backward by hand,
  ``p -= lr * g`` / Adam's update in place.

How it measures: CPU time of the calling thread (``time.thread_time``), so that the other jobs of a loaded
machine disturb the figures less than wall time would; every library at the same thread count (``--threads``,
default 1: ``OMP/MKL/OPENBLAS_NUM_THREADS`` set before NumPy and torch load, and ``torch.set_num_threads``;
with more than one thread the BLAS's other threads are not counted, so compare at 1).  The columns take turns
call by call, in a rotating order, after warm-up calls (the compiled column's first call traces); Python's
cyclic GC is off while timing.  Each cell is the median of the repeats.  Before timing, every column's
gradients are checked: compiled against eager bit for bit, eager against torch and NumPy to a tolerance.

``ember.compile`` on main before the compiler lands is a pass-through (it returns the function itself): the
script says so, and the compiled column then equals eager.  This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="threads for every library (default 1)")
    ap.add_argument("--repeats", type=int, default=0, help="timed calls per column (default per workload)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--only", nargs="+", choices=["chain1", "chain64", "scalar", "mlp", "mlp_adam"])
    return ap.parse_args(argv)


ARGS = _parse() if __name__ == "__main__" else None
if ARGS is not None:   # before NumPy and torch load their thread pools
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[_var] = str(ARGS.threads)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:   # the torch column is optional
    torch = None

F32 = np.float32


# --------------------------------------------------------------------------------------------- compile
def compile_kind() -> str:
    """What ``ember.compile`` is in this tree: 'pass-through' when it hands the function back unchanged."""
    def probe(x):
        return x + 1
    try:
        out = ember.compile(probe)
    except Exception as e:   # a compiler under construction
        return f"broken ({type(e).__name__}: {e})"
    return "pass-through" if out is probe else f"compiler ({type(out).__module__}.{type(out).__qualname__})"


def try_compile(fn):
    """``ember.compile(fn)``, or None (with the reason printed) when it raises."""
    try:
        return ember.compile(fn)
    except Exception as e:
        print(f"  ember.compile failed: {type(e).__name__}: {e}")
        return None


# ------------------------------------------------------------------------------------------ the chain
STEPS = 300


def chain_fn(x):
    """300 x (mul, add, tanh), summed: the function the compiled column compiles."""
    y = x
    for _ in range(STEPS):
        y = (y * 1.01 + 0.1).tanh()
    return y.sum()


def chain_lib(lib, fn, x0):
    x = lib.tensor(x0, requires_grad=True)
    fn(x).backward()
    return x.grad


def chain_numpy(x0):
    """By hand: the forward keeps each tanh output, the backward is the chain rule unrolled."""
    y, ys = x0, []
    for _ in range(STEPS):
        y = np.tanh(y * F32(1.01) + F32(0.1))
        ys.append(y)
    g = np.ones_like(y)
    for y in reversed(ys):
        g = g * (1 - y * y)
        g = g * F32(1.01)
    return g


def w_chain(shape):
    x0 = np.random.default_rng(0).standard_normal(shape).astype(F32)
    cols = {"ember": lambda: chain_lib(ember, chain_fn, x0)}
    cf = try_compile(chain_fn)
    if cf is not None:
        cols["compiled"] = lambda: chain_lib(ember, cf, x0)
    if torch is not None:
        cols["torch"] = lambda: chain_lib(torch, chain_fn, x0)
    cols["numpy"] = lambda: chain_numpy(x0)
    return cols, lambda out: np.asarray(out.detach().numpy() if hasattr(out, "detach") else out, np.float64)


# -------------------------------------------------------------------------------- micrograd's scalar MLP
SIZES = (2, 16, 16, 1)
POINTS = 16


def moons(n, rng):
    """Two interleaved half circles with labels -1/+1 (micrograd's demo data, sklearn's make_moons)."""
    k = n // 2
    t = rng.uniform(0, math.pi, n)
    xs = np.where(np.arange(n) < k, np.cos(t), 1 - np.cos(t))
    ys = np.where(np.arange(n) < k, np.sin(t), 0.5 - np.sin(t))
    pts = np.stack([xs, ys], 1) + rng.normal(0, 0.1, (n, 2))
    return pts, np.where(np.arange(n) < k, -1.0, 1.0)


def scalar_weights(rng):
    """Per layer: (weights[out][in], biases[out]) as Python floats."""
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers.append(([[float(v) for v in row] for row in rng.uniform(-1, 1, (b, a))], [0.0] * b))
    return layers


def scalar_module(lib, layers):
    """The scalar MLP as an ``nn.Module`` of 0-d parameters under ``lib``."""
    class ScalarMLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = lib.nn.ParameterList([lib.nn.Parameter(lib.tensor(v)) for W, _ in layers
                                           for row in W for v in row])
            self.b = lib.nn.ParameterList([lib.nn.Parameter(lib.tensor(v)) for _, B in layers for v in B])

        def forward(self, x0, x1, label):
            h, wi, bi = [x0, x1], 0, 0
            for li, (a, b) in enumerate(zip(SIZES[:-1], SIZES[1:])):
                out = []
                for _ in range(b):
                    s = self.b[bi]
                    bi += 1
                    for x in h:
                        s = s + self.w[wi] * x
                        wi += 1
                    out.append(s.relu() if li < len(SIZES) - 2 else s)
                h = out
            return (1 - label * h[0]).relu()   # the hinge loss of micrograd's demo
    return ScalarMLP()


def scalar_run(lib, model, fn, data):
    """Forward and backward per point, the gradients accumulating; returns the flat gradient."""
    for p in model.parameters():
        p.grad = None
    for x0, x1, label in data:
        fn(x0, x1, label).backward()
    return [p.grad for p in model.parameters()]


def scalar_python(layers, pts, labels):
    """The same by hand in Python floats: per point, the forward keeps the activations, the backward walks back."""
    gW = [[[0.0] * len(W[0]) for _ in W] for W, _ in layers]
    gB = [[0.0] * len(B) for _, B in layers]
    last = len(layers) - 1
    for (p0, p1), label in zip(pts, labels):
        h, acts = [float(p0), float(p1)], []
        for li, (W, B) in enumerate(layers):
            acts.append(h)
            out = []
            for row, b in zip(W, B):
                s = b
                for w, x in zip(row, h):
                    s = s + w * x
                out.append(max(s, 0.0) if li < last else s)
            h = out
        margin = 1 - label * h[0]
        g = [-label if margin > 0 else 0.0]
        for li in range(last, -1, -1):
            W, x = layers[li][0], acts[li]
            if li < last:   # through the ReLU: its output is the next layer's input
                g = [gj if yj > 0 else 0.0 for gj, yj in zip(g, acts[li + 1])]
            for j, gj in enumerate(g):
                gB[li][j] += gj
                row = gW[li][j]
                for i, xi in enumerate(x):
                    row[i] += gj * xi
            g = [sum(g[j] * W[j][i] for j in range(len(W))) for i in range(len(x))]
    return [v for layer in gW for row in layer for v in row] + [v for layer in gB for v in layer]


def w_scalar():
    rng = np.random.default_rng(1)
    layers = scalar_weights(rng)
    pts, labels = moons(POINTS, rng)

    def data(lib):
        return [(lib.tensor(float(a)), lib.tensor(float(b)), lib.tensor(float(c))) for (a, b), c in zip(pts, labels)]
    e_model = scalar_module(ember, layers)
    c_model = scalar_module(ember, layers)
    e_data = data(ember)
    cols = {"ember": lambda: scalar_run(ember, e_model, e_model, e_data)}
    cm = try_compile(c_model)
    if cm is not None:
        cols["compiled"] = lambda: scalar_run(ember, c_model, cm, e_data)
    if torch is not None:
        t_model, t_data = scalar_module(torch, layers), data(torch)
        cols["torch"] = lambda: scalar_run(torch, t_model, t_model, t_data)
    cols["numpy"] = lambda: scalar_python(layers, pts, labels)

    def flat(out):
        if isinstance(out[0], float):   # by hand: every weight, then every bias, as the modules' parameters()
            return np.array(out, np.float64)
        return np.array([float(g) if g is not None else 0.0 for g in out], np.float64)
    return cols, flat


# ------------------------------------------------------------------------------------------- MLP step
MLP = (784, 512, 512, 10)
BATCH = 256
LR = 0.01


def mlp_data(rng):
    params = []
    for a, b in zip(MLP[:-1], MLP[1:]):
        params += [(rng.standard_normal((b, a)) / np.sqrt(a)).astype(F32), (rng.standard_normal(b) * 0.01).astype(F32)]
    return params, rng.standard_normal((BATCH, MLP[0])).astype(F32), rng.integers(0, MLP[-1], BATCH)


def mlp_module(lib, params):
    """The MLP and its loss as one module (what the compiled column compiles)."""
    class MLPLoss(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = lib.nn.ModuleList([lib.nn.Linear(a, b) for a, b in zip(MLP[:-1], MLP[1:])])
            with lib.no_grad():
                for i, layer in enumerate(self.layers):
                    layer.weight.copy_(lib.tensor(params[2 * i]))
                    layer.bias.copy_(lib.tensor(params[2 * i + 1]))

        def forward(self, x, y):
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i < len(self.layers) - 1:
                    x = lib.nn.functional.relu(x)
            return lib.nn.functional.cross_entropy(x, y)
    return MLPLoss()


ADAM_LR = 1e-3


class LibStep:
    """ember or torch: zero_grad, forward + loss through ``fn`` (the module or its compiled form), backward, the
    optimizer's step (SGD, or Adam with its defaults)."""

    def __init__(self, lib, params, x, y, compiled=False, optim="sgd"):
        self.model = mlp_module(lib, params)
        self.fn = try_compile(self.model) if compiled else self.model
        self.opt = (lib.optim.SGD(self.model.parameters(), lr=LR) if optim == "sgd"
                    else lib.optim.Adam(self.model.parameters(), lr=ADAM_LR))
        self.x, self.y = lib.tensor(x), lib.tensor(y)

    def grads(self):
        self.opt.zero_grad()
        self.fn(self.x, self.y).backward()
        return [p.grad for p in self.model.parameters()]

    def step(self):
        self.opt.zero_grad()
        self.fn(self.x, self.y).backward()
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
    g = e / e.sum(1, keepdims=True)
    n = x.shape[0]
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


class NumpyStep:
    """By hand: the gradients, then ``p -= lr * g`` or Adam's update (in place, float32)."""

    def __init__(self, params, x, y, optim="sgd"):
        self.params, self.x, self.y, self.optim = [p.copy() for p in params], x, y, optim
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def grads(self):
        return mlp_numpy_grads(self.params, self.x, self.y)

    def step(self):
        grads = mlp_numpy_grads(self.params, self.x, self.y)
        if self.optim == "sgd":
            for p, g in zip(self.params, grads):
                p -= F32(LR) * g
            return
        self.t += 1
        b1, b2, eps = F32(0.9), F32(0.999), F32(1e-8)
        bc1, bc2 = 1 - 0.9 ** self.t, 1 - 0.999 ** self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            denom = np.sqrt(v)
            denom /= F32(math.sqrt(bc2))
            denom += eps
            p -= F32(ADAM_LR / bc1) * m / denom


def w_mlp(optim="sgd"):
    params, x, y = mlp_data(np.random.default_rng(2))
    impls = {"ember": LibStep(ember, params, x, y, optim=optim)}
    compiled = LibStep(ember, params, x, y, compiled=True, optim=optim)
    if compiled.fn is not None:
        impls["compiled"] = compiled
    if torch is not None:
        impls["torch"] = LibStep(torch, params, x, y, optim=optim)
    impls["numpy"] = NumpyStep(params, x, y, optim)
    # the check compares the first step's gradients (grads() does not step); the timed calls step
    cols = {name: impl.grads for name, impl in impls.items()}
    steps = {name: impl.step for name, impl in impls.items()}

    def flat(out):
        return np.concatenate([np.asarray(g.detach().numpy() if hasattr(g, "detach") else g, np.float64).ravel()
                               for g in out])
    return cols, flat, steps


# ------------------------------------------------------------------------------------------ measuring
def timed(cols: dict, repeats: int, warmup: int = 2) -> dict:
    """CPU seconds of the calling thread per call, per column: the columns take turns in a rotating order."""
    names = list(cols)
    for _ in range(warmup):
        for n in names:
            cols[n]()
    times = {n: [] for n in names}
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        for r in range(repeats):
            for n in names[r % len(names):] + names[:r % len(names)]:
                t = time.thread_time()
                cols[n]()
                times[n].append(time.thread_time() - t)
            if r % 4 == 3:   # the scalar graphs leave cycles behind in torch's Python objects: collect untimed
                gc.collect()
    finally:
        if was:
            gc.enable()
    return times


def gradients(cols: dict, flat) -> dict:
    """Every column run once: its gradients as one flat float64 array."""
    return {n: flat(f()) for n, f in cols.items()}


def workload(name: str):
    """(columns, flattener, timed columns) of workload ``name``."""
    if name in ("chain1", "chain64"):
        cols, flat = w_chain((1,) if name == "chain1" else (64,))
        return cols, flat, cols
    if name == "scalar":
        cols, flat = w_scalar()
        return cols, flat, cols
    return w_mlp("adam" if name == "mlp_adam" else "sgd")


def check(cols: dict, flat) -> str:
    """Run every column once and compare its gradients: compiled with eager bit for bit, the rest to eager."""
    outs = gradients(cols, flat)
    ref = outs["ember"]
    parts = []
    if "compiled" in outs:
        same = outs["compiled"].shape == ref.shape and np.array_equal(outs["compiled"], ref, equal_nan=True)
        parts.append("compiled == eager bit for bit" if same else
                     f"compiled DIFFERS from eager (max |d| {np.max(np.abs(outs['compiled'] - ref)):.2e})")
    for n in ("torch", "numpy"):
        if n in outs:
            d = np.max(np.abs(outs[n] - ref)) / max(1e-30, np.max(np.abs(ref)))
            parts.append(f"{n} vs eager {d:.1e} rel")
    return "; ".join(parts)


# the targets: (column, against, at most)
TARGETS = {
    "chain1": [("ember", "torch", 0.5), ("compiled", "torch", 0.25), ("compiled", "numpy", 1.3)],
    "chain64": [("ember", "torch", 0.5), ("compiled", "torch", 0.25), ("compiled", "numpy", 1.3)],
    "scalar": [("compiled", "torch", 0.2)],
    "mlp": [("ember", "numpy", 1.05), ("compiled", "numpy", 1.05)],
    "mlp_adam": [("ember", "numpy", 1.05), ("compiled", "numpy", 1.05)],
}
TITLES = {
    "chain1": "chain 300 x tanh(x*1.01+0.1), (1,), fwd+bwd",
    "chain64": "chain 300 x tanh(x*1.01+0.1), (64,), fwd+bwd",
    "scalar": f"micrograd MLP 2-16-16-1 of 0-d tensors, {POINTS} points, fwd+bwd per point",
    "mlp": "MLP 784-512-512-10, batch 256, fwd+bwd+SGD step",
    "mlp_adam": "MLP 784-512-512-10, batch 256, fwd+bwd+Adam step",
}
REPEATS = {"chain1": 31, "chain64": 31, "scalar": 9, "mlp": 21, "mlp_adam": 21}


def main(args) -> None:
    if torch is not None:
        torch.set_num_threads(args.threads)
    kind = compile_kind()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, ember {ember.__version__} "
          f"({os.path.dirname(ember.__file__)}), torch {torch.__version__ if torch else '(not installed)'}")
    print(f"ember.compile: {kind}" + ("  -> the compiled column runs eagerly" if kind == "pass-through" else ""))
    print(f"{args.threads} thread(s) each; CPU time of the calling thread, median of the repeats, columns "
          f"alternating; load average at start {os.getloadavg()[0]:.1f}")
    rows = []
    for name in args.only or list(TITLES):
        cols, flat, steps = workload(name)
        print(f"{TITLES[name]}: {check(cols, flat)}", flush=True)
        reps = args.repeats or REPEATS[name]
        if args.quick:
            reps = max(3, reps // 3)
        times = timed(steps, reps)
        med = {n: statistics.median(v) for n, v in times.items()}
        rows.append((name, med, reps))
    print(f"load average at end {os.getloadavg()[0]:.1f}\n")
    print("| workload | ember eager ms | ember compiled ms | torch eager ms | NumPy ms | eager/torch | "
          "compiled/torch | eager/NumPy | compiled/NumPy | targets |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, med, reps in rows:
        def ms(col):
            return f"{med[col] * 1e3:.2f}" if col in med else "-"

        def ratio(a, b):
            return f"{med[a] / med[b]:.2f}x" if a in med and b in med else "-"
        verdicts = []
        for col, against, limit in TARGETS[name]:
            if col in med and against in med:
                r = med[col] / med[against]
                verdicts.append(f"{col} <= {limit}x {against}: {'met' if r <= limit else 'missed'} ({r:.2f}x)")
        print(f"| {TITLES[name]} | {ms('ember')} | {ms('compiled')} | {ms('torch')} | {ms('numpy')} | "
              f"{ratio('ember', 'torch')} | {ratio('compiled', 'torch')} | {ratio('ember', 'numpy')} | "
              f"{ratio('compiled', 'numpy')} | {'; '.join(verdicts)} |")
    print(f"\nrepeats: {', '.join(f'{n} {r}' for n, _, r in rows)}; NumPy column of the micrograd MLP: plain "
          "Python floats (the same maths by hand).")
    if kind == "pass-through":
        print("ember.compile is a pass-through in this tree: the compiled column is eager ember measured again.")


if __name__ == "__main__":
    main(ARGS)
