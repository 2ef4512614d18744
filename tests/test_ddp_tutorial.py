"""pytorch/examples' ddp-tutorial-series under ember's launcher against torchrun with gloo (see
tests/test_ddp_examples.py): single_gpu.py (one process), multigpu_torchrun.py on 2 processes, then again in the
same folder for one more epoch, which loads the snapshot rank 0 wrote and resumes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_ddp_examples import check_checkpoint, check_printed, make_runs, pytestmark  # noqa: E402,F401

runs = make_runs(("single_gpu",), ("torchrun2",), ("resume2",))


@pytest.mark.parametrize("name", ["single_gpu", "torchrun2", "resume2"])
def test_prints_what_torch_prints(runs, name):
    check_printed(runs, name)


@pytest.mark.parametrize("file", ["single_gpu/checkpoint.pt", "torchrun2/snapshot.pt"])
def test_checkpoints_as_torch(runs, file):
    check_checkpoint(runs, file)
