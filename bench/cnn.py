"""A small CNN training step and a ResNet-sized convolution, ember against PyTorch (CPU).

    python bench/cnn.py             # full run
    python bench/cnn.py --quick     # fewer repeats
    python bench/cnn.py --profile   # also a cProfile of ember's CNN step (top functions by own time)

Workloads (float32):

* cnn step: batch 64 of 1x28x28; conv(1->8, 3x3) + relu + max_pool 2, conv(8->16, 3x3) + relu + max_pool 2,
  flatten, linear to 10, log-softmax cross-entropy; forward + backward (gradients of every parameter).
  relu is ``x.clamp(min=0)`` and the loss is written out from logsumexp and gather on both sides, so the
  same ops run in both libraries.
* conv2d fwd+bwd: batch 32, 64 -> 64 channels, 56x56, 3x3, padding 1 (a ResNet stage-1 convolution);
  input and weight gradients.

torch runs with ``torch.set_num_threads(n)``, n = the threads NumPy's BLAS uses (as bench/overhead.py), so
neither side gets more cores than the other. Each cell is the median of timed repeats after warm-up.
This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import ember  # noqa: E402
from bench.overhead import numpy_blas_threads  # noqa: E402

try:
    import torch
except ImportError:  # the torch column is optional
    torch = None


def cnn_params(rng):
    def p(*shape, fan_in):
        return (rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32)
    return {"w1": p(8, 1, 3, 3, fan_in=9), "b1": p(8, fan_in=9), "w2": p(16, 8, 3, 3, fan_in=72),
            "b2": p(16, fan_in=72), "w3": p(10, 16 * 5 * 5, fan_in=400), "b3": p(10, fan_in=400)}


def cnn_step(lib, params, x, y):
    """One forward + backward of the CNN; returns the gradients (as NumPy arrays)."""
    F = lib.nn.functional
    ps = {k: lib.tensor(v, requires_grad=True) for k, v in params.items()}
    h = F.max_pool2d(F.conv2d(x, ps["w1"], ps["b1"]).clamp(min=0), 2)
    h = F.max_pool2d(F.conv2d(h, ps["w2"], ps["b2"]).clamp(min=0), 2)
    logits = h.reshape(h.shape[0], -1) @ ps["w3"].t() + ps["b3"]
    loss = (logits - logits.logsumexp(1, keepdim=True)).gather(1, y[:, None]).mean().neg()
    loss.backward()
    return [ps[k].grad.numpy() for k in sorted(ps)]


def conv_step(lib, x, w):
    xt = lib.tensor(x, requires_grad=True)
    wt = lib.tensor(w, requires_grad=True)
    out = lib.nn.functional.conv2d(xt, wt, padding=1)
    out.backward(lib.ones_like(out))
    return [xt.grad.numpy(), wt.grad.numpy()]


def timeit(fn, warmup: int, repeats: int) -> tuple[float, float]:
    """(median, best) of ``repeats`` timed runs after ``warmup`` untimed ones. The best is reported too: on
    a shared machine it is the least disturbed by other processes."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts), min(ts)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--profile", action="store_true", help="cProfile ember's CNN step")
    args = ap.parse_args(argv)

    threads, how = numpy_blas_threads()
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, ember {ember.__version__}, "
          f"torch {torch.__version__ if torch else '(not installed: column skipped)'}")
    if torch is not None:
        torch.set_num_threads(threads)
        print(f"torch.set_num_threads({threads}): NumPy's BLAS thread count, from {how}")

    rng = np.random.default_rng(0)
    params = cnn_params(rng)
    xb = rng.standard_normal((64, 1, 28, 28)).astype(np.float32)
    yb = rng.integers(0, 10, 64)
    xc = rng.standard_normal((32, 64, 56, 56)).astype(np.float32)
    wc = (rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32)
    reps = (2, 5) if args.quick else (3, 15)
    creps = (1, 3) if args.quick else (1, 5)

    def run(lib):
        x, y = lib.tensor(xb), lib.tensor(yb)
        return (lambda: cnn_step(lib, params, x, y)), (lambda: conv_step(lib, xc, wc))

    rows = []
    e_cnn, e_conv = run(ember)
    t_cnn = (timeit(e_cnn, *reps), None)
    t_conv = (timeit(e_conv, *creps), None)
    if torch is not None:
        c_cnn, c_conv = run(torch)
        t_cnn = (t_cnn[0], timeit(c_cnn, *reps))
        t_conv = (t_conv[0], timeit(c_conv, *creps))
        # sanity, not an assertion: both compute the same gradients
        d1 = max(float(np.max(np.abs(a - b))) for a, b in zip(e_cnn(), c_cnn()))
        d2 = max(float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) for a, b in
                 zip(e_conv(), c_conv()))
        print(f"max gradient difference ember vs torch: cnn step {d1:.1e}, conv2d (relative) {d2:.1e}")
    rows = [("cnn step (64x1x28x28)", *t_cnn), ("conv2d fwd+bwd (32x64x56x56, 3x3)", *t_conv)]
    print()
    header = f"{'workload':<36}{'':>6}{'ember ms':>10}{'torch ms':>10}{'ember/torch':>13}"
    print(header)
    print("-" * len(header))
    for name, te, tt in rows:
        for k, what in enumerate(("median", "best")):
            ratio = f"{te[k] / tt[k]:.2f}x" if tt else "-"
            tts = f"{tt[k] * 1e3:.2f}" if tt else "-"
            print(f"{name if k == 0 else '':<36}{what:>6}{te[k] * 1e3:>10.2f}{tts:>10}{ratio:>13}")

    if args.profile:
        print("\ncProfile of 10 ember CNN steps, top 15 by own time:")
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(10):
            e_cnn()
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
