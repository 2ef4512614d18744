"""Seed-document snippets must print the same under ember as under real PyTorch.

Every script in tests/seed_snippets/ (one PyTorch snippet from the tutorial documents in
the seeds, made runnable) is run in fresh processes via seed_snippets/_runner.py:

* twice with real torch, seeded differently (the runner seeds torch and offsets the
  script's own ``torch.manual_seed`` calls), cached per session;
* once with ember installed as ``torch`` (``import torch`` / ``import torch.X`` give
  ``ember`` / ``ember.X``).

Output is normalised (memory addresses ``0x...`` -> ``0x?``, the library's
``__version__`` string -> ``<version>``).  Lines that differ between the two torch runs
depend on random values, so for those only the structure is compared: every number is
replaced by ``#`` and whitespace padding is collapsed (``tensor([#, #, #],
requires_grad=True)`` must still match).  All other lines must match exactly.
"""
import difflib
import json
import os
import re
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("torch")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SNIPPETS = HERE / "seed_snippets"
RUNNER = SNIPPETS / "_runner.py"

LIB_UNDER_TEST = "ember"
TIMEOUT = 60  # seconds per subprocess
TORCH_SEEDS = (0, 12345)  # first run = the script exactly as written

# Scripts that need features ember does not have yet.  A later issue builds them and
# removes the entry.
SKIP = {
    "s000_16_pitfall_devices.py": "needs cuda devices",
}

# Lines matching these patterns are always compared with numbers masked, even when the
# two torch runs happen to agree (wall-clock timings).
VOLATILE = {
    "s004_08_memory_and_speed.py": [re.compile(r"time_ms=")],
}

SCRIPTS = sorted(p.name for p in SNIPPETS.glob("s[0-9]*.py"))

VERSION_MARKER = "@@seed-runner-version@@ "
_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_NUMBER = re.compile(
    r"(?<![\w.])(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|-?(?:nan|inf))(?!\w)"
)


# --------------------------------------------------------------------------- helpers


def _env(seed=None):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env["PYTHONIOENCODING"] = "utf-8"
    env["PYTHONHASHSEED"] = "0"
    env.pop("PYTHONSTARTUP", None)
    return env


def _spawn(args, timeout=TIMEOUT):
    """Run the runner with args; return (rc, stdout, stderr); rc None on timeout."""
    proc = subprocess.Popen(
        [sys.executable, str(RUNNER), *args],
        cwd=str(REPO),
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # so a timeout can kill forked children too
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        err += f"\n[timed out after {timeout} s]".encode()
        return None, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    return proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def _split_version(stderr):
    """Strip the runner's version marker line from stderr; return (version, stderr)."""
    version, rest = "", []
    for line in stderr.splitlines(keepends=True):
        if not version and line.startswith(VERSION_MARKER):
            version = line[len(VERSION_MARKER):].strip()
        else:
            rest.append(line)
    return version, "".join(rest)


def normalise(text, version):
    text = _ADDRESS.sub("0x?", text)
    if version:
        text = re.sub(r"(?<![\w.])" + re.escape(version) + r"(?![\w.])", "<version>", text)
    return [line.rstrip("\r") for line in text.splitlines()]


def mask(line):
    """Keep a line's structure, drop its numbers and number-dependent padding."""
    line = _NUMBER.sub("#", line)
    indent = line[: len(line) - len(line.lstrip())]
    body = re.sub(r"\s+", " ", line.strip())
    body = re.sub(r"([\[(]) ", r"\1", body)
    body = re.sub(r" ([\])])", r"\1", body)
    return indent + body


class Reference:
    """What real torch prints for one script, and which lines depend on randomness."""

    def __init__(self, name, runs):
        self.name = name
        bad = [r for r in runs if r["rc"] != 0]
        if bad:
            r = bad[0]
            raise RuntimeError(
                f"{name} fails under real torch (seed {r['seed']}, rc {r['rc']}):\n"
                f"{r['stderr'][-3000:]}"
            )
        outs = [normalise(r["stdout"], r["version"]) for r in runs]
        self.lines = outs[0]
        if all(len(o) == len(self.lines) for o in outs):
            self.block = False
            self.random = {
                i for i, line in enumerate(self.lines) if any(o[i] != line for o in outs[1:])
            }
        else:  # random values changed the line count: compare everything structurally
            self.block = True
            self.random = set(range(len(self.lines)))
        for pattern in VOLATILE.get(name, ()):
            self.random |= {i for i, line in enumerate(self.lines) if pattern.search(line)}

    def view(self, lines):
        """Lines as compared: random positions masked."""
        return [mask(l) if i in self.random or self.block else l for i, l in enumerate(lines)]

    def matches(self, lines):
        if self.block:
            squash = lambda ls: re.sub(r"\s+", "", "".join(mask(l) for l in ls))
            return squash(lines) == squash(self.lines)
        return self.view(lines) == self.view(self.lines)


def _torch_references(names):
    """Reference runs for names: one runner process imports torch once and forks a fresh
    child per (script, seed); returns {name: Reference or the Exception}."""
    seeds = ",".join(map(str, TORCH_SEEDS))
    budget = TIMEOUT * len(TORCH_SEEDS) * len(names) + 30
    rc, out, err = _spawn(
        ["torch-refs", str(TIMEOUT), seeds, *(str(SNIPPETS / n) for n in names)], timeout=budget
    )
    if rc != 0:
        e = RuntimeError(f"seed runner failed under torch (rc {rc}):\n{err[-3000:]}")
        return {n: e for n in names}
    by_path = json.loads(out)
    refs = {}
    for n in names:
        runs = by_path[str(SNIPPETS / n)]
        for r in runs:
            r["version"], r["stderr"] = _split_version(r["stderr"])
        try:
            refs[n] = Reference(n, runs)
        except Exception as e:  # cached, reported by the test of that script
            refs[n] = e
    return refs


_REFERENCES = {}  # session cache: script name -> Reference (or the Exception)


def _reference(name):
    if name not in _REFERENCES:
        _REFERENCES.update(_torch_references([name]))
    ref = _REFERENCES[name]
    if isinstance(ref, Exception):
        pytest.fail(f"reference run with real torch failed: {ref}", pytrace=False)
    return ref


@pytest.fixture(scope="session")
def torch_references(request):
    """Compute the torch references of every selected, non-skipped test up front, in a
    few parallel batches; returns the lookup function."""
    wanted = []
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        module = getattr(item, "module", None)
        if callspec is None or module is None or getattr(module, "__file__", None) != __file__:
            continue
        name = callspec.params.get("script")
        if name and name not in SKIP and name not in _REFERENCES and name not in wanted:
            wanted.append(name)
    workers = max(1, min(len(wanted), os.cpu_count() or 1, 8))
    batches = [wanted[i::workers] for i in range(workers)]
    if wanted:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for refs in pool.map(_torch_references, batches):
                _REFERENCES.update(refs)
    return _reference


def run_under(lib, name, seed=0):
    """Run a script under lib ("ember", or "torch" for harness checks); normalised output."""
    rc, out, err = _spawn(["run", lib, str(SNIPPETS / name), str(seed)])
    version, err = _split_version(err)
    return rc, normalise(out, version), err


def compare(name, ref, lib=LIB_UNDER_TEST, seed=0):
    """Return None when lib prints what torch printed, else a failure message."""
    rc, lines, err = run_under(lib, name, seed)
    if rc == 0 and ref.matches(lines):
        return None
    expected, actual = ref.view(ref.lines), ref.view(lines)
    diff = "\n".join(
        difflib.unified_diff(
            expected, actual, f"torch: {name}", f"{lib}: {name}", lineterm="", n=3
        )
    )
    msg = [f"{name}: output under {lib} differs from torch"]
    if ref.random:
        msg.append(f"(lines {sorted(i + 1 for i in ref.random)} depend on random values; "
                   "numbers there are masked as '#')")
    msg.append(diff or "(stdout matches)")
    if rc != 0:
        msg.append(f"--- {lib} exited with status {rc}; stderr tail:\n{err[-3000:]}")
    return "\n".join(msg)


# ----------------------------------------------------------------------------- tests


def _params():
    for name in SCRIPTS:
        marks = [pytest.mark.skip(reason=SKIP[name])] if name in SKIP else []
        yield pytest.param(name, id=name[:-3], marks=marks)


@pytest.mark.parametrize("script", list(_params()))
def test_seed_snippet(script, torch_references):
    ref = torch_references(script)
    problem = compare(script, ref)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_skip_list_names_existing_scripts():
    assert set(SKIP) <= set(SCRIPTS), set(SKIP) - set(SCRIPTS)
    assert set(VOLATILE) <= set(SCRIPTS), set(VOLATILE) - set(SCRIPTS)


def test_mask():
    assert mask("tensor([ 3.8041, -0.8740,  3.2527], requires_grad=True)") == mask(
        "tensor([0.1000, 2.0000, 1.0000e+05], requires_grad=True)"
    ) == "tensor([#, #, #], requires_grad=True)"
    assert mask("tensor(12., grad_fn=<MulBackward0>)") == "tensor(#, grad_fn=<MulBackward0>)"
    assert mask("mean=nan, std=-inf") == "mean=#, std=#"
    assert normalise("<AddBackward0 object at 0x7f00ab>", "") == ["<AddBackward0 object at 0x?>"]
    assert normalise("PyTorch version: 2.13.0+cpu", "2.13.0+cpu") == ["PyTorch version: <version>"]
