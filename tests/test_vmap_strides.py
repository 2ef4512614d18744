"""Strides of a batched example, differentially against torch.func (torch 2.13) on the same inputs.

1. What a function reads of an example's layout inside vmap (``stride()``, ``is_contiguous()``, ``storage_offset()``,
   ``contiguous()``, a ``view`` that the layout refuses): PyTorch's example has the physical tensor's strides
   without the batch dim, at every level of nested vmaps, for inputs, expanded inputs and results of ops.
2. ``as_strided`` of a batched tensor: each example's view is taken at its own place in the batch (the offset
   counts as if the example's storage started where the batch's does), PyTorch's errors for layouts that reach
   outside the example, and its derivatives under grad, jvp, jacrev, jacfwd, hessian.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LIBS = (ember, torch)


def _outcome(fn):
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(), None
    except Exception as e:   # noqa: BLE001  (compared below)
        return None, e


def _same_error(got, want):
    assert got is not None and want is not None, f"ember: {got!r}, torch: {want!r}"
    assert type(got) is type(want), f"ember raised {type(got).__name__}: {got}; torch {type(want).__name__}: {want}"
    assert str(got) == str(want), f"ember: {got}\ntorch: {want}"


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


# ===== 1. an example's layout inside vmap ==========================================================================

def _layout(L, a) -> tuple:
    """What a function reads of an example's layout (python values, compared exactly)."""
    out = (tuple(a.shape), tuple(a.stride()), a.is_contiguous(), a.storage_offset())
    if a.dim() == 4:
        out += (a.is_contiguous(memory_format=L.channels_last),)
    return out


def _seen(L, run):
    """The layouts ``run(L, look)`` records with ``look(tensor)`` inside its transforms."""
    seen = []

    def look(a):
        seen.append(_layout(L, a))
        return a
    run(L, look)
    return seen


def x234(L):
    return L.arange(24, dtype=L.float64).reshape(2, 3, 4)


LAYOUTS = {
    "in_dims-0": lambda L, look: L.func.vmap(look)(x234(L)),
    "in_dims-1": lambda L, look: L.func.vmap(look, in_dims=1)(x234(L)),
    "in_dims-2": lambda L, look: L.func.vmap(look, in_dims=2)(x234(L)),
    "in_dims-1-of-a-matrix": lambda L, look: L.func.vmap(look, in_dims=1)(L.arange(12.).reshape(3, 4)),
    "in_dims-negative": lambda L, look: L.func.vmap(look, in_dims=-1)(x234(L)),
    "a-sliced-input": lambda L, look: L.func.vmap(look)(x234(L)[:, 1:, 1:]),
    "a-sliced-input-in_dims-1": lambda L, look: L.func.vmap(look, in_dims=1)(x234(L)[1:, :, ::2]),
    "a-transposed-input": lambda L, look: L.func.vmap(look)(x234(L).transpose(1, 2)),
    "an-expanded-input": lambda L, look: L.func.vmap(look)(L.arange(4.).expand(3, 2, 4)),
    "nested-0-1": lambda L, look: L.func.vmap(L.func.vmap(look, in_dims=1))(x234(L)),
    "nested-2-0": lambda L, look: L.func.vmap(L.func.vmap(look), in_dims=2)(x234(L)),
    "nested-1-1": lambda L, look: L.func.vmap(L.func.vmap(look, in_dims=1), in_dims=1)(x234(L)),
    "nested-inner-only-batched": lambda L, look: L.func.vmap(
        lambda a: L.func.vmap(lambda b: look(b + a.sum()), in_dims=1)(x234(L)[0]))(L.ones(2)),
    "an-unbatched-value-expanded": lambda L, look: L.func.vmap(lambda a: look(a.expand(2, 4)))(
        L.arange(4.).reshape(4, 1)),
    "a-result-of-mul": lambda L, look: L.func.vmap(lambda a: look(a * 2), in_dims=1)(x234(L)),
    "a-result-of-mul-transposed": lambda L, look: L.func.vmap(lambda a: look(a * 2))(x234(L).transpose(1, 2)),
    "a-result-of-add": lambda L, look: L.func.vmap(lambda a: look(a + a), in_dims=1)(x234(L)),
    "a-result-of-add-unbatched": lambda L, look: L.func.vmap(lambda a: look(a + L.ones(4)), in_dims=1)(x234(L)),
    "a-result-of-add-captured": lambda L, look: L.func.vmap(lambda a: look(a + L.ones(3, 4)))(x234(L)),
    "a-result-of-sin": lambda L, look: L.func.vmap(lambda a: look(a.sin()), in_dims=2)(x234(L)),
    "a-result-of-sum": lambda L, look: L.func.vmap(lambda a: look(a.sum(0)), in_dims=1)(x234(L)),
    "a-transpose": lambda L, look: L.func.vmap(lambda a: look(a.transpose(0, 1)), in_dims=1)(x234(L)),
    "a-t": lambda L, look: L.func.vmap(lambda a: look(a.t()), in_dims=1)(x234(L)),
    "a-select": lambda L, look: L.func.vmap(lambda a: look(a[1]), in_dims=1)(x234(L)),
    "a-slice": lambda L, look: L.func.vmap(lambda a: look(a[:, 1:]), in_dims=1)(x234(L)),
    "an-expand": lambda L, look: L.func.vmap(lambda a: look(a.unsqueeze(0).expand(3, 2, 4)), in_dims=1)(x234(L)),
    "a-matmul": lambda L, look: L.func.vmap(lambda a: look(a @ L.ones(4, 2, dtype=L.float64)), in_dims=1)(x234(L)),
    "contiguous-of-in_dims-0": lambda L, look: L.func.vmap(lambda a: look(a.contiguous()))(x234(L)),
    "contiguous-of-in_dims-1": lambda L, look: L.func.vmap(lambda a: look(a.contiguous()), in_dims=1)(x234(L)),
    "contiguous-of-in_dims-2": lambda L, look: L.func.vmap(lambda a: look(a.contiguous()), in_dims=2)(x234(L)),
    "contiguous-nested": lambda L, look: L.func.vmap(L.func.vmap(lambda a: look(a.contiguous()), in_dims=1),
                                                     in_dims=1)(x234(L)),
    "clone-contiguous_format": lambda L, look: L.func.vmap(
        lambda a: look(a.clone(memory_format=L.contiguous_format)), in_dims=1)(x234(L)),
    "a-view-allowed": lambda L, look: L.func.vmap(lambda a: look(a.view(-1)), in_dims=2)(x234(L)),
    "a-view-keeping-dims": lambda L, look: L.func.vmap(lambda a: look(a.view(2, 2, 2)), in_dims=1)(x234(L)),
    "a-reshape": lambda L, look: L.func.vmap(lambda a: look(a.reshape(-1)), in_dims=1)(x234(L)),
    "zeros_like": lambda L, look: L.func.vmap(lambda a: look(L.zeros_like(a)), in_dims=1)(x234(L)),
    "empty_like": lambda L, look: L.func.vmap(lambda a: look(L.empty_like(a)), in_dims=1)(x234(L)),
    "narrow": lambda L, look: L.func.vmap(lambda a: look(a.narrow(1, 1, 2)), in_dims=1)(x234(L)),
    "a-select-offset": lambda L, look: L.func.vmap(lambda a: look(a[1]), in_dims=1)(x234(L)),
    "unfold": lambda L, look: L.func.vmap(lambda a: look(a.unfold(1, 2, 1)), in_dims=1)(x234(L)),
    "diagonal": lambda L, look: L.func.vmap(lambda a: look(a.diagonal()), in_dims=1)(x234(L)),
    "movedim-contiguous": lambda L, look: L.func.vmap(lambda a: look(a.movedim(0, 1).contiguous()), in_dims=2)(
        x234(L)),
    "expand_as": lambda L, look: L.func.vmap(lambda a: look(a[:1].expand_as(a)), in_dims=1)(x234(L)),
    "view_as_real": lambda L, look: L.func.vmap(lambda a: look(L.view_as_real(a.to(L.complex64))), in_dims=1)(
        x234(L)),
    "under-grad": lambda L, look: L.func.vmap(L.func.grad(lambda a: look(a).sum()), in_dims=1)(x234(L)),
    "under-jvp": lambda L, look: L.func.vmap(lambda a: L.func.jvp(look, (a,), (L.ones_like(a),))[1], in_dims=1)(
        x234(L)),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_layout_of_an_example(name):
    run = LAYOUTS[name]
    got, want = _seen(ember, run), _seen(torch, run)
    assert got == want


def test_dim_order_and_nbytes():
    for L in LIBS:
        seen = []
        for d in (1, 2):
            L.func.vmap(lambda a: seen.append((tuple(a.dim_order()), a.nbytes, a.itemsize)) or a, in_dims=d)(x234(L))
        if L is ember:
            got = seen
    assert got == seen


def test_stride_of_one_dim():
    for L in LIBS:
        seen = []
        L.func.vmap(lambda a: seen.append((a.stride(0), a.stride(-1))) or a, in_dims=1)(x234(L))
        if L is ember:
            got = seen
    assert got == seen


VIEW_ERRORS = {
    "is_contiguous-channels_last": lambda L: L.func.vmap(lambda a: a.is_contiguous(memory_format=L.channels_last))(
        L.ones(2, 2, 3, 4, 5)),
    "contiguous-channels_last": lambda L: L.func.vmap(lambda a: a.contiguous(memory_format=L.channels_last))(
        L.ones(2, 2, 3, 4, 5)),
    "clone-channels_last": lambda L: L.func.vmap(lambda a: a.clone(memory_format=L.channels_last))(
        L.ones(2, 2, 3, 4, 5)),
    "clone-channels_last_3d": lambda L: L.func.vmap(lambda a: a.clone(memory_format=L.channels_last_3d))(
        L.ones(2, 2, 3, 4, 5, 6)),
    "view-across-the-batch-dim": lambda L: L.func.vmap(lambda a: a.view(-1), in_dims=1)(x234(L)),
    "view-of-a-transposed-example": lambda L: L.func.vmap(lambda a: a.view(-1))(x234(L).transpose(1, 2)),
    "view-of-t": lambda L: L.func.vmap(lambda a: a.t().view(-1))(x234(L)),
    "data_ptr": lambda L: L.func.vmap(lambda a: a * (a.data_ptr() > 0))(x234(L)),
    "untyped_storage": lambda L: L.func.vmap(lambda a: a.untyped_storage() and a)(x234(L)),
    "storage": lambda L: L.func.vmap(lambda a: a.storage() and a)(x234(L)),
    "is_set_to": lambda L: L.func.vmap(lambda a: a * a.is_set_to(a))(x234(L)),
    "is_set_to-of-an-unbatched-tensor": lambda L: L.func.vmap(lambda a: a * L.ones(3, 4).is_set_to(a))(x234(L)),
}


@pytest.mark.parametrize("name", VIEW_ERRORS)
def test_layout_errors(name):
    _, got = _outcome(lambda: VIEW_ERRORS[name](ember))
    _, want = _outcome(lambda: VIEW_ERRORS[name](torch))
    assert got is not None and want is not None
    assert type(got) is type(want)
    assert str(got).split(".")[0] == str(want).split(".")[0]   # (PyTorch's view message goes on)


def test_contiguous_returns_self_where_contiguous():
    for L in LIBS:
        seen = []
        L.func.vmap(lambda a: seen.append(a.contiguous() is a) or a)(x234(L))
        L.func.vmap(lambda a: seen.append(a.contiguous() is a) or a, in_dims=1)(x234(L))
        if L is ember:
            got = seen
    assert got == seen == [True, False]


# ===== 2. as_strided of a batched tensor ==========================================================================

def x38(L):
    return L.arange(24, dtype=L.float64).reshape(3, 8)


# name -> (function of L returning vmap's result, whether the result's strides and offset are compared too)
AS_STRIDED = {
    "offset": (lambda L: L.func.vmap(lambda a: a.as_strided((2, 2), (1, 2), 1))(x38(L)), True),
    "default-offset": (lambda L: L.func.vmap(lambda a: a.as_strided((2, 2), (1, 2)))(x38(L)), True),
    "function": (lambda L: L.func.vmap(lambda a: L.as_strided(a, (2, 2), (1, 2), 1))(x38(L)), True),
    "keywords": (lambda L: L.func.vmap(lambda a: L.as_strided(a, size=(2,), stride=(3,), storage_offset=2))(
        x38(L)), True),
    "in_dims-1": (lambda L: L.func.vmap(lambda a: a.as_strided((2,), (1,), 1), in_dims=1)(x38(L)), True),
    "in_dims-1-stride-3": (lambda L: L.func.vmap(lambda a: a.as_strided((2,), (3,), 0), in_dims=1)(x38(L)), True),
    "in_dims-1-transposed-example": (lambda L: L.func.vmap(lambda a: a.as_strided((2, 2), (1, 3), 0), in_dims=1)(
        x38(L)), True),
    "a-sliced-example": (lambda L: L.func.vmap(lambda a: a[2:].as_strided((2,), (1,), 3))(x38(L)), True),
    "an-offset-input": (lambda L: L.func.vmap(lambda a: a.as_strided((2,), (2,), 9))(
        L.arange(30, dtype=L.float64)[6:].reshape(3, 8)), True),
    "overlapping-windows": (lambda L: L.func.vmap(lambda a: a.as_strided((3, 3), (1, 1), 0))(x38(L)), True),
    "stride-0": (lambda L: L.func.vmap(lambda a: a.as_strided((2, 3), (0, 1), 2))(x38(L)), True),
    "0-d-result": (lambda L: L.func.vmap(lambda a: a.as_strided((), (), 3))(x38(L)), True),
    "0-d-examples": (lambda L: L.func.vmap(lambda a: a.as_strided((2,), (0,), 0))(L.arange(3.)), True),
    "empty-result": (lambda L: L.func.vmap(lambda a: a.as_strided((0, 2), (1, 2), 100))(x38(L)), True),
    "empty-examples": (lambda L: L.func.vmap(lambda a: a.as_strided((0,), (1,), 0))(L.zeros(3, 0)), False),
    "nested": (lambda L: L.func.vmap(L.func.vmap(lambda a: a.as_strided((2,), (1,), 1)))(x234(L)), True),
    "nested-in_dims-1": (lambda L: L.func.vmap(L.func.vmap(lambda a: a.as_strided((2,), (2,), 1), in_dims=1))(
        x234(L)), True),
    "nested-outer-in_dims-2": (lambda L: L.func.vmap(L.func.vmap(lambda a: a.as_strided((2,), (1,), 0)),
                                                     in_dims=2)(x234(L)), True),
    # (an expanded input: every example the same memory; ember's result is a copy there, not a view)
    "an-expanded-input": (lambda L: L.func.vmap(lambda a: a.as_strided((2,), (1,), 1))(
        L.arange(8.).expand(3, 8)), False),
    "an-unbatched-input": (lambda L: L.func.vmap(lambda a: x38(L)[0].as_strided((2,), (1,), 1) * a)(
        L.ones(3, 1)), False),
    "a-result-of-an-op": (lambda L: L.func.vmap(lambda a: (a * 2).as_strided((2, 3), (1, 2), 1))(x38(L)), True),
    "as_strided_copy": (lambda L: L.func.vmap(lambda a: L.as_strided_copy(a, (2, 2), (1, 2), 1))(x38(L)), False),
    "a-view-of-the-view": (lambda L: L.func.vmap(lambda a: a.as_strided((4,), (2,), 0)[1:])(x38(L)), True),
    "written-through": (lambda L: (lambda x: (L.func.vmap(lambda a: a.as_strided((2,), (2,), 1).mul_(10))(x), x)[1])(
        x38(L)), False),
}


@pytest.mark.parametrize("name", AS_STRIDED)
def test_as_strided(name):
    fn, layout = AS_STRIDED[name]
    got, gerr = _outcome(lambda: fn(ember))
    want, terr = _outcome(lambda: fn(torch))
    assert gerr is None and terr is None, (gerr, terr)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(_np(got), _np(want))
    if layout:
        assert tuple(got.stride()) == tuple(want.stride())
        assert got.storage_offset() == want.storage_offset()


AS_STRIDED_ERRORS = {
    "outside-the-example": lambda L: L.func.vmap(lambda a: a.as_strided((2, 2), (1, 4), 5))(x38(L)),
    "larger-than-the-example": lambda L: L.func.vmap(lambda a: a.as_strided((9,), (1,), 0))(x38(L)),
    "before-the-example": lambda L: L.func.vmap(lambda a: a[1:].as_strided((2,), (1,), 0))(x38(L)),
    "negative-offset": lambda L: L.func.vmap(lambda a: a.as_strided((2,), (1,), -1))(x38(L)),
    "0-d-outside": lambda L: L.func.vmap(lambda a: a.as_strided((), (), 8))(x38(L)),
    "size-stride-lengths": lambda L: L.func.vmap(lambda a: a.as_strided((2, 2), (1,), 0))(x38(L)),
    "negative-stride": lambda L: L.func.vmap(lambda a: a.as_strided((3,), (-1,), 4))(x38(L)),
    "negative-size": lambda L: L.func.vmap(lambda a: a.as_strided((-2,), (1,), 0))(x38(L)),
    "an-empty-example": lambda L: L.func.vmap(lambda a: a.as_strided((1,), (1,), 0))(L.zeros(3, 0)),
    "in_dims-1-outside": lambda L: L.func.vmap(lambda a: a.as_strided((3,), (9,), 0), in_dims=1)(x38(L)),
    "nested-outside": lambda L: L.func.vmap(L.func.vmap(lambda a: a.as_strided((4,), (1,), 1)))(x234(L)),
    "vmap-of-jacfwd-outside": lambda L: L.func.vmap(L.func.jacfwd(lambda a: a.as_strided((2,), (2,), 1)))(
        L.arange(4.)),
    "vmap-of-jacrev-outside": lambda L: L.func.vmap(L.func.jacrev(lambda a: a.as_strided((2,), (2,), 1)))(
        L.arange(4.)),
}


@pytest.mark.parametrize("name", AS_STRIDED_ERRORS)
def test_as_strided_errors(name):
    _, got = _outcome(lambda: AS_STRIDED_ERRORS[name](ember))
    _, want = _outcome(lambda: AS_STRIDED_ERRORS[name](torch))
    _same_error(got, want)


def test_as_strided_size_not_ints():
    _, got = _outcome(lambda: ember.func.vmap(lambda a: a.as_strided((2.0,), (1,), 0))(x38(ember)))
    _, want = _outcome(lambda: torch.func.vmap(lambda a: a.as_strided((2.0,), (1,), 0))(x38(torch)))
    assert type(got) is type(want) is TypeError


def test_as_strided_under_vmap_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.func.vmap(lambda a: a.as_strided((2, 2), (1, 2), 1))(x38(ember))
        ember.func.vmap(lambda a: a.as_strided((2,), (1,), 1))(ember.arange(8.).expand(3, 8))


# ----- derivatives ---------------------------------------------------------------------------------------------

def _w(L, *shape):
    return L.tensor(np.random.default_rng(7).standard_normal(shape))


def _f_offset(L):
    return lambda a: (a.as_strided((2, 3), (1, 2), 1) * _w(L, 2, 3)).sum()


def _f_overlap(L):
    return lambda a: (a.as_strided((3, 3), (1, 1), 1).sin() * _w(L, 3, 3)).sum()


def _g_overlap(L):
    return lambda a: a.as_strided((3, 3), (1, 1), 1).sin()


def _g_view(L):
    return lambda a: (a * 2).as_strided((2, 2), (3, 1), 2) ** 2


def _batch(L):
    return L.tensor(np.linspace(-1.0, 1.5, 24).reshape(3, 8))


def _vec(L):
    return L.tensor(np.linspace(-1.0, 1.5, 8))


DERIVATIVES = {
    "vmap-grad-offset": lambda L: L.func.vmap(L.func.grad(_f_offset(L)))(_batch(L)),
    "vmap-grad-overlap": lambda L: L.func.vmap(L.func.grad(_f_overlap(L)))(_batch(L)),
    "vmap-grad-in_dims-1": lambda L: L.func.vmap(L.func.grad(lambda a: (a.as_strided((2,), (1,), 0) ** 2).sum()),
                                                 in_dims=1)(_batch(L)),
    "vmap-grad-in_dims-1-overlap": lambda L: L.func.vmap(L.func.grad(
        lambda a: (a.as_strided((2, 2), (1, 1), 0).exp() * _w(L, 2, 2)).sum()), in_dims=1)(_batch(L)),
    "vmap-grad-strided-example": lambda L: L.func.vmap(L.func.grad(
        lambda a: (a[::2].as_strided((3,), (1,), 1) ** 2).sum()))(_batch(L)),
    "vmap-grad-nested": lambda L: L.func.vmap(L.func.vmap(L.func.grad(
        lambda a: (a.as_strided((2,), (2,), 1) ** 2).sum()), in_dims=1))(_batch(L).reshape(3, 2, 4)),
    "grad-of-vmap": lambda L: L.func.grad(lambda a: L.func.vmap(lambda e: e.as_strided((2,), (3,), 1))(a).pow(2).sum())(
        _batch(L)),
    "grad-of-vmap-in_dims-1": lambda L: L.func.grad(lambda a: L.func.vmap(
        lambda e: e.as_strided((2,), (1,), 0), in_dims=1)(a).pow(2).sum())(_batch(L)),
    "vmap-jvp-in_dims-1": lambda L: L.func.vmap(lambda a, t: L.func.jvp(
        lambda e: e.as_strided((2,), (1,), 0) ** 2, (a,), (t,))[1], in_dims=1)(_batch(L), _batch(L).cos()),
    "vmap-jvp-overlap": lambda L: L.func.vmap(lambda a, t: L.func.jvp(_g_overlap(L), (a,), (t,))[1])(
        _batch(L), _batch(L).cos()),
    "vmap-jvp-of-a-view": lambda L: L.func.vmap(lambda a, t: L.func.jvp(_g_view(L), (a,), (t,))[1])(
        _batch(L), _batch(L).cos()),
    "jacrev-overlap": lambda L: L.func.jacrev(_g_overlap(L))(_vec(L)),
    "jacfwd-overlap": lambda L: L.func.jacfwd(_g_overlap(L))(_vec(L)),
    "jacrev-of-a-view": lambda L: L.func.jacrev(_g_view(L))(_vec(L)),
    "jacfwd-of-a-view": lambda L: L.func.jacfwd(_g_view(L))(_vec(L)),
    "hessian-overlap": lambda L: L.func.hessian(_f_overlap(L))(_vec(L)),
    "hessian-offset": lambda L: L.func.hessian(lambda a: (a.as_strided((2, 3), (1, 2), 1) ** 3).sum())(_vec(L)),
    "vmap-jacrev": lambda L: L.func.vmap(L.func.jacrev(_g_overlap(L)))(_batch(L)),
    "vmap-jacfwd": lambda L: L.func.vmap(L.func.jacfwd(_g_view(L)))(_batch(L)),
    "jacrev-of-jacrev": lambda L: L.func.jacrev(L.func.jacrev(_g_view(L)))(_vec(L)),
}


@pytest.mark.parametrize("name", DERIVATIVES)
def test_as_strided_derivatives(name):
    got = DERIVATIVES[name](ember)
    want = DERIVATIVES[name](torch)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12, atol=1e-12)


# ----- the in-place as_strided_ and as_strided_scatter: torch 2.13's vmap differs, a loop of torch is the reference --

def _loop(fn, x):
    return torch.stack([fn(x[b].clone()) for b in range(x.shape[0])])


def test_as_strided_inplace_is_the_example_s_view():
    """torch 2.13's vmap leaves the example unchanged (its fallback changes slices of the physical tensor); each
    example becomes its view here, as a loop of PyTorch over fresh examples gives."""
    fn = lambda L: lambda a: (a * 2).as_strided_((3, 2), (2, 1), 1)   # noqa: E731
    got = ember.func.vmap(fn(ember))(x38(ember))
    want = _loop(fn(torch), x38(torch))
    np.testing.assert_array_equal(_np(got), _np(want))
    seen = []
    ember.func.vmap(lambda a: seen.append(_layout(ember, a.clone().as_strided_((2, 2), (1, 2), 1))) or a)(x38(ember))
    assert seen == [((2, 2), (1, 2), False, 1)]


def test_as_strided_inplace_under_jvp():
    fn = lambda L: lambda a: (a * 2).as_strided_((3, 2), (2, 1), 1)   # noqa: E731
    t = np.linspace(0, 1, 24).reshape(3, 8)
    got = ember.func.vmap(lambda a, u: ember.func.jvp(fn(ember), (a,), (u,))[1])(x38(ember), ember.tensor(t))
    want = torch.stack([torch.func.jvp(fn(torch), (x38(torch)[b],), (torch.tensor(t[b]),))[1] for b in range(3)])
    np.testing.assert_allclose(_np(got), _np(want), rtol=1e-12)


def test_as_strided_scatter_per_example():
    """torch 2.13's vmap refuses as_strided_scatter (no batching rule); ember's gives what a loop gives."""
    src = np.arange(12.0).reshape(3, 2, 2) + 100
    fn = lambda L: lambda a, s: L.as_strided_scatter(a, s, (2, 2), (1, 2), 1)   # noqa: E731
    got = ember.func.vmap(fn(ember))(x38(ember), ember.tensor(src))
    # (fresh examples: PyTorch's as_strided_scatter of a slice counts the offset from its storage's start)
    want = torch.stack([fn(torch)(x38(torch)[b].clone(), torch.tensor(src[b])) for b in range(3)])
    np.testing.assert_array_equal(_np(got), _np(want))


def _ember_loop(fn, *xs):
    return ember.stack([fn(*[x[b].clone() for x in xs]) for b in range(xs[0].shape[0])])


SCATTERS = {
    "batched-input-and-src": ((0, 0), lambda L: lambda a, s: L.as_strided_scatter(a, s, (2, 2), (1, 2), 1)),
    "input-in_dims-1": ((1, 0), lambda L: lambda a, s: L.as_strided_scatter(a, s, (2, 2), (1, 2), 1)),
    "unbatched-input": ((None, 0), lambda L: lambda a, s: L.as_strided_scatter(a, s, (2, 2), (1, 3))),
    "unbatched-src": ((0, None), lambda L: lambda a, s: L.as_strided_scatter(a, s, (2, 2), (0, 1), 4)),
    "overlapping-view": ((0, 0), lambda L: lambda a, s: L.as_strided_scatter(a, s, (2, 2), (1, 1), 2)),
}


def _scatter_inputs(dims):
    a = ember.tensor(np.linspace(-1, 1, 24).reshape(3, 8))
    s = ember.tensor(np.arange(12.0).reshape(3, 2, 2) + 100)
    return (a[0] if dims[0] is None else a.t().contiguous() if dims[0] == 1 else a), (s[0] if dims[1] is None else s)


@pytest.mark.parametrize("name", SCATTERS)
def test_as_strided_scatter_batched(name):
    """A batching rule (no fallback warning), its values those of a loop over fresh examples."""
    dims, fn = SCATTERS[name]
    xs = _scatter_inputs(dims)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ember.func.vmap(fn(ember), in_dims=dims)(*xs)
    rows = [fn(ember)(*[x if d is None else x.select(d, b).clone() for x, d in zip(xs, dims)]) for b in range(3)]
    np.testing.assert_array_equal(_np(got), _np(ember.stack(rows)))


def test_as_strided_scatter_gradients():
    fn = lambda a, s: (ember.as_strided_scatter(a, s, (2, 2), (1, 2), 1).sin() * ember.arange(8.)).sum()   # noqa
    a, s = _scatter_inputs((0, 0))
    got = ember.func.vmap(ember.func.grad(fn, argnums=(0, 1)))(a, s)
    want = [ember.stack(r) for r in zip(*[ember.func.grad(fn, argnums=(0, 1))(a[b], s[b]) for b in range(3)])]
    for g, w in zip(got, want):
        np.testing.assert_allclose(_np(g), _np(w), rtol=1e-12)
