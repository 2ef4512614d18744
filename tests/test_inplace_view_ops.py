"""In-place view ops on a base (``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``) change its sizes; the views
made of it before must still reach it, as PyTorch's do (it regenerates them with as_strided on the base's memory).
And the gradient through a stale expanded view sums its repeats (PyTorch's as_strided_backward)."""
import pytest

from parity import same

torch = pytest.importorskip("torch")


def _base(lib, *shape):
    x = lib.arange(1.0, 1.0 + 2 * 3, dtype=lib.float64).reshape(*shape).requires_grad_()
    return x, x * 1


CASES = {
    "unsqueeze_": lambda h: h.unsqueeze_(0),
    "squeeze_": lambda h: h.unsqueeze_(1).squeeze_(1),
    "t_": lambda h: h.t_(),
    "transpose_": lambda h: h.transpose_(0, 1),
    "two": lambda h: h.unsqueeze_(0).transpose_(1, 2),
}
VIEWS = {"row": lambda h: h[0], "column": lambda h: h[:, 1], "diagonal": lambda h: h.diagonal(),
         "flat": lambda h: h.view(-1), "window": lambda h: h[:, 1:]}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("op", sorted(CASES))
def test_a_view_made_before_an_inplace_view_op_on_its_base(op, view):
    def f(lib):
        x, h = _base(lib, 2, 3)
        v = VIEWS[view](h)
        CASES[op](h)
        (v * lib.arange(1.0, 1.0 + v.numel(), dtype=lib.float64).reshape(v.shape)).sum().backward()
        return x.grad, v, h
    same(f)


@pytest.mark.parametrize("op", sorted(CASES))
def test_a_write_through_the_old_view_after_the_relayout(op):
    def f(lib):
        x, h = _base(lib, 2, 3)
        v = h[:, 1]
        CASES[op](h)
        v.mul_(10)
        w = v[1:]   # a view of the stale view, made after the relayout
        (h.sum() + (w * 3).sum()).backward()
        return x.grad, h, v, w
    same(f)


@pytest.mark.parametrize("op", sorted(CASES))
def test_views_made_under_no_grad_then_used(op):
    def f(lib):
        x, h = _base(lib, 2, 3)
        with lib.no_grad():
            v = h[1]
            CASES[op](h.detach())   # the detached alias shares the memory, not the history
        return v, h
    same(f)


def test_forward_mode_through_a_view_made_before_the_relayout():
    def f(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            h = fw.make_dual(lib.arange(6.0).reshape(2, 3), lib.ones(2, 3)) * 1
            v = h[:, 2]
            h.t_()
            h.mul_(lib.arange(6.0).reshape(3, 2))
            return fw.unpack_dual(v).tangent, fw.unpack_dual(h).tangent
    same(f)


@pytest.mark.parametrize("shape", [(2, 3), (4, 1, 3)])
def test_the_gradient_through_a_stale_expanded_view_sums_its_repeats(shape):
    def f(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        h = x * 1
        e = h.expand(*shape)
        h.mul_(2)
        (e * lib.arange(float(e.numel()), dtype=lib.float64).reshape(e.shape)).sum().backward()
        return x.grad

    same(f)


def test_second_order_through_a_refreshed_view():
    def f(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        h = x * x
        e = h.expand(2, 3)
        h.mul_(3)
        g, = lib.autograd.grad((e ** 2).sum(), x, create_graph=True)
        gg, = lib.autograd.grad(g.sum(), x)
        return g, gg
    same(f)
