"""A second array backend, registered as a CuPy backend would be, running the op database.

``StrictArray`` stands for another device's arrays: NumPy refuses to work on it (its functions and
ufuncs raise), so any NumPy call on tensor data that bypasses the device's namespace (``xp``) and its
``backend`` fails here. The namespace for it wraps ember's NumPy namespace, unwrapping on the way in
and wrapping on the way out, as a device's kernels would. Ops are run on both backends and must agree;
results and gradients must stay on the strict device.

Every op-database entry of the core (tests/op_db.py) and of the elementwise, reduction, shape and indexing
families runs here, forward and first-order backward, in float64 (gradients where the entry has them) and in
one integral dtype it lists (forward only); an entry whose sample raises on the CPU must raise the same
exception type on the strict device. ``LEAKS`` lists the entries that still leak, each with the place.
"""
from __future__ import annotations

import importlib
import operator
import os
import sys
import types
import warnings

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import ember  # noqa: E402
from ember import _device
from ember.devices.cpu import namespace as _numpy_ns  # noqa: E402
from ember.ops import raw_names  # noqa: E402
from op_db import OP_DB, OPS, to_dtype  # noqa: E402
from parity import assert_same_run  # noqa: E402


class LeakedToNumPy(AssertionError):
    """NumPy was asked to work on a strict-device array outside the device's namespace."""


class StrictArray(np.ndarray):
    """An array NumPy may not touch directly; only its own operators and the device namespace work on it."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raise LeakedToNumPy(f"np.{ufunc.__name__} called on a strict-device array outside its namespace")

    def __array_function__(self, func, types, args, kwargs):
        raise LeakedToNumPy(f"np.{func.__name__} called on a strict-device array outside its namespace")


def unwrap(x):
    if isinstance(x, StrictArray):
        return x.view(np.ndarray)
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        return type(x)(unwrap(v) for v in x)
    return x


def wrap(x):
    if type(x) is np.ndarray:
        return x.view(StrictArray)
    if isinstance(x, np.generic):
        return np.asarray(x).view(StrictArray)
    if type(x) in (list, tuple):
        return type(x)(wrap(v) for v in x)
    return x


def _device_op(fn):
    def op(*args, **kwargs):
        return wrap(fn(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()}))
    return op


# the device's own operators, as CuPy arrays have them
for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor",
              "lt", "le", "gt", "ge", "eq", "ne"):
    _f = getattr(operator, _name if _name not in ("and", "or") else _name + "_")
    setattr(StrictArray, f"__{_name}__", _device_op(_f))
    if _name not in ("lt", "le", "gt", "ge", "eq", "ne"):
        setattr(StrictArray, f"__r{_name}__", _device_op(lambda a, b, _f=_f: _f(b, a)))
for _name in ("neg", "pos", "abs", "invert"):
    setattr(StrictArray, f"__{_name}__", _device_op(getattr(operator, _name)))
StrictArray.__getitem__ = _device_op(operator.getitem)
StrictArray.__hash__ = None


def _make_namespace():
    ns = types.ModuleType("strict_ns")
    for name in raw_names():
        setattr(ns, name, _device_op(getattr(_numpy_ns, name)))
    base = _numpy_ns.backend
    be = types.SimpleNamespace(
        device_type="strict", array_types=(StrictArray,), forward_errors=base.forward_errors + (LeakedToNumPy,),
        asarray=lambda x: wrap(np.asarray(unwrap(x))),
        may_share_memory=lambda a, b: np.may_share_memory(unwrap(a), unwrap(b)),
        zeros=_device_op(np.zeros), zeros_like=_device_op(np.zeros_like), ones_like=_device_op(np.ones_like), full=_device_op(np.full),
        **{n: _device_op(getattr(base, n)) for n in ("ones", "eye", "arange", "linspace", "logspace", "tri_indices")},
        copy=_device_op(base.copy), copyto=lambda d, s: base.copyto(unwrap(d), unwrap(s)),
        add_into=lambda d, s: base.add_into(unwrap(d), unwrap(s)),
        set_index=lambda d, i, v: base.set_index(unwrap(d), i, unwrap(v)), quiet=base.quiet, to_numpy=unwrap,
        **{n: (lambda f: lambda x: f(unwrap(x)))(getattr(base, n)) for n in ("storage_root", "storage_offset",
                                                                            "data_ptr", "storage_nbytes")},
        can_adopt=lambda g, dtype, shape: False)
    ns.backend = be
    return ns


STRICT = _make_namespace()


@pytest.fixture(scope="module", autouse=True)
def strict_backend():
    saved = dict(_device.NAMESPACES)
    _device.register_backend(STRICT)
    yield
    _device.NAMESPACES.clear()
    _device.NAMESPACES.update(saved)


def on_device(a: np.ndarray) -> ember.Tensor:
    from ember._tensor import make
    return make(np.array(a).view(StrictArray))


def _to_device(t):
    """A CPU tensor made by a creation function, moved onto the strict device (as ``device='cuda'``)."""
    if isinstance(t, ember.Tensor) and type(t._data) is np.ndarray:
        d = on_device(t._data)
        return d.requires_grad_() if t.requires_grad else d
    return t


class _StrictModule(types.ModuleType):
    """``ember`` as the op database's lambdas see it on the strict device: the creation functions they call
    (``m.tensor(index)``, ``m.ones(shape)``) make strict-device tensors; everything else is ember's."""

    def __getattr__(self, name):
        return getattr(ember, name)


STRICT_EMBER = _StrictModule("strict_ember")
for _name in ("tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "eye", "linspace"):
    setattr(STRICT_EMBER, _name, (lambda f: lambda *a, **k: _to_device(f(*a, **k)))(getattr(ember, _name)))


# ----- the op database on the strict device ---------------------------------------------------------------
# Every entry of the core (tests/op_db.py itself) and of the elementwise, reduction, shape, indexing, nn
# activation, nn normalisation and nn convolution/pooling/padding/resampling/grid families runs forward and
# first-order backward on both backends; the results must agree. The linalg, sorting and nn loss families are not
# covered yet (their kernels still call NumPy directly).

FAMILIES = ("elementwise", "reduction", "shape", "indexing", "nn_activation", "nn_norm", "nn_conv")
_OTHER_FAMILIES = ("linalg", "sorting", "nn_loss")
_FAMILY_OF = {op.name: fam for fam in FAMILIES + _OTHER_FAMILIES
              for op in importlib.import_module(f"op_db_{fam}").OPS}
ENTRIES = [op.name for op in OP_DB if _FAMILY_OF.get(op.name, "core") in ("core",) + FAMILIES]

# Entries that still reach NumPy directly on a strict-device array (or leave the device), with the place they
# do it. Each is a strict xfail: once fixed, it must be removed from here.
LEAKS: dict[str, str] = {}


def _entry_params():
    return [pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=LEAKS[n]))
            if n in LEAKS else n for n in ENTRIES]


def _dtypes(op) -> list:
    """float64 (with gradients where the op has them), and one integral dtype the op lists (forward only)."""
    out = ["float64"] if "float64" in op.dtypes else []
    out += [d for d in ("int64", "int32", "bool") if d in op.dtypes][:1]
    return out or list(op.dtypes[:1])


def _outputs(res) -> list:
    return [o for o in (res if isinstance(res, (tuple, list)) else (res,)) if isinstance(o, ember.Tensor)]


def _run(op, sample, dtype, strict: bool):
    """(outputs, gradients) or the exception the op raised."""
    m = STRICT_EMBER if strict else ember
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # inf and nan samples cast to integers
        arrays = [to_dtype(a, dtype) for a in sample.args]
    xs = [on_device(a) if strict else ember.tensor(a) for a in arrays]
    grad = op.supports_grad and dtype in ("float32", "float64")
    if grad:
        for x in xs:
            x.requires_grad_()
    ember.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = _outputs(op.op(m, *xs, **sample.kwargs))
            diff = [o for o in outs if o.requires_grad and o.grad_fn is not None]
            grads = ember.autograd.grad([o.sum() for o in diff], xs, allow_unused=True) if diff else []
    except LeakedToNumPy:
        raise
    except Exception as e:  # noqa: BLE001  (compared with the other backend's)
        if "outside its namespace" in str(e):
            raise LeakedToNumPy(str(e)) from e
        return e
    return outs, grads


def _same(got, ref, what):
    assert type(got._data) is StrictArray, f"{what} left the device ({type(got._data).__name__})"
    assert str(got.device) == "strict", what
    assert got.dtype == ref.dtype and tuple(got.shape) == tuple(ref.shape), \
        f"{what}: {got.dtype}{tuple(got.shape)} != {ref.dtype}{tuple(ref.shape)}"
    a, b = got._data.view(np.ndarray), ref.detach().numpy()
    if a.dtype.kind == "f":
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


@pytest.mark.parametrize("name", _entry_params())
def test_op_runs_on_a_second_backend(name):
    op = OPS[name]
    for sample in op.sample_inputs():
        for dtype in _dtypes(op):
            where = f"{name} [{sample.desc}, {dtype}]"
            ref = _run(op, sample, dtype, strict=False)
            got = _run(op, sample, dtype, strict=True)
            assert_same_run(got, ref, where, _same, "the strict device")


def test_leaks_are_real_entries():
    assert set(LEAKS) <= set(ENTRIES)


def test_the_strict_backend_catches_a_leak():
    x = on_device(np.ones(3))
    with pytest.raises(LeakedToNumPy):
        np.exp(x._data)
    with pytest.raises(LeakedToNumPy):
        np.concatenate([x._data, x._data])


def test_hook_returning_a_tensor_of_another_device_is_refused():
    """PyTorch's hook check compares device and dtype together: a CPU gradient for a device tensor is a
    changed type (ember.autograd.graph.check_hook_value)."""
    for leaf in (False, True):
        x = on_device(np.ones(2)).requires_grad_()
        y = x * 2
        (x if leaf else y).register_hook(lambda g: ember.ones(2, dtype=ember.float64))
        with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the type of value "
                                               r"\(was StrictDoubleType got torch.DoubleTensor\)$"):
            y.sum().backward()
    x = on_device(np.ones(2)).requires_grad_()
    y = x * 2
    y.register_hook(lambda g: g * 3)   # the same device: accepted
    y.sum().backward()
    _same(x.grad, ember.full((2,), 6.0, dtype=ember.float64), "x.grad")


def test_raw_diagonal_takes_negative_dims():
    # the cpu kernel walks the strides itself (as_strided): an unwrapped negative dim read outside the array
    import numpy as np
    from ember.devices import NAMESPACES
    xp = NAMESPACES[np.ndarray]
    x = np.arange(24.).reshape(2, 3, 4)
    for offset in (0, 1, -1, 3):
        for d1, d2 in ((-2, -1), (0, -1), (-1, 0), (1, 2)):
            np.testing.assert_array_equal(xp.diagonal(x, offset, d1, d2), np.diagonal(x, offset, d1, d2))
