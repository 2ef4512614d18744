"""All-reduce time and bandwidth: ember.distributed over MPI vs torch's gloo, on this machine.

    python bench/distributed.py                 # 2 and 4 processes, 1 KB .. 64 MB float32
    python bench/distributed.py --procs 2 --max-mb 256 --no-torch

For each message size every rank all-reduces a float32 tensor (SUM) repeatedly; the time is the slowest rank's
mean per call; "bus bandwidth" is the NCCL-tests convention, 2 (N - 1) / N * bytes / time (what each rank sends
and receives in a ring all-reduce). ember's rows are measured twice: with its signature check across ranks (the
default) and without it (EMBER_DIST_CHECK=0), which shows what the check costs per collective. The processes are
started by ember's launcher (mpiexec) and by torchrun; both run with one thread per process.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker(sizes: list, out: str) -> None:
    """One rank: time all_reduce at each size; rank 0 writes {bytes: seconds per call (slowest rank)}."""
    if os.environ.get("LIB") == "torch":
        import torch
    else:
        import ember as torch
    dist = torch.distributed
    dist.init_process_group("gloo")
    res = {}
    for size in sizes:
        t = torch.ones(max(1, size // 4), dtype=torch.float32)
        reps = max(3, min(200, (32 << 20) // max(size, 1)))
        for _ in range(2):
            dist.all_reduce(t)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(reps):
            dist.all_reduce(t)
        took = torch.tensor([(time.perf_counter() - t0) / reps], dtype=torch.float64)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)
        res[size] = float(took.item())
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()


def _job(lib: str, nproc: int, sizes: list, check: bool) -> dict:
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "res.json")
        env = dict(os.environ, LIB=lib, OMP_NUM_THREADS="1", PYTHONPATH=ROOT, EMBER_DIST_CHECK="1" if check else "0",
                   OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        args = [os.path.abspath(__file__), "--worker", out, "--sizes", *map(str, sizes)]
        launcher = ["-m", "ember.distributed.run"] if lib == "ember" else ["-m", "torch.distributed.run",
                                                                           "--standalone"]
        subprocess.run([sys.executable, *launcher, "--nproc-per-node", str(nproc), *args], env=env, check=True,
                       cwd=ROOT)
        with open(out) as f:
            return {int(k): v for k, v in json.load(f).items()}


def _fmt_size(b: int) -> str:
    return f"{b >> 20} MB" if b >= 1 << 20 else f"{b >> 10} KB"


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--procs", type=int, nargs="+", default=[2, 4])
    p.add_argument("--max-mb", type=int, default=64)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--worker", type=str, default=None)
    p.add_argument("--sizes", type=int, nargs="+", default=None)
    a = p.parse_args()
    if a.worker:
        worker(a.sizes, a.worker)
        return
    sizes = [1 << k for k in range(10, 21 + (a.max_mb.bit_length() - 1) + 0) if (1 << k) <= a.max_mb << 20][::2]
    sizes = sorted(set(sizes + [a.max_mb << 20]))
    print("| N | size | ember (s/call) | ember, no check | torch gloo | ember bus GB/s | gloo bus GB/s |")
    print("|---|---|---|---|---|---|---|")
    for n in a.procs:
        e = _job("ember", n, sizes, True)
        e0 = _job("ember", n, sizes, False)
        t = {} if a.no_torch else _job("torch", n, sizes, True)
        for s in sizes:
            bus = lambda sec: 2 * (n - 1) / n * s / sec / 1e9   # noqa: E731
            tt = t.get(s)
            print(f"| {n} | {_fmt_size(s)} | {e[s]:.2e} | {e0[s]:.2e} | {'' if tt is None else f'{tt:.2e}'} | "
                  f"{bus(e[s]):.2f} | {'' if tt is None else f'{bus(tt):.2f}'} |", flush=True)


if __name__ == "__main__":
    main()
