"""The shape family's view ops against real torch: in-place ops through each view (the base gets CopySlices),
bases changed in place under a view (the view's history is rebuilt), first and second order; memory and
version-counter sharing; multi-output views (split/chunk/unbind, iteration); broadcast_shapes."""
import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

# view op name -> (input shape, the op)
VIEWS = {
    "view": ((3, 4), lambda L, b: b.view(2, 6)),
    "reshape": ((3, 4), lambda L, b: b.reshape(4, 3)),
    "flatten": ((2, 3, 2), lambda L, b: b.flatten(1)),
    "unflatten": ((3, 4), lambda L, b: b.unflatten(1, (2, 2))),
    "ravel": ((3, 4), lambda L, b: L.ravel(b)),
    "view_as": ((3, 4), lambda L, b: b.view_as(L.zeros(12))),
    "squeeze": ((3, 1, 4), lambda L, b: b.squeeze(1)),
    "squeeze_tuple": ((1, 3, 1, 4), lambda L, b: b.squeeze((0, 2))),
    "unsqueeze": ((3, 4), lambda L, b: b.unsqueeze(1)),
    "atleast_3d": ((3, 4), lambda L, b: L.atleast_3d(b)),
    "permute": ((2, 3, 2), lambda L, b: b.permute(2, 0, 1)),
    "transpose": ((3, 4), lambda L, b: b.transpose(0, 1)),
    "swapaxes": ((3, 4), lambda L, b: L.swapaxes(b, 1, 0)),
    "movedim": ((2, 3, 2), lambda L, b: b.movedim(0, -1)),
    "t": ((3, 4), lambda L, b: b.t()),
    "T": ((3, 4), lambda L, b: b.T),
    "narrow": ((4, 3), lambda L, b: b.narrow(0, 1, 2)),
    "narrow_neg": ((3, 4), lambda L, b: L.narrow(b, -1, -3, 2)),
    "select": ((3, 4), lambda L, b: b.select(1, 2)),
    "select_0d": ((4,), lambda L, b: b.select(0, -1)),
    "tensor_split": ((5, 3), lambda L, b: b.tensor_split(2)[1]),
    "hsplit": ((3, 4), lambda L, b: L.hsplit(b, [1, 3])[1]),
    "vsplit": ((4, 3), lambda L, b: b.vsplit(2)[0]),
    "dsplit": ((2, 2, 4), lambda L, b: L.dsplit(b, 2)[1]),
    "diagonal": ((3, 4), lambda L, b: b.diagonal()),
    "diagonal_offset": ((2, 3, 4), lambda L, b: L.diagonal(b, -1, 2, 1)),
    "unfold": ((6, 2), lambda L, b: b.unfold(0, 2, 2)),
    "chain": ((4, 6), lambda L, b: b.t().narrow(0, 1, 4).unflatten(0, (2, 2)).select(1, 0).diagonal()),
}


def _to_np(r):
    if isinstance(r, (tuple, list)):
        return [_to_np(v) for v in r]
    if r is None:
        return None
    return (np.array(r.detach().tolist(), dtype=np.float64),
            None if r.grad_fn is None else type(r.grad_fn).__name__)


def _run(f, lib):
    try:
        return "ok", _to_np(f(lib))
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return "err", type(e).__name__


def _close(a, b, where="result"):
    if isinstance(a, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}[{i}]")
    elif a is None:
        assert b is None, where
    else:
        np.testing.assert_allclose(b[0], a[0], rtol=1e-5, atol=1e-6, err_msg=where)
        assert b[1] == a[1], f"{where}: grad_fn {b[1]} != torch {a[1]}"


def check(f):
    t, e = _run(f, torch), _run(f, ember)
    assert t[0] == e[0], (t, e)
    if t[0] == "err":
        assert t[1] == e[1], (t, e)
    else:
        _close(t[1], e[1])


def _data(shape, k=0):
    n = int(np.prod(shape))
    return ((np.arange(n) * 0.37 + k) % 1.7 - 0.8).reshape(shape).tolist()


def _grads(L, loss, inputs):
    """First and second order: the gradients, then the gradient of their squared sum."""
    g = L.autograd.grad(loss, inputs, create_graph=True)
    gg = L.autograd.grad(sum((x * x).sum() for x in g), inputs, allow_unused=True)
    return list(g) + list(gg)


@pytest.mark.parametrize("name", list(VIEWS))
def test_inplace_through_view(name):
    shape, op = VIEWS[name]

    def f(L):
        x = L.tensor(_data(shape), requires_grad=True)
        s = L.tensor(1.5, requires_grad=True)
        b = x.sin()
        v = op(L, b)
        v.mul_(s)        # through the view: b's history becomes CopySlices
        v.add_(s * s)
        loss = (b * b.cos()).sum() + (v * v).sum()
        return [b, v] + _grads(L, loss, [x, s])
    check(f)


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_of_base_changed_in_place(name):
    shape, op = VIEWS[name]

    def f(L):
        x = L.tensor(_data(shape, 1), requires_grad=True)
        s = L.tensor(0.7, requires_grad=True)
        b = x * 1
        v = op(L, b)
        b.mul_(s)        # the view is stale: its history is rebuilt when next used (AsStridedBackward0)
        loss = (v.exp() * s).sum()
        return [v] + _grads(L, loss, [x, s])
    check(f)


@pytest.mark.parametrize("name", list(VIEWS))
def test_view_shares_memory_and_version(name):
    shape, op = VIEWS[name]
    b = ember.tensor(_data(shape))
    v = op(ember, b)
    assert v._base is b and np.shares_memory(v.numpy(), b.numpy())
    before = b._version
    v.mul_(2)
    assert b._version == v._version == before + 1


@pytest.mark.parametrize("name", ["flip", "roll", "rot90", "repeat", "tile", "repeat_interleave", "tril", "diag",
                                  "diag_embed", "trace", "cat", "stack", "broadcast_to", "meshgrid"])
def test_copies_do_not_share_memory_or_broadcasts_refuse_writes(name):
    ops = {
        "flip": lambda L, b: b.flip(0), "roll": lambda L, b: b.roll(1, 1), "rot90": lambda L, b: b.rot90(),
        "repeat": lambda L, b: b.repeat(1, 1), "tile": lambda L, b: b.tile((1,)),
        "repeat_interleave": lambda L, b: b.repeat_interleave(1, 0), "tril": lambda L, b: b.tril(5),
        "diag": lambda L, b: L.diag(b), "diag_embed": lambda L, b: L.diag_embed(b),
        "trace": lambda L, b: b.trace(), "cat": lambda L, b: L.cat([b]), "stack": lambda L, b: L.stack([b]),
        "broadcast_to": lambda L, b: L.broadcast_to(b, (2, 3, 4)),
        "meshgrid": lambda L, b: L.meshgrid(b[0], b[1], indexing="ij")[0],
    }

    def f(L):
        x = L.tensor(_data((3, 4)), requires_grad=True)
        b = x * 1
        v = ops[name](L, b)
        v.mul_(2)        # a copy: b is untouched; an expanded view: refused
        return [b, v, L.autograd.grad((b * v.sum()).sum(), x)[0]]
    check(f)


# ----- multi-output views ---------------------------------------------------------------------------------

def test_split_pieces_share_one_node():
    x = ember.tensor(_data((5, 3)), requires_grad=True)
    pieces = x.split(2)
    assert len({id(p.grad_fn) for p in pieces}) == 1
    assert [p.output_nr for p in pieces] == [0, 1, 2]
    assert type(pieces[0].grad_fn).__name__ == "SplitBackward0"
    assert all(p._base is x for p in pieces)


@pytest.mark.parametrize("op", ["split", "chunk", "unbind", "iter"])
def test_multi_output_views_gradients(op):
    ops = {"split": lambda L, b: b.split([1, 3, 1]), "chunk": lambda L, b: b.chunk(2, 1),
           "unbind": lambda L, b: b.unbind(1), "iter": lambda L, b: tuple(b)}

    def f(L):
        x = L.tensor(_data((5, 4)), requires_grad=True)
        pieces = ops[op](L, x.sin())
        loss = (pieces[0] * pieces[-1].sum()).sum() + pieces[1].exp().sum()
        return list(pieces) + _grads(L, loss, [x])
    check(f)


@pytest.mark.parametrize("op", ["split", "chunk", "unbind", "iter"])
def test_multi_output_views_refuse_inplace(op):
    # PyTorch: "Output 0 of SplitBackward0 is a view and is being modified inplace. This view is the output of
    # a function that returns multiple views..." (allowed when nothing requires grad, or under no_grad)
    ops = {"split": lambda L, b: b.split(2), "chunk": lambda L, b: b.chunk(2),
           "unbind": lambda L, b: b.unbind(), "iter": lambda L, b: list(b)}

    def f(L):
        x = L.tensor(_data((4, 3)), requires_grad=True)
        ops[op](L, x * 1)[0].mul_(2)
    check(f)


@pytest.mark.parametrize("op", ["split", "unbind"])
def test_multi_output_views_inplace_without_grad(op):
    ops = {"split": lambda L, b: b.split(2), "unbind": lambda L, b: b.unbind()}

    def f(L):
        x = L.tensor(_data((4, 3)))
        ops[op](L, x)[1].mul_(2)
        y = L.tensor(_data((4, 3)), requires_grad=True)
        with L.no_grad():
            ops[op](L, y)[0].zero_()
        return [x, y]
    check(f)


def test_iteration_records_unbind():
    def f(L):
        x = L.tensor(_data((3, 2)), requires_grad=True)
        rows = [r * (i + 1) for i, r in enumerate(x)]
        return [next(iter(x))] + list(L.autograd.grad(sum(r.sum() for r in rows), x))
    check(f)


def test_in_place_view_ops():
    def f(L):
        x = L.tensor(_data((1, 3, 4)), requires_grad=True)
        b = x * 2
        b.squeeze_(0)
        b.t_()
        b.unsqueeze_(1)
        b.transpose_(0, 2)
        return [b] + _grads(L, (b * b.exp()).sum(), [x])
    check(f)


def test_in_place_view_op_on_leaf_refused():
    check(lambda L: L.tensor(_data((2, 3)), requires_grad=True).t_())


def test_forward_mode_through_views():
    import ember.autograd.forward_ad as efw
    import torch.autograd.forward_ad as tfw

    def f(L, fw):
        with fw.dual_level():
            x = fw.make_dual(L.tensor(_data((4, 6))), L.tensor(_data((4, 6), 2)))
            b = x * 1
            v = b.t().narrow(0, 1, 4).diagonal()
            v.mul_(3)
            parts = list(b.split(2, 1)) + [b.unfold(1, 3, 3), b.unbind(0)[2], L.tril(b, 1), L.roll(b, 2)]
            return [fw.unpack_dual(p).tangent for p in parts]
    _close(_to_np(f(torch, tfw)), _to_np(f(ember, efw)))


# ----- non-tensor helpers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("shapes", [((2, 1), (3,)), (2, (3, 1)), ((), (4,)), ((0, 1), (3,)), ((2, 1), (3, 2)),
                                    ((1,), [2, 3]), ()])
def test_broadcast_shapes(shapes):
    check(lambda L: L.ones(L.broadcast_shapes(*shapes)))


def test_view_dtype_shares_memory_without_history():
    def f(L):
        x = L.tensor(_data((2, 4)), requires_grad=True) * 1
        v = x.view(L.int32)
        w = x.detach().view(L.float16)
        return [v.float(), w.float(), L.tensor(float(v.requires_grad)), L.tensor(float(v._version))]
    check(f)
