"""The functional API: vectorized Jacobians and Hessians (one batched backward pass) against the row-by-row loop,
ember against torch, measured side by side in one run.

    python bench/functional.py            # PYTHONPATH=$PWD to measure a checkout
    python bench/functional.py --quick    # fewer repeats

Workloads (float64, fixed random data):
* jacobian: f(x) = tanh(W @ x), W a 256x256 matrix, x in R^256: a 256x256 Jacobian;
* hessian:  g(x) = sum(tanh(A @ x) ** 2), A a 64x64 matrix, x in R^64: a 64x64 Hessian.
``vectorize=True`` runs every row in one backward pass (``autograd.grad(is_grads_batched=True)``),
``vectorize=False`` one backward pass per row. torch runs with ``torch.set_num_threads(n)``, n the
thread count of NumPy's BLAS (as bench/overhead.py). The figures are printed, never asserted.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead import numpy_blas_threads, timeit  # noqa: E402

import ember  # noqa: E402

try:
    import torch
except ImportError:  # the torch column is optional
    torch = None

N_JAC = 256
N_HESS = 64


def workloads(lib, rng_seed=0):
    rng = np.random.default_rng(rng_seed)
    W = lib.tensor(rng.standard_normal((N_JAC, N_JAC)) / np.sqrt(N_JAC))
    x = lib.tensor(rng.standard_normal(N_JAC))
    A = lib.tensor(rng.standard_normal((N_HESS, N_HESS)) / np.sqrt(N_HESS))
    z = lib.tensor(rng.standard_normal(N_HESS))
    F = lib.autograd.functional
    return {
        "jacobian R^256 -> R^256": lambda vec: F.jacobian(lambda v: lib.tanh(W @ v), x, vectorize=vec),
        "hessian of R^64 -> R": lambda vec: F.hessian(lambda v: (lib.tanh(A @ v) ** 2).sum(), z, vectorize=vec),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args()
    warmup, repeats = (1, 3) if args.quick else (2, 7)
    threads, how = numpy_blas_threads()
    versions = f"python {platform.python_version()}, numpy {np.__version__}, ember {ember.__version__}"
    if torch is not None:
        torch.set_num_threads(threads)
        versions += f", torch {torch.__version__}"
        print(versions)
        print(f"torch.set_num_threads({threads}): NumPy's BLAS thread count, from {how}")
    else:
        print(versions + " (torch not installed: no torch column)")
    print(f"command: python bench/functional.py{' --quick' if args.quick else ''}; median of {repeats} "
          f"after {warmup} warm-up; float64")
    libs = {"ember": workloads(ember)}
    if torch is not None:
        libs["torch"] = workloads(torch)
    print()
    head = (f"{'workload':26s} {'ember vec ms':>12s} {'ember loop ms':>13s} {'loop/vec':>8s}"
            + (f" {'torch vec ms':>12s} {'torch loop ms':>13s} {'loop/vec':>8s} {'ember/torch vec':>15s}"
               f" {'ember/torch loop':>16s} {'max|ember-torch|':>16s}" if torch is not None else ""))
    print(head)
    print("-" * len(head))
    for name in libs["ember"]:
        t = {}
        res = {}
        for lib, w in libs.items():
            for vec in (True, False):
                t[lib, vec] = timeit(lambda: w[name](vec), warmup, repeats) * 1e3
            res[lib] = w[name](True).detach().numpy()
            loop = w[name](False).detach().numpy()
            if not np.allclose(res[lib], loop, rtol=1e-10, atol=1e-12):
                print(f"  note: {lib} vectorize=True and False differ on {name}")
        line = (f"{name:26s} {t['ember', True]:12.2f} {t['ember', False]:13.2f} "
                f"{t['ember', False] / t['ember', True]:7.1f}x")
        if torch is not None:
            diff = float(np.max(np.abs(res["ember"] - res["torch"])))
            line += (f" {t['torch', True]:12.2f} {t['torch', False]:13.2f} {t['torch', False] / t['torch', True]:7.1f}x"
                     f" {t['ember', True] / t['torch', True]:14.2f}x {t['ember', False] / t['torch', False]:15.2f}x"
                     f" {diff:16.1e}")
        print(line)
    print("\nloop/vec > 1: vectorize=True is that many times faster than the row-by-row loop; "
          "ember/torch < 1: ember is faster.")


if __name__ == "__main__":
    main()
