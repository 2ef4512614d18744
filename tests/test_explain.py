"""autograd.explain (ember's own): each reason a .grad is None, checked against what PyTorch does with the same
program (is the .grad None there, does the output reach the tensor), plus the non-leaf .grad warning."""
import inspect
import warnings

import pytest

import ember
from ember.autograd import explain

torch = pytest.importorskip("torch")


def _line_of(marker: str) -> int:
    src, start = inspect.getsourcelines(inspect.currentframe().f_back.f_code)
    return start + next(i for i, s in enumerate(src) if marker in s)


def _torch_reaches(out, t) -> bool:
    """Ground truth from PyTorch: does a gradient flow from ``out`` to ``t``?"""
    if not out.requires_grad or not t.requires_grad:
        return False
    g, = torch.autograd.grad(out, t, allow_unused=True, retain_graph=True)
    return g is not None


def test_returns_a_string_that_prints_as_itself():
    x = ember.ones(2, requires_grad=True)
    e = explain(x)
    assert isinstance(e, str) and repr(e) == str(e)
    assert e.splitlines()[0] == "x: shape [2], torch.float32, leaf, requires_grad=True, .grad is None"


def test_bad_arguments():
    with pytest.raises(TypeError, match="must be Tensor"):
        explain([1.0])
    with pytest.raises(TypeError, match="must be Tensor or None"):
        explain(ember.ones(1), 3)


def test_non_leaf_without_retain_grad_names_its_leaf():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.sum().backward()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert y.grad is None and x.grad is not None
    e = explain(y)
    assert "It is not a leaf" in e and "y.retain_grad()" in e
    assert "computed from the leaf that requires grad: x." in e


def test_non_leaf_lists_several_leaves():
    a = ember.ones(2, requires_grad=True)
    b = ember.ones(2, requires_grad=True)
    c = ember.ones(2)
    y = a * b + c
    assert "from these leaves that require grad: " in explain(y)
    listed = explain(y).split("require grad: ")[1]
    assert "a" in listed and "b" in listed and "c" not in listed


def test_non_leaf_with_retain_grad():
    y = ember.ones(2, requires_grad=True) * 3
    y.retain_grad()
    assert "retains its gradient" in explain(y)


def test_leaf_without_requires_grad():
    for lib in (torch, ember):
        c = lib.ones(2)
        (c * lib.ones(2, requires_grad=True)).sum().backward()
        assert c.grad is None and not c.requires_grad
    assert "does not require grad" in explain(c) and "c.requires_grad_()" in explain(c)


def test_integer_and_bool_tensors():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="floating point"):
            lib.tensor([1, 2]).requires_grad_()
    i = ember.tensor([1, 2])
    assert "It is an integer tensor (torch.int64)" in explain(i)
    m = ember.tensor([1.0, 2.0], requires_grad=True) > 1
    assert "It is a boolean tensor (torch.bool)" in explain(m)


def test_detach_names_the_line():
    x = ember.ones(2, requires_grad=True)
    d = x.detach()  # HERE-DETACH
    e = explain(d)
    line = _line_of("HERE-DETACH")
    assert f"It was made by detach() at {__file__}:{line}: d = x.detach()  # HERE-DETACH" in e


def test_data_names_the_line():
    x = ember.ones(2, requires_grad=True)
    d = x.data  # HERE-DATA
    line = _line_of("HERE-DATA")
    assert f"It was made by .data at {__file__}:{line}:" in explain(d)


def test_no_grad_op_names_the_op():
    for lib in (torch, ember):
        x = lib.ones(2, requires_grad=True)
        with lib.no_grad():
            z = x.exp()
        assert not z.requires_grad and z.grad_fn is None
    e = explain(z)
    assert "computed by 'exp' with gradient recording off" in e
    # an op under no_grad whose inputs need no grad is not marked (nothing was cut)
    with ember.no_grad():
        w = ember.ones(2).exp()
    assert "with gradient recording off" not in explain(w)


def test_inference_tensor():
    for lib in (torch, ember):
        with lib.inference_mode():
            t = lib.ones(2)
        assert t.is_inference()
    assert "inference tensor" in explain(t)


def test_output_depends_on_it():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        loss = (x * x).sum()
        if lib is torch:
            assert _torch_reaches(loss, x)
    assert "loss depends on x: loss.backward() accumulates into x.grad." in explain(x, loss)
    y = x * 3
    loss2 = (y * 2).sum()
    assert "loss2 depends on y: gradient flows through it" in explain(y, loss2)


def test_output_does_not_use_it():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        w = lib.ones(2, requires_grad=True)
        loss = (x * 2).sum()
        if lib is torch:
            assert not _torch_reaches(loss, w)
    e = explain(w, loss)
    assert "loss does not depend on w" in e and "w is not used in computing loss." in e
    # a non-leaf that is no part of the output's graph
    y = w * 2
    assert "loss does not depend on y" in explain(y, loss)


def test_output_used_a_detached_copy():
    for lib in (torch, ember):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        xd = x.detach().requires_grad_()  # HERE-COPY
        loss = (xd * 2).sum()
        if lib is torch:
            assert not _torch_reaches(loss, x)
    e = explain(x, loss)
    line = _line_of("HERE-COPY")
    assert "loss uses xd instead, which shares x's memory, made by detach() at " in e
    assert f"{__file__}:{line}:" in e


def test_output_cut_by_no_grad_names_the_cut():
    for lib in (torch, ember):
        w = lib.ones(2, requires_grad=True)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        with lib.no_grad():
            h = w * 2
        loss = (h * x).sum()
        if lib is torch:
            assert not _torch_reaches(loss, w) and _torch_reaches(loss, x)
    e = explain(w, loss)
    assert "loss does not depend on w" in e
    cut = e.split("non-differentiable op):")[1]
    assert "input 0 of MulBackward0 (shape [2], float32): h, it was computed by 'mul' with gradient recording off" \
        in cut


def test_output_that_does_not_require_grad():
    x = ember.ones(2, requires_grad=True)
    with ember.no_grad():
        out = x.sum()   # the op that took x, which requires grad, is the one marked
    e = explain(x, out)
    assert "out does not require grad, so no gradient flows from it at all" in e
    assert "computed by 'sum' with gradient recording off" in e


def test_anomaly_mode_adds_where_made():
    x = ember.ones(2, requires_grad=True)
    with ember.autograd.set_detect_anomaly(True):
        y = x * 2  # HERE-MADE
    line = _line_of("HERE-MADE")
    assert f"It is not a leaf (made at {__file__}:{line} in test_anomaly_mode_adds_where_made: y = x * 2" \
        in explain(y)


# ----- the warning for .grad of a non-leaf -----------------------------------------------------------

def _grad_warning(lib, anomaly: bool):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lib.autograd.set_detect_anomaly(anomaly):
            x = lib.ones(2, requires_grad=True)
            y = x * 2  # HERE-NONLEAF
            assert y.grad is None
    msgs = [str(m.message) for m in w if issubclass(m.category, UserWarning)]
    assert len(msgs) == 1
    return msgs[0]


def test_non_leaf_grad_warning_starts_with_torchs_text():
    t = _grad_warning(torch, False).split(" (Triggered internally")[0]
    e = _grad_warning(ember, False)
    assert e.startswith(t)
    assert "torch.autograd.explain(tensor)" in e[len(t):]
    assert "created" not in e[len(t):]   # no anomaly mode: where it was made is unknown


def test_non_leaf_grad_warning_names_where_made_under_anomaly_mode():
    t = _grad_warning(torch, True).split(" (Triggered internally")[0]
    e = _grad_warning(ember, True)
    assert e.startswith(t)
    assert "It was created by MulBackward0 at " in e and "y = x * 2  # HERE-NONLEAF" in e
