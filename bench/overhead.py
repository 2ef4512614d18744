"""Per-op overhead of ember's autograd, side by side with PyTorch (CPU) and hand-written NumPy.

    python bench/overhead.py            # full run (~1 minute)
    python bench/overhead.py --quick    # shorter run, no million-node chain

The workload is a chain of 300 steps ``x = tanh(x * 1.01 + 0.1)`` -- 900 primitive ops -- run forward
and then backward from ``.sum()``, for shapes (1,), (64,) and (256, 256) float32. The three columns:

* ember:  the same code as for torch, through ``import ember``;
* torch:  PyTorch 2.x on CPU, ``torch.set_num_threads(n)`` with n = the threads NumPy's BLAS uses (1
          when that cannot be found), so neither side gets more cores than the other; skipped when
          torch is not installed;
* numpy:  the same maths by hand: the forward pass stores every tanh output, then the backward pass
          applies ``g = g * (1 - y*y); g = g * 1.01`` in reverse -- no graph, no autograd. This is the
          floor: what the arithmetic alone costs in NumPy.

Each cell is the median of several timed repeats after warm-up runs (time.perf_counter). Per-op
microseconds are the total divided by 900. This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:  # the torch column is optional
    torch = None

STEPS = 300
OPS = 3 * STEPS   # mul, add, tanh per step
SHAPES = [(1,), (64,), (256, 256)]


# ----------------------------------------------------------------------------------------- threads
def numpy_blas_threads() -> tuple[int, str]:
    """The number of threads NumPy's BLAS uses, and how it was found (default 1)."""
    try:  # threadpoolctl, when it is installed, knows every BLAS
        from threadpoolctl import threadpool_info
        for info in threadpool_info():
            if info.get("user_api") == "blas":
                return int(info["num_threads"]), f"threadpoolctl ({info.get('internal_api')})"
    except Exception:
        pass
    try:  # the OpenBLAS that NumPy wheels bundle in numpy.libs
        import ctypes
        import glob
        libdir = os.path.dirname(np.__file__) + ".libs"
        for path in glob.glob(os.path.join(libdir, "*openblas*")):
            lib = ctypes.CDLL(path)
            for sym in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                        "openblas_get_num_threads64_", "openblas_get_num_threads"):
                fn = getattr(lib, sym, None)
                if fn is not None:
                    return int(fn()), f"{sym}() in {os.path.basename(path)}"
    except Exception:
        pass
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var]), f"${var}"
    return 1, "default"


# --------------------------------------------------------------------------------------- workloads
def chain_autograd(lib, x0):
    """ember or torch: 300 x (mul, add, tanh), then .sum().backward(). Returns the leaf's grad."""
    x = lib.tensor(x0, requires_grad=True)
    y = x
    for _ in range(STEPS):
        y = lib.tanh(y * 1.01 + 0.1)
    y.sum().backward()
    return x.grad


def chain_numpy(x0):
    """The same maths by hand: forward keeps each tanh output, backward is the chain rule unrolled."""
    y = x0
    ys = []
    for _ in range(STEPS):
        y = np.tanh(y * np.float32(1.01) + np.float32(0.1))
        ys.append(y)
    g = np.ones_like(y)
    for y in reversed(ys):
        g = g * (1 - y * y)       # tanh'
        g = g * np.float32(1.01)  # the multiply
    return g


def timeit(fn, warmup: int, repeats: int) -> float:
    """Median wall time of fn() in seconds, after warm-up runs; the GC is off while timing."""
    for _ in range(warmup):
        fn()
    times = []
    gc_was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        for _ in range(repeats):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    finally:
        if gc_was_enabled:
            gc.enable()
    return statistics.median(times)


def import_time(module: str, runs: int = 5) -> float | None:
    """Median seconds of `import module` in a fresh interpreter (None if it fails)."""
    code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
    times = []
    for _ in range(runs):
        r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            return None
        times.append(float(r.stdout.strip().splitlines()[-1]))
    return statistics.median(times)


def million_chain(n: int, collect: bool = False) -> tuple[float, float]:
    """ember: y = y * 1.0001 repeated n times, then backward. Returns (forward s, backward s).

    float64, because 1.0001 ** 1e6 = e**100 overflows float32. Python's cyclic GC is off while timing
    (as for the table) unless ``collect``: its full collections walk every live graph object, which
    is time the GC spends, not the autograd machinery.
    """
    x = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)
    gc.collect()
    if not collect:
        gc.disable()
    try:
        t0 = time.perf_counter()
        y = x
        for _ in range(n):
            y = y * 1.0001
        t1 = time.perf_counter()
        y.backward(ember.ones_like(y))
        t2 = time.perf_counter()
    finally:
        gc.enable()
    del y
    gc.collect()
    return t1 - t0, t2 - t1


# ------------------------------------------------------------------------------------------- main
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats, no long-chain timings")
    args = ap.parse_args(argv)

    threads, how = numpy_blas_threads()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, ember {ember.__version__}, "
          f"torch {torch.__version__ if torch else '(not installed: column skipped)'}")
    if torch is not None:
        torch.set_num_threads(threads)
        print(f"torch.set_num_threads({threads}): NumPy's BLAS thread count, from {how}")
    print(f"workload: {STEPS} x [x = tanh(x * 1.01 + 0.1)] = {OPS} primitive ops, forward + "
          f".sum().backward(), float32; median of repeats after warm-up")
    print()

    # (warm-up, repeats) per shape: the large shape is dominated by arithmetic, so fewer repeats.
    plan = {(1,): (3, 25), (64,): (3, 25), (256, 256): (2, 8)}
    if args.quick:
        plan = {(1,): (1, 7), (64,): (1, 7), (256, 256): (1, 3)}

    rng = np.random.default_rng(0)
    rows, checks = [], []
    for shape in SHAPES:
        warmup, repeats = plan[shape]
        x0 = rng.standard_normal(shape).astype(np.float32)
        t_e = timeit(lambda: chain_autograd(ember, x0), warmup, repeats)
        t_t = timeit(lambda: chain_autograd(torch, x0), warmup, repeats) if torch is not None else None
        t_n = timeit(lambda: chain_numpy(x0), warmup, repeats)
        rows.append((shape, t_e, t_t, t_n, repeats))
        # sanity, not an assertion: the three columns compute the same gradient
        g_n = chain_numpy(x0)
        diffs = [f"ember {np.max(np.abs(chain_autograd(ember, x0).numpy() - g_n)):.1e}"]
        if torch is not None:
            diffs.append(f"torch {np.max(np.abs(chain_autograd(torch, x0).numpy() - g_n)):.1e}")
        checks.append(f"{shape}: " + ", ".join(diffs))

    header = (f"{'shape':<12}{'ember ms':>10}{'torch ms':>10}{'numpy ms':>10}{'ember/torch':>13}"
              f"{'ember/numpy':>13}{'ember us/op':>13}{'torch us/op':>13}{'numpy us/op':>13}{'reps':>6}")
    print(header)
    print("-" * len(header))
    for shape, t_e, t_t, t_n, repeats in rows:
        cell_t = f"{t_t * 1e3:10.2f}" if t_t is not None else f"{'-':>10}"
        ratio_t = f"{t_e / t_t:12.1f}x" if t_t is not None else f"{'-':>13}"
        op_t = f"{t_t / OPS * 1e6:13.2f}" if t_t is not None else f"{'-':>13}"
        print(f"{str(shape):<12}{t_e * 1e3:10.2f}{cell_t}{t_n * 1e3:10.2f}{ratio_t}{t_e / t_n:12.1f}x"
              f"{t_e / OPS * 1e6:13.2f}{op_t}{t_n / OPS * 1e6:13.2f}{repeats:6d}")
    print("max |grad - numpy grad|: " + "; ".join(checks))
    print()

    imp_e = import_time("ember")
    imp_t = import_time("torch") if torch is not None else None
    fmt = lambda s: f"{s * 1e3:.0f} ms" if s is not None else "n/a"  # noqa: E731
    print(f"import time (fresh interpreter, median of 5): ember {fmt(imp_e)}, torch {fmt(imp_t)}")

    if args.quick:
        return
    print()
    print("long chains (ember): y = y * 1.0001 repeated n times, shape (1,) float64, then backward; GC off")
    print(f"{'n':>10}{'forward s':>12}{'backward s':>12}{'fwd us/op':>12}{'bwd us/op':>12}")
    results = {}
    for n in (250_000, 500_000, 1_000_000):
        fwd, bwd = million_chain(n)
        results[n] = (fwd, bwd)
        print(f"{n:>10,}{fwd:12.2f}{bwd:12.2f}{fwd / n * 1e6:12.2f}{bwd / n * 1e6:12.2f}")
    f25, b25 = results[250_000]
    f50, b50 = results[500_000]
    f100, b100 = results[1_000_000]
    print(f"scaling (linear = 2.00): forward 500k/250k {f50 / f25:.2f}, 1M/500k {f100 / f50:.2f}; "
          f"backward 500k/250k {b50 / b25:.2f}, 1M/500k {b100 / b50:.2f}")
    fwd, bwd = million_chain(250_000, collect=True)
    print(f"same 250k chain with Python's GC on: forward {fwd:.2f} s, backward {bwd:.2f} s "
          f"({fwd / f25:.1f}x / {bwd / b25:.1f}x the GC-off times)")


if __name__ == "__main__":
    main()
