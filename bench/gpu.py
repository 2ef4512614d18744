"""ember on 'cuda' (CuPy) against PyTorch on CUDA, on the same GPU: four training steps, medians, and a profile
of where ember's time goes.

    python bench/gpu.py                       # the issue's sizes, on cuda (a GPU, CuPy, torch with CUDA)
    python bench/gpu.py --quick               # fewer repeats
    python bench/gpu.py --device cpu --tiny   # a dry run of this script on a CPU (small sizes)
    python bench/gpu.py --standin --tiny      # a dry run of the cuda path through tests/cupy_standin.py (no GPU)
    python bench/gpu.py --out DIR             # also write results.json and the profile there

The workloads (issue 21): an MLP step (784-512-512-10, batch 256), a CNN step (two 3x3 convolutions, 32x32
inputs, batch 64), a transformer encoder layer step (d_model 512, 8 heads, seq 256, batch 32) and a nanoGPT
step (6 layers, 6 heads, 384 wide, block 256, batch 64, vocabulary 65). Each step is forward, cross-entropy,
backward and an AdamW update, written once against ``lib`` (ember or torch) so both run the same code. Each cell
is the median of the timed steps after warm-up steps, with the device synchronised around each step.
Targets: the MLP step within 1.5x PyTorch's time, the nanoGPT step within 2x.

The profile (``--profile``, on by default with ``--out``): cProfile over a few ember steps, the functions with
the most own time, plus what one step costs in host-side Python alone (the same step with the GPU work queued
but not waited for) against the synchronised step, and the number of ember ops it runs.
This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import platform
import pstats
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import ember  # noqa: E402

try:
    import torch
except ImportError:   # the torch column is optional
    torch = None


# ----- the models, written once against lib ---------------------------------------------------------------------

def mlp(lib, tiny):
    nn = lib.nn
    w = 64 if tiny else 512
    model = nn.Sequential(nn.Linear(784, w), nn.ReLU(), nn.Linear(w, w), nn.ReLU(), nn.Linear(w, 10))
    b = 16 if tiny else 256
    return model, (lambda dev: lib.randn(b, 784, device=dev)), (lambda dev: lib.randint(0, 10, (b,), device=dev))


def cnn(lib, tiny):
    nn = lib.nn
    c = 8 if tiny else 32
    model = nn.Sequential(nn.Conv2d(3, c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(c, 2 * c, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(2 * c * 8 * 8, 10))
    b = 4 if tiny else 64
    return model, (lambda dev: lib.randn(b, 3, 32, 32, device=dev)), (lambda dev: lib.randint(0, 10, (b,), device=dev))


def encoder(lib, tiny):
    nn = lib.nn
    d, h, s, b = (64, 4, 32, 4) if tiny else (512, 8, 256, 32)
    model = nn.Sequential(nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.0, batch_first=True),
                          nn.Flatten(0, 1), nn.Linear(d, 10))
    return model, (lambda dev: lib.randn(b, s, d, device=dev)), (lambda dev: lib.randint(0, 10, (b * s,), device=dev))


def gpt(lib, tiny):
    """nanoGPT's model (Karpathy's shakespeare-char config), without dropout."""
    nn, F = lib.nn, lib.nn.functional
    n_layer, n_head, n_embd, block, batch, vocab = (2, 2, 64, 32, 4, 65) if tiny else (6, 6, 384, 256, 64, 65)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
            self.c_attn, self.c_proj = nn.Linear(n_embd, 3 * n_embd), nn.Linear(n_embd, n_embd)
            self.c_fc, self.mlp_proj = nn.Linear(n_embd, 4 * n_embd), nn.Linear(4 * n_embd, n_embd)

        def attn(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(n_embd, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, n_embd), nn.Embedding(block, n_embd)
            self.h = nn.ModuleList(Block() for _ in range(n_layer))
            self.ln_f = nn.LayerNorm(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx):
            pos = lib.arange(idx.shape[1], device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for b in self.h:
                x = b(x)
            return self.lm_head(self.ln_f(x)).flatten(0, 1)

    return GPT(), (lambda dev: lib.randint(0, vocab, (batch, block), device=dev)), \
        (lambda dev: lib.randint(0, vocab, (batch * block,), device=dev))


WORKLOADS = {"mlp": mlp, "cnn": cnn, "encoder": encoder, "nanogpt": gpt}
TARGETS = {"mlp": 1.5, "nanogpt": 2.0}


# ----- timing -------------------------------------------------------------------------------------------------------

def _sync(lib, dev):
    if dev == "cuda":
        lib.cuda.synchronize()


def _stepper(lib, name, dev, tiny):
    lib.manual_seed(0)
    model, xs, ys = WORKLOADS[name](lib, tiny)
    model.to(dev)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-4)
    x, y = xs(dev), ys(dev)
    F = lib.nn.functional

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    return step


def time_steps(lib, name, dev, tiny, warmup, repeats):
    step = _stepper(lib, name, dev, tiny)
    for _ in range(warmup):
        step()
    _sync(lib, dev)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        _sync(lib, dev)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), step


def profile_ember(name, dev, tiny, steps, out_dir):
    """cProfile of ``steps`` ember steps, the unsynchronised (host-only) step time, and ops per step."""
    _, step = time_steps(ember, name, dev, tiny, 1, 1)
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    host = (time.perf_counter() - t0) / steps   # Python and launches: the GPU work is queued, not waited for
    _sync(ember, dev)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        step()
    _sync(ember, dev)
    pr.disable()
    buf = io.StringIO()
    st = pstats.Stats(pr, stream=buf)
    st.sort_stats("tottime").print_stats(30)
    # ember ops through apply (the operator fast paths are not counted)
    calls = sum(v[1] for k, v in st.stats.items() if k[2] == "apply" and "_primitive" in k[0]) / steps
    from ember.devices import cuda as cdev
    copies = dict(cdev.COPIES)
    text = buf.getvalue()
    if out_dir:
        with open(os.path.join(out_dir, f"profile_{name}.txt"), "w") as f:
            f.write(text)
    return {"host_only_step_s": host, "apply_calls_per_step": calls, "host_device_copies_so_far": copies,
            "top": text.splitlines()[:60]}


def environment(dev):
    env = {"python": platform.python_version(), "ember": os.path.dirname(ember.__file__),
           "torch": getattr(torch, "__version__", None), "device": dev}
    if dev == "cuda":
        env["gpu"] = ember.cuda.get_device_name()
        from ember.devices import cuda as cdev
        cp = cdev.cupy()
        env["cupy"] = getattr(cp, "__version__", None)
        try:
            env["cuda_runtime"] = cp.cuda.runtime.runtimeGetVersion()
        except Exception:   # noqa: BLE001
            pass
    return env


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--tiny", action="store_true", help="small sizes (a dry run on a CPU)")
    ap.add_argument("--only", default="", help="comma-separated workloads (mlp,cnn,encoder,nanogpt)")
    ap.add_argument("--out", default="", help="folder for results.json and the profiles")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--standin", action="store_true", help="CuPy replaced by tests/cupy_standin.py (dry run)")
    args = ap.parse_args(argv)
    if args.standin:
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import cupy_standin
        cupy_standin.install()
    dev = args.device
    warmup, repeats = (2, 5) if args.quick or args.tiny else (3, 15)
    names = [n for n in (args.only.split(",") if args.only else WORKLOADS)]
    if args.out:
        os.makedirs(args.out, exist_ok=True)
    torch_ok = torch is not None and (dev != "cuda" or torch.cuda.is_available())
    results = {"environment": environment(dev), "workloads": {}}
    print(json.dumps(results["environment"]))
    print(f"{'step':10s} {'ember ms':>10s} {'torch ms':>10s} {'ratio':>7s} {'target':>7s}")
    for name in names:
        row = {}
        try:
            row["ember_s"], _ = time_steps(ember, name, dev, args.tiny, warmup, repeats)
        except Exception as e:   # noqa: BLE001  (a benchmark reports, never stops)
            row["ember_error"] = f"{type(e).__name__}: {e}"
        if torch_ok:
            try:
                row["torch_s"], _ = time_steps(torch, name, dev, args.tiny, warmup, repeats)
            except Exception as e:   # noqa: BLE001
                row["torch_error"] = f"{type(e).__name__}: {e}"
        if "ember_s" in row and "torch_s" in row:
            row["ratio"] = row["ember_s"] / row["torch_s"]
        results["workloads"][name] = row
        fmt = lambda v: f"{v * 1e3:10.2f}" if isinstance(v, float) else f"{'-':>10s}"   # noqa: E731
        ratio = f"{row['ratio']:7.2f}" if "ratio" in row else f"{'-':>7s}"
        print(f"{name:10s} {fmt(row.get('ember_s'))} {fmt(row.get('torch_s'))} {ratio} "
              f"{TARGETS.get(name, math.nan):7.1f}  {row.get('ember_error', '')}{row.get('torch_error', '')}",
              flush=True)
        if not args.no_profile and args.out and "ember_s" in row:
            try:
                row["profile"] = profile_ember(name, dev, args.tiny, 2 if args.quick else 3, args.out)
                p = row["profile"]
                print(f"    host-only step {p['host_only_step_s'] * 1e3:.2f} ms, "
                      f"{p['apply_calls_per_step']:.0f} apply calls per step", flush=True)
            except Exception as e:   # noqa: BLE001
                row["profile_error"] = f"{type(e).__name__}: {e}"
    if args.out:
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
