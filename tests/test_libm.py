"""ember/devices/cpu/libm.py: the C library's float64 functions, bit for bit, whatever NumPy's SIMD dispatch.

PyTorch's random transforms call the C library's log, log1p, exp, sin, cos and tan; NumPy's AVX-512
kernels differ from it in the last bit for a fraction of inputs. These tests compare the kernels with
``math`` (the same C library), on inputs where NumPy's AVX-512 kernels are known to be off, and run
ember's random streams against PyTorch's with NumPy's dispatch forced down to AVX2.
"""
from __future__ import annotations

import math
import os
import platform
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from ember.devices.cpu import libm

NAMES = ["log", "log1p", "exp", "sin", "cos", "tan"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _math(name, x):
    return np.array([getattr(math, name)(v) for v in x.tolist()])


def _in_domain(name, v):
    try:
        getattr(math, name)(v)
        return True
    except (ValueError, OverflowError):
        return False


def _bits_equal(a, b):
    return np.array_equal(np.asarray(a).view(np.uint64), np.asarray(b).view(np.uint64))


@pytest.mark.parametrize("name", [n for n in NAMES if libm.HARD_CASES[n]])
def test_hard_cases(name):
    """Inputs where NumPy 2.4's AVX-512 kernel is 1 ulp off glibc: the expected values are glibc's."""
    x = np.array([float.fromhex(a) for a, _ in libm.HARD_CASES[name]])
    want = np.array([float.fromhex(b) for _, b in libm.HARD_CASES[name]])
    got = getattr(libm, name)(x)
    assert _bits_equal(got, _math(name, x))
    if name == "log":   # whichever kernel was chosen, the guarded log path is right on them too
        assert _bits_equal(libm._log_guarded(x), _math(name, x))
    if not _bits_equal(want, _math(name, x)):
        pytest.skip("another C library (or another build of it) than the glibc 2.36 FMA build that gave them")
    assert _bits_equal(got, want)


@pytest.mark.parametrize("name", NAMES)
def test_matches_math(name):
    """Each kernel against math.<name> over its random-transform domain, the check sample and specials."""
    u = np.arange(1, 20001) * 0.7548776662466927 % 1.0     # a low-discrepancy sample of (0, 1)
    u = np.floor(u * 2.0 ** 53) * 2.0 ** -53
    inputs = {
        "log": np.concatenate([1.0 - u, u, [2.0 ** -1074, 1e-310, 1.0, 2.0, 1e300, 2.0 ** -53]]),
        "log1p": np.concatenate([-u, u * 5, [0.0, -0.0, 1e-300, -0.5, 1e300]]),
        "exp": np.concatenate([(u - 0.5) * 60, (u - 0.5) * 1400, [0.0, -745.2, 709.78, 709.782712893384]]),
        "sin": np.concatenate([2.0 * math.pi * u, (u - 0.5) * 1e6, [0.0, -0.0, 1e300]]),
        "cos": np.concatenate([2.0 * math.pi * u, (u - 0.5) * 1e6, [0.0, 1e300]]),
        "tan": np.concatenate([math.pi * (u - 0.5), (u - 0.5) * 1e3, [0.0, 1e300]]),
    }[name]
    x = np.concatenate([inputs, libm.check_sample(name)])
    x = x[[_in_domain(name, v) for v in x.tolist()]]     # where math raises: test_special_values
    got = getattr(libm, name)(x)
    want = _math(name, x)
    bad = got != want
    assert not bad.any(), (x[bad][:5], got[bad][:5], want[bad][:5])


def test_special_values():
    with np.errstate(all="ignore"):
        x = np.array([0.0, -0.0, -1.0, math.inf, -math.inf, math.nan])
        for name in NAMES:
            got = getattr(libm, name)(x)
            want = getattr(np, name)(x)
            assert np.array_equal(got, want, equal_nan=True), name
    assert libm.exp(np.array([709.7827128933841, 710.0, 1e308])).tolist() == [math.inf] * 3
    assert libm.log(np.empty((0, 3))).shape == (0, 3)
    assert libm.log(np.ones((2, 3))).shape == (2, 3)


def test_guarded_log_large_random_sample():
    """The double-double log, rounded once and redone with math.log only near midpoints, equals math.log
    on a large sample: the random transforms' inputs (1 - u, u), numbers near 1, and all exponents."""
    rng = np.random.default_rng(20261128)
    u = rng.integers(0, 2 ** 53, 400_000) * 2.0 ** -53
    x = np.concatenate([1.0 - u, u[u > 0], 1.0 + rng.uniform(-2.0 ** -6, 2.0 ** -6, 100_000),
                        np.exp2(rng.uniform(-1022, 1023, 100_000)),
                        rng.integers(1, 2 ** 62, 50_000, dtype=np.int64).view(np.float64)])
    got = libm._log_guarded(x)
    want = np.fromiter(map(math.log, x.tolist()), np.float64, count=x.size)
    bad = got != want
    assert not bad.any(), (x[bad][:5], got[bad][:5], want[bad][:5])


def test_guarded_exp_large_random_sample():
    """The same for exp: normals as log_normal_ exponentiates them, and the whole finite range."""
    rng = np.random.default_rng(20261129)
    x = np.concatenate([rng.standard_normal(400_000) * 2 + 1, rng.uniform(-750, 712, 200_000),
                        rng.uniform(-2.0 ** -20, 2.0 ** -20, 50_000), [708.0, -708.0, 709.78, -745.1, 0.0]])
    got = libm._exp_guarded(x)
    want = np.array([math.exp(v) if _in_domain("exp", v) else math.inf for v in x.tolist()])
    bad = got != want
    assert not bad.any(), (x[bad][:5], got[bad][:5], want[bad][:5])


def _dispatch_env():
    env = dict(os.environ)
    env["NPY_DISABLE_CPU_FEATURES"] = "X86_V4 AVX512_ICL AVX512_SPR"   # NumPy 2.4's AVX-512 targets
    env.pop("EMBER_SLOW", None)
    return env


_SUBPROCESS = textwrap.dedent("""
    import numpy as np, torch, ember
    from numpy.lib.introspect import opt_func_info
    from ember.devices.cpu import libm
    info = opt_func_info(func_name="^(log|log1p|exp|sin|cos|tan)$")
    print("dispatch", sorted({v["dd"]["current"] for v in info.values()}))
    print("kernels", sorted((n, libm._kernel(n).__name__) for n in
                            ["log", "log1p", "exp", "sin", "cos", "tan"]))

    def case(T):
        out = []
        for seed in (0, 1, 42):
            T.manual_seed(seed)
            for n in (3, 17, 100, 4099):
                out += [T.randn(n, dtype=T.float64), T.empty(n, dtype=T.float64).normal_(0.7, 1.9),
                        T.empty(n, dtype=T.float64).exponential_(2.5), T.empty(n, dtype=T.float64).geometric_(0.3),
                        T.empty(n, dtype=T.float64).cauchy_(1.5, 0.5), T.empty(n, dtype=T.float64).log_normal_(),
                        T.randn(n), T.empty(n).exponential_(), T.empty(n).log_normal_(0.1, 0.3),
                        T.multinomial(T.rand(n, dtype=T.float64), 2)]
        out.append(T.randn(300, 333, dtype=T.float64))
        return [o.numpy() if hasattr(o, "numpy") else o._data for o in out]

    bad = sum(int((a != b).sum()) for a, b in zip(case(torch), case(ember)))
    print("differ", bad)
    # each kernel against math on a larger sample of its random-transform domain
    import math
    u = np.random.default_rng(0).integers(0, 2 ** 53, 200_000) * 2.0 ** -53
    xs = {"log": 1.0 - u, "log1p": -u, "exp": (u - 0.5) * 20, "sin": 2 * math.pi * u, "cos": 2 * math.pi * u,
          "tan": math.pi * (u - 0.5)}
    print("kernel mismatches", sum(int((getattr(libm, n)(x) != np.array([getattr(math, n)(v) for v in x.tolist()]))
                                       .sum()) for n, x in xs.items()))
""")


def _run_subprocess(env):
    r = subprocess.run([sys.executable, "-c", _SUBPROCESS], env=env, cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


def test_random_streams_with_avx2_dispatch():
    """NumPy forced down to AVX2 (NPY_DISABLE_CPU_FEATURES): ember's random numbers still equal torch's."""
    pytest.importorskip("torch")
    out = _run_subprocess(_dispatch_env())
    assert "differ 0" in out and "kernel mismatches 0" in out, out
    dispatch = out.splitlines()[0]
    assert "X86_V4" not in dispatch and "AVX512" not in dispatch, out


@pytest.mark.skipif(not (sys.platform.startswith("linux") and platform.machine() == "x86_64"
                         and platform.libc_ver()[0] == "glibc"), reason="glibc on x86-64 only")
def test_random_streams_with_glibc_plain_build():
    """glibc told not to use its FMA builds (GLIBC_TUNABLES): its results change in the last bit for some
    inputs, and ember (which checks its kernels against math.* at first use) must still match torch."""
    pytest.importorskip("torch")
    env = dict(os.environ)
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    env["GLIBC_TUNABLES"] = "glibc.cpu.hwcaps=-FMA,-AVX2"
    out = _run_subprocess(env)
    assert "differ 0" in out and "kernel mismatches 0" in out, out


def test_random_streams_with_native_dispatch():
    """The same comparison with NumPy's own dispatch (AVX-512 where the machine has it)."""
    pytest.importorskip("torch")
    env = dict(os.environ)
    env.pop("NPY_DISABLE_CPU_FEATURES", None)
    out = _run_subprocess(env)
    assert "differ 0" in out and "kernel mismatches 0" in out, out
