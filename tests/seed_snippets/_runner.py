"""Run a seed snippet script with real PyTorch or with a stand-in library posing as torch.

Used by tests/test_seeds.py; every run happens in a process of its own.

    python _runner.py run LIB SCRIPT [SEED]
        Run SCRIPT once in this process.  With LIB == "torch" real PyTorch is used and
        seeded with SEED (see below).  With any other LIB (normally "ember") the module
        LIB is imported and installed as ``torch`` in sys.modules, and ``import torch.X``
        resolves to ``LIB.X`` (or fails naturally when LIB has no such submodule); SEED
        is ignored: the stand-in library keeps its own random generator.

    python _runner.py torch-refs TIMEOUT SEEDS SCRIPT [SCRIPT ...]
        Import real PyTorch once, then fork one fresh child per (SCRIPT, SEED) pair
        (SEEDS is comma-separated); each child runs SCRIPT seeded with SEED and is killed
        after TIMEOUT seconds.  Prints JSON {SCRIPT: [{"seed", "rc", "stdout", "stderr"},
        ...]}; rc is None for a run that timed out.  (Forking after the import saves
        re-importing torch, the slow part of every run; children share no state.)

Seeding real torch with SEED means: ``torch.manual_seed(SEED)`` before the script, and
every ``torch.manual_seed(s)`` the script itself makes becomes ``manual_seed(s + SEED)``,
so with SEED == 0 the script runs exactly as written, and with another SEED every value
that comes from the random generator changes (this is how the test finds random lines).

The first line written to stderr is VERSION_MARKER followed by the library's __version__.
"""
import importlib
import importlib.abc
import importlib.util
import json
import os
import runpy
import signal
import sys
import tempfile
import traceback

VERSION_MARKER = "@@seed-runner-version@@ "


class _AliasLoader(importlib.abc.Loader):
    """Loader that hands back an already imported module under another name."""

    _ATTRS = ("__spec__", "__loader__", "__package__", "__path__", "__file__", "__cached__")

    def __init__(self, module):
        self.module = module
        self.saved = {a: getattr(module, a) for a in self._ATTRS if hasattr(module, a)}

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        # the import system stamped the alias spec on the module; put its own back
        for name, value in self.saved.items():
            try:
                setattr(module, name, value)
            except (AttributeError, TypeError):
                pass


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Make ``import torch.a.b`` give ``LIB.a.b``."""

    def __init__(self, lib):
        self.lib = lib

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("torch."):
            return None
        real_name = self.lib + fullname[len("torch"):]
        try:
            module = importlib.import_module(real_name)
        except ModuleNotFoundError as e:
            if e.name is not None and (real_name == e.name or real_name.startswith(e.name + ".")):
                # LIB has no such submodule: fail like a missing torch submodule would
                raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname) from None
            raise
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module))


def _seed_torch(torch, seed):
    real_manual_seed = torch.manual_seed

    def manual_seed(s):
        return real_manual_seed(int(s) + seed)

    manual_seed.__doc__ = real_manual_seed.__doc__
    torch.manual_seed = manual_seed
    real_manual_seed(seed)


def _exec_script(script):
    """Run script as __main__; return its exit status (tracebacks go to stderr)."""
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        code = e.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _run(lib, script, seed):
    if lib == "torch":
        import torch

        _seed_torch(torch, seed)
        module = torch
    else:
        module = importlib.import_module(lib)
        sys.modules["torch"] = module
        sys.meta_path.insert(0, _AliasFinder(lib))
    sys.stderr.write(VERSION_MARKER + str(getattr(module, "__version__", "")) + "\n")
    sys.stderr.flush()
    return _exec_script(script)


def _fork_run(script, seed, timeout):
    out = tempfile.TemporaryFile()
    err = tempfile.TemporaryFile()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child: a fresh process holding only the imported torch
        rc = 1
        try:
            signal.alarm(timeout)  # default SIGALRM action kills the child
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            rc = _run("torch", script, seed)
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(rc if isinstance(rc, int) and 0 <= rc < 256 else 1)
    _, status = os.waitpid(pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    texts = []
    for f in (out, err):
        f.seek(0)
        texts.append(f.read().decode("utf-8", "replace"))
        f.close()
    if rc == -signal.SIGALRM:
        rc = None
        texts[1] += f"\n[timed out after {timeout} s]"
    return {"seed": seed, "rc": rc, "stdout": texts[0], "stderr": texts[1]}


def _torch_refs(timeout, seeds, scripts):
    import torch  # noqa: F401  (imported once, before forking)

    results = {s: [_fork_run(os.path.abspath(s), seed, timeout) for seed in seeds] for s in scripts}
    json.dump(results, sys.stdout)
    return 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "run":
        seed = int(argv[3]) if len(argv) > 3 else 0
        return _run(argv[1], os.path.abspath(argv[2]), seed)
    if len(argv) >= 4 and argv[0] == "torch-refs":
        seeds = [int(x) for x in argv[2].split(",")]
        return _torch_refs(int(argv[1]), seeds, argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
