"""Warnings and errors around gradients that PyTorch gives (issue 16, item 5): assigning a ``.grad`` of another
size or dtype, ``ctx.mark_dirty`` of a tensor that is not an input, ``backward(create_graph=True)`` (the
reference-cycle warning) and ``float()`` of a tensor that requires grad.

PyTorch gives the last two once per process (TORCH_WARN_ONCE), so each case runs in a fresh interpreter, with
torch and with ember, and the warnings (category and text, without PyTorch's "(Triggered internally at ...)"
suffix) must be the same."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from parity import raises_same, same

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_RUNNER = textwrap.dedent("""
    import json, sys, warnings
    sys.path.insert(0, {root!r})
    import {lib} as torch
    log = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exec(compile({code!r}, "<case>", "exec"), {{"torch": torch}})
    for w in caught:
        text = str(w.message).split(" (Triggered internally at")[0]
        log.append([w.category.__name__, text, w.filename])
    print(json.dumps(log))
""")


def _warnings(lib: str, code: str) -> list:
    src = _RUNNER.format(root=ROOT, lib=lib, code=textwrap.dedent(code))
    r = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _same_warnings(code: str) -> list:
    want, got = _warnings("torch", code), _warnings("ember", code)
    assert [w[:2] for w in got] == [w[:2] for w in want]
    for w in got:   # ember points at the user's line, not at its own machinery
        assert w[2] == "<case>", w
    return want


SCALAR = "Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior."

WARNING_CASES = {
    # float() warns once per process; int(), item(), bool(), format() never; nor anything under no_grad
    "float": ("x = torch.ones((), requires_grad=True)\nfloat(x)\nfloat(x)\n'%f' % x", 1),
    "complex": ("x = torch.ones((), requires_grad=True)\ncomplex(x)", 1),
    "float_non_leaf": ("x = torch.ones(1, requires_grad=True)\nfloat(x * 2)", 1),
    "int_item_bool_format": ("x = torch.ones((), requires_grad=True)\nint(x); x.item(); bool(x); f'{x:.2f}'", 0),
    "float_no_grad": ("x = torch.ones((), requires_grad=True)\nwith torch.no_grad():\n    float(x)", 0),
    "float_detached": ("x = torch.ones((), requires_grad=True)\nfloat(x.detach())", 0),
    "tensor_of_tensors": ("t = torch.tensor(0.5, requires_grad=True)\ntorch.tensor([t, t]); torch.tensor([[t]])", 1),
    # the reference-cycle warning: backward(create_graph=True), once per process; never autograd.grad
    "create_graph": ("x = torch.ones(2, requires_grad=True)\n(x * x).sum().backward(create_graph=True)\n"
                     "(x * x).sum().backward(create_graph=True)", 1),
    "create_graph_inputs": ("x = torch.ones(2, requires_grad=True)\ny = x * x\n"
                            "(y * y).sum().backward(create_graph=True, inputs=[y])", 1),
    "create_graph_autograd_backward": ("x = torch.ones(2, requires_grad=True)\n"
                                       "torch.autograd.backward([(x * x).sum()], create_graph=True)", 1),
    "create_graph_grad": ("x = torch.ones(2, requires_grad=True)\n"
                          "torch.autograd.grad((x * x).sum(), x, create_graph=True)", 0),
    "retain_graph": ("x = torch.ones(2, requires_grad=True)\n(x * x).sum().backward(retain_graph=True)", 0),
    # mark_dirty of a tensor that is not an input: every time, per such tensor, only while recording
    "mark_dirty_not_input": ("""
        class D(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x, z):
                y, w = x * 2, x * 3
                ctx.mark_dirty(y, w, z)
                return y, w, z

            @staticmethod
            def backward(ctx, gy, gw, gz):
                return gy, None
        x = torch.ones(2, requires_grad=True)
        D.apply(x, torch.ones(2))
        D.apply(x, torch.ones(2))
        D.apply(torch.ones(2), torch.ones(2))
        with torch.no_grad():
            D.apply(x, torch.ones(2))
        """, 4),
}


@pytest.mark.parametrize("case", WARNING_CASES, ids=list(WARNING_CASES))
def test_warnings_as_torch(case):
    code, n = WARNING_CASES[case]
    assert len(_same_warnings(code)) == n


def test_ember_code_gives_no_scalar_warning():
    """ember's own code (training demo, optimizers, schedulers, clip_grad, LBFGS's closure) does not trigger the
    float() warning where PyTorch's does not."""
    code = """
        m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 1))
        opts = [torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(m.parameters()),
                torch.optim.AdamW(m.parameters()), torch.optim.RMSprop(m.parameters())]
        sched = torch.optim.lr_scheduler.StepLR(opts[0], 1)
        x, y = torch.randn(8, 3), torch.randn(8, 1)
        for opt in opts:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            torch.nn.utils.clip_grad_value_(m.parameters(), 1.0)
            opt.step()
        sched.step()
        w = torch.nn.Parameter(torch.ones(3))
        lb = torch.optim.LBFGS([w])
        def closure():
            lb.zero_grad()
            l = ((w - 2) ** 2).sum()
            l.backward()
            return l
        lb.step(closure)
        print(loss.item(), f"{loss:.3f}")
    """
    assert _same_warnings(code) == []


def test_ember_demo_gives_no_scalar_warning():
    code = """
        from ember.demo.train import fit
        fit(torch, "mlp", epochs=1, seed=0, progress=False)
    """
    assert [w for w in _warnings("ember", code) if SCALAR in w[1]] == []


# ----- assigning .grad ------------------------------------------------------------------------------

def _assign(value, like="param"):
    def fn(lib):
        if like == "param":
            t = lib.nn.Parameter(lib.ones(2))
        elif like == "double":
            t = lib.ones(2, dtype=lib.float64)
        elif like == "long":
            t = lib.ones(2, dtype=lib.int64)
        else:
            t = lib.ones(2, requires_grad=True) * 2
        t.grad = value(lib)
        return t.grad
    return fn


GRAD_ERRORS = {
    "size": _assign(lambda lib: lib.ones(3)),
    "size_2d": _assign(lambda lib: lib.ones(2, 1)),
    "size_non_leaf": _assign(lambda lib: lib.ones(3), like="nonleaf"),
    "dtype_double": _assign(lambda lib: lib.ones(2, dtype=lib.float64)),
    "dtype_half": _assign(lambda lib: lib.ones(2, dtype=lib.float16)),
    "dtype_long": _assign(lambda lib: lib.ones(2, dtype=lib.int64)),
    "dtype_int": _assign(lambda lib: lib.ones(2, dtype=lib.int32)),
    "dtype_bool": _assign(lambda lib: lib.ones(2, dtype=lib.bool)),
    "dtype_uint8": _assign(lambda lib: lib.ones(2, dtype=lib.uint8)),
    "dtype_float_to_double": _assign(lambda lib: lib.ones(2), like="double"),
    "dtype_float_to_long": _assign(lambda lib: lib.ones(2), like="long"),
    "dtype_before_size": _assign(lambda lib: lib.ones(3, dtype=lib.float64)),
    "not_a_tensor": _assign(lambda lib: 3),
    "list": _assign(lambda lib: [1.0, 1.0]),
}


@pytest.mark.parametrize("case", GRAD_ERRORS, ids=list(GRAD_ERRORS))
def test_assign_grad_errors_as_torch(case):
    raises_same(GRAD_ERRORS[case], exact_msg=True)


def test_assign_own_grad_and_accepted_grads():
    def own(lib):
        p = lib.nn.Parameter(lib.ones(2))
        p.grad = p
    raises_same(own, exact_msg=True)
    same(_assign(lambda lib: lib.full((2,), 3.0)))
    same(_assign(lambda lib: None))
    same(_assign(lambda lib: lib.ones(2, requires_grad=True)))
    same(_assign(lambda lib: lib.ones(2, 3).t()[0]))   # a non-contiguous gradient of the right size
