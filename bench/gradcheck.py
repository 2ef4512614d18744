"""gradcheck's fast mode against its slow mode, ember and PyTorch side by side.

    python bench/gradcheck.py            # n = 100 and 500
    python bench/gradcheck.py --n 1000   # other input sizes

The function is ``tanh(W @ (sin(x) * x))`` with ``x`` of ``n`` float64 elements (requires grad) and a
fixed ``n x n`` matrix ``W``: elementwise ops and a matmul, one input, one output. Slow mode builds both
``n x n`` Jacobians (2n forward evaluations for the numerical one, 2n backward passes for the analytical
one, run twice for the reentrancy check); fast mode compares ``v^T J u`` for random unit vectors
(2 forward evaluations, 2 backward passes). Each cell is the median of a few repeats after a warm-up
call (time.perf_counter); PyTorch runs on CPU with one thread. This is a benchmark: it never asserts.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import ember  # noqa: E402

try:
    import torch
    torch.set_num_threads(1)
except ImportError:  # the torch column is optional
    torch = None


def timed(m, n: int, fast: bool, repeats: int) -> float:
    m.manual_seed(0)
    x = m.randn(n, dtype=m.float64, requires_grad=True)
    W = m.randn(n, n, dtype=m.float64) / n ** 0.5

    def f(a):
        return m.tanh(W @ (a.sin() * a))

    assert m.autograd.gradcheck(f, (x,), fast_mode=fast)   # warm-up, and it must pass
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        m.autograd.gradcheck(f, (x,), fast_mode=fast)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, nargs="*", default=[100, 500])
    args = ap.parse_args()
    libs = [("ember", ember)] + ([("torch", torch)] if torch is not None else [])
    print(f"{'n':>6} {'library':>8} {'slow mode':>12} {'fast mode':>12} {'speed-up':>10}")
    for n in args.n:
        for name, m in libs:
            slow = timed(m, n, False, 1 if n >= 500 else 3)
            fast = timed(m, n, True, 5)
            print(f"{n:>6} {name:>8} {slow * 1e3:>10.1f}ms {fast * 1e3:>10.2f}ms {slow / fast:>9.0f}x")


if __name__ == "__main__":
    main()
