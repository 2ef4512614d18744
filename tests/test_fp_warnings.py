"""NumPy's floating-point RuntimeWarnings (overflow, 0/0, log(0), inf - inf, inf/nan cast to an integer) never reach
the user from ember, where PyTorch is silent: in forward, backward, double backward, forward mode, anomaly mode,
optimizers, nn.init, printing, casts, reductions and linalg. ember silences NumPy's error state while it computes
and restores the caller's: the user's own NumPy code keeps its warnings.

Each case runs in a fresh interpreter whose warning filters are set *after* ``import ember`` (as pytest, a
notebook or a user's ``warnings.simplefilter`` does), recording every RuntimeWarning; its values are compared with
PyTorch's on the same code."""
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))   # the subprocesses import this ember

# (name, code): the code sets ``out`` (a tensor, a number, a string or a list of them); ``torch``, ``nn``, ``F`` and
# ``fwAD`` are ember's in the subprocess and PyTorch's here; ``np`` is NumPy and ``err(f)`` gives f's result or its
# exception's type and message. A case whose code raises must raise the same type.
CASES = [
    # the cases
    ("half_mul_cast", "out = torch.tensor([60000.0], dtype=torch.float16) * 2"),
    ("half_sum_reduce", "out = torch.full((4,), 30000.0, dtype=torch.float16).sum()"),
    ("exp_backward", "x = torch.tensor([100.0, 1000.0], requires_grad=True); x.exp().sum().backward(); "
                     "out = [x.grad]"),
    ("float_mul", "out = torch.tensor([3e38]) * 10"),
    ("poisson_full", "out = F.poisson_nll_loss(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 1.0]), full=True)"),
    ("poisson_full_nolog", "out = F.poisson_nll_loss(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 3.0]), "
                           "log_input=False, full=True, reduction='none')"),
    ("anomaly_nan", "with torch.autograd.detect_anomaly():\n"
                    "    x = torch.tensor([0.0, 1.0], requires_grad=True)\n"
                    "    (x.log() * 0).sum().backward()"),
    # forward: division by zero, 0/0, log of 0 and negatives, inf - inf, overflow
    ("div_zero", "out = [torch.tensor([1.0, 0.0, -1.0]) / 0, torch.tensor([0.0]) / torch.tensor([0.0])]"),
    ("log_family", "x = torch.tensor([0.0, -1.0]); out = [x.log(), x.log2(), x.log10(), x.log1p() * 0, x.sqrt(), "
                   "x.rsqrt(), x.reciprocal()]"),
    ("inf_minus_inf", "a = torch.tensor([float('inf')]); out = [a - a, a * 0, a / a, torch.sin(a)]"),
    ("overflow_unary", "x = torch.tensor([1000.0]); out = [x.exp(), x.sinh(), x.cosh(), x.exp2(), x.expm1(), "
                       "torch.pow(x, 100), x.square() * x]"),
    ("half_ops", "x = torch.tensor([60000.0, 1.0], dtype=torch.float16); out = [x + x, x * x, x.exp(), "
                 "x.square(), x.mean(), x.prod(), x.cumsum(0), x.norm()]"),
    ("int_overflow_0d", "out = [torch.tensor(100, dtype=torch.int8) * 2, torch.tensor([100], dtype=torch.int8) * 2]"),
    ("in_place", "x = torch.ones(3); x.mul_(3e38).mul_(10); y = torch.zeros(2); y.div_(0); "
                 "z = torch.ones(2); z.add_(float('inf')).sub_(float('inf')); out = [x, y, z]"),
    ("setitem", "x = torch.zeros(3, dtype=torch.float16); x[0] = 1e6; x[1:] = torch.tensor([1e300, -1e300]); "
                "y = torch.zeros(2, dtype=torch.int32); y[0] = torch.tensor(2.0); out = [x, y]"),
    ("copy_cast", "x = torch.zeros(2, dtype=torch.float16); x.copy_(torch.tensor([1e6, 1.0])); out = x"),
    ("softmax_inf", "x = torch.tensor([[float('-inf'), float('-inf')], [1000.0, 0.0]]); "
                    "out = [x.softmax(1), x.log_softmax(1), torch.logsumexp(x, 1)]"),
    ("losses", "p = torch.tensor([0.0, 1.0]); t = torch.tensor([1.0, 0.0]); "
               "out = [F.binary_cross_entropy(p, t), F.kl_div(torch.tensor([0.0]), torch.tensor([0.0])), "
               "F.cross_entropy(torch.tensor([[float('-inf'), 0.0]]), torch.tensor([0]))]"),
    # casts of inf and nan, float16 overflow in casts
    ("cast_to_int", "x = torch.tensor([float('inf'), float('nan'), 1e20, 2.0]); "
                    "out = [x.long()[3], x.int()[3], x.to(torch.int16)[3], x.bool(), x.type(torch.uint8)[3]]"),
    ("cast_to_half", "x = torch.tensor([1e10, 1.0], dtype=torch.float64); out = [x.half(), x.float() * 1e30, "
                     "x.to(torch.float16), x.to(dtype=torch.float16), x.type(torch.float16)]"),
    ("creation", "out = [torch.tensor([1e5], dtype=torch.float16), torch.tensor(1e40), torch.full((2,), float('inf')), "
                 "torch.tensor([[1e300]]), torch.as_tensor([1e300]), torch.ones(2, dtype=torch.float16) * 1e5, "
                 "torch.zeros(2, dtype=torch.float16).new_tensor([1e5]), torch.tensor(1e300, dtype=torch.float16), "
                 "torch.arange(0, 1e5, 3e4, dtype=torch.float16), torch.tensor(np.array([np.inf, 2.0]))]"),
    # where PyTorch refuses a number that does not fit the dtype (its checked conversion), no NumPy warning first
    ("checked_scalars", "z = torch.zeros(2, dtype=torch.float16); i = torch.zeros(2, dtype=torch.int32); "
                        "m = torch.tensor([True, False]); out = [err(f) for f in ("
                        "lambda: torch.full((2,), 1e40), lambda: torch.full((2,), 1e6, dtype=torch.float16), "
                        "lambda: torch.full((2,), float('nan'), dtype=torch.int32), lambda: z.fill_(70000.0), "
                        "lambda: i.fill_(float('inf')), lambda: i.fill_(2 ** 40), lambda: z.new_full((2,), 1e5), "
                        "lambda: torch.full_like(z, 1e5), lambda: z.masked_fill(m, 1e5), lambda: z.index_fill(0, "
                        "torch.tensor([0]), 1e5), lambda: z.clamp(max=1e5), lambda: torch.zeros(2).clamp(min=-1e40), "
                        "lambda: torch.linspace(0, 1e5, 3, dtype=torch.float16), lambda: torch.linspace(0, 1e40, 3), "
                        "lambda: torch.nn.init.constant_(z, 1e6), lambda: torch.tensor([float('inf')], "
                        "dtype=torch.int32), lambda: torch.tensor([1.0, float('nan')], dtype=torch.int64), "
                        "lambda: torch.tensor([300], dtype=torch.uint8), lambda: torch.tensor([-1.0], "
                        "dtype=torch.uint8), lambda: torch.tensor([1e10], dtype=torch.int32), "
                        "lambda: z.fill_(torch.tensor(1e5)), lambda: torch.full((2,), -1, dtype=torch.uint8), "
                        "lambda: torch.tensor([-1, 2.5], dtype=torch.int8), lambda: torch.tensor([16777217.0], "
                        "dtype=torch.int64), lambda: i.__setitem__(0, float('inf')), lambda: i.__setitem__(m, 1e10), "
                        "lambda: i.__setitem__([0], 2 ** 40), lambda: torch.zeros(2, dtype=torch.uint8).__setitem__(0, -1), "
                        "lambda: z.__setitem__(0, 1e6), lambda: z.scatter(0, torch.tensor([0]), 1e6), "
                        "lambda: i.scatter(0, torch.tensor([0]), float('nan')))]"),
    ("scalar_reads", "x = torch.tensor([float('inf'), float('nan')]); out = [x.tolist(), x[0].item(), float(x[1]), "
                     "bool(x[1])]"),
    # reductions and linalg
    ("reductions", "x = torch.tensor([3e38, 3e38, float('inf')]); out = [x.sum(), x.mean(), x.var(), x.std(), "
                   "x.prod(), x.cumsum(0), x.cumprod(0), x.norm(), torch.tensor([float('inf')]).var(), "
                   "torch.ones(0).mean(), torch.ones(1).var(), torch.tensor([float('nan'), 1.0]).max()]"),
    ("linalg", "z = torch.zeros(2, 2); b = torch.full((2, 2), 1e30); out = [torch.linalg.det(z), "
               "torch.linalg.slogdet(z)[1], torch.linalg.matrix_norm(b), torch.linalg.vector_norm(b), b @ b, "
               "torch.linalg.cond(torch.tensor([[1.0, 0.0], [0.0, 0.0]])), torch.cdist(b, -b), torch.dist(b, -b), "
               "F.normalize(z, dim=1), F.cosine_similarity(z, z)]"),
    ("linalg_inv_singular", "torch.linalg.inv(torch.zeros(2, 2))"),
    ("histc_wide", "out = [torch.histc(torch.tensor([1e38, -1e38]), bins=3).sum(), "
                   "torch.histc(torch.tensor([3e38, -3e38], dtype=torch.float64), bins=3)]"),
    ("random_half", "torch.manual_seed(0); out = [torch.empty(3, dtype=torch.float16).normal_(0, 1e5), "
                    "torch.nn.init.normal_(torch.empty(3, dtype=torch.float16), 0, 1e10), "
                    "torch.empty(2, dtype=torch.float16).uniform_(-60000, 60000) * 4, "
                    "torch.multinomial(torch.tensor([3e38, 3e38]), 4, replacement=True), "
                    "torch.tensor([3e38, 3e38]).multinomial(4, replacement=True), torch.empty(3).cauchy_(0, 3e38), "
                    "torch.normal(torch.tensor([3e38]), torch.tensor([3e38])), torch.normal(3e38, 3e38, (2,))]"),
    # backward, double backward, forward mode
    ("backward_zero", "x = torch.tensor([0.0, 1.0], requires_grad=True); "
                      "(x.sqrt() + x.log() + x.norm() + x.pow(0.5) + x.rsqrt() + 1 / x).sum().backward(); "
                      "out = x.grad"),
    ("backward_norm_zero", "x = torch.zeros(3, requires_grad=True); x.norm().backward(); "
                           "y = torch.zeros(3, requires_grad=True); torch.linalg.vector_norm(y).backward(); "
                           "out = [x.grad, y.grad]"),
    ("backward_overflow", "x = torch.tensor([3e38, 1.0], requires_grad=True); (x * x * 10).sum().backward(); "
                          "out = x.grad"),
    ("double_backward", "x = torch.tensor([0.0, 1000.0], requires_grad=True); "
                        "g, = torch.autograd.grad((x.exp() + x.sqrt()).sum(), x, create_graph=True); "
                        "h, = torch.autograd.grad(g.sum(), x); out = [g, h]"),
    ("forward_mode", "import ember.autograd.forward_ad as fwAD\n"
                     "with fwAD.dual_level():\n"
                     "    d = fwAD.make_dual(torch.tensor([0.0, 1000.0]), torch.ones(2))\n"
                     "    out = [fwAD.unpack_dual(f(d)).tangent for f in (torch.sqrt, torch.log, torch.exp, "
                     "torch.rsqrt)]"),
    # modules that compute on raw arrays outside the op table (running statistics), nan/inf positions
    ("norm_running_stats", "x = torch.tensor([[3e38, float('inf')], [-3e38, 1.0], [0.0, 2.0]]); bn = nn.BatchNorm1d(2); "
                           "y = bn(x); i = nn.InstanceNorm1d(2, track_running_stats=True); "
                           "z = i(x.t().unsqueeze(0).contiguous()); out = [y, bn.running_mean, bn.running_var, z, "
                           "i.running_mean, i.running_var]"),
    ("grid_sample_nonfinite", "x = torch.arange(4.0).reshape(1, 1, 2, 2); "
                              "g = torch.tensor([[[[float('nan'), 0.0], [0.5, float('inf')]]]]); "
                              "out = [F.grid_sample(x, g, align_corners=False), F.grid_sample(x, g * 0 + 1e30, "
                              "mode='nearest', align_corners=False), F.grid_sample(x, g, mode='bicubic', "
                              "align_corners=False)]"),
    # optimizers, clipping, nn.init
    ("optimizers", "out = []\n"
                   "for cls in (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.RMSprop, "
                   "torch.optim.Adagrad, torch.optim.Adadelta, torch.optim.Adamax, torch.optim.NAdam, "
                   "torch.optim.RAdam, torch.optim.ASGD, torch.optim.Rprop):\n"
                   "    p = torch.nn.Parameter(torch.tensor([3e38, 1.0, 0.0]))\n"
                   "    kw = {'lr': 0.1, 'momentum': 0.9} if cls is torch.optim.SGD else {'lr': 0.1}\n"
                   "    opt = cls([p], **kw)\n"
                   "    for g in ([float('inf'), 1.0, 0.0], [3e38, float('nan'), 0.0]):\n"
                   "        p.grad = torch.tensor(g); opt.step()\n"
                   "    out.append(p.detach().clone())"),
    ("clip_grad", "p = torch.nn.Parameter(torch.ones(2)); p.grad = torch.tensor([float('inf'), 1.0]); "
                  "n = torch.nn.utils.clip_grad_norm_([p], 1.0); q = torch.nn.Parameter(torch.ones(2)); "
                  "q.grad = torch.tensor([3e38, 3e38]); m = torch.nn.utils.clip_grad_norm_([q], 1.0); "
                  "out = [n, p.grad, m, q.grad]"),
    ("nn_init", "torch.manual_seed(0); w = torch.empty(3, 0); torch.nn.init.kaiming_uniform_(w); "
                "torch.nn.init.xavier_normal_(w); v = torch.empty(2, dtype=torch.float16); "
                "torch.nn.init.constant_(v, float('inf')); u = torch.empty(3); "
                "torch.nn.init.trunc_normal_(u, a=-1e30, b=1e30); out = [w, v, u.isfinite()]"),
    # printing
    ("printing", "out = [repr(torch.tensor([1e38, float('inf'), float('nan'), 0.0, -1e-40])), "
                 "repr(torch.tensor([65504.0, 1e-8, float('inf')], dtype=torch.float16)), "
                 "str(torch.tensor([[3e38, 1.0], [float('-inf'), 2.0]])), repr(torch.tensor([1e300, 1.0], "
                 "dtype=torch.float64)), repr(torch.tensor([float('nan')] * 3))]"),
]

_RUNNER = r"""
import json, math, sys, warnings
import numpy as np
import ember as torch
from ember import nn
import ember.nn.functional as F
import ember.autograd.forward_ad as fwAD

def flat(o):
    if isinstance(o, (list, tuple)):
        return [flat(v) for v in o]
    if isinstance(o, torch.Tensor):
        return {"t": [repr(float(v)) for v in o.detach().double().reshape(-1).tolist()], "dtype": str(o.dtype)}
    if isinstance(o, float):
        return {"f": repr(o)}
    return o

def err(f):
    try:
        r = f()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return flat(r)

ns = {"torch": torch, "nn": nn, "F": F, "fwAD": fwAD, "np": np, "err": err}
error = None
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")   # the user's filters, set after import ember
    try:
        exec(sys.argv[1], ns)
    except Exception as e:
        error = type(e).__name__
    result = flat(ns.get("out"))
runtime = [f"{w.filename}:{w.lineno}: {w.message}" for w in caught if issubclass(w.category, RuntimeWarning)]
print(json.dumps({"error": error, "out": result, "warnings": runtime}))
"""


def _flat(o):
    if isinstance(o, (list, tuple)):
        return [_flat(v) for v in o]
    if isinstance(o, torch.Tensor):
        return {"t": [repr(float(v)) for v in o.detach().double().reshape(-1).tolist()],
                "dtype": str(o.dtype).replace("torch.", "")}
    if isinstance(o, float):
        return {"f": repr(o)}
    return o


def _torch_run(code):
    import torch.nn as tnn
    import torch.nn.functional as tF
    import torch.autograd.forward_ad as tfwAD
    def err(f):
        try:
            r = f()
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        return _flat(r)

    ns = {"torch": torch, "nn": tnn, "F": tF, "fwAD": tfwAD, "np": np, "err": err}
    code = code.replace("import ember.autograd.forward_ad as fwAD", "pass")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # PyTorch's own UserWarnings (anomaly mode, empty init)
        try:
            exec(code, ns)
        except Exception as e:
            return type(e).__name__, _flat(ns.get("out"))
    return None, _flat(ns.get("out"))


def _same(a, b, path="out"):
    """Equal structure; tensors equal value for value (nan == nan, float32 rounding aside); strings equal."""
    if isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), f"{path}: {a!r} != {b!r}"
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{path}[{i}]")
    elif isinstance(b, dict) and "t" in b:
        assert a["dtype"].replace("ember.", "").replace("torch.", "") == b["dtype"], f"{path}: {a} != {b}"
        x = np.array([float(v) for v in a["t"]])
        y = np.array([float(v) for v in b["t"]])
        np.testing.assert_allclose(x, y, rtol=1e-6, atol=0, equal_nan=True, err_msg=path)
    elif isinstance(b, dict) and "f" in b:
        x, y = float(a["f"]), float(b["f"])
        assert (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=1e-6), f"{path}: {x} != {y}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


@pytest.mark.parametrize("code", [c for _, c in CASES], ids=[n for n, _ in CASES])
def test_no_numpy_warning_and_torch_values(code):
    r = subprocess.run([sys.executable, "-c", _RUNNER, code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "RuntimeWarning" not in r.stderr, r.stderr
    got = json.loads(r.stdout.splitlines()[-1])
    assert got["warnings"] == [], "\n".join(got["warnings"])
    error, want = _torch_run(code)
    assert (got["error"] or "").lstrip("_") == (error or "").lstrip("_"), (got["error"], error)   # _LinAlgError
    _same(got["out"], want)


_USER_NUMPY = r"""
import warnings
import numpy as np
import ember as torch

before = np.geterr()
x = torch.tensor([3e38], requires_grad=True)
(x * 10).sum().backward()
print(torch.tensor([float('inf')]).long().shape, torch.tensor([1e6]).half())
opt = torch.optim.Adam([x]); x.grad = torch.tensor([float('inf')]); opt.step()
assert np.geterr() == before, (np.geterr(), before)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    np.float32(1e38) * np.float32(10)
    np.array([1.0]) / 0
assert [str(m.message) for m in w] == ["overflow encountered in scalar multiply",
                                       "divide by zero encountered in divide"], [str(m.message) for m in w]
# A user who asks NumPy to raise still gets FloatingPointError from their own code, and none from ember's.
with np.errstate(all="raise"):
    torch.tensor([3e38]) * 10
    torch.tensor([0.0]).log()
    try:
        np.array([3e38], np.float32) * np.float32(10)
    except FloatingPointError:
        print("raised")
assert np.geterr() == before
print("ok")
"""


def test_user_numpy_warnings_and_error_state_untouched():
    r = subprocess.run([sys.executable, "-c", _USER_NUMPY], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[-2:] == ["raised", "ok"], r.stdout
    assert r.stderr == "", r.stderr
