"""DistributedDataParallel.join() and torch.distributed.algorithms.Join with uneven inputs (ranks with different
numbers of batches), against PyTorch's DDP with gloo: tests/dist_programs/ddp.py's join cases on 2 processes under
ember's launcher and on 4 under plain mpiexec, and under torchrun. A rank that runs out waits at the end of the
``with`` block and shadows the all-reduces of the ranks still training (zero gradients, divided by the initial
world size or by the ranks still active; find_unused_parameters' used map); BatchNorm buffers come from the highest
active rank; at the end every rank holds the last one's parameters; with ``Join([ddp, zero])`` a
ZeroRedundancyOptimizer keeps stepping on the joined ranks; throw_on_early_termination makes every rank raise
PyTorch's errors."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ddp import SCRIPT, _close  # noqa: E402
from test_distributed import _finish, _launch, pytestmark  # noqa: E402,F401

TWO = ("join_uneven,join_uneven_bn,join_uneven_active_divisor,join_uneven_generic_hook,join_uneven_zero,"
       "join_uneven_unused,join_throw")
FOUR = "join_uneven_bn,join_uneven_active_divisor,join_uneven_generic_hook,join_uneven_zero,join_throw"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("join")
    out = {}
    for n, cases, kind in ((2, TWO, "ember"), (4, FOUR, "mpiexec")):
        jobs = {lib: (lambda lib=lib: _launch(lib if lib == "torch" else kind, n, base / f"{lib}{n}", SCRIPT,
                                              CASES=cases)) for lib in ("ember", "torch")}
        started = {lib: start() for lib, start in jobs.items()}
        for lib, proc in started.items():
            rc, text = _finish(proc)
            if rc != 0 and lib == "torch":
                # torch's gloo now and then aborts in its own teardown on a loaded machine, after printing
                # everything ("terminate called without an active exception"): the reference job runs once more
                rc, text = _finish(jobs[lib]())
            assert rc == 0, f"{lib} {n} failed:\n{text[-4000:]}"
            out[f"{lib}{n}"] = [json.loads((base / f"{lib}{n}" / f"rank{r}.json").read_text()) for r in range(n)]
    return out


@pytest.mark.parametrize("n", [2, 4])
def test_uneven_inputs_train_as_torch(runs, n):
    for r, (e, t) in enumerate(zip(runs[f"ember{n}"], runs[f"torch{n}"])):
        for case in t:
            if case == "join_throw":
                continue
            assert isinstance(e[case], dict) and _close(e[case], t[case]), (n, r, case, e[case])
            assert e[case] == runs[f"ember{n}"][0][case]   # every rank ends with the same parameters


@pytest.mark.parametrize("n", [2, 4])
def test_throw_on_early_termination_as_torch(runs, n):
    got = [e["join_throw"] for e in runs[f"ember{n}"]]
    assert got == [t["join_throw"] for t in runs[f"torch{n}"]]
    assert got[0] == ["RuntimeError", "Detected at least one rank that exhausted inputs. Throwing across all ranks."]
    assert got[1] == ["RuntimeError", "Rank 1 exhausted all inputs."]
