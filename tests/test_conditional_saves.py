"""A node saves an input only when a gradient that reads it is needed (PyTorch's should_compute_output):
modifying in place a tensor that only a frozen operand's gradient would read is no error."""
import pytest

from parity import raises_same, same

torch = pytest.importorskip("torch")


def _w(lib, grad=False):
    lib.manual_seed(0)
    return lib.randn(3, 2, dtype=lib.float64, requires_grad=grad)


@pytest.mark.parametrize("lead", [(), (2,)])
def test_matmul_with_frozen_weight_then_inplace_input(lead):
    def f(lib):
        x = lib.ones(*lead, 3, dtype=lib.float64, requires_grad=True)
        h = x * 2
        y = h @ _w(lib)
        h.relu_()
        y.sum().backward()
        return x.grad
    same(f)


def test_matmul_with_trained_weight_then_inplace_input_raises():
    def f(lib):
        x = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        h = x * 2
        y = h @ _w(lib, grad=True)
        h.relu_()
        y.sum().backward()
    raises_same(f, msg="modified by an inplace operation")


@pytest.mark.parametrize("which", ["self", "other", "both"])
def test_mul_saves_only_what_needed_gradients_read(which):
    def f(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=which in ("self", "both"))
        b = lib.tensor([0.5, 4.0, -1.0], requires_grad=which in ("other", "both"))
        y = a * b
        node = y.grad_fn
        return node._saved_self, node._saved_other
    same(f)


@pytest.mark.parametrize("which", ["self", "other"])
def test_inplace_on_the_unsaved_operand(which):
    def f(lib):
        a = lib.tensor([1.0, -2.0, 3.0], requires_grad=which == "self")
        b = lib.tensor([0.5, 4.0, -1.0], requires_grad=which == "other")
        a0, b0 = a * 1, b * 1
        y = a0 * b0
        (a0 if which == "self" else b0).mul_(3)   # the operand whose own gradient does not read it
        y.sum().backward()
        return (a if which == "self" else b).grad
    same(f)


def test_inference_tensor_saved_only_when_read():
    def f(lib):
        with lib.inference_mode():
            w = lib.ones(3)
        x = lib.ones(3, requires_grad=True)
        return (x + w).sum(), x.grad   # add saves nothing: fine
    same(f)

    def g(lib):
        with lib.inference_mode():
            w = lib.ones(3)
        x = lib.ones(3, requires_grad=True)
        return x * w   # x's gradient reads w: refused
    raises_same(g, msg="Inference tensors cannot be saved for backward")


# ----- every op-database sample: which inputs the node keeps when only one input requires grad ------------

import os  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402

import numpy as np  # noqa: E402

import ember  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from op_db import OP_DB  # noqa: E402

SLOW = bool(os.environ.get("EMBER_SLOW"))

# ember keeps these where PyTorch does not (its rule reads more than PyTorch's formula, or the op is a composite
# whose pieces keep more): stricter, never looser, so in-place checks can only raise where PyTorch would not.
KEPT_MORE = {("AddmmBackward0", "_saved_mat1"), ("AddmmBackward0", "_saved_mat2"),
             ("CopysignBackward0", "_saved_self"), ("IndexAddBackward0", "_saved_index"),
             ("ScatterAddBackward0", "_saved_index"), ("MulBackward0", "_saved_self"),
             ("MulBackward0", "_saved_other")}


def _one_grad(op, s, k):
    out = []
    ts = [torch.tensor(a, requires_grad=i == k) if isinstance(a, np.ndarray) else a for i, a in enumerate(s.args)]
    es = [ember.tensor(a, requires_grad=i == k) if isinstance(a, np.ndarray) else a for i, a in enumerate(s.args)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tr, er = op.op(torch, *ts, **s.kwargs), op.op(ember, *es, **s.kwargs)
        except Exception:   # noqa: BLE001 -- samples that raise are test_ops' business
            return out
    tr = tr if isinstance(tr, (tuple, list)) else (tr,)
    er = er if isinstance(er, (tuple, list)) else (er,)
    for to, eo in zip(tr, er):
        if not (isinstance(to, torch.Tensor) and isinstance(eo, ember.Tensor) and to.grad_fn and eo.grad_fn):
            continue
        name = type(to.grad_fn).__name__
        if name != type(eo.grad_fn).__name__:
            continue
        for attr in dir(to.grad_fn):
            if not attr.startswith("_saved_") or attr.endswith("_sym_sizes"):
                continue
            try:
                tv, ev = getattr(to.grad_fn, attr), getattr(eo.grad_fn, attr)
            except Exception:   # noqa: BLE001 -- not exposed: test_saved_attrs' business
                continue
            if (tv is None or isinstance(tv, torch.Tensor)) and (tv is None) != (ev is None):
                out.append((name, attr, "ember keeps more" if tv is None else "ember keeps less"))
    return out


@pytest.mark.parametrize("op", [o for o in OP_DB if o.supports_grad], ids=lambda o: o.name)
def test_kept_inputs_match_torch_with_one_input_requiring_grad(op):
    bad = []
    for s in op.sample_inputs() if SLOW else op.sample_inputs()[:2]:
        floats = [i for i, a in enumerate(s.args) if isinstance(a, np.ndarray) and a.dtype.kind in "fc"]
        if len(floats) < 2:
            continue
        for k in floats:
            bad += [f"{s.desc} grad on arg {k}: {n}.{a}: {v}" for n, a, v in _one_grad(op, s, k)
                    if not (v == "ember keeps more" and (n, a) in KEPT_MORE)]
    assert not bad, "\n".join(bad)


def _rule_reads_unsaved(op, s, k, create_graph):
    """Backward of the sample with only input ``k`` requiring grad; the message if a rule read an input its
    primitive's declaration did not save for that gradient (None otherwise: other failures are test_ops')."""
    args = [ember.tensor(a, requires_grad=i == k) if isinstance(a, np.ndarray) else a for i, a in enumerate(s.args)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = op.op(ember, *args, **s.kwargs)
            outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
                    if isinstance(o, ember.Tensor) and o.grad_fn is not None and o.dtype.is_floating_point]
            if outs:
                ember.autograd.grad(outs, args[k], [ember.ones_like(o) for o in outs], allow_unused=True,
                                    create_graph=create_graph)
        except RuntimeError as e:
            return str(e) if "which its declaration does not save" in str(e) else None
        except Exception:   # noqa: BLE001 -- samples that raise are test_ops' business
            return None
    return None


@pytest.mark.parametrize("op", [o for o in OP_DB if o.supports_grad], ids=lambda o: o.name)
def test_each_rule_reads_only_what_its_declaration_saves_for_it(op):
    """Which inputs a rule reads is declared (``saves=``), not worked out: every rule runs with only its own input
    requiring grad, so every input saved for other gradients only reaches it as an ``Unsaved`` stand-in."""
    bad = []
    for s in op.sample_inputs() if SLOW else op.sample_inputs()[:2]:
        for k, a in enumerate(s.args):
            if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
                for create_graph in (False, True):
                    msg = _rule_reads_unsaved(op, s, k, create_graph)
                    if msg:
                        bad.append(f"{s.desc} grad on arg {k} (create_graph={create_graph}): {msg}")
    assert not bad, "\n".join(bad)
