"""Loaded by every Python process of a tests/test_ddp_examples.py job (that test puts this folder on PYTHONPATH):
the launcher, its ranks, and the children ``multiprocessing.spawn`` starts. The example scripts stay unchanged.

EXAMPLE_LIB=ember: ``import torch`` and ``import torch.X`` give ember and ember.X (tests/seed_snippets/_runner.py's
alias finder). EXAMPLE_SEED=S: ``manual_seed(S)`` as ``torch`` is imported, so that ember's run and torch's make the
same data and initial parameters (the scripts draw them unseeded). EXAMPLE_OUT=DIR: this process's stdout goes to
DIR/stdout_<pid>.txt, a line at a time (the launchers merge the ranks' output streams at any byte).
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

if os.environ.get("EXAMPLE_OUT"):
    sys.stdout = open(os.path.join(os.environ["EXAMPLE_OUT"], f"stdout_{os.getpid()}.txt"), "w", buffering=1)

if os.environ.get("EXAMPLE_LIB", "torch") != "torch":
    sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "seed_snippets"))
    from _runner import _AliasFinder, _AliasLoader

    class _TorchIsLib(_AliasFinder):
        """``import torch`` too (loaded on first import: a launcher process never imports it)."""

        def find_spec(self, fullname, path=None, target=None):
            if fullname == "torch":
                return importlib.util.spec_from_loader(fullname, _AliasLoader(importlib.import_module(self.lib)))
            return super().find_spec(fullname, path, target)

    sys.meta_path.insert(0, _TorchIsLib(os.environ["EXAMPLE_LIB"]))


class _SeedOnImport(importlib.abc.MetaPathFinder):
    """Seeds ``torch`` once it is imported (whichever library that is)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            module.manual_seed(int(os.environ["EXAMPLE_SEED"]))
        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("EXAMPLE_SEED"):
    sys.meta_path.insert(0, _SeedOnImport())
