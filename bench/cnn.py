"""A small CNN training step and a ResNet-sized convolution, ember against PyTorch (CPU).

    python bench/cnn.py             # full run
    python bench/cnn.py --quick     # fewer repeats
    python bench/cnn.py --profile   # also a cProfile of ember's CNN step (top functions by own time)
    python bench/cnn.py --threads 1 --only cnn --repeats 60   # one workload, NumPy's BLAS and torch at 1 thread

Workloads (float32):

* cnn step: batch 64 of 1x28x28; conv(1->8, 3x3) + relu + max_pool 2, conv(8->16, 3x3) + relu + max_pool 2,
  flatten, linear to 10, log-softmax cross-entropy; forward + backward (gradients of every parameter).
  relu is ``x.clamp(min=0)`` and the loss is written out from logsumexp and gather on both sides, so the
  same ops run in both libraries.
* conv2d fwd+bwd: batch 32, 64 -> 64 channels, 56x56, 3x3, padding 1 (a ResNet stage-1 convolution);
  input and weight gradients.

torch runs with ``torch.set_num_threads(n)``, n = the threads NumPy's BLAS uses (as bench/overhead.py), so
neither side gets more cores than the other; ``--threads n`` sets both (NumPy's BLAS through threadpoolctl).
Each cell is the median (and the best) of timed repeats after warm-up; ``--interleave`` alternates the two
libraries' repeats so that on a shared machine both see the same load (each then also runs amid the
other's leftovers in the caches and in the C allocator's heap, which changes ember's page faults).
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


def timeit(fns, warmup: int, repeats: int, interleave: bool = True) -> list[tuple[float, float]]:
    """(median, best) per function of ``repeats`` timed runs after ``warmup`` untimed ones. Interleaved:
    the functions run in turn, so that each sees the same load on a shared machine (but also the other's
    leftovers in the caches and the allocator); else one function's runs after the other's. The best is
    reported too: it is the least disturbed by other processes."""
    ts = [[] for _ in fns]
    order = [i for _ in range(warmup + repeats) for i in range(len(fns))] if interleave else \
        [i for i in range(len(fns)) for _ in range(warmup + repeats)]
    for i in order:
        t0 = time.perf_counter()
        fns[i]()
        ts[i].append(time.perf_counter() - t0)
    return [(statistics.median(t[warmup:]), min(t[warmup:])) for t in ts]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--profile", action="store_true", help="cProfile ember's CNN step")
    ap.add_argument("--threads", type=int, default=None, help="threads for NumPy's BLAS and torch (default: "
                    "NumPy's BLAS setting)")
    ap.add_argument("--only", choices=("cnn", "conv"), default=None, help="run one workload")
    ap.add_argument("--repeats", type=int, default=None, help="timed repeats of each workload")
    ap.add_argument("--interleave", action="store_true", help="alternate ember's and torch's repeats "
                    "(default: all of ember's, then all of torch's)")
    args = ap.parse_args(argv)

    if args.threads is not None:
        from threadpoolctl import threadpool_limits
        threadpool_limits(args.threads, user_api="blas")
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
    if args.repeats:
        reps, creps = (reps[0], args.repeats), (creps[0], args.repeats)

    def run(lib):
        x, y = lib.tensor(xb), lib.tensor(yb)
        return (lambda: cnn_step(lib, params, x, y)), (lambda: conv_step(lib, xc, wc))

    e_cnn, e_conv = run(ember)
    libs = [(e_cnn, e_conv)] + ([run(torch)] if torch is not None else [])
    rows = []
    for k, (name, r) in enumerate((("cnn step (64x1x28x28)", reps), ("conv2d fwd+bwd (32x64x56x56, 3x3)", creps))):
        if args.only is not None and args.only != ("cnn", "conv")[k]:
            continue
        fns = [lib[k] for lib in libs]
        ts = timeit(fns, *r, interleave=args.interleave)
        rows.append((name, ts[0], ts[1] if len(ts) > 1 else None))
        if torch is not None:   # sanity, not an assertion: both compute the same gradients
            got, want = fns[0](), fns[1]()
            d = max(float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b))))) for a, b in zip(got, want))
            print(f"max gradient difference ember vs torch, {name}: {d:.1e} (relative to the largest)")
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
