"""torch.func's transforms (issue 20): ember against PyTorch 2.x (CPU), side by side in one run, same threads.

    python bench/func.py                  # every case, 1 thread (under a minute)
    python bench/func.py --quick          # fewer repeats (smoke run)
    python bench/func.py --threads 2      # BLAS and torch at 2 threads
    python bench/func.py --cpu-time       # the thread's CPU time instead of the wall clock (1 thread only)
    python bench/func.py --markdown       # also print the README table
    python bench/func.py --only psg jac   # some of the cases: psg, jac, hess, ens
    python bench/func.py --profile psg:vmap(grad)   # cProfile of ember's side of one row, no timing table

Cases (float32, inputs from NumPy's generator with a fixed seed; both libraries get the same weights and data):

* psg  -- per-sample gradients, the torch.func tutorial's recipe: a small CNN (bench/cnn.py's network as an
  ``nn.Module``: conv 1->8 3x3, relu, max_pool 2, conv 8->16 3x3, relu, max_pool 2, linear 400->10,
  log_softmax, nll_loss) on a batch of 64 MNIST-shaped 1x28x28 samples.
  ``vmap(grad(compute_loss), in_dims=(None, None, 0, 0))(params, buffers, data, targets)`` with
  ``functional_call`` inside ``compute_loss``, against the tutorial's Python loop (one forward and one
  ``autograd.grad`` per sample, then ``stack``).
* jac  -- the Jacobian (256 x 256) of an MLP R^256 -> R^256 (Linear 256->256, tanh, Linear 256->256) at one
  point: ``jacrev``, ``jacfwd``, ``autograd.functional.jacobian`` (its default: one backward per output row)
  and the same with ``vectorize=True``; and the same by hand in NumPy (``(W2 * tanh'(z)) @ W1``).
* hess -- the Hessian (64 x 64) of R^64 -> R (Linear 64->64, tanh, Linear 64->1, squeezed): ``hessian``
  (torch.func's is ``jacfwd(jacrev)``), ``autograd.functional.hessian`` (default and ``vectorize=True``);
  by hand in NumPy (``W1^T diag(w2 * tanh''(z)) W1``).
* ens  -- model ensembling, the torch.func tutorial's: 10 MLPs (784->128->128->10, relu) on one minibatch of
  64: ``stack_module_state`` + ``vmap(functional_call, in_dims=(0, 0, None))`` against a Python loop over the
  models; by hand in NumPy (batched ``matmul`` over the stacked weights).

Each cell is the median of the timed repeats (wall clock, ms; with ``--cpu-time`` the calling thread's CPU time,
steadier on a loaded machine and valid at 1 thread) after one warm-up call; ember's and torch's
repeats alternate, so that both see the same load on a shared machine. Repeats are capped so that a row takes
a few seconds at most. Before timing, every ember result is checked against torch's result of the same
method on the same inputs (``allclose``, rtol 1e-4, atol 1e-5 x the largest value): the "check" column says
"ok" or the largest difference, so that a wrong answer is never measured as a fast one. An ember transform
that does not exist yet shows as "not built", one that raises as "error"; the benchmark never fails a build
and never asserts.

Targets of issue 20: vmap(grad) at least 10x faster than the loop; vmap(grad), jacrev and jacfwd within 1.5x
of torch.func's time.
"""
from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import os
import platform
import pstats
import re
import statistics
import sys
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
CASES = ("psg", "jac", "hess", "ens")
TITLES = {
    "psg": "per-sample grads, CNN, batch 64",
    "jac": "Jacobian, MLP 256 -> 256",
    "hess": "Hessian, MLP 64 -> 1",
    "ens": "ensemble of 10 MLPs, batch 64",
}


def parse_args(argv=None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    ap.add_argument("--threads", type=int, default=1, help="threads for NumPy's BLAS and torch (default 1)")
    ap.add_argument("--markdown", action="store_true", help="also print the table as Markdown (README)")
    ap.add_argument("--only", nargs="+", choices=CASES, help="run only these cases")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds of timed calls per row and library (default 4, --quick 1)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time the calling thread's CPU time (time.thread_time) instead of the wall clock: steadier "
                         "on a loaded machine, and valid only at --threads 1 (every library then computes on the "
                         "calling thread)")
    ap.add_argument("--profile", metavar="CASE:METHOD",
                    help="cProfile ember's side of one row (e.g. 'psg:vmap(grad)', 'jac:jacrev') and exit")
    return ap.parse_args(argv)


ARGS = parse_args() if __name__ == "__main__" else None
if ARGS is not None:   # before NumPy (and its BLAS) is loaded, as bench/programs.py does for its workers
    for _var in THREAD_VARS:
        os.environ[_var] = str(ARGS.threads)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:  # the torch column is optional
    torch = None


class NotBuilt(Exception):
    """A name of torch.func's API that the library does not have (yet)."""


def func_api(lib, *names):
    """``lib.func.<name>`` for each name; NotBuilt naming the first one missing."""
    got = []
    for name in names:
        fn = getattr(getattr(lib, "func", None), name, None)
        if fn is None:
            raise NotBuilt(f"{lib.__name__}.func.{name}")
        got.append(fn)
    return got if len(got) > 1 else got[0]


# ----------------------------------------------------------------------------------------------- data
def _init_module(lib, module, rng) -> None:
    """The same weights in both libraries: each parameter, in registration order, from the generator
    (uniform in +-1/sqrt(fan_in), as nn.Linear and nn.Conv2d initialise)."""
    with lib.no_grad():
        for p in module.parameters():
            fan_in = int(np.prod(p.shape[1:])) if p.dim() > 1 else p.shape[0]
            bound = 1.0 / np.sqrt(fan_in)
            p.copy_(lib.tensor(rng.uniform(-bound, bound, tuple(p.shape)).astype(np.float32)))


def _cnn(lib):
    nn, F = lib.nn, lib.nn.functional

    class SimpleCNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 3)
            self.conv2 = nn.Conv2d(8, 16, 3)
            self.fc = nn.Linear(16 * 5 * 5, 10)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)
            return F.log_softmax(self.fc(lib.flatten(x, 1)), dim=1)
    return SimpleCNN()


def _mlp(lib, sizes):
    nn = lib.nn
    layers = []
    for k in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[k], sizes[k + 1]))
        if k < len(sizes) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def _simple_mlp(lib):
    """The ensembling tutorial's model class (784 -> 128 -> 128 -> 10, relu), built in ``lib``."""
    nn, F = lib.nn, lib.nn.functional

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(784, 128)
            self.fc2 = nn.Linear(128, 128)
            self.fc3 = nn.Linear(128, 10)

        def forward(self, x):
            x = x.flatten(1)
            x = F.relu(self.fc1(x))
            x = F.relu(self.fc2(x))
            return self.fc3(x)
    return SimpleMLP


# ------------------------------------------------------------------------------------------ the cases
# Each case builder takes a library and returns {method: callable}; a callable returns the result as a
# tensor or a pytree of tensors. A method whose API is missing maps to its NotBuilt exception.

def _methods(builders: dict) -> dict:
    out = {}
    for name, build in builders.items():
        try:
            out[name] = build()
        except Exception as e:   # NotBuilt, or an error while building: the row says which
            out[name] = e
    return out


def case_psg(lib, seed=0):
    rng = np.random.default_rng(seed)
    model = _cnn(lib)
    _init_module(lib, model, rng)
    data = lib.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))
    targets = lib.tensor(rng.integers(0, 10, 64))
    F = lib.nn.functional
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = {k: v.detach() for k, v in model.named_buffers()}

    def build_vmap():
        vmap, grad, functional_call = func_api(lib, "vmap", "grad", "functional_call")

        def compute_loss(params, buffers, sample, target):
            batch = sample.unsqueeze(0)
            targets = target.unsqueeze(0)
            predictions = functional_call(model, (params, buffers), (batch,))
            return F.nll_loss(predictions, targets)
        ft = vmap(grad(compute_loss), in_dims=(None, None, 0, 0))
        return lambda: ft(params, buffers, data, targets)

    def build_loop():
        names = [k for k, _ in model.named_parameters()]
        plist = list(model.parameters())

        def compute_grad(sample, target):
            loss = F.nll_loss(model(sample.unsqueeze(0)), target.unsqueeze(0))
            return lib.autograd.grad(loss, plist)

        def run():
            per_sample = [compute_grad(data[i], targets[i]) for i in range(data.shape[0])]
            return {n: lib.stack(shards) for n, shards in zip(names, zip(*per_sample))}
        return run

    return _methods({"vmap(grad)": build_vmap, "loop": build_loop})


def case_jac(lib, seed=1):
    rng = np.random.default_rng(seed)
    model = _mlp(lib, (256, 256, 256))
    _init_module(lib, model, rng)
    x = lib.tensor(rng.standard_normal(256).astype(np.float32))
    AF = lib.autograd.functional

    def build(name):
        def b():
            tr = func_api(lib, name)(model)
            return lambda: tr(x)
        return b

    return _methods({
        "jacrev": build("jacrev"),
        "jacfwd": build("jacfwd"),
        "F.jacobian": lambda: (lambda: AF.jacobian(model, x)),
        "F.jacobian(vectorize)": lambda: (lambda: AF.jacobian(model, x, vectorize=True)),
    })


def numpy_jac(seed=1):
    rng = np.random.default_rng(seed)
    ws = [rng.uniform(-1 / 16, 1 / 16, s).astype(np.float32) for s in ((256, 256), (256,), (256, 256), (256,))]
    w1, b1, w2, _ = ws
    x = rng.standard_normal(256).astype(np.float32)

    def run():
        t = np.tanh(w1 @ x + b1)
        return (w2 * (1 - t * t)) @ w1
    return run


def case_hess(lib, seed=2):
    rng = np.random.default_rng(seed)
    model = _mlp(lib, (64, 64, 1))
    _init_module(lib, model, rng)
    x = lib.tensor(rng.standard_normal(64).astype(np.float32))
    AF = lib.autograd.functional

    def f(v):
        return model(v).squeeze(-1)

    def build_hessian():
        h = func_api(lib, "hessian")(f)
        return lambda: h(x)

    return _methods({
        "hessian": build_hessian,
        "F.hessian": lambda: (lambda: AF.hessian(f, x)),
        "F.hessian(vectorize)": lambda: (lambda: AF.hessian(f, x, vectorize=True)),
    })


def numpy_hess(seed=2):
    rng = np.random.default_rng(seed)
    w1 = rng.uniform(-1 / 8, 1 / 8, (64, 64)).astype(np.float32)
    b1 = rng.uniform(-1 / 8, 1 / 8, 64).astype(np.float32)
    w2 = rng.uniform(-1 / 8, 1 / 8, (1, 64)).astype(np.float32)
    rng.uniform(-1 / 8, 1 / 8, 1)   # b2: no part in the Hessian
    x = rng.standard_normal(64).astype(np.float32)

    def run():
        t = np.tanh(w1 @ x + b1)
        d = w2[0] * (-2 * t * (1 - t * t))   # w2 * tanh''(z)
        return (w1.T * d) @ w1
    return run


def case_ens(lib, seed=3):
    rng = np.random.default_rng(seed)
    model_class = _simple_mlp(lib)
    models = [model_class() for _ in range(10)]
    for m in models:
        _init_module(lib, m, rng)
    minibatch = lib.tensor(rng.standard_normal((64, 1, 28, 28)).astype(np.float32))

    def build_vmap():
        vmap, functional_call, stack_module_state = func_api(lib, "vmap", "functional_call", "stack_module_state")
        params, buffers = stack_module_state(models)
        base = copy.deepcopy(models[0]).to("meta")

        def fmodel(params, buffers, x):
            return functional_call(base, (params, buffers), (x,))
        ft = vmap(fmodel, in_dims=(0, 0, None))
        return lambda: ft(params, buffers, minibatch)

    def build_loop():
        return lambda: lib.stack([m(minibatch) for m in models])

    return _methods({"vmap": build_vmap, "loop": build_loop})


def numpy_ens(seed=3):
    rng = np.random.default_rng(seed)
    shapes = ((128, 784), (128,), (128, 128), (128,), (10, 128), (10,))
    per_model = [[rng.uniform(-1 / np.sqrt(s[-1] if len(s) > 1 else s[0]), 1 / np.sqrt(s[-1] if len(s) > 1 else s[0]),
                              s).astype(np.float32) for s in shapes] for _ in range(10)]
    W1, B1, W2, B2, W3, B3 = (np.stack([m[k] for m in per_model]) for k in range(6))
    x = rng.standard_normal((64, 784)).astype(np.float32)

    def run():
        h = np.maximum(np.matmul(x, W1.transpose(0, 2, 1)) + B1[:, None], 0)
        h = np.maximum(np.matmul(h, W2.transpose(0, 2, 1)) + B2[:, None], 0)
        return np.matmul(h, W3.transpose(0, 2, 1)) + B3[:, None]
    return run


BUILDERS = {"psg": case_psg, "jac": case_jac, "hess": case_hess, "ens": case_ens}
NUMPY = {"jac": ("jacobian by hand", numpy_jac), "hess": ("Hessian by hand", numpy_hess),
         "ens": ("batched matmul by hand", numpy_ens)}


# --------------------------------------------------------------------------------------- measuring
def leaves(result) -> list:
    """The result's tensors as NumPy arrays, in a fixed order (dicts by key)."""
    if isinstance(result, dict):
        return [a for k in sorted(result) for a in leaves(result[k])]
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in leaves(r)]
    if isinstance(result, np.ndarray):
        return [result]
    return [np.asarray(result.detach().cpu().numpy())]


def compare(got, want) -> str:
    """'ok' when every array is allclose to torch's (rtol 1e-4, atol 1e-5 x the largest |value|), else the
    largest difference relative to that scale."""
    a, b = leaves(got), leaves(want)
    if len(a) != len(b) or any(x.shape != y.shape for x, y in zip(a, b)):
        return "SHAPES DIFFER " + str([x.shape for x in a][:3]) + " vs " + str([y.shape for y in b][:3])
    worst, ok = 0.0, True
    for x, y in zip(a, b):
        scale = max(float(np.max(np.abs(y))), 1e-30) if y.size else 1.0
        ok &= bool(np.allclose(x, y, rtol=1e-4, atol=1e-5 * scale))
        if x.size:
            worst = max(worst, float(np.max(np.abs(x.astype(np.float64) - y))) / scale)
    return "ok" if ok else f"DIFFERS ({worst:.1e} rel.)"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, NotBuilt):
        return "not built"
    msg = str(exc).splitlines()[0] if str(exc) else ""
    return f"error: {type(exc).__name__}: {msg[:70]}"


CLOCK = time.perf_counter   # or time.thread_time (--cpu-time)


def measure(fns: dict, budget: float, max_repeats: int) -> dict:
    """Median ms per library of alternating repeats after one warm-up call each. The repeat count is the
    largest that keeps each library's timed calls within ``budget`` seconds (at least 3, at most
    ``max_repeats``), judged from the warm-up."""
    times = {k: [] for k in fns}
    warm = {}
    for k, fn in fns.items():
        t0 = CLOCK()
        fn()
        warm[k] = CLOCK() - t0
    repeats = int(min(max_repeats, max(3, budget / max(max(warm.values()), 1e-6))))
    order = list(fns)
    gc.collect()
    for r in range(repeats):
        for k in (order if r % 2 == 0 else order[::-1]):
            t0 = CLOCK()
            fns[k]()
            times[k].append((CLOCK() - t0) * 1e3)
    return {k: (statistics.median(v), repeats) for k, v in times.items()}


def run_case(case: str, budget: float, max_repeats: int) -> list[dict]:
    """The rows of one case: per method, ember's and torch's median ms and the check of ember's result."""
    e_methods = BUILDERS[case](ember)
    t_methods = BUILDERS[case](torch) if torch is not None else {}
    rows = []
    torch_ref = None   # torch's first method's result: its other methods must agree with it (a sanity check)
    for method, efn in e_methods.items():
        row = {"case": case, "method": method, "ember": None, "torch": None, "check": "-", "note": "", "n": 0}
        tfn = t_methods.get(method)
        if isinstance(tfn, Exception):
            row["note"] = f"torch: {_describe(tfn)}"
            tfn = None
        want = None
        if tfn is not None:
            want = tfn()
            if torch_ref is None:
                torch_ref = want
            elif compare(want, torch_ref) != "ok":
                row["note"] = "torch's methods disagree: " + compare(want, torch_ref)
        fns = {}
        if isinstance(efn, Exception):
            row["ember_status"] = _describe(efn)
        else:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    got = efn()
            except Exception as exc:   # a benchmark never fails: the row says what went wrong
                row["ember_status"] = _describe(exc)
            else:
                fallbacks = sorted({m.group(1) for w in caught
                                    if (m := re.search(r"batching rule for ([\w.]*\w)", str(w.message)))})
                if fallbacks:   # ops vmap ran by its loop-over-the-batch fallback (PyTorch's warning)
                    row["note"] = "fallback: " + ", ".join(fallbacks)
                fns["ember"] = efn
                if want is not None:
                    row["check"] = compare(got, want)
        if tfn is not None:
            fns["torch"] = tfn
        if fns:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    timed = measure(fns, budget, max_repeats)
                for lib, (ms, n) in timed.items():
                    row[lib] = ms
                    row["n"] = n
            except Exception as exc:
                row["ember_status"] = _describe(exc)
                row["ember"] = None
        rows.append(row)
        sys.stdout.flush()
        print(f"  {case} {method}: ember {fmt(row['ember'], row.get('ember_status'))}, torch {fmt(row['torch'])}"
              f", check {row['check']}" + (f" ({row['note']})" if row["note"] else ""), file=sys.stderr)
    if case in NUMPY:
        name, build = NUMPY[case]
        fn = build()
        row = {"case": case, "method": "numpy: " + name, "ember": None, "torch": None, "check": "-", "note": "",
               "n": 0}
        ref = t_methods.get("jacrev" if case == "jac" else "hessian" if case == "hess" else "loop")
        if callable(ref):
            row["check"] = compare(fn(), ref())
        ms, n = measure({"numpy": fn}, budget, max_repeats)["numpy"]
        row["numpy"], row["n"] = ms, n
        rows.append(row)
    return rows


def fmt(ms, status=None) -> str:
    if ms is None:
        return status or "-"
    return f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def targets(rows: list[dict]) -> list[tuple[str, str, str, str]]:
    """(what, target, figure, met?) for issue 20's targets."""
    by = {(r["case"], r["method"]): r for r in rows}
    out = []

    def add(what, target, num, den, limit, faster):
        if num is None or den is None:
            out.append((what, target, "-", "not measured"))
            return
        ratio = num / den
        out.append((what, target, f"{ratio:.3f}x", "met" if (ratio >= limit if faster else ratio <= limit)
                    else "missed"))

    v, loop = by.get(("psg", "vmap(grad)")), by.get(("psg", "loop"))
    if v and loop:
        add("ember vmap(grad) vs ember loop (loop ms / vmap ms)", ">= 10x", loop["ember"], v["ember"], 10, True)
        add("ember vmap(grad) vs torch.func (ember ms / torch ms)", "<= 1.5x", v["ember"], v["torch"], 1.5, False)
    for m in ("jacrev", "jacfwd"):
        r = by.get(("jac", m))
        if r:
            add(f"ember {m} vs torch.func (ember ms / torch ms)", "<= 1.5x", r["ember"], r["torch"], 1.5, False)
    return out


def print_tables(rows: list[dict], markdown: bool, threads: int, quick: bool) -> None:
    head = f"{'case':34s} {'method':28s} {'ember ms':>10s} {'torch ms':>10s} {'ember/torch':>11s} {'numpy ms':>9s}" \
           f" {'n':>3s}  check"
    print()
    print(head)
    print("-" * len(head))
    for r in rows:
        ratio = f"{r['ember'] / r['torch']:.2f}x" if r["ember"] and r["torch"] else "-"
        print(f"{TITLES[r['case']]:34s} {r['method']:28s} {fmt(r['ember'], r.get('ember_status')):>10s} "
              f"{fmt(r['torch']):>10s} {ratio:>11s} {fmt(r.get('numpy')):>9s} {r['n']:>3d}  {r['check']}"
              + (f"  ({r['note']})" if r["note"] else ""))
    tg = targets(rows)
    if tg:
        print("\nissue 20's targets:")
        for what, target, fig, met in tg:
            print(f"  {what:58s} target {target:>7s}: {fig:>8s}  {met}")
    for r in rows:
        status = r.get("ember_status", "")
        if status.startswith("error"):
            print(f"\nember {r['case']} {r['method']}: {status}")
    if not markdown:
        return
    clock = "CPU time of the thread" if CLOCK is time.thread_time else "wall clock"
    print(f"\n`python bench/func.py{' --quick' if quick else ''}{' --cpu-time' if CLOCK is time.thread_time else ''}"
          f" --threads {threads}`: median ms ({clock}) after one warm-up, ember's and torch's repeats alternating; "
          "float32\n")
    print("| workload | method | ember ms | torch ms | ember/torch | NumPy by hand ms | ember = torch |")
    print("|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        ratio = f"{r['ember'] / r['torch']:.2f}x" if r["ember"] and r["torch"] else "-"
        method = r["method"].removeprefix("numpy: ")
        print(f"| {TITLES[r['case']]} | {method} | {fmt(r['ember'], r.get('ember_status'))} | {fmt(r['torch'])} | "
              f"{ratio} | {fmt(r.get('numpy'))} | {r['check']} |")
    if tg:
        print("\n| target (issue 20) | wanted | measured | |")
        print("|---|---:|---:|---|")
        for what, target, fig, met in tg:
            print(f"| {what} | {target} | {fig} | {met} |")


def profile(spec: str) -> None:
    """cProfile of ember's side of one row: 3 calls after a warm-up, top functions by cumulative and own
    time. The cyclic GC is off while profiling: otherwise its pauses are charged to whichever function
    happened to allocate (``str.join``, ``_record``), and the profiler's own objects make them more frequent;
    the unprofiled times with the GC on and off are printed first, to show what the GC costs."""
    case, _, method = spec.partition(":")
    fn = BUILDERS[case](ember).get(method) if case in BUILDERS else None
    if fn is None or isinstance(fn, Exception):
        raise SystemExit(f"--profile {spec}: " + (_describe(fn) if isinstance(fn, Exception) else
                                                  f"no such row (cases {CASES}; methods of {case}: "
                                                  f"{list(BUILDERS[case](ember)) if case in BUILDERS else '-'})"))
    warnings.simplefilter("ignore", UserWarning)
    fn()
    n = 3
    for gc_on in (True, False):
        (gc.enable if gc_on else gc.disable)()
        ts = []
        for _ in range(7):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        print(f"unprofiled, GC {'on' if gc_on else 'off'}: {statistics.median(ts) * 1e3:.2f} ms per call (median of 7)")
    gc.collect()
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    gc.enable()
    print(f"== cProfile of {n} calls of ember's {case}:{method} ({(time.perf_counter() - t0) / n * 1e3:.1f} ms "
          "per call under the profiler, GC off)")
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)


def main(args: argparse.Namespace) -> None:
    if torch is not None:
        torch.set_num_threads(args.threads)
    if args.profile:
        profile(args.profile)
        return
    global CLOCK
    if args.cpu_time:
        if args.threads != 1:
            raise SystemExit("--cpu-time measures the calling thread only: use it with --threads 1")
        CLOCK = time.thread_time
    budget = args.budget if args.budget is not None else (1.0 if args.quick else 4.0)
    max_repeats = 5 if args.quick else 25
    from bench.overhead import numpy_blas_threads
    blas, how = numpy_blas_threads()
    print(f"python {platform.python_version()}, numpy {np.__version__}, ember {ember.__version__}, "
          f"torch {torch.__version__ if torch is not None else '(not installed: no torch column)'}")
    print(f"threads: {args.threads} ({', '.join(THREAD_VARS)}; torch.set_num_threads); NumPy's BLAS reports "
          f"{blas} ({how}); load average {os.getloadavg()[0]:.1f}", flush=True)
    rows = []
    t0 = time.perf_counter()
    for case in args.only or CASES:
        rows += run_case(case, budget, max_repeats)
    print(f"(measured in {time.perf_counter() - t0:.0f} s; load average {os.getloadavg()[0]:.1f} at the end)")
    print_tables(rows, args.markdown, args.threads, args.quick)


if __name__ == "__main__":
    main(ARGS)
