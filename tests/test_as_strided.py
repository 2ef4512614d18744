"""as_strided and its family against torch: values, strides, storage offsets, aliasing, gradients (first and
second order, forward mode), node names and errors; the *_copy functions, the scatters and the unsafe splits."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import ember


def _pair(shape, dtype="float64", rg=False, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    return (ember.tensor(a, requires_grad=rg), torch.tensor(a, requires_grad=rg))


def _same(e, t):
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_array_equal(e.detach().numpy(), t.detach().numpy())


CASES = [   # (input shape, view of input (index), size, stride, storage_offset)
    ((12,), None, (2, 2), (1, 2), None),
    ((12,), (slice(2, None),), (2, 2), (1, 2), None),
    ((12,), (slice(2, None),), (2,), (1,), 0),          # reads storage before the input's first element
    ((3, 4), None, (3, 3), (1, 1), 0),                  # overlapping windows
    ((3, 4), None, (2, 3), (0, 1), 2),                  # a stride of 0: repeated positions
    ((3, 4), "t", (4, 2), (1, 4), 1),                   # a transposed input
    ((2, 3), None, (0, 3), (1, 1), 0),                  # empty
    ((5,), None, (), (), 3),                            # 0-d
]


def _input(m, base, index):
    if index is None:
        return base * 1
    if index == "t":
        return (base * 1).t()
    return (base * 1)[index]


@pytest.mark.parametrize("shape,index,size,stride,offset", CASES)
def test_values_strides_offsets(shape, index, size, stride, offset):
    e0, t0 = _pair(shape)
    e, t = _input(ember, e0, index), _input(torch, t0, index)
    re, rt = ember.as_strided(e, size, stride, offset), torch.as_strided(t, size, stride, offset)
    _same(re, rt)
    assert re.stride() == rt.stride() and re.storage_offset() == rt.storage_offset()
    assert re._is_view() and rt._is_view()
    _same(e.as_strided(size, stride, offset), t.as_strided(size, stride, offset))


@pytest.mark.parametrize("shape,index,size,stride,offset", CASES)
def test_gradients(shape, index, size, stride, offset):
    e0, t0 = _pair(shape, rg=True)
    e, t = _input(ember, e0, index), _input(torch, t0, index)
    re, rt = ember.as_strided(e, size, stride, offset), torch.as_strided(t, size, stride, offset)
    if rt.numel():
        assert type(re.grad_fn).__name__ == type(rt.grad_fn).__name__ == "AsStridedBackward0"
    g = np.random.default_rng(1).standard_normal(tuple(rt.shape))
    ge, = ember.autograd.grad(re, e0, ember.tensor(g), create_graph=True)
    gt, = torch.autograd.grad(rt, t0, torch.tensor(g), create_graph=True)
    np.testing.assert_allclose(ge.detach().numpy(), gt.detach().numpy(), rtol=1e-12, atol=1e-12)
    if gt.requires_grad:   # second order: the gradient of <grad, w> with respect to the output's gradient
        w = np.random.default_rng(2).standard_normal(shape)
        he, = ember.autograd.grad((ge * ember.tensor(w)).sum(), e0, allow_unused=True)
        ht, = torch.autograd.grad((gt * torch.tensor(w)).sum(), t0, allow_unused=True)
        assert (he is None) == (ht is None)


def test_gradcheck_and_gradgradcheck():
    x = ember.randn(8, dtype=ember.float64, requires_grad=True)
    for size, stride, off in (((3, 3), (1, 1), 0), ((2, 2), (2, 3), 1), ((4,), (0,), 2)):
        def f(a, size=size, stride=stride, off=off):
            return (a * 2).as_strided(size, stride, off)
        assert ember.autograd.gradcheck(f, (x,))
        assert ember.autograd.gradgradcheck(f, (x,))


def test_forward_mode():
    import ember.autograd.forward_ad as efwd
    import torch.autograd.forward_ad as tfwd
    p, tan = np.arange(6.0), np.linspace(1, 2, 6)
    with efwd.dual_level():
        d = efwd.make_dual(ember.tensor(p), ember.tensor(tan))
        oe = efwd.unpack_dual(d[2:].as_strided((2, 2), (1, 2), 0))
    with tfwd.dual_level():
        d = tfwd.make_dual(torch.tensor(p), torch.tensor(tan))
        ot = tfwd.unpack_dual(d[2:].as_strided((2, 2), (1, 2), 0))
    _same(oe.primal, ot.primal)
    _same(oe.tangent, ot.tangent)


def test_writes_reach_the_base_and_other_views():
    for m in (ember, torch):
        x = m.arange(12.0)
        v = x[2:].as_strided((2, 2), (1, 2))
        w = x.as_strided((3,), (1,), 3)
        v0 = x._version
        v.mul_(10)
        assert x._version == v._version == w._version == v0 + 1
        assert x.tolist()[:7] == [0, 1, 20, 30, 40, 50, 6]
        assert w.tolist() == [30, 40, 50]


def test_inplace_write_through_as_strided_view_gradient():
    e0, t0 = _pair((6,), rg=True)
    outs = []
    for m, x0 in ((ember, e0), (torch, t0)):
        x = x0 * 1
        v = x.as_strided((2, 2), (1, 2), 1)
        v.mul_(3)
        assert type(x.grad_fn).__name__ == "CopySlices"
        (g,) = m.autograd.grad((x * m.arange(6.0, dtype=m.float64)).sum(), x0)
        outs.append(g.numpy())
    np.testing.assert_allclose(outs[0], outs[1])


def test_as_strided_inplace():
    for m in (ember, torch):
        x = m.arange(6.0)
        y = x.clone().requires_grad_()
        z = y * 1
        r = z.as_strided_((3,), (2,))
        assert r is z and tuple(z.shape) == (3,) and z.stride() == (2,)
        assert type(z.grad_fn).__name__ == "AsStridedBackward1"
        z.sum().backward()
        assert y.grad.tolist() == [1, 0, 1, 0, 1, 0]


def test_data_ptr_and_storage_across_views():
    x = ember.arange(12.0).reshape(3, 4)
    v = x[1:, 2:]
    assert v.data_ptr() - x.data_ptr() == v.storage_offset() * x.itemsize == 6 * 4
    assert v.untyped_storage().data_ptr() == x.untyped_storage().data_ptr() == x.data_ptr()
    assert x.t().storage_offset() == 0 and v.storage_offset() == 6


ERRORS = [
    lambda m: m.as_strided(m.arange(12.0), (20,), (1,)),
    lambda m: m.as_strided(m.arange(12.0), (2,), (-1,)),
    lambda m: m.as_strided(m.arange(12.0), (2, 2), (1,)),
    lambda m: m.as_strided(m.arange(12.0), (-2,), (1,)),
    lambda m: m.as_strided(m.arange(12.0), (2,), (1,), -1),
    lambda m: m.as_strided(m.arange(12.0), 2, (1,)),
    lambda m: m.empty_strided((2, 3), (1,)),
    lambda m: m.empty_permuted((2, 3), (0, 0)),
    lambda m: m.zeros(3).as_strided((3, 3), (0, 1)).add_(1),
    lambda m: m.slice_scatter(m.zeros(4, 4), m.zeros(3, 4), 0, 0, 2),
    lambda m: m.select_scatter(m.zeros(4, 4), m.zeros(3), 0, 0),
    lambda m: m.diagonal_scatter(m.zeros(4, 4), m.zeros(3)),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    with pytest.raises(Exception) as te:
        ERRORS[i](torch)
    with pytest.raises(type(te.value)):
        ERRORS[i](ember)


def test_empty_strided_and_permuted():
    for size, stride in (((2, 3), (1, 2)), ((2, 3, 4), (12, 1, 3)), ((4,), (2,)), ((), ())):
        e, t = ember.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert e.stride() == t.stride() and e.shape == t.shape and str(e.dtype) == str(t.dtype)
        assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
        assert e.storage_offset() == 0 and not e._is_view()
    for size, perm in (((2, 3, 4), (0, 2, 1)), ((2, 3, 4), (2, 0, 1)), ((5,), (0,))):
        assert ember.empty_permuted(size, perm).stride() == torch.empty_permuted(size, perm).stride()
    e = ember.zeros(3, dtype=ember.float64).new_empty_strided((2, 2), (1, 2))
    t = torch.zeros(3, dtype=torch.float64).new_empty_strided((2, 2), (1, 2))
    assert e.stride() == t.stride() and e.dtype == ember.float64


COPIES = [   # (name, args after the input, input shape)
    ("alias_copy", (), (3, 4)), ("view_copy", ((4, 3),), (3, 4)), ("expand_copy", ((2, 3, 4),), (3, 4)),
    ("permute_copy", ((1, 0),), (3, 4)), ("select_copy", (0, 1), (3, 4)), ("slice_copy", (1, 1, 3, 1), (3, 4)),
    ("split_copy", (2, 1), (3, 4)), ("split_with_sizes_copy", ([1, 3], 1), (3, 4)), ("squeeze_copy", (), (1, 4)),
    ("squeeze_copy", (0,), (1, 4)), ("t_copy", (), (3, 4)), ("transpose_copy", (0, 1), (3, 4)),
    ("unbind_copy", (1,), (3, 4)), ("unfold_copy", (1, 2, 1), (3, 4)), ("unsqueeze_copy", (1,), (3, 4)),
    ("diagonal_copy", (), (3, 4)), ("narrow_copy", (1, 1, 2), (3, 4)), ("as_strided_copy", ((2, 2), (1, 2), 1), (3, 4)),
    ("unsafe_split", (2, 1), (3, 4)), ("unsafe_chunk", (3, 1), (3, 4)), ("unsafe_split_with_sizes", ([3, 1], 1), (3, 4)),
    ("split_with_sizes", ([1, 2], 0), (3, 4)),
]


@pytest.mark.parametrize("name,args,shape", COPIES)
def test_copies(name, args, shape):
    e0, t0 = _pair(shape, rg=True)
    re, rt = getattr(ember, name)(e0 * 1, *args), getattr(torch, name)(t0 * 1, *args)
    many = isinstance(rt, (tuple, list))
    re, rt = (list(re), list(rt)) if many else ([re], [rt])
    assert len(re) == len(rt)
    for a, b in zip(re, rt):
        _same(a, b)
        assert a._is_view() == b._is_view()
        assert type(a.grad_fn).__name__ == type(b.grad_fn).__name__
    g = [np.random.default_rng(3 + i).standard_normal(tuple(b.shape)) for i, b in enumerate(rt)]
    ge, = ember.autograd.grad(re, e0, [ember.tensor(x) for x in g])
    gt, = torch.autograd.grad(rt, t0, [torch.tensor(x) for x in g])
    np.testing.assert_allclose(ge.numpy(), gt.numpy())


def test_copies_do_not_alias():
    x = ember.arange(6.0).reshape(2, 3)
    y = ember.t_copy(x)
    y.add_(1)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert ember.detach_copy(x).tolist() == x.tolist() and not ember.detach_copy(x)._is_view()


SCATTERS = [   # (name, input shape, src shape, args)
    ("slice_scatter", (4, 5), (4, 2), (1, 1, 5, 2)),
    ("slice_scatter", (4, 5), (2, 5), (0, None, 2)),
    ("select_scatter", (4, 5), (5,), (0, 2)),
    ("select_scatter", (4, 5), (4,), (1, -1)),
    ("diagonal_scatter", (4, 5), (4,), ()),
    ("diagonal_scatter", (4, 5), (4,), (1,)),
    ("diagonal_scatter", (4, 5), (3,), (-1,)),
    ("diagonal_scatter", (2, 4, 5), (2, 3), (-1, 1, 2)),
    ("as_strided_scatter", (4, 5), (2, 2), ((2, 2), (1, 2), 3)),
    ("as_strided_scatter", (6,), (3, 2), ((3, 2), (1, 1))),
]


@pytest.mark.parametrize("name,shape,src_shape,args", SCATTERS)
def test_scatters(name, shape, src_shape, args):
    e0, t0 = _pair(shape, rg=True)
    es, ts = _pair(src_shape, rg=True, seed=5)
    re, rt = getattr(ember, name)(e0 * 1, es * 1, *args), getattr(torch, name)(t0 * 1, ts * 1, *args)
    _same(re, rt)
    _same(getattr(e0 * 1, name)(es, *args), getattr(t0 * 1, name)(ts, *args))
    assert type(re.grad_fn).__name__ == type(rt.grad_fn).__name__
    g = np.random.default_rng(9).standard_normal(shape)
    ge = ember.autograd.grad(re, (e0, es), ember.tensor(g))
    gt = torch.autograd.grad(rt, (t0, ts), torch.tensor(g))
    # PyTorch's as_strided_scatter_backward gives self the gradient of the scattered region instead of the rest (its
    # own gradcheck fails); ember's is the true gradient (checked below), the same as PyTorch's for src
    for a, b in list(zip(ge, gt))[1 if name == "as_strided_scatter" else 0:]:
        np.testing.assert_allclose(a.numpy(), b.numpy())


def test_as_strided_scatter_gradcheck():
    x = ember.randn(6, dtype=ember.float64, requires_grad=True)
    s = ember.randn(2, dtype=ember.float64, requires_grad=True)
    f = lambda a, b: ember.as_strided_scatter(a, b, (2,), (1,), 1)   # noqa: E731
    assert ember.autograd.gradcheck(f, (x, s)) and ember.autograd.gradgradcheck(f, (x, s))


def test_as_strided_scatter_keeps_a_dense_layout():
    b = np.arange(6.0).reshape(2, 3)
    e = ember.tensor(b).t().contiguous().t()
    t = torch.tensor(b).t().contiguous().t()
    re, rt = ember.as_strided_scatter(e, ember.zeros(2), (2,), (1,)), torch.as_strided_scatter(t, torch.zeros(2),
                                                                                                (2,), (1,))
    _same(re, rt)
    assert re.stride() == rt.stride()


def test_views_of_a_base_laid_out_otherwise():
    # a base that is no view but not C-contiguous (x.t() * 2 keeps the transposed layout, in PyTorch too): the views'
    # machinery replays as_strided on stand-ins laid out in C order, which gather; in-place writes and rebuilt
    # histories go through the positions the steps select
    res = []
    for m in (ember, torch):
        a = m.arange(6.0, dtype=m.float64).reshape(2, 3).requires_grad_()
        b = a.t() * 2
        v = b.as_strided((2,), (1,), 1)
        v.mul_(10)
        u = b.as_strided((2, 2), (1, 0), 1)   # stride 0: the gradient of a rebuilt history adds up
        b.mul_(3)
        w = m.arange(6.0, dtype=m.float64).reshape(3, 2)
        g, = m.autograd.grad((b * w).sum() + (u * w[:2]).sum(), a)
        res.append((b.tolist(), u.tolist(), g.tolist(), type(u.grad_fn).__name__))
    assert res[0] == res[1]


def test_as_strided_inplace_with_a_view_made_before():
    res = []
    for m in (ember, torch):
        a = m.arange(6.0, dtype=m.float64).requires_grad_()
        x = a * 1
        v = x[1:3]
        x.as_strided_((3,), (2,))
        v.mul_(2)   # v reaches x through the step back from x's new layout to its old one
        (x * m.tensor([1.0, 2.0, 3.0], dtype=m.float64)).sum().backward()
        res.append((x.tolist(), v.tolist(), a.grad.tolist()))
    assert res[0] == res[1]


# ----- dim_order, const_data_ptr, resize_as, empty(memory_format=) ---------------------------------------------

def _outcome(f):
    try:
        return f()
    except Exception as e:  # noqa: BLE001 - the exception type is the outcome compared
        return type(e).__name__


LAYOUTS = [((2, 3, 5, 7), None), ((2, 3, 5, 7), (0, 2, 1, 3)), ((1, 2, 3, 4), None), ((2, 3, 4), (2, 0, 1)),
           ((3, 1, 4), (1, 2, 0)), ((4,), None), ((), None), ((2, 2), (1, 0)), ((2, 1, 1, 3), (0, 3, 1, 2)),
           ((4, 3), "expand")]


@pytest.mark.parametrize("shape,perm", LAYOUTS)
def test_dim_order_matches_torch(shape, perm):
    def run(m):
        t = m.empty(shape)
        t = t.permute(perm) if isinstance(perm, tuple) else t[:, :1].expand(shape) if perm == "expand" else t
        return [_outcome(lambda: t.dim_order(ambiguity_check=amb))
                for amb in (False, True, [m.contiguous_format, m.channels_last], [m.contiguous_format], "x", [1])]
    assert run(ember) == run(torch)


@pytest.mark.parametrize("fmt", ["channels_last", "channels_last_3d", "contiguous_format", "preserve_format"])
@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 4, 5, 6), (2, 3)])
def test_empty_memory_format_matches_torch(fmt, shape):
    def run(m):
        return _outcome(lambda: (m.empty(shape, memory_format=getattr(m, fmt)).stride(),
                                 m.empty(shape, memory_format=getattr(m, fmt)).dim_order()))
    assert run(ember) == run(torch)
    assert _outcome(lambda: ember.zeros(shape, memory_format=ember.channels_last)) == "TypeError"


def test_const_data_ptr_and_resize_as():
    e = ember.arange(12.).reshape(3, 4)[1:]
    assert e.const_data_ptr() == e.data_ptr()
    for m in (ember, torch):
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            r = m.arange(4.).resize_as(m.zeros(2, 2))
        assert tuple(r.shape) == (2, 2) and r.tolist() == [[0., 1.], [2., 3.]]
        with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="autograd's resize can only change"):
            m.zeros(5).resize_as(m.zeros(2, 2))
