"""The real training scripts, run unchanged, under torch and under ember posing as ``torch``: time per batch and losses.

    python bench/scripts.py                          # every script, 3 runs each library (5-8 minutes)
    python bench/scripts.py --only wlm_lstm wlm_gru --runs 5
    python bench/scripts.py --only nanogpt_compile   # nanoGPT with --compile=True (torch's inductor compiles first)

Where bench/programs.py imports the programs' model code and times a loop of its own, this runs the scripts
themselves (tests/programs/<program>/, copies of the published files) as a user would, through
tests/programs/_as_torch.py, each in a temporary directory with a small generated dataset in the script's own
layout, one BLAS/OpenMP thread (``OMP/MKL/OPENBLAS_NUM_THREADS=1``; PyTorch's intra-op pool follows
``OMP_NUM_THREADS``):

* wlm_lstm / wlm_gru / wlm_transformer: pytorch/examples' word_language_model ``main.py --model LSTM|GRU|
  Transformer`` at small sizes (emsize 64, nhid 64, 2 layers, 2 heads, bptt 35, batch 20, dropout 0.2,
  lr 20 (the GRU lr 5: at 20 it diverges on this corpus and the two libraries' losses part; the Transformer lr 1),
  one epoch) on a generated corpus (1,000-word vocabulary,
  about 42 batches).
* nanogpt / nanogpt_compile: karpathy/nanoGPT's ``train.py`` with the baby-GPT CPU settings of its README
  (4 layers, 4 heads, n_embd 128, block 64, batch 12, dropout 0, no gradient accumulation, float32) on a
  character dataset written as ``data/shakespeare_char/prepare.py`` writes it (the text: the program files of
  tests/programs/nanogpt), 30 iterations, ``--compile=False`` / ``--compile=True``.
* tsp: time_sequence_prediction's ``generate_sine_wave.py``, its data cut to the first 200 points of each wave
  (a few lines run with the same library), then ``train.py --steps 2`` (LBFGS: about 20 closures a step, each
  the LSTM cells over 199 steps of 97 sequences, float64, and 1,000 predicted points a step).

Per batch (iteration, closure) two figures, both over the steady part of the run (the script's log lines after
the first ``--skip`` ones, so that warm-up and compilation stay out):
* CPU ms: the child process's CPU time (utime + stime from /proc/<pid>/stat, read when each log line arrives:
  the children run unbuffered) between the first and the last counted line, divided by the batches between them.
  At one thread that is the work of the script's thread, and a loaded machine disturbs it less than wall time.
* wall ms: the median of the times the script prints itself (word_language_model's ``ms/batch``, nanoGPT's
  ``time ...ms``); time_sequence_prediction prints none: the wall time between its ``loss:`` lines.
The libraries take turns run by run (the order alternating); each cell is the median over the runs.  The
losses the scripts print are compared at the end (same seed: the first and last losses of each library).
This is a benchmark, not a test: it never asserts.
"""
from __future__ import annotations

import argparse
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROGRAMS = os.path.join(ROOT, "tests", "programs")
RUNNER = os.path.join(PROGRAMS, "_as_torch.py")
TICK = os.sysconf("SC_CLK_TCK")


# ------------------------------------------------------------------------------------------------ data
def wlm_corpus(run_dir: str) -> None:
    """A corpus in word_language_model's layout (<dir>/train.txt, valid.txt, test.txt), Zipf-like word counts."""
    rng = np.random.default_rng(0)
    vocab = [f"w{i}" for i in range(1000)]
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()
    d = os.path.join(run_dir, "corpus")
    os.makedirs(d)
    for name, lines in (("train", 2400), ("valid", 200), ("test", 200)):
        with open(os.path.join(d, f"{name}.txt"), "w") as f:
            for _ in range(lines):
                n = int(rng.integers(5, 20))
                f.write(" " + " ".join(vocab[i] for i in rng.choice(len(vocab), n, p=p)) + " \n")


def nanogpt_chars(run_dir: str) -> None:
    """data/tiny_char/{train,val}.bin and meta.pkl as nanoGPT's shakespeare_char/prepare.py writes them."""
    text = ""
    for name in sorted(os.listdir(os.path.join(PROGRAMS, "nanogpt"))):
        if name.endswith(".py"):
            with open(os.path.join(PROGRAMS, "nanogpt", name)) as f:
                text += f.read()
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    ids = np.array([stoi[c] for c in text], dtype=np.uint16)
    n = int(len(ids) * 0.9)
    d = os.path.join(run_dir, "data", "tiny_char")
    os.makedirs(d)
    ids[:n].tofile(os.path.join(d, "train.bin"))
    ids[n:].tofile(os.path.join(d, "val.bin"))
    with open(os.path.join(d, "meta.pkl"), "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)), "stoi": stoi}, f)


TSP_POINTS = 200


def tsp_shorten(run_dir: str) -> None:
    with open(os.path.join(run_dir, "shorten_data.py"), "w") as f:
        f.write("import torch\ndata = torch.load('traindata.pt', weights_only=False)\n"
                f"torch.save(data[:, :{TSP_POINTS}], 'traindata.pt')\n")


# --------------------------------------------------------------------------------------------- scripts
_WLM = ["main.py", "--data", "corpus", "--emsize", "64", "--nhid", "64", "--nlayers", "2", "--nhead", "2",
        "--bptt", "35", "--batch_size", "20", "--dropout", "0.2", "--epochs", "1", "--log-interval", "10",
        "--save", "model.pt"]
_WLM_LINE = re.compile(r"\|\s+(\d+)/\s*\d+ batches .*ms/batch\s+([\d.]+) \| loss\s+([\d.]+)")
_NANOGPT = ["train.py", "--dataset=tiny_char", "--device=cpu", "--dtype=float32", "--out_dir=out",
            "--eval_iters=2", "--eval_interval=1000", "--log_interval=1", "--n_layer=4", "--n_head=4",
            "--n_embd=128", "--block_size=64", "--batch_size=12", "--gradient_accumulation_steps=1",
            "--dropout=0.0", "--bias=False", "--max_iters=30", "--lr_decay_iters=30", "--warmup_iters=3",
            "--always_save_checkpoint=False"]
_NANOGPT_LINE = re.compile(r"^iter (\d+): loss ([\d.]+), time ([\d.]+)ms")
_TSP_LINE = re.compile(r"^loss: ([-\d.e]+)")

# name: (program, data maker, commands, the log line, what a line counts, lines to skip, what one batch is)
SCRIPTS = {
    "wlm_lstm": ("word_language_model", wlm_corpus, [_WLM + ["--model", "LSTM"]], _WLM_LINE, "wlm", 1,
                 "main.py --model LSTM, 2 x 64, bptt 35, batch 20: one batch"),
    "wlm_gru": ("word_language_model", wlm_corpus, [_WLM + ["--model", "GRU", "--lr", "5"]], _WLM_LINE, "wlm", 1,
                "main.py --model GRU, 2 x 64, bptt 35, batch 20, lr 5: one batch"),
    "wlm_transformer": ("word_language_model", wlm_corpus, [_WLM + ["--model", "Transformer", "--lr", "1"]],
                        _WLM_LINE, "wlm", 1, "main.py --model Transformer, 2 x 64, 2 heads, bptt 35, batch 20: "
                        "one batch"),
    "nanogpt": ("nanogpt", nanogpt_chars, [_NANOGPT + ["--compile=False"]], _NANOGPT_LINE, "iter", 3,
                "train.py, 4 x 128, 4 heads, block 64, batch 12, --compile=False: one iteration"),
    "nanogpt_compile": ("nanogpt", nanogpt_chars, [_NANOGPT + ["--compile=True"]], _NANOGPT_LINE, "iter", 5,
                        "train.py, the same, --compile=True: one iteration"),
    "tsp": ("time_sequence_prediction", tsp_shorten,
            [["generate_sine_wave.py"], ["shorten_data.py"], ["train.py", "--steps", "2"]], _TSP_LINE, "closure", 2,
            f"train.py --steps 2, 97 waves x {TSP_POINTS - 1} points, float64: one LBFGS closure"),
}


def _env(threads: int) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([ROOT, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(threads)
    env.update({"MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0",
                "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD": "1"})
    return env


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a live process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def prepare(name: str, base: str) -> dict:
    """A run directory per library: the program's files and its data."""
    program, make_data = SCRIPTS[name][:2]
    dirs = {}
    for lib in ("torch", "ember"):
        d = os.path.join(base, f"{name}-{lib}")
        shutil.copytree(os.path.join(PROGRAMS, program), d)
        if program == "nanogpt" and not _has("tiktoken"):   # sample.py's import, never used here
            with open(os.path.join(d, "tiktoken.py"), "w") as f:
                f.write("def get_encoding(name):\n    raise ImportError('tiktoken stub')\n")
        make_data(d)
        dirs[lib] = d
    return dirs


def _has(module: str) -> bool:
    import importlib.util
    return importlib.util.find_spec(module) is not None


def run_once(name: str, lib: str, run_dir: str, threads: int) -> dict:
    """Run the script's commands under ``lib``; the per-batch CPU and wall figures and the printed losses."""
    _, _, commands, line_re, kind, skip, _ = SCRIPTS[name]
    marks, losses, walls, last_wall = [], [], [], None
    for args in commands:
        proc = subprocess.Popen([sys.executable, RUNNER, lib, *args], cwd=run_dir, env=_env(threads),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        counted = args is commands[-1]
        for line in proc.stdout:
            m = line_re.search(line)
            if not (m and counted):
                continue
            now = time.perf_counter()
            try:
                cpu = _cpu_seconds(proc.pid)
            except OSError:
                break
            if kind == "wlm":
                position, wall, loss = int(m.group(1)), float(m.group(2)), float(m.group(3))
            elif kind == "iter":
                position, loss, wall = int(m.group(1)), float(m.group(2)), float(m.group(3))
            else:   # tsp: no times printed; the wall time between loss lines
                position, loss = len(marks), float(m.group(1))
                wall = (now - last_wall) * 1e3 if last_wall is not None else None
                last_wall = now
            marks.append((position, cpu))
            losses.append(loss)
            if len(marks) > skip and wall is not None:
                walls.append(wall)
        err = proc.stderr.read()
        if proc.wait():
            raise RuntimeError(f"{name} under {lib} failed ({' '.join(args)}):\n{err[-3000:]}")
    steady = marks[skip:]
    if len(steady) < 2:
        raise RuntimeError(f"{name} under {lib}: too few log lines ({len(marks)})")
    batches = steady[-1][0] - steady[0][0]
    cpu_ms = (steady[-1][1] - steady[0][1]) / batches * 1e3
    return {"cpu": cpu_ms, "wall": statistics.median(walls), "losses": losses}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(SCRIPTS))
    ap.add_argument("--runs", type=int, default=3, help="runs of each script per library (default 3)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep the temporary run directories")
    args = ap.parse_args(argv)
    names = args.only or [n for n in SCRIPTS if n != "nanogpt_compile"]
    base = tempfile.mkdtemp(prefix="ember-scripts-")
    print(f"{args.threads} thread(s); {args.runs} runs per library, alternating; load average at start "
          f"{os.getloadavg()[0]:.1f}; run directories under {base}", file=sys.stderr)
    rows = []
    try:
        for name in names:
            dirs = prepare(name, base)
            res = {"torch": [], "ember": []}
            for r in range(args.runs):
                for lib in (("torch", "ember") if r % 2 == 0 else ("ember", "torch")):
                    res[lib].append(run_once(name, lib, dirs[lib], args.threads))
            cell = {lib: (statistics.median(x["cpu"] for x in v), statistics.median(x["wall"] for x in v))
                    for lib, v in res.items()}
            lt, le = res["torch"][-1]["losses"], res["ember"][-1]["losses"]
            n = min(len(lt), len(le))
            diff = max(abs(a - b) / max(abs(a), 1e-30) for a, b in zip(lt[:n], le[:n]))
            rows.append((name, cell, lt, le, diff))
            print(f"{name}: torch CPU {cell['torch'][0]:.1f} ms, ember {cell['ember'][0]:.1f} ms "
                  f"({cell['ember'][0] / cell['torch'][0]:.2f}x); losses torch {lt[0]:.4f}..{lt[-1]:.4f}, "
                  f"ember {le[0]:.4f}..{le[-1]:.4f}, max rel diff {diff:.1e}", file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"\nload average at end {os.getloadavg()[0]:.1f}; median of {args.runs} runs per library\n")
    print("| script | one batch | torch CPU ms | ember CPU ms | ember/torch CPU | torch wall ms | ember wall ms | "
          "ember/torch wall | losses torch (first, last) | losses ember | max rel diff |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|---|---:|")
    for name, cell, lt, le, diff in rows:
        (tc, tw), (ec, ew) = cell["torch"], cell["ember"]
        print(f"| {name} | {SCRIPTS[name][6]} | {tc:.1f} | {ec:.1f} | {ec / tc:.2f}x | {tw:.1f} | {ew:.1f} | "
              f"{ew / tw:.2f}x | {lt[0]:.4f}, {lt[-1]:.4f} | {le[0]:.4f}, {le[-1]:.4f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
