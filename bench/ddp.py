"""DistributedDataParallel step time: ember over MPI vs torch's gloo, vs one process, on this machine.

    python bench/ddp.py                       # 2 processes, ember and torch
    python bench/ddp.py --procs 2 4 --width 1024 --layers 8 --no-torch

Model: ``layers`` Linear(width, width) + Tanh, batch 32 per rank, SGD. Per rank and step (median over steps,
slowest rank): the step without DDP (what one process does on its share), the step with DDP (default buckets:
all-reduces start during backward), the step with DDP and one bucket (``bucket_cap_mb`` above the gradient size:
the all-reduce starts after backward, nothing overlaps), and one blocking all-reduce of all the gradient bytes.
"hidden" = 1 - (DDP - no DDP) / all-reduce: the share of the communication that overlapped backward.
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


def worker(width: int, layers: int, steps: int, out: str) -> None:
    if os.environ.get("LIB") == "torch":
        import torch
    else:
        import ember as torch
    dist, nn = torch.distributed, torch.nn
    dist.init_process_group("gloo")
    torch.manual_seed(0)

    def model():
        return nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(width, width), nn.Tanh())])

    x = torch.randn(32, width)

    def timed(net, params) -> float:
        opt = torch.optim.SGD(params, lr=1e-4)
        times = []
        for _ in range(steps + 2):
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            net(x).pow(2).mean().backward()
            opt.step()
            times.append(time.perf_counter() - t0)
        times = sorted(times[2:])
        t = torch.tensor([times[len(times) // 2]], dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.item()

    plain = model()
    res = {"params": sum(p.numel() for p in plain.parameters())}
    res["no_ddp"] = timed(plain, plain.parameters())
    d = nn.parallel.DistributedDataParallel(model())
    res["ddp"] = timed(d, d.parameters())
    one = nn.parallel.DistributedDataParallel(model(), bucket_cap_mb=1e6)
    res["ddp_one_bucket"] = timed(one, one.parameters())
    flat = torch.ones(res["params"])
    times = []
    for _ in range(steps):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(flat)
        times.append(time.perf_counter() - t0)
    res["all_reduce"] = sorted(times)[len(times) // 2]
    if dist.get_rank() == 0:
        with open(out, "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()


def _job(lib: str, n: int, width: int, layers: int, steps: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        args = [os.path.abspath(__file__), "--worker", out, "--width", str(width), "--layers", str(layers),
                "--steps", str(steps)]
        launcher = ["-m", "ember.distributed.run"] if lib == "ember" else ["-m", "torch.distributed.run",
                                                                             "--standalone"]
        env = dict(os.environ, LIB=lib, PYTHONPATH=ROOT, OMP_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        for attempt in range(2):   # (torchrun --standalone now and then fails to rendezvous on this busy machine)
            run = subprocess.run([sys.executable, *launcher, "--nproc-per-node", str(n), *args], env=env,
                                 capture_output=True, text=True)
            if run.returncode == 0:
                break
            print(f"{lib} job failed (attempt {attempt + 1}):\n{run.stderr[-1500:]}", file=sys.stderr)
        else:
            raise RuntimeError(f"{lib} job failed twice")
        with open(out) as f:
            return json.load(f)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--procs", type=int, nargs="+", default=[2])
    p.add_argument("--width", type=int, default=512)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--worker", type=str, default=None)
    a = p.parse_args()
    if a.worker:
        worker(a.width, a.layers, a.steps, a.worker)
        return
    print("| N | lib | params | step, no DDP (s) | DDP (s) | DDP, one bucket (s) | all-reduce of all grads (s) "
          "| hidden |")
    print("|---|---|---|---|---|---|---|---|")
    for n in a.procs:
        for lib in ("ember",) + (() if a.no_torch else ("torch",)):
            r = _job(lib, n, a.width, a.layers, a.steps)
            hidden = 1 - (r["ddp"] - r["no_ddp"]) / r["all_reduce"]
            print(f"| {n} | {lib} | {r['params']} | {r['no_ddp']:.4f} | {r['ddp']:.4f} | {r['ddp_one_bucket']:.4f} "
                  f"| {r['all_reduce']:.4f} | {hidden:.0%} |", flush=True)


if __name__ == "__main__":
    main()
