"""Check ember's float32 erf fast path (ember/devices/cpu/elementwise.py, ``_erf32``) against the float64 kernel it
stands in for (``_erf_in64``: Cody's ratio in float64, rounded once) on every float32 input, bit for bit.

    python tools/erf32_exhaustive.py              # all 2^32 bit patterns, 256 blocks of 2^24 (~15 min at one thread)
    python tools/erf32_exhaustive.py --guard 8192 # the same with the midpoint guard narrowed (how much margin it has)
    python tools/erf32_exhaustive.py --blocks 0 64  # a range of blocks (0-63: the positive floats below 2)

Prints each block with a mismatch and the total; exits 1 if there is any."""
from __future__ import annotations

import argparse
import os
import sys
import time

for _v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_v, "1")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from ember.devices.cpu import elementwise as E  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--guard", type=int, default=None, help="the guard's half-width in float64 ulps (default: ember's)")
    ap.add_argument("--blocks", type=int, nargs=2, default=(0, 256), help="first and end block (of 2^24 inputs)")
    args = ap.parse_args()
    if args.guard is not None:
        E._ERF32_T = args.guard
        E._ERF32_K = np.int64((1 << 28) + args.guard)
    size = 1 << 24
    bad = 0
    t0 = time.time()
    for k in range(*args.blocks):
        x = np.arange(k * size, (k + 1) * size, dtype=np.uint64).astype(np.uint32).view(np.float32)
        ne = np.flatnonzero(E._erf32(x).view(np.uint32) != E._erf_in64(x).view(np.uint32))
        if ne.size:
            bad += ne.size
            print(f"block {k}: {ne.size} mismatches, e.g. {x[ne[:4]].tolist()}", flush=True)
    print(f"guard {E._ERF32_T} ulps, blocks {args.blocks[0]}-{args.blocks[1] - 1}: {bad} mismatches "
          f"({time.time() - t0:.0f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
