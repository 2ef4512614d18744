"""Calls that do not bind (unknown keywords, too many arguments) raise PyTorch's TypeError: its "received
an invalid combination of arguments" message with its signatures for the ops its argument parser reads,
Python's message under the op's public name for the rest (ember/ops/_registry.py)."""
import inspect

import pytest

import ember
from ember.ops._registry import EXPORTS, METHODS, SUBMODULES

torch = pytest.importorskip("torch")

CALLS = {
    "x.sum(dims=0)": lambda L, x: x.sum(dims=0),
    "torch.mean(x, foo=1)": lambda L, x: L.mean(x, foo=1),
    "torch.sum(x, zz=1, aa=2)": lambda L, x: L.sum(x, zz=1, aa=2),
    "torch.sum(input=x, foo=1)": lambda L, x: L.sum(input=x, foo=1),
    "x.mean(zz=1, aa=x)": lambda L, x: x.mean(zz=1, aa=x),
    "x.view(foo=1)": lambda L, x: x.view(foo=1),
    "x.max(foo=None)": lambda L, x: x.max(foo=None),
    "torch.subtract(x, x, foo=1)": lambda L, x: L.subtract(x, x, foo=1),
    "x.clip(foo=[1])": lambda L, x: x.clip(foo=[1]),
    "torch.where(x > 0, x, x, foo=1)": lambda L, x: L.where(x > 0, x, x, foo=1),
    "x.squeeze(foo=L.float32)": lambda L, x: x.squeeze(foo=L.float32),
    "x.std(foo=L.Size([1]))": lambda L, x: x.std(foo=L.Size([1])),
    "x.pow(2, foo=1)": lambda L, x: x.pow(2, foo=1),
    "torch.sum(x, 0, False, L.float32, 5)": lambda L, x: L.sum(x, 0, False, L.float32, 5),
    "x.std(0, True, False, 1)": lambda L, x: x.std(0, True, False, 1),
    "torch.clamp(x, 1, 2, 3, 4)": lambda L, x: L.clamp(x, 1, 2, 3, 4),
    "torch.where(x > 0, x, x, foo=1, bar=2)": lambda L, x: L.where(x > 0, x, x, foo=1, bar=2),
    "torch.sum(x, foo=1, dim=0)": lambda L, x: L.sum(x, foo=1, dim=0),
    "torch.add(x, x, foo=1)": lambda L, x: L.add(x, x, foo=1),
    "torch.tanh(x, foo=1)": lambda L, x: L.tanh(x, foo=1),
    "torch.arcsin(x, foo=1)": lambda L, x: L.arcsin(x, foo=1),
    "torch.absolute(x, foo=1)": lambda L, x: L.absolute(x, foo=1),
    "torch.reshape(x, (2, 2), foo=1)": lambda L, x: L.reshape(x, (2, 2), foo=1),
    "F.gelu(x, foo=1)": lambda L, x: L.nn.functional.gelu(x, foo=1),
    "F.softmax(x, 0, foo=1)": lambda L, x: L.nn.functional.softmax(x, 0, foo=1),
    # stable= is the keyword-only overload of sort/argsort: dim and descending by position do not bind
    "torch.sort(x, 1, stable=True)": lambda L, x: L.sort(x, 1, stable=True),
    "x.sort(1, stable=True)": lambda L, x: x.sort(1, stable=True),
    "torch.sort(x, 0, False, True)": lambda L, x: L.sort(x, 0, False, True),
    "torch.argsort(x, 1, stable=True)": lambda L, x: L.argsort(x, 1, stable=True),
    "x.argsort(0, True, stable=True)": lambda L, x: x.argsort(0, True, stable=True),
    "torch.argsort(x, 1, True, True)": lambda L, x: L.argsort(x, 1, True, True),
}


def _message(lib, call):
    x = lib.ones(2, 2)
    with pytest.raises(TypeError) as info:
        call(lib, x)
    return str(info.value)


def _signatures(msg):
    """The first line and the signature lines (PyTorch adds "didn't match" lines that depend on its
    parser's attempts: not compared)."""
    lines = msg.splitlines()
    return [lines[0]] + [ln for ln in lines[1:] if ln.startswith(" * ")]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_argument_errors_are_pytorchs(name):
    ours, theirs = _message(ember, CALLS[name]), _message(torch, CALLS[name])
    assert _signatures(ours) == _signatures(theirs), f"\nember: {ours}\ntorch: {theirs}"


def test_errors_inside_an_op_are_left_alone():
    x = ember.ones(2)
    with pytest.raises(TypeError, match=r"^sum\(\): argument 'dtype' must be torch.dtype, not str"):
        x.sum(dtype="float64")
    with pytest.raises(TypeError, match=r"^tanh\(\): argument 'input' \(position 1\) must be Tensor"):
        ember.tanh(None)


def test_public_names_keep_the_ops_signature_docs_and_behaviour():
    for table in [EXPORTS, METHODS, *SUBMODULES.values()]:
        for name, f in table.items():
            inner = getattr(f, "__wrapped__", None)
            if getattr(f, "_ember_public", None) is None or inner is None:
                continue
            assert f.__doc__ == inner.__doc__
            assert inspect.signature(f) == inspect.signature(inner), name
    x = ember.tensor([1.0, -2.0, 3.0])
    assert ember.subtract(x, 1).tolist() == [0.0, -3.0, 2.0]
    assert x.clip(-1, 1).tolist() == [1.0, -1.0, 1.0]
    assert x.sum(0).item() == 2.0 and ember.sum(x, dim=0, keepdim=True).tolist() == [2.0]


# dtype=, device=, layout=, memory_format= given something of the wrong type: PyTorch's TypeError
WRONG_TYPES = {
    "x.to(dtype='float64')": lambda L, x: x.to(dtype="float64"),
    "x.to(dtype=np.float64)": lambda L, x: x.to(dtype=__import__("numpy").float64),
    "x.to(device=1.5)": lambda L, x: x.to(device=1.5),
    "x.to([1])": lambda L, x: x.to([1]),
    "x.to(foo=1)": lambda L, x: x.to(foo=1),
    "x.to(L.float64, copy='yes')": lambda L, x: x.to(L.float64, copy="yes"),
    "x.to(L.float64, non_blocking='yes')": lambda L, x: x.to(L.float64, non_blocking="yes"),
    "x.to(memory_format='x')": lambda L, x: x.to(memory_format="x"),
    "x.to(x, dtype=L.float64)": lambda L, x: x.to(x, dtype=L.float64),
    "x.to(x, 'x')": lambda L, x: x.to(x, "x"),
    "x.to(L.float64, L.float32)": lambda L, x: x.to(L.float64, L.float32),
    "Linear.to(dtype='float64')": lambda L, x: L.nn.Linear(2, 2).to(dtype="float64"),
    "Linear.to(L.float64, copy=True)": lambda L, x: L.nn.Linear(2, 2).to(L.float64, copy=True),
    "zeros(2, layout='strided')": lambda L, x: L.zeros(2, layout="strided"),
    "zeros_like(x, layout='strided')": lambda L, x: L.zeros_like(x, layout="strided"),
    "full((2,), 1.0, layout='x')": lambda L, x: L.full((2,), 1.0, layout="x"),
    "arange(3, layout='x')": lambda L, x: L.arange(3, layout="x"),
    "eye(2, layout=1)": lambda L, x: L.eye(2, layout=1),
    "empty_like(x, memory_format='x')": lambda L, x: L.empty_like(x, memory_format="x"),
    "x.new_ones(2, device=1.5)": lambda L, x: x.new_ones(2, device=1.5),
    "x.new_zeros(2, layout='s')": lambda L, x: x.new_zeros(2, layout="s"),
    "x.double('x')": lambda L, x: x.double("x"),
    "x.float(memory_format=1)": lambda L, x: x.float(memory_format=1),
    "x.cpu(memory_format='x')": lambda L, x: x.cpu(memory_format="x"),
    "device(1.5)": lambda L, x: L.device(1.5),
}


@pytest.mark.parametrize("name", sorted(WRONG_TYPES))
def test_wrong_types_for_dtype_device_layout_raise_pytorchs_type_error(name):
    outcome = []
    for lib in (ember, torch):
        try:
            WRONG_TYPES[name](lib, lib.ones(2, 2))
            outcome.append(None)
        except Exception as e:      # noqa: BLE001 - compared below
            outcome.append(e)
    ours, theirs = outcome
    assert theirs is not None and type(ours) is type(theirs), (ours, theirs)
    if str(theirs).startswith(("to() received", "device() received")):
        assert _signatures(str(ours)) == _signatures(str(theirs)), f"\nember: {ours}\ntorch: {theirs}"


def test_valid_dtype_device_layout_arguments_still_work():
    for lib in (ember, torch):
        x = lib.ones(2, 2)
        assert x.layout is lib.strided and repr(lib.strided) == "torch.strided"
        assert lib.zeros(2, layout=lib.strided).layout is lib.strided
        assert lib.zeros_like(x, layout=None, memory_format=lib.preserve_format).shape == (2, 2)
        assert lib.eye(2, layout=lib.strided).tolist() == [[1.0, 0.0], [0.0, 1.0]]
        assert x.new_zeros(3, layout=lib.strided, device="cpu").tolist() == [0.0, 0.0, 0.0]
        assert x.to(dtype=float).dtype is lib.float64 and x.to(float).dtype is lib.float64
        assert x.to("cpu", lib.float64, False, True).dtype is lib.float64
        assert x.to(None).dtype is lib.float32 and x.to(lib.float64, True, True).dtype is lib.float64
        assert x.to(lib.ones(1, dtype=lib.int64), non_blocking=False).dtype is lib.int64
        assert x.to(device=lib.device("cpu"), dtype=lib.float16, copy=True).dtype is lib.float16
        assert x.double(memory_format=lib.preserve_format).dtype is lib.float64
        assert x.cpu(memory_format=lib.contiguous_format).shape == (2, 2)
        assert lib.nn.Linear(2, 2).to("cpu", lib.float64, False).weight.dtype is lib.float64
    with pytest.raises(NotImplementedError, match="strided"):
        ember.zeros(2, layout=ember.sparse_coo)


def test_public_functions_pickle_by_name():
    """The registry's wrappers and renamed copies are found again by pickle (DataLoader workers started
    with spawn pickle functions such as a collate_fn's ember.stack or a partial of ember.clamp)."""
    import functools
    import pickle

    fns = [ember.sum, ember.subtract, ember.clip, ember.Tensor.sum, ember.Tensor.clip, ember.arcsin,
           ember.Tensor.arcsin, ember.nn.functional.conv2d, ember.linalg.matmul]
    assert all(pickle.loads(pickle.dumps(f)) is f for f in fns)
    p = pickle.loads(pickle.dumps(functools.partial(ember.clamp, min=0.0)))
    assert p(ember.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]


def test_a_keyword_pytorch_takes_and_ember_lacks_is_named():
    """out= is in PyTorch's signatures of sum and max but not (yet) in ember's: the error says so, instead of
    listing signatures that name it as if the call were wrong."""
    x, o = ember.ones(2, 3), ember.empty(2)
    with pytest.raises(TypeError, match=r"^sum\(\): ember does not support the argument 'out' yet"):
        ember.sum(x, 1, out=o)
    with pytest.raises(TypeError, match=r"^max\(\): ember does not support the argument 'out' yet"):
        ember.max(x, 1, out=(o, o))
    with pytest.raises(TypeError, match=r"^sum\(\) received an invalid combination of arguments"):
        x.sum(dims=0)
