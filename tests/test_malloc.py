"""ember/_malloc.py: glibc's heap thresholds set at import, unless the user chose otherwise."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROBE = "import ember._malloc as m, ember; print(m.TUNED)"


def _tuned(**env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_") and k != "EMBER_MALLOC_TUNING"}
    e.update(env)
    e["PYTHONPATH"] = ROOT + os.pathsep + e.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", PROBE], env=e, capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_thresholds_applied_by_default_on_glibc():
    import ctypes
    if not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"):
        pytest.skip("not glibc")
    assert _tuned() == "True"


def test_user_choices_win():
    assert _tuned(EMBER_MALLOC_TUNING="0") == "False"
    assert _tuned(MALLOC_TRIM_THRESHOLD_="1000000") == "False"


def test_freed_graph_memory_is_reusable():
    # a large graph built and freed twice: the second round must not grow the process by the graph's size
    code = ("import ember, resource\n"
            "def rss():\n"
            "    return int(open('/proc/self/statm').read().split()[1]) * resource.getpagesize()\n"
            "def once():\n"
            "    x = ember.ones(256, 256, requires_grad=True)\n"
            "    y = x\n"
            "    for _ in range(200):\n"
            "        y = (y * 1.01).tanh()\n"
            "    y.sum().backward()\n"
            "once(); r1 = rss(); once(); r2 = rss()\n"
            "print((r2 - r1) / 2**20)\n")
    if not os.path.exists("/proc/self/statm"):
        pytest.skip("needs /proc")
    e = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, check=True)
    assert float(out.stdout.strip()) < 20   # MB; the graph held about 50


def test_readme_documents_the_setting_and_its_opt_out():
    # the README's Speed section names what is set, the values, and the way out (kept in step with the code)
    import ember._malloc as m
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        speed = " ".join(f.read().split("## Speed", 1)[1].split("\n## ", 1)[0].split())
    assert "EMBER_MALLOC_TUNING=0" in speed and "`MALLOC_*`" in speed
    assert f"`M_MMAP_THRESHOLD` at {m.MMAP_THRESHOLD >> 20} MiB" in speed
    assert f"`M_TRIM_THRESHOLD` at {m.TRIM_THRESHOLD >> 20} MiB" in speed
