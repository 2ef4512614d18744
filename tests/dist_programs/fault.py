"""A rank that dies (MODE=kill: SIGKILL), hangs (MODE=hang) or raises (MODE=raise) between two all_reduces of a
job with timeout TMO seconds: the other ranks must fail naming it (tests/test_distributed.py)."""
import os, signal, time, datetime
import ember as torch
import ember.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(os.environ.get("TMO", "20"))))
r = dist.get_rank()
dist.all_reduce(torch.ones(2))
mode = os.environ.get("MODE", "kill")
if r == 1:
    if mode == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif mode == "hang":
        time.sleep(60)
    elif mode == "raise":
        raise ValueError("boom")
t = time.time()
try:
    dist.all_reduce(torch.ones(2))
except RuntimeError as e:
    print(f"rank {r} after {time.time()-t:.1f}s: {type(e).__name__}: {e}", flush=True)
    raise
