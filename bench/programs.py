"""The real programs of tests/programs/ as training loops, ember against PyTorch (CPU), side by side in one run.

    python bench/programs.py                     # every workload, 1 thread each
    python bench/programs.py --quick             # fewer repeats
    python bench/programs.py --threads 2 --only nanogpt --repeats 20
    python bench/programs.py --profile nanogpt   # cProfile and ember.profiler's key_averages of one ember workload
    python bench/programs.py --profile nanogpt --lib torch   # torch.profiler's key_averages of the same
    python bench/programs.py --compiled          # a third column: ember with the model through ember.compile

The model code is the programs' own, imported from tests/programs/<program>/ with ``torch`` resolving to each
library in turn: each library runs in a worker process of its own (real torch in one; ember posing as
``torch`` in the other, through the alias finder that tests/programs/_as_torch.py uses), and the parent has
them take turns, one timed iteration each (the order alternating every repeat), so that both see the same load
on a shared machine.  Both workers get the same thread count: OMP_NUM_THREADS, MKL_NUM_THREADS and
OPENBLAS_NUM_THREADS set before they start, and ``torch.set_num_threads`` (a no-op for ember).

Workloads (what one timed iteration is):

* nanogpt: nanoGPT's model.py ``GPT`` (n_layer 4, n_head 4, n_embd 128, block_size 64, vocab 65, dropout 0,
  bias), batch 8 of 64 tokens: forward with targets (cross-entropy), backward, ``clip_grad_norm_(1.0)``, the
  AdamW step of ``configure_optimizers`` (weight decay 0.1, lr 6e-4, betas (0.9, 0.95)), ``zero_grad`` --
  train.py's loop without its data loading and learning-rate schedule.
* wlm_lstm / wlm_gru / wlm_transformer: word_language_model's model.py ``RNNModel('LSTM' or 'GRU', ...)`` and
  ``TransformerModel``
  at main.py's defaults (emsize 200, nhid 200, 2 layers, dropout 0.2, 2 heads, bptt 35, batch 20) with a
  10,000-word vocabulary (Penn Treebank's size; WikiText-2's 33,278 makes the decoder's matmul all of it): one
  batch of main.py's ``train()``: ``zero_grad``, forward (the LSTM/GRU from the previous batch's detached hidden
  state), ``NLLLoss``, backward, ``clip_grad_norm_(0.25)``, ``p.data.add_(p.grad, alpha=-lr)``.
* tsp: time_sequence_prediction's train.py ``Sequence`` in float64 on its generated data (97 sequences of 999
  steps): one call of train.py's LBFGS closure (``zero_grad``, forward over 999 steps, ``MSELoss``, backward).

With ``--compiled`` a third worker runs ember with the model (nanoGPT's ``GPT``, the ``RNNModel``/
``TransformerModel``, the ``Sequence``) through ``ember.compile`` as ``model = torch.compile(model)`` would, the
rest of the iteration as before; before ember's compiler lands ``compile`` is a pass-through and that column is
eager ember again.

Each cell: the median of the timed repeats after the warm-up ones, with the spread (min-max); Python's cyclic
GC stays on, as in the programs.  The inputs come from NumPy's generator with the same seed on both sides, and
both libraries are seeded with ``manual_seed(0)`` (ember's generator reproduces torch's): the last losses
printed to stderr agree, but for the Transformer, whose rounding differences grow at main.py's lr 20 (see
tests/test_programs.py).  This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")

# name: (program, what one iteration is)
WORKLOADS = {
    "nanogpt": ("nanoGPT", "GPT 4x128, block 64, batch 8: fwd + bwd + clip + AdamW"),
    "wlm_lstm": ("word_language_model", "LSTM 2x200, bptt 35, batch 20, vocab 10k: one batch"),
    "wlm_gru": ("word_language_model", "GRU 2x200, bptt 35, batch 20, vocab 10k: one batch"),
    "wlm_transformer": ("word_language_model", "Transformer 2x200, 2 heads, bptt 35, batch 20, vocab 10k: one batch"),
    "tsp": ("time_sequence_prediction", "Sequence (2 LSTMCell 51), float64, 97 x 999: one closure"),
}


# ------------------------------------------------------------------------------------------------ worker side
def _install_torch(lib: str):
    """Make ``import torch`` (and ``import torch.X``) give ``lib``: the mechanism of tests/programs/_as_torch.py."""
    if lib != "torch":
        sys.path.insert(0, ROOT)
        sys.path.insert(0, os.path.join(ROOT, "tests", "seed_snippets"))
        from _runner import _AliasFinder
        sys.modules["torch"] = importlib.import_module(lib)
        sys.meta_path.insert(0, _AliasFinder(lib))
    return importlib.import_module("torch")


def _load(program: str, filename: str, name: str):
    """Import tests/programs/<program>/<filename> as module ``name`` (its directory first on sys.path, as
    running it would have it)."""
    directory = os.path.join(PROGRAMS, program)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    spec = importlib.util.spec_from_file_location(name, os.path.join(directory, filename))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _setup_nanogpt(torch, rng, compiled: bool):
    model_py = _load("nanogpt", "model.py", "nanogpt_model")
    config = model_py.GPTConfig(n_layer=4, n_head=4, n_embd=128, block_size=64, vocab_size=65, dropout=0.0,
                                bias=True)
    model = model_py.GPT(config)
    model.train()
    optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cpu")
    fwd = torch.compile(model) if compiled else model
    x = torch.from_numpy(rng.integers(0, 65, (8, 64)).astype("int64"))
    y = torch.from_numpy(rng.integers(0, 65, (8, 64)).astype("int64"))

    def step():
        _, loss = fwd(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()
    return step


def _setup_wlm(torch, rng, kind: str, compiled: bool):
    model_py = _load("word_language_model", "model.py", "wlm_model")
    ntokens, bptt, batch, lr = 10000, 35, 20, 20.0
    if kind == "Transformer":
        model = model_py.TransformerModel(ntokens, 200, 2, 200, 2, 0.2)
    else:
        model = model_py.RNNModel(kind, ntokens, 200, 200, 2, 0.2)
    model.train()
    fwd = torch.compile(model) if compiled else model
    criterion = torch.nn.NLLLoss()
    data = torch.from_numpy(rng.integers(0, ntokens, (bptt, batch)).astype("int64"))
    targets = torch.from_numpy(rng.integers(0, ntokens, (bptt * batch,)).astype("int64"))
    state = {"hidden": model.init_hidden(batch) if kind != "Transformer" else None}

    def step():
        model.zero_grad()
        if kind != "Transformer":
            hidden = state["hidden"]   # main.py's repackage_hidden
            hidden = tuple(h.detach() for h in hidden) if isinstance(hidden, tuple) else hidden.detach()
            output, state["hidden"] = fwd(data, hidden)
        else:
            output = fwd(data).view(-1, ntokens)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        return loss.item()
    return step


def _setup_tsp(torch, rng, compiled: bool):
    train_py = _load("time_sequence_prediction", "train.py", "tsp_train")
    # generate_sine_wave.py's data (it writes a file at import; the same three lines here)
    import numpy as np
    r = np.random.RandomState(2)
    T, L, N = 20, 1000, 100
    x = np.empty((N, L), "int64")
    x[:] = np.array(range(L)) + r.randint(-4 * T, 4 * T, N).reshape(N, 1)
    data = np.sin(x / 1.0 / T).astype("float64")
    inp, target = torch.from_numpy(data[3:, :-1]), torch.from_numpy(data[3:, 1:])
    seq = train_py.Sequence()
    seq.double()
    fwd = torch.compile(seq) if compiled else seq
    criterion = torch.nn.MSELoss()
    optimizer = torch.optim.LBFGS(seq.parameters(), lr=0.8)

    def closure():   # train.py's closure, without its print
        optimizer.zero_grad()
        out = fwd(inp)
        loss = criterion(out, target)
        loss.backward()
        return loss
    return lambda: closure().item()


def setup(torch, name: str, compiled: bool = False):
    """Build workload ``name`` under ``torch`` (its model through ``torch.compile`` if ``compiled``); returns the
    function that runs one iteration."""
    import numpy as np
    rng = np.random.default_rng(0)
    torch.manual_seed(0)
    if name == "nanogpt":
        return _setup_nanogpt(torch, rng, compiled)
    if name == "wlm_lstm":
        return _setup_wlm(torch, rng, "LSTM", compiled)
    if name == "wlm_gru":
        return _setup_wlm(torch, rng, "GRU", compiled)
    if name == "wlm_transformer":
        return _setup_wlm(torch, rng, "Transformer", compiled)
    if name == "tsp":
        return _setup_tsp(torch, rng, compiled)
    raise ValueError(name)


def worker(lib: str, threads: int, compiled: bool = False) -> None:
    """Serve the parent over stdin/stdout, one JSON request a line: {"setup": name} or {"run": name, "n": k}
    (k iterations, answered with their times in seconds)."""
    torch = _install_torch(lib)
    torch.set_num_threads(threads)
    steps = {}
    out = sys.stdout
    sys.stdout = sys.stderr   # nothing the programs print may reach the pipe
    for line in sys.stdin:
        req = json.loads(line)
        if "setup" in req:
            steps[req["setup"]] = setup(torch, req["setup"], compiled)
            reply = {"ok": True}
        else:
            step, times, cpus, loss = steps[req["run"]], [], [], None
            for _ in range(req["n"]):
                t, c = time.perf_counter(), time.thread_time()
                loss = step()
                times.append(time.perf_counter() - t)
                cpus.append(time.thread_time() - c)
            reply = {"times": times, "cpus": cpus, "loss": loss}
        out.write(json.dumps(reply) + "\n")
        out.flush()


# ------------------------------------------------------------------------------------------------ parent side
class Worker:
    """A worker process with ``torch`` resolving to ``lib``."""

    def __init__(self, lib: str, threads: int, compiled: bool = False):
        env = dict(os.environ)
        env.update({var: str(threads) for var in THREAD_VARS})
        env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env["MPLBACKEND"] = "Agg"
        cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--threads", str(threads)]
        self.proc = subprocess.Popen(cmd + (["--compiled"] if compiled else []), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True, cwd=ROOT)

    def ask(self, **req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker died on {req}")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


def measure(workers: dict, name: str, warmup: int, repeats: int) -> dict:
    """Per library: the wall and thread-CPU times (ms) of ``repeats`` iterations, the libraries taking turns (order
    alternating)."""
    for w in workers.values():
        w.ask(setup=name)
    for w in workers.values():
        w.ask(run=name, n=warmup)
    libs = list(workers)
    times = {lib: [] for lib in libs}
    cpus = {lib: [] for lib in libs}
    losses = {}
    for r in range(repeats):
        for lib in (libs if r % 2 == 0 else libs[::-1]):
            reply = workers[lib].ask(run=name, n=1)
            times[lib] += [t * 1e3 for t in reply["times"]]
            cpus[lib] += [t * 1e3 for t in reply["cpus"]]
            losses[lib] = reply["loss"]
    return {"times": times, "cpus": cpus, "losses": losses}


def _cell(ts: list) -> str:
    return f"{statistics.median(ts):.1f} ({min(ts):.1f}-{max(ts):.1f})"


def run_bench(args) -> None:
    names = args.only or list(WORKLOADS)
    workers = {lib: Worker(lib, args.threads) for lib in ("torch", "ember")}
    if args.compiled:
        workers["compiled"] = Worker("ember", args.threads, compiled=True)
    cols = list(workers)
    rows = []
    try:
        for name in names:
            warmup, repeats = args.warmup, args.repeats
            if args.quick:
                warmup, repeats = max(1, warmup // 2), max(3, repeats // 2)
            res = measure(workers, name, warmup, repeats)
            rows.append((name, res))
            t = res["times"]["torch"]
            print(f"{name}: " + ", ".join(f"{c} {_cell(res['times'][c])} ms" for c in cols)
                  + f", ember/torch {statistics.median(res['times']['ember']) / statistics.median(t):.2f}x (last "
                  "losses: " + ", ".join(f"{c} {res['losses'][c]:.4f}" for c in cols) + ")", file=sys.stderr)
    finally:
        for w in workers.values():
            w.close()
    print(f"\n{args.threads} thread(s) each; median (min-max) of {repeats} repeats after {warmup} warm-up, ms per "
          "iteration: wall time, and the CPU time of the worker's thread\n")
    extra = " | compiled ms | compiled/torch" if args.compiled else ""
    extra_cpu = " | compiled CPU ms | compiled/torch CPU" if args.compiled else ""
    print(f"| program | workload | torch ms | ember ms{extra} | ember/torch | torch CPU ms | ember CPU ms | "
          f"ember/torch CPU{extra_cpu} |")
    print("|---|---|---:|---:|" + ("---:|---:|" if args.compiled else "") + "---:|---:|---:|---:|"
          + ("---:|---:|" if args.compiled else ""))
    for name, res in rows:
        program, what = WORKLOADS[name]
        tm, cm = res["times"], res["cpus"]
        med = {c: statistics.median(tm[c]) for c in cols}
        cpu = {c: statistics.median(cm[c]) for c in cols}
        comp = f" | {_cell(tm['compiled'])} | {med['compiled'] / med['torch']:.2f}x" if args.compiled else ""
        print(f"| {program} | {what} | {_cell(tm['torch'])} | {_cell(tm['ember'])}{comp} | "
              f"{med['ember'] / med['torch']:.2f}x | {cpu['torch']:.1f} | {cpu['ember']:.1f} | "
              f"{cpu['ember'] / cpu['torch']:.2f}x |"
              + (f" {cpu['compiled']:.1f} | {cpu['compiled'] / cpu['torch']:.2f}x |" if args.compiled else ""))


def run_profile(args) -> None:
    """cProfile (top functions by own time) and ember.profiler's key_averages of one ember workload, in this
    process; with ``--lib torch``, torch.profiler's key_averages of the same workload under real torch (to set
    the two side by side op by op)."""
    import cProfile
    import pstats
    for var in THREAD_VARS:
        os.environ[var] = str(args.threads)
    torch = _install_torch(args.lib)
    torch.set_num_threads(args.threads)
    name = args.profile
    step = setup(torch, name)
    for _ in range(args.warmup):
        step()
    n = max(1, args.repeats // 2)
    if args.lib == "torch":
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
            for _ in range(n):
                step()
        print(f"== torch.profiler, {n} iterations of {name}")
        print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))
        return
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        step()
    prof.disable()
    print(f"== cProfile, {n} iterations of {name}, top 35 by own time")
    pstats.Stats(prof).sort_stats("tottime").print_stats(35)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    import ember.profiler
    with ember.profiler.profile(activities=[ember.profiler.ProfilerActivity.CPU]) as p:
        for _ in range(n):
            step()
    print(f"== ember.profiler, {n} iterations of {name}")
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=40))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=1, help="threads for both libraries (default 1)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="half the warm-up and repeats")
    ap.add_argument("--only", nargs="+", choices=list(WORKLOADS))
    ap.add_argument("--profile", choices=list(WORKLOADS), help="profile ember on this workload instead")
    ap.add_argument("--lib", choices=("ember", "torch"), default="ember", help="the library --profile runs")
    ap.add_argument("--compiled", action="store_true",
                    help="a third column: ember with the model through ember.compile")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker, args.threads, args.compiled)
    elif args.profile:
        run_profile(args)
    else:
        run_bench(args)


if __name__ == "__main__":
    main()
