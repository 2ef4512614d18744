"""Peak memory and time of a deep MLP's forward + backward, with and without activation checkpointing.

    python bench/checkpoint_memory.py                  # 32 layers of tanh(x @ W_i), x: 4096 x 256, float32
    python bench/checkpoint_memory.py --batch 512 --width 1024   # weights (and their grads) dominate

Each variant builds the same network (fixed seed), runs ``loss = net(x).sum(); loss.backward()`` and
reports, measured by ``tracemalloc`` (NumPy reports its array allocations to it) above what was allocated
before the step (the weights and the input):

* kept: memory still allocated after the forward: what is held for backward (the activations);
* peak: the highest allocation during forward + backward (this includes the weights' gradients, which
  checkpointing does not change: with wide layers and a small batch they dominate);

and the wall time: the fastest of ``--repeats`` steps, the variants interleaved round by round
(tracemalloc off). Variants:

* plain:  every activation saved for backward stays alive until backward reaches it;
* checkpoint_sequential(segments=k), non-reentrant and reentrant: only each segment's input is kept;
  backward recomputes one segment at a time (so about one extra forward in all).

This is a benchmark, not a test: it prints figures and never asserts.
"""
from __future__ import annotations

import argparse
import gc
import os
import sys
import time
import tracemalloc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import ember as torch  # noqa: E402
from ember.utils.checkpoint import checkpoint_sequential  # noqa: E402


def build(layers: int, batch: int, width: int):
    torch.manual_seed(0)
    ws = [(torch.randn(width, width) / width ** 0.5).requires_grad_() for _ in range(layers)]
    x = torch.randn(batch, width)
    fns = [(lambda h, w=w: torch.tanh(h @ w)) for w in ws]
    return ws, x, fns


def step(fns, x, segments, reentrant, kept=None):
    if segments is None:
        h = x
        for f in fns:
            h = f(h)
    else:
        # the reentrant variant needs an input that requires grad to build a graph (as in PyTorch)
        xin = x.requires_grad_() if reentrant else x
        h = checkpoint_sequential(fns, segments, xin, use_reentrant=reentrant)
    loss = h.sum()
    del h
    if kept is not None:
        kept.append(tracemalloc.get_traced_memory()[0])
    loss.backward()


def measure_memory(args, segments, reentrant):
    """(kept, peak, gradients) of one step, by tracemalloc."""
    ws, x, fns = build(args.layers, args.batch, args.width)
    step(fns, x, segments, reentrant)   # warm-up (also checks it runs)
    for w in ws:
        w.grad = None
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    kept = []
    step(fns, x, segments, reentrant, kept)
    peak = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return kept[0] - base, peak, [w.grad for w in ws]


def measure_times(args, variants) -> list:
    """Fastest of ``repeats`` timed steps per variant, the variants interleaved round by round (so that
    load from other processes spreads over all of them)."""
    nets = [build(args.layers, args.batch, args.width) for _ in variants]
    best = [float("inf")] * len(variants)
    for _ in range(args.repeats):
        for k, ((_, seg, reent), (ws, x, fns)) in enumerate(zip(variants, nets)):
            for w in ws:
                w.grad = None
            gc.collect()
            t0 = time.perf_counter()
            step(fns, x, seg, reent)
            best[k] = min(best[k], time.perf_counter() - t0)
    return best


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--layers", type=int, default=32)
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--segments", type=int, nargs="*", default=[2, 4, 8])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    act_mb = args.batch * args.width * 4 / 2 ** 20
    print(f"{args.layers} layers of tanh(x @ W_i), x: {args.batch} x {args.width} float32 "
          f"(one activation: {act_mb:.1f} MiB; weights: {args.layers * args.width ** 2 * 4 / 2 ** 20:.0f} MiB, "
          f"not counted); forward + backward")
    variants = [("plain", None, False)]
    for k in args.segments:
        variants.append((f"checkpoint_sequential({k}), use_reentrant=False", k, False))
        variants.append((f"checkpoint_sequential({k}), use_reentrant=True", k, True))
    print(f"{'variant':<48} {'kept MiB':>9} {'vs plain':>9} {'peak MiB':>9} {'vs plain':>9} {'time s':>7} "
          f"{'vs plain':>9} {'max |dgrad|':>12}")
    mems = [measure_memory(args, seg, reent) for _, seg, reent in variants]
    times = measure_times(args, variants)
    kept0, peak0, g0 = mems[0]
    for (name, _, _), (kept, peak, g), t in zip(variants, mems, times):
        diff = max(float((a - b).abs().max()) for a, b in zip(g, g0))
        print(f"{name:<48} {kept / 2 ** 20:9.1f} {kept / kept0:8.2f}x {peak / 2 ** 20:9.1f} {peak / peak0:8.2f}x "
              f"{t:7.2f} {t / times[0]:8.2f}x {diff:12.1e}")

if __name__ == "__main__":
    main()
