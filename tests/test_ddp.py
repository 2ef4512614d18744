"""DistributedDataParallel: real multi-process jobs (launched as tests/test_distributed.py launches them).

tests/dist_programs/ddp.py trains an MLP (SGD), a small CNN and an LSTM (Adam) for 20 steps with DDP, every rank
on its share of the same global batches, and in one process on the whole batches; no_sync accumulation against
the large batch; SyncBatchNorm (BatchNorm over the whole batch; torch's refuses CPU modules, so only the
single-process comparison there); find_unused_parameters with a branch used on one rank and a layer never used;
``join()`` with even and uneven inputs (more in tests/test_ddp_join.py); errors. It runs under ember's launcher on 2 processes, under plain mpiexec on 4 (a subset), and under torchrun
with torch's gloo on 2 and 4: DDP must equal the single-process training to float rounding and torch's DDP to float rounding
(ember's kernels and torch's differ in the last bits here and there; the errors are compared word for word).
tests/dist_programs/train_ddp.py is a torchrun-style script (DistributedSampler, rank-0 checkpoints): ember's
launcher prints the losses and final parameters torchrun prints with torch.
"""
from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_distributed import ROOT, _finish, _launch, pytestmark  # noqa: E402,F401

SCRIPT = ROOT / "tests" / "dist_programs" / "ddp.py"
TRAIN = ROOT / "tests" / "dist_programs" / "train_ddp.py"
FOUR = "mlp_sgd,cnn_adam,unused_rank_dependent,mlp_no_sync,sync_batchnorm"   # the cases run on 4 ranks
TRAINED = ["mlp_sgd", "mlp_sgd_small_buckets", "cnn_adam", "lstm_adam", "mlp_no_sync", "mlp_static_graph",
           "sync_batchnorm"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every job, two at a time (2 cores): {job: [rank results]} and the training script's outputs."""
    base = tmp_path_factory.mktemp("ddp")
    t0 = time.monotonic()
    out: dict = {}
    def job(kind, n, name, script, **env):
        return lambda: _launch(kind, n, base / name, script, **env)
    waves = [{"ember2": (job("ember", 2, "ember2", SCRIPT), 2), "torch2": (job("torch", 2, "torch2", SCRIPT), 2)},
             {"ember4": (job("mpiexec", 4, "ember4", SCRIPT, CASES=FOUR), 4)},
             {"torch4": (job("torch", 4, "torch4", SCRIPT, CASES=FOUR), 4)},
             {"train_ember2": (job("ember", 2, "train_ember2", TRAIN), 0),
              "train_torch2": (job("torch", 2, "train_torch2", TRAIN), 0)},
             {"train_ember4": (job("ember", 4, "train_ember4", TRAIN), 0)},
             {"train_torch4": (job("torch", 4, "train_torch4", TRAIN), 0)}]
    for wave in waves:
        started = {name: (start(), n) for name, (start, n) in wave.items()}
        for name, (proc, n) in started.items():
            rc, text = _finish(proc)
            if rc != 0 and "torch" in name:
                # torch's gloo now and then aborts in its own teardown on a loaded machine, after printing
                # everything ("terminate called without an active exception"): the reference job runs once more
                rc, text = _finish(wave[name][0]())
            assert rc == 0, f"{name} failed:\n{text[-4000:]}"
            if n:
                out[name] = [json.loads((base / name / f"rank{r}.json").read_text()) for r in range(n)]
            else:   # the training script: rank 0's printed losses and every rank's parameters, from the files
                # each rank writes (the launchers merge the ranks' output streams at any byte)
                ranks = int(name[-1])
                out[name] = "".join((base / name / f"params_rank{r}.txt").read_text() for r in range(ranks))
    out["seconds"] = time.monotonic() - t0
    return out


def _flat(v) -> np.ndarray:
    if isinstance(v, dict):
        return np.concatenate([_flat(v[k]) for k in sorted(v)]) if v else np.zeros(0)
    return np.asarray(v, dtype=np.float64).reshape(-1)


def _close(a, b, tol: float = 2e-6) -> bool:
    x, y = _flat(a), _flat(b)
    return x.shape == y.shape and bool(np.allclose(x, y, rtol=tol, atol=tol))


@pytest.mark.parametrize("job", ["ember2", "ember4"])
def test_ddp_equals_single_process_training(runs, job):
    ranks = runs[job]
    for case in TRAINED:
        if case not in ranks[0]:
            continue
        got = ranks[0][case]
        assert "error" not in got, got
        assert got["keys"][0].startswith("module."), got["keys"]
        for r, other in enumerate(ranks):   # every rank holds the same parameters, bit for bit
            assert other[case]["ddp"] == got["ddp"], (job, case, r)
        assert _close(got["ddp"], got["single"]), (job, case)


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_equals_torch_gloo(runs, n):
    compared = 0
    for e, t in zip(runs[f"ember{n}"], runs[f"torch{n}"]):
        assert sorted(e) == sorted(t)
        for case, tv in t.items():
            ev = e[case]
            if case == "sync_batchnorm":   # torch's DDP refuses SyncBatchNorm on CPU; ember synchronises it
                assert tv == {"error": "ValueError", "message": "SyncBatchNorm layers only work with GPU modules"}
            elif case in TRAINED:
                assert _close(ev["ddp"], tv["ddp"]) and _close(ev["losses"], tv["losses"], 1e-5), case
                assert ev["keys"] == tv["keys"]
            elif case == "unused_rank_dependent":
                for eg, tg in zip(ev[0], tv[0]):   # which gradients are None, and the values
                    assert {k: v is None for k, v in eg.items()} == {k: v is None for k, v in tg.items()}
                    assert _close({k: v for k, v in eg.items() if v is not None},
                                  {k: v for k, v in tg.items() if v is not None})
                assert _close(ev[1], tv[1])
            elif case.startswith("join_") and case != "join_throw":   # (join_throw: the errors, word for word)
                assert isinstance(tv, dict) and _close(ev, tv), case
            elif case == "buffers":
                assert _close(ev[:2], tv[:2]) and ev[2] == tv[2]
            else:   # errors, word for word
                assert ev == tv, (case, ev, tv)
            compared += 1
    assert compared >= (12 if n == 2 else 5) * n


def test_find_unused_parameters(runs):
    """``b`` used on rank 0 on even steps only: its gradient is rank 0's halved on both ranks then, None on odd
    steps (unused everywhere); ``c`` never has one."""
    for ranks in (runs["ember2"], runs["ember4"]):
        steps = ranks[0]["unused_rank_dependent"][0]
        for s, g in enumerate(steps):
            assert g["c.weight"] is None and g["c.bias"] is None
            assert (g["b.weight"] is None) == (s % 2 == 1)
            assert g["a.weight"] is not None
        for other in ranks[1:]:
            assert other["unused_rank_dependent"] == ranks[0]["unused_rank_dependent"]


def test_errors_as_torch(runs):
    e = runs["ember2"][0]
    name, message = e["unused_error"]
    assert name == "RuntimeError" and message.startswith("Expected to have finished reduction in the prior")
    assert "Parameter indices which did not receive grad for rank 0: 4 5" in message
    assert e["constructor_errors"][0] == ["RuntimeError", "DistributedDataParallel is not needed when a module "
                                          "doesn't have any parameter that requires a gradient."]


def _parse(text: str) -> tuple[list, dict]:
    losses = [float(m) for m in re.findall(r"^epoch \d+ step \d+ loss (\S+)$", text, re.M)]
    pieces: dict = {}   # (rank, name) -> {offset: values}: each parameter printed 16 values a line
    for m in re.findall(r"^rank (\d+) (\S+) (\d+) (.*)$", text, re.M):
        pieces.setdefault((m[0], m[1]), {})[int(m[2])] = [float(v) for v in m[3].split()]
    params = {key: [v for k in sorted(p) for v in p[k]] for key, p in pieces.items()}
    return losses, params


@pytest.mark.parametrize("n", [2, 4])
def test_torchrun_style_script_prints_what_torch_prints(runs, n):
    el, ep = _parse(runs[f"train_ember{n}"])
    tl, tp = _parse(runs[f"train_torch{n}"])
    assert len(el) == len(tl) == 24 // n, (runs[f"train_ember{n}"][-2000:], runs[f"train_torch{n}"][-2000:])
    assert np.allclose(el, tl, rtol=0, atol=2e-6), (el, tl)
    assert sorted(ep) == sorted(tp) and len(ep) == 4 * n
    for key in tp:
        assert np.allclose(ep[key], tp[key], rtol=0, atol=2e-6), key
        assert ep[key] == ep[("0", key[1])]   # every rank the same (loaded from rank 0's checkpoint)


def test_single_process_pieces():
    """Without a process group: PyTorch's error; DataParallel runs the module (no GPU); the engine's final
    callbacks."""
    import ember as torch
    from ember.autograd import Variable
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))
    m = torch.nn.Linear(3, 2)
    dp = torch.nn.DataParallel(m)
    x = torch.ones(4, 3)
    assert dp.device_ids == [] and torch.equal(dp(x), m(x)) and list(dp.state_dict())[0] == "module.weight"
    seen = []
    w = torch.ones(2, requires_grad=True)
    w.register_post_accumulate_grad_hook(
        lambda p: Variable._execution_engine.queue_callback(lambda: seen.append(p.grad.tolist())))
    (w * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass."):
        Variable._execution_engine.queue_callback(lambda: None)


def test_sync_batchnorm_single_process():
    """Without a group (or in eval) SyncBatchNorm is BatchNorm; convert_sync_batchnorm as PyTorch's (same
    parameters and buffers, BatchNorm*d replaced at any depth); PyTorch's input checks."""
    import ember
    import torch
    for lib in (ember, torch):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Conv2d(2, 3, 1), lib.nn.Sequential(lib.nn.BatchNorm2d(3)))
        bn = m[1][0]
        s = lib.nn.SyncBatchNorm.convert_sync_batchnorm(m)
        assert type(s[1][0]).__name__ == "SyncBatchNorm" and s[1][0].weight is bn.weight
        assert s[1][0].running_mean is bn.running_mean
        x = lib.arange(24.0).reshape(2, 2, 2, 3)
        y = s(x)[:, :2]
        (y * lib.arange(24.0).reshape(2, 2, 2, 3).cos()).sum().backward()
        if lib is ember:
            ours = (y.detach().numpy(), s[0].weight.grad.numpy(), bn.running_var.numpy())
        else:
            np.testing.assert_allclose(ours[0], y.detach().numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(ours[1], s[0].weight.grad.numpy(), rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(ours[2], bn.running_var.numpy(), rtol=1e-6)
    for bad, msg in ((ember.ones(3), "expected at least 2D input (got 1D input)"),
                     (ember.ones(2, 0), "SyncBatchNorm number of input channels should be non-zero")):
        for lib, t in ((ember, bad), (torch, torch.from_numpy(bad.numpy()))):
            with pytest.raises(ValueError, match=re.escape(msg)):
                lib.nn.SyncBatchNorm(3 if bad.dim() == 1 else 0)(t)


def test_bucket_assignment_as_torch():
    """Buckets as torch's ``_compute_bucket_assignment_by_size``: over the parameters in order (sorted by their
    first index; DDP reverses them) and over a gradient arrival order (rebuilding: in the order they fill), with
    PyTorch's first-bucket and later limits; one dtype per bucket."""
    import random

    import ember
    import torch
    from ember.nn.parallel.distributed import _assign_buckets
    rng = random.Random(0)
    for _ in range(150):
        n = rng.randint(1, 10)
        sizes = [rng.choice([1, 10, 1000, 50000, 300000]) for _ in range(n)]
        names = [rng.choice(["float32", "float32", "float64"]) for _ in range(n)]
        ts = [torch.zeros(s, dtype=getattr(torch, d)) for s, d in zip(sizes, names)]
        es = [ember.zeros(s, dtype=getattr(ember, d)) for s, d in zip(sizes, names)]
        limits = rng.choice([[1 << 20, 25 << 20], [4000, 400000], [100000]])
        want, _ = torch.distributed._compute_bucket_assignment_by_size(ts, limits, [False] * n)
        assert _assign_buckets(es, list(range(n)), limits, False) == [list(b) for b in want]
        if len(set(names)) == 1:   # (torch orders the still-open buckets of several dtypes by a hash map)
            order = rng.sample(range(n), n)
            want, _ = torch.distributed._compute_bucket_assignment_by_size([ts[i] for i in order], limits,
                                                                           [False] * n, order)
            assert _assign_buckets(es, order, limits, True) == [list(b) for b in want]
