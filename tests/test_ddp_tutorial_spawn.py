"""pytorch/examples' ddp-tutorial-series under ember against torch with gloo (see tests/test_ddp_examples.py):
multigpu.py, which starts its 2 processes itself with ``mp.spawn`` (ember starts them as one MPI job), and
multinode.py on 2 processes under the launchers."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ddp_examples import check_checkpoint, check_printed, make_runs, pytestmark  # noqa: E402,F401

runs = make_runs(("spawn2",), ("multinode2",))


@pytest.mark.parametrize("name", ["spawn2", "multinode2"])
def test_prints_what_torch_prints(runs, name):
    check_printed(runs, name)


@pytest.mark.parametrize("file", ["spawn2/checkpoint.pt", "multinode2/snapshot.pt"])
def test_checkpoints_as_torch(runs, file):
    check_checkpoint(runs, file)
